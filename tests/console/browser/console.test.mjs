// The operator console in Debian's Chromium, driven by Playwright (playwright-core, with the
// system browser: no download). tests/console/main.rs starts the service, publishes what the
// steps below look for, and runs this script with:
//   BASE_URL      the service, e.g. http://127.0.0.1:4000
//   ADMIN_TOKEN   a token with orders:read, orders:write, orders:admin (client console-admin)
//   READ_TOKEN    a token with orders:read only (client console-reader)
//   ORDER_ID      an order paid over AMQP and shipped over REST
//   BUSY_ORDER_ID an order with more versions than a page: placed, paid BUSY_PAYMENTS times a
//                 cent and cancelled with CANCEL_REASON, over REST
//   XSS_MARKUP    the markup a poison message carries in its body
//   SCREENSHOTS   a directory for the overview, dead-letter and timeline screenshots (optional)
// It prints each step and exits 1 at the first that fails, or at the end if any page logged a
// console error, failed a request or got an error answer it did not expect.
import { chromium } from 'playwright-core';

const {
  BASE_URL, ADMIN_TOKEN, READ_TOKEN, ORDER_ID, BUSY_ORDER_ID, BUSY_PAYMENTS, CANCEL_REASON, XSS_MARKUP, SCREENSHOTS,
} = process.env;
const TIMEOUT = 20_000;
/** The API's largest page, which the console asks for. */
const PAGE = 100;
const NOTE = 'a <b>test</b> message sent to production by mistake';

function check(condition, what) {
  if (!condition) throw new Error(`failed: ${what}`);
  console.log(`ok: ${what}`);
}

async function signIn(page, token) {
  await page.goto(`${BASE_URL}/console`);
  await page.fill('#sign-in input[name=token]', token);
  await page.click('#sign-in button[type=submit]');
  await page.waitForSelector('#session button');
}

/** Records in `errors` every console error, script error, failed request and error answer of
 * `page`, but those `expected(url, status)` allows. */
function watch(page, errors, expected) {
  page.on('console', (message) => {
    if (message.type() !== 'error') return;
    // The browser logs each error answer too ("Failed to load resource: … status of 404"): the
    // same rule judges it.
    const status = Number((message.text().match(/status of (\d+)/) || [])[1]);
    if (status && expected(message.location().url || '', status)) return;
    errors.push(`console: ${message.text()} (${message.location().url || ''})`);
  });
  page.on('pageerror', (error) => errors.push(`script: ${error}`));
  page.on('requestfailed', (request) => {
    const failure = (request.failure() || {}).errorText || 'failed';
    // Leaving a view cancels the requests it still had in flight: not an error.
    if (failure !== 'net::ERR_ABORTED') errors.push(`request: ${failure} ${request.url()}`);
  });
  page.on('response', (response) => {
    if (response.status() >= 400 && !expected(response.url(), response.status())) {
      errors.push(`answer: ${response.status()} ${response.url()}`);
    }
  });
}

/** The text `minor` cents of EUR shows as on this page, formatted as the console formats money. */
async function euros(page, minor) {
  return page.evaluate((cents) => new Intl.NumberFormat(undefined, { style: 'currency', currency: 'EUR' })
    .format(cents / 100), minor);
}

async function screenshot(page, name) {
  if (SCREENSHOTS) await page.screenshot({ path: `${SCREENSHOTS}/${name}.png`, fullPage: true });
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
let failed = false;
try {
  const admin = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  const page = await admin.newPage();
  page.setDefaultTimeout(TIMEOUT);
  const errors = [];
  let signedIn = false;
  // Before signing in, /v1/me answers 401: that is how the page knows to ask for a token.
  watch(page, errors, (url, status) => !signedIn && status === 401 && url.endsWith('/v1/me'));
  let dialogs = 0;
  page.on('dialog', (dialog) => { dialogs += 1; dialog.dismiss(); });

  // The overview: its policy, a sign-in, the parked count.
  const first = await page.goto(`${BASE_URL}/console`);
  const policy = first.headers()['content-security-policy'] || '';
  check(policy.includes("script-src 'self'") && !policy.includes('unsafe'), `a strict CSP: ${policy}`);
  await signIn(page, ADMIN_TOKEN);
  signedIn = true;
  // The icon the page names, and the one every browser asks for: both there, both images.
  const icons = await page.evaluate(async () => {
    const hrefs = [...document.querySelectorAll('link[rel~="icon"]')].map((icon) => icon.href);
    return Promise.all([...hrefs, `${window.location.origin}/favicon.ico`].map(async (href) => {
      const response = await fetch(href);
      return `${response.status} ${response.headers.get('content-type')} ${href}`;
    }));
  });
  check(icons.length === 2 && icons.every((icon) => icon.startsWith('200 image/')), `the icons are served: ${icons}`);
  await page.waitForSelector('.card .value');
  await page.waitForFunction(() => [...document.querySelectorAll('.card')]
    .some((card) => card.textContent.includes('Inbox waiting') && /^\d+$/.test(card.querySelector('.value').textContent)));
  check(true, 'the overview shows how many messages wait in the inbox');
  await page.waitForFunction(() => [...document.querySelectorAll('.card')]
    .some((card) => card.textContent.includes('Parked dead letters') && card.querySelector('.value').textContent === '2'));
  check(true, 'the overview shows 2 parked dead letters');
  await screenshot(page, 'console-overview');

  // The list, then a filter that narrows it (kept in the URL).
  await page.click('header nav a:has-text("Dead letters")');
  await page.waitForSelector('#dead-letters tbody tr');
  check(await page.locator('#dead-letters tbody tr').count() === 2, 'the list shows both parked dead letters');
  await screenshot(page, 'console-dead-letters');
  await page.fill('#filters input[name=reason]', 'premature');
  await page.click('#filters button[type=submit]');
  await page.waitForFunction(() => document.querySelectorAll('#dead-letters tbody tr').length === 1);
  check(page.url().includes('reason=premature'), `the filter is in the URL: ${page.url()}`);
  const premature = await page.locator('#dead-letters tbody tr').getAttribute('data-id');

  // Replay the selected one: it leaves the parked view, and its audit names the actor.
  await page.check('#dead-letters tbody tr input[type=checkbox]');
  await page.click('#replay-selected');
  await page.waitForSelector('text=Replayed 1');
  await page.waitForSelector('#count');
  check((await page.textContent('#count')).startsWith('0 matching'), 'the replayed dead letter left the parked view');
  await page.goto(`${BASE_URL}/console/dead-letters/${premature}`);
  await page.waitForSelector('#letter-actions');
  const audit = await page.textContent('#letter-actions');
  check(audit.includes('replay') && audit.includes('console-admin'), `the audit names the actor: ${audit}`);

  // A body carrying markup is shown as text: no element made of it, no dialog.
  await page.goto(`${BASE_URL}/console/dead-letters?status=parked&reason=poison`);
  await page.waitForSelector('#dead-letters tbody tr');
  await page.click('#dead-letters tbody tr a:has-text("details")');
  await page.waitForSelector('#letter-body');
  check((await page.textContent('#letter-body')).includes(XSS_MARKUP), 'the markup is shown as text');
  check(await page.locator('main img').count() === 0, 'no element was made of the markup');

  // Discard it with a reason (itself markup): the audit shows the reason, as text, and the key.
  await page.fill('#discard input[name=note]', NOTE);
  await page.click('#discard button[type=submit]');
  await page.waitForFunction(() => document.querySelector('#letter-status')?.textContent === 'discarded');
  const discarded = await page.textContent('#letter-actions');
  check(discarded.includes('discard') && discarded.includes(NOTE), `the audit keeps the reason: ${discarded}`);
  check(await page.locator('main b').count() === 0, 'the reason is shown as text');
  check(!discarded.includes("another client's"), 'the actor sees its own Idempotency-Key');

  // The order's timeline: created and paid over AMQP, shipped over REST, with its ledger entry.
  await page.fill('#search-input', ORDER_ID);
  await page.click('#search button');
  await page.waitForSelector('#timeline li');
  const timeline = await page.textContent('#timeline');
  for (const expected of ['created', 'paid', 'shipped', 'AMQP event', 'REST client console-admin', 'payment received',
    'event order.created', 'event order.paid', 'event order.shipped', 'published']) {
    check(timeline.includes(expected), `the timeline shows "${expected}"`);
  }
  check((await page.textContent('#order-status')) === 'SHIPPED', 'the order is shipped');
  const shipment = await page.textContent('#order-shipment');
  check(shipment.includes('DHL') && shipment.includes('JD0001'), `the card shows the shipment: ${shipment}`);
  check((await page.textContent('#order-refund-due')) === await euros(page, 0), 'the card shows no refund due');
  check(await page.locator('#order-cancellation-reason').count() === 0, 'a shipped order has no cancellation reason');
  check((await page.textContent('#timeline-shown')).startsWith('All 3 versions'), 'the whole short timeline is shown');
  check(await page.locator('#timeline-more').isHidden(), 'with nothing more to load');
  await screenshot(page, 'console-timeline');

  // A timeline longer than a page: the first page of each list, then a page per click.
  const listed = [];
  page.on('request', (request) => {
    if (request.url().includes(`/v1/orders/${BUSY_ORDER_ID}/`)) listed.push(request.url());
  });
  await page.goto(`${BASE_URL}/console/orders/${BUSY_ORDER_ID}`);
  await page.waitForSelector('#timeline li');
  check((await page.textContent('#order-status')) === 'CANCELLED', 'the busy order is cancelled');
  check((await page.textContent('#order-cancellation-reason')) === CANCEL_REASON, 'the card shows why it was cancelled');
  const due = await euros(page, Number(BUSY_PAYMENTS));
  check((await page.textContent('#order-refund-due')) === due, `the card shows the refund due, ${due}`);
  check(await page.locator('#order-shipment').count() === 0, 'a cancelled order has no shipment');
  const versions = Number(BUSY_PAYMENTS) + 2;
  check(listed.length === 3 && listed.every((url) => url.includes(`limit=${PAGE}`) && !url.includes('after=')),
    `the timeline read the first page of each list: ${listed.join(' ')}`);
  const firstShown = await page.locator('#timeline li.change').count();
  check(firstShown > 0 && firstShown <= PAGE, `the first page shows ${firstShown} of ${versions} versions`);
  let clicks = 0;
  while (await page.locator('#timeline-more').isVisible()) {
    const before = listed.length;
    const items = await page.locator('#timeline li').count();
    await page.click('#timeline-more');
    await page.waitForFunction((count) => document.querySelectorAll('#timeline li').length > count
      && !document.querySelector('#timeline-more').disabled, items);
    clicks += 1;
    const read = listed.slice(before).map((url) => new URL(url));
    const lists = new Set(read.map((url) => url.pathname));
    check(read.length >= 1 && lists.size === read.length && read.every((url) => url.searchParams.get('after')
      && url.searchParams.get('limit') === String(PAGE)),
    `click ${clicks} read at most one more page of each list: ${read.map((url) => url.pathname.split('/').pop())}`);
    if (clicks > 10) throw new Error('failed: the timeline never ends');
  }
  const changes = await page.locator('#timeline li.change strong').allTextContents();
  const numbers = changes.map((text) => Number(text.match(/^v(\d+) /)[1]));
  check(numbers.length === versions && numbers.every((n, i) => n === i + 1),
    `every version once, in order: ${numbers.length} of ${versions}`);
  check(await page.locator('#timeline li.money').count() === Number(BUSY_PAYMENTS), 'every payment once');
  const events = await page.locator('#timeline li.event strong').allTextContents();
  check(events.join() === 'event order.created,event order.cancelled,event order.refund_required',
    `the order's events: ${events}`);
  check((await page.textContent('#timeline-shown')).startsWith(`All ${versions} versions`), 'the whole timeline is shown');

  // A transfer id finds the order whose ledger holds it.
  await page.fill('#search-input', `tr-${ORDER_ID}`);
  await page.click('#search button');
  await page.waitForSelector('#transfer-holder a');
  check((await page.textContent('#transfer-holder')).includes(ORDER_ID), 'the transfer id finds its order');
  check(dialogs === 0, 'no dialog opened');
  check(errors.length === 0, `no console errors: ${errors.join(' | ')}`);

  // A read-only token: no action buttons, and the API refuses the action anyway.
  const reader = await browser.newContext();
  const readPage = await reader.newPage();
  readPage.setDefaultTimeout(TIMEOUT);
  const readErrors = [];
  let readerSignedIn = false;
  watch(readPage, readErrors, (url, status) => (!readerSignedIn && status === 401 && url.endsWith('/v1/me'))
    || (status === 403 && url.endsWith('/discard')));
  await signIn(readPage, READ_TOKEN);
  readerSignedIn = true;
  await readPage.goto(`${BASE_URL}/console/dead-letters?status=parked`);
  await readPage.waitForSelector('text=needs a token with the scope orders:admin');
  check(await readPage.locator('#replay-all, #replay-selected, #replay, #discard').count() === 0,
    'a read-only token sees no action buttons');
  await readPage.goto(`${BASE_URL}/console/orders/${ORDER_ID}`);
  await readPage.waitForSelector('#timeline li');
  check(await readPage.locator('button:has-text("Replay"), button:has-text("Discard")').count() === 0,
    'nor on the timeline');
  const refused = await readPage.evaluate(async ([token, id]) => {
    const response = await fetch(`/v1/dead-letters/${id}/discard`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', 'Idempotency-Key': 'read-only' },
      body: '{}',
    });
    return response.status;
  }, [READ_TOKEN, premature]);
  check(refused === 403, `the API refuses a read-only token's action: ${refused}`);
  check(readErrors.length === 0, `no console errors for the reader: ${readErrors.join(' | ')}`);
} catch (error) {
  failed = true;
  console.error(String(error && error.stack ? error.stack : error));
} finally {
  await browser.close();
}
process.exit(failed ? 1 : 0);
