// The operator console (docs/operations/console.md): one page over the service's JSON API, with
// the operator's bearer token, kept for this tab only (sessionStorage). Every value that came
// from the service (and so, often, from a message: bodies, reasons, headers, customer ids) is
// put in the page as text nodes, never parsed as HTML (tests/api/console_page.rs checks the
// script has no HTML sink).
'use strict';

const TOKEN_KEY = 'order-service.console.token';
/** How often the overview refreshes while the tab is visible. */
const REFRESH_MS = 5000;
/** Samples the overview's charts keep (at REFRESH_MS apart: ten minutes). */
const SAMPLES = 120;
/** The most rows a dead-letter view reads, and what one bulk replay takes (the API's bound). */
const MAX_ROWS = 1000;
const PAGE = 100;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

let me = null;
let refresh = null;
const samples = { at: [], changes: [], parked: [] };

class SignedOut extends Error {}

// ---- the page ------------------------------------------------------------------------------

/** An element with attributes and children; strings become text nodes. */
function el(tag, attributes, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'class') element.className = value;
    else if (name.startsWith('on')) element.addEventListener(name.slice(2), value);
    else element.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    element.append(child instanceof Node ? child : String(child));
  }
  return element;
}

/** A link to a view of the console: a path under /console that this page renders itself (any
 * other target, such as a URL with a scheme made of a message's text, becomes the overview). */
function link(path, ...children) {
  return el('a', { href: path.startsWith('/console') ? path : '/console' }, ...children);
}

/** A fresh Idempotency-Key (`crypto.randomUUID` needs a secure context; this does not). */
function newKey() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `console-${[...bytes].map((b) => b.toString(16).padStart(2, '0')).join('')}`;
}

function notice(text, kind) {
  return el('div', { class: `notice ${kind || ''}`, role: kind === 'error' ? 'alert' : 'status' }, text);
}

function when(iso) {
  if (!iso) return '';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? String(iso) : date.toLocaleString();
}

/** `amount_minor` in `currency`, with the currency's own number of decimals. */
function money(minor, currency) {
  try {
    const format = new Intl.NumberFormat(undefined, { style: 'currency', currency });
    const digits = format.resolvedOptions().maximumFractionDigits;
    return format.format(minor / 10 ** digits);
  } catch {
    return `${minor} (minor units) ${currency}`;
  }
}

function canAct() {
  return Boolean(me && me.scopes.includes('orders:admin'));
}

function canReadDeadLetters() {
  return canAct();
}

// ---- the API -------------------------------------------------------------------------------

async function api(path, options = {}) {
  const headers = { Accept: 'application/json' };
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers.Authorization = `Bearer ${token}`;
  if (options.body !== undefined) headers['Content-Type'] = 'application/json';
  if (options.key) headers['Idempotency-Key'] = options.key;
  const response = await fetch(path, {
    method: options.method || 'GET',
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  if (response.status === 401 && path.startsWith('/v1/')) throw new SignedOut();
  const text = await response.text();
  let body = text;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    // Not JSON (the metrics): the text itself.
  }
  return { status: response.status, body };
}

/** The problem's detail, or the status, for a failed call. */
function failure(answer) {
  const detail = answer.body && typeof answer.body === 'object' ? answer.body.detail : null;
  return `The service answered ${answer.status}${detail ? `: ${detail}` : ''}`;
}

/** Every item of a paginated list, following `next` up to MAX_ROWS; and whether it stopped short. */
async function all(path, query) {
  const items = [];
  let after = null;
  for (;;) {
    const params = new URLSearchParams(query);
    params.set('limit', String(PAGE));
    if (after) params.set('after', after);
    const answer = await api(`${path}?${params}`);
    if (answer.status !== 200) throw new Error(failure(answer));
    items.push(...answer.body.items);
    after = answer.body.next;
    if (!after) return { items, complete: true };
    if (items.length >= MAX_ROWS) return { items: items.slice(0, MAX_ROWS), complete: false };
  }
}

// ---- routing -------------------------------------------------------------------------------

function go(url) {
  window.history.pushState(null, '', url);
  render();
}

/** Renders the view the URL names into a page of its own: when another render replaces it
 * meanwhile, this one goes on writing into a page no longer shown, and stops there. */
async function render() {
  clearInterval(refresh);
  refresh = null;
  const main = el('div');
  document.getElementById('main').replaceChildren(main);
  try {
    if (!me) {
      const answer = await api('/v1/me');
      if (answer.status !== 200) throw new Error(failure(answer));
      me = answer.body;
    }
    showSession();
    await view(main, window.location.pathname, new URLSearchParams(window.location.search));
  } catch (error) {
    if (!main.isConnected) return;
    if (error instanceof SignedOut) {
      me = null;
      showSession();
      signIn(main);
    } else {
      main.append(notice(String(error.message || error), 'error'));
    }
  }
}

async function view(main, path, query) {
  const order = path.match(/^\/console\/orders\/([^/]+)$/);
  const letter = path.match(/^\/console\/dead-letters\/([^/]+)$/);
  if (path === '/console' || path === '/console/') return overview(main);
  if (path === '/console/dead-letters') return deadLetters(main, query);
  if (letter) return deadLetter(main, decodeURIComponent(letter[1]));
  if (order) return timeline(main, decodeURIComponent(order[1]));
  if (path === '/console/search') return search(main, (query.get('q') || '').trim());
  main.append(el('h1', {}, 'No such page'), link('/console', 'Back to the overview'));
}

function showSession() {
  const session = document.getElementById('session');
  session.replaceChildren();
  if (!me) return;
  const signOut = el('button', {
    type: 'button',
    onclick: () => {
      sessionStorage.removeItem(TOKEN_KEY);
      me = null;
      render();
    },
  }, 'Sign out');
  session.append(el('span', { class: 'muted' }, `${me.client_id} · ${me.scopes.join(', ')} `), signOut);
}

function signIn(main) {
  const input = el('input', { type: 'password', name: 'token', autocomplete: 'off', required: true, size: 60 });
  const form = el('form', {
    id: 'sign-in',
    onsubmit: (event) => {
      event.preventDefault();
      sessionStorage.setItem(TOKEN_KEY, input.value.trim());
      render();
    },
  },
  el('label', {}, 'API token ', input), ' ', el('button', { type: 'submit', class: 'primary' }, 'Sign in'));
  main.append(
    el('h1', {}, 'Sign in'),
    el('p', {}, 'The console calls the API with your token (a bearer header), kept in this tab only.'),
    form,
  );
  input.focus();
}

// ---- overview ------------------------------------------------------------------------------

async function overview(main) {
  main.append(el('h1', {}, 'Overview'));
  const cards = el('div', { class: 'cards' });
  const charts = el('div', { class: 'cards' });
  const groups = el('div');
  main.append(cards, el('h2', {}, 'Over time'), charts, groups);
  const update = async () => {
    if (document.hidden) return;
    const [ready, metrics, summary] = await Promise.all([
      api('/health/ready'),
      api('/metrics'),
      canReadDeadLetters() ? api('/v1/dead-letters/summary') : Promise.resolve(null),
    ]);
    const sums = typeof metrics.body === 'string' ? parseMetrics(metrics.body) : {};
    sample(sums, summary);
    cards.replaceChildren(
      card('Readiness', ready.status === 200 ? 'ready' : 'not ready',
        ready.status === 200 ? 'ok' : 'bad', ready.status === 200 ? '' : (ready.body && ready.body.detail) || ''),
      card('Parked dead letters', summary && summary.status === 200 ? summary.body.parked : '—',
        summary && summary.status === 200 && summary.body.parked > 0 ? 'bad' : '',
        summary ? '' : 'needs the scope orders:admin'),
      card('Inbox waiting', sums.inbox_ready_messages ?? '—', '', 'messages no consumer holds yet'),
      card('Outbox backlog', sums.outbox_backlog ?? '—', '', 'events not yet published'),
      card('Oldest unpublished', sums.outbox_oldest_unpublished_age_seconds === undefined
        ? '—' : `${Math.round(sums.outbox_oldest_unpublished_age_seconds)} s`, '', 'age of the oldest outbox row'),
      card('Changes / s', rate(samples.changes), '', 'order changes, both doors and the timer'),
    );
    charts.replaceChildren(
      chart('Order changes per second', perSecond(samples.changes)),
      chart('Parked dead letters', samples.parked),
    );
    groups.replaceChildren();
    if (summary && summary.status === 200) groups.append(summaryTable(summary.body));
  };
  await update();
  if (!main.isConnected) return;
  const timer = setInterval(() => {
    if (!main.isConnected) {
      clearInterval(timer);
      return;
    }
    update().catch(() => {});
  }, REFRESH_MS);
  refresh = timer;
}

function card(label, value, kind, hint) {
  return el('div', { class: 'card' },
    el('div', { class: `value ${kind || ''}` }, String(value)),
    el('div', { class: 'label' }, label),
    hint ? el('div', { class: 'muted' }, hint) : null);
}

/** The sum of every series of each metric in a Prometheus text exposition. */
function parseMetrics(text) {
  const sums = {};
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const match = line.match(/^([A-Za-z_:][A-Za-z0-9_:]*)(\{.*\})?\s+(\S+)/);
    if (!match) continue;
    const value = Number(match[3]);
    if (Number.isFinite(value)) sums[match[1]] = (sums[match[1]] || 0) + value;
  }
  return sums;
}

function sample(sums, summary) {
  const keep = (series, value) => {
    series.push(value);
    if (series.length > SAMPLES) series.shift();
  };
  keep(samples.at, Date.now());
  keep(samples.changes, sums.order_changes_total ?? 0);
  keep(samples.parked, summary && summary.status === 200 ? summary.body.parked : 0);
}

/** Per-second rates between consecutive samples of a counter. */
function perSecond(counter) {
  const rates = [];
  for (let i = 1; i < counter.length; i += 1) {
    const seconds = (samples.at[i] - samples.at[i - 1]) / 1000;
    rates.push(seconds > 0 ? Math.max(0, counter[i] - counter[i - 1]) / seconds : 0);
  }
  return rates;
}

function rate(counter) {
  const rates = perSecond(counter);
  return rates.length ? rates[rates.length - 1].toFixed(1) : '—';
}

function chart(title, values) {
  const width = 360;
  const height = 80;
  const svg = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
  svg.setAttribute('class', 'chart');
  svg.setAttribute('width', String(width));
  svg.setAttribute('height', String(height));
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-label', title);
  if (values.length > 1) {
    const top = Math.max(1, ...values);
    const points = values.map((value, i) =>
      `${(i / (values.length - 1)) * width},${height - 4 - (value / top) * (height - 8)}`);
    const line = document.createElementNS('http://www.w3.org/2000/svg', 'polyline');
    line.setAttribute('points', points.join(' '));
    svg.append(line);
  }
  const last = values.length ? values[values.length - 1] : 0;
  return el('div', { class: 'card' }, el('div', { class: 'label' }, `${title}: ${Number(last).toFixed(1)}`), svg);
}

function summaryTable(summary) {
  const rows = summary.groups.map((group) => {
    const query = new URLSearchParams({ status: 'parked', reason: `${group.reason_class}:` });
    if (group.type) query.set('type', group.type);
    return el('tr', {},
      el('td', {}, group.reason_class),
      el('td', {}, group.type || '(not an envelope)'),
      el('td', {}, link(`/console/dead-letters?${query}`, String(group.count))),
      el('td', {}, when(group.last_dead_lettered_at)));
  });
  return el('div', {},
    el('h2', {}, 'Parked dead letters by reason and type'),
    rows.length
      ? el('table', {}, el('thead', {}, el('tr', {}, el('th', {}, 'Reason class'), el('th', {}, 'Type'),
        el('th', {}, 'Parked'), el('th', {}, 'Latest'))), el('tbody', {}, rows))
      : el('p', { class: 'muted' }, 'None parked.'));
}

// ---- dead letters --------------------------------------------------------------------------

/** The filters of the list, as the URL keeps them (so a filtered view can be shared). */
const FILTERS = ['status', 'reason', 'type', 'order', 'since', 'until'];

async function deadLetters(main, query) {
  main.append(el('h1', {}, 'Dead letters'));
  if (!canReadDeadLetters()) {
    main.append(notice('Reading dead letters needs a token with the scope orders:admin.'));
    return;
  }
  main.append(filterForm(query));
  const server = {};
  for (const name of ['status', 'reason', 'type']) if (query.get(name)) server[name] = query.get(name);
  const { items, complete } = await all('/v1/dead-letters', server);
  const order = (query.get('order') || '').trim().toLowerCase();
  const since = query.get('since') ? new Date(query.get('since')) : null;
  const until = query.get('until') ? new Date(query.get('until')) : null;
  const matching = items.filter((letter) => {
    const at = new Date(letter.last_dead_lettered_at);
    return (!order || letter.body.toLowerCase().includes(order))
      && (!since || at >= since) && (!until || at <= until);
  });
  const selected = new Set();
  const actions = el('div', { class: 'actions' });
  const status = el('div');
  const replayable = matching.filter((letter) => letter.status === 'parked');
  const replay = (ids) => acting(status, async () => {
    const answer = await api('/v1/dead-letters/replay', { method: 'POST', key: newKey(), body: { ids } });
    if (answer.status !== 200) {
      status.replaceChildren(notice(failure(answer), 'error'));
      return;
    }
    await render();
    document.getElementById('main').prepend(notice(
      `Replayed ${answer.body.replayed}; left parked ${answer.body.skipped} (no inbox binding for their routing key).`));
  });
  if (canAct() && replayable.length) {
    const replaySelected = el('button', {
      type: 'button',
      id: 'replay-selected',
      disabled: true,
      onclick: () => replay([...selected]),
    }, 'Replay selected');
    const replayAll = el('button', {
      type: 'button',
      id: 'replay-all',
      class: 'danger',
      onclick: () => {
        const ids = replayable.map((letter) => letter.id);
        status.replaceChildren(el('div', { class: 'notice confirm', role: 'alertdialog' },
          `Replay exactly these ${ids.length} parked dead letters (every one this filter shows)? `,
          el('button', { type: 'button', id: 'confirm-replay', class: 'primary', onclick: () => replay(ids) },
            `Replay ${ids.length}`),
          ' ',
          el('button', { type: 'button', onclick: () => status.replaceChildren() }, 'Cancel')));
      },
    }, `Replay all ${replayable.length} matching…`);
    actions.append(replaySelected, replayAll);
    actions.update = () => {
      replaySelected.disabled = selected.size === 0;
      replaySelected.textContent = `Replay selected (${selected.size})`;
    };
  }
  main.append(
    el('p', { id: 'count' }, `${matching.length} matching${complete ? '' : ` among the newest ${MAX_ROWS} read`}.`),
    actions, status);
  if (!matching.length) return;
  const rows = matching.map((letter) => el('tr', { 'data-id': letter.id },
    el('td', {}, canAct() && letter.status === 'parked'
      ? el('input', {
        type: 'checkbox',
        'aria-label': 'select',
        onchange: (event) => {
          if (event.target.checked) selected.add(letter.id); else selected.delete(letter.id);
          actions.update();
        },
      })
      : ''),
    el('td', {}, when(letter.last_dead_lettered_at)),
    el('td', {}, letter.type || '(not an envelope)'),
    el('td', { class: 'reason' }, letter.reason),
    el('td', {}, String(letter.times)),
    el('td', {}, letter.status),
    el('td', {}, link(`/console/dead-letters/${letter.id}`, 'details'))));
  main.append(el('table', { id: 'dead-letters' },
    el('thead', {}, el('tr', {}, el('th', {}, ''), el('th', {}, 'Last dead-lettered'), el('th', {}, 'Type'),
      el('th', {}, 'Reason'), el('th', {}, 'Times'), el('th', {}, 'Status'), el('th', {}, ''))),
    el('tbody', {}, rows)));
}

function filterForm(query) {
  const field = (name, label, input) => {
    input.name = name;
    input.value = query.get(name) || '';
    return el('label', {}, label, input);
  };
  const status = el('select', {},
    el('option', { value: '' }, 'any'), el('option', { value: 'parked' }, 'parked'),
    el('option', { value: 'replayed' }, 'replayed'), el('option', { value: 'discarded' }, 'discarded'));
  const form = el('form', {
    class: 'filters',
    id: 'filters',
    onsubmit: (event) => {
      event.preventDefault();
      const params = new URLSearchParams();
      for (const name of FILTERS) {
        const value = form.elements[name].value.trim();
        if (value) params.set(name, value);
      }
      go(`/console/dead-letters?${params}`);
    },
  },
  field('status', 'Status', status),
  field('reason', 'Reason contains', el('input', { placeholder: 'premature:' })),
  field('type', 'Type', el('input', { placeholder: 'payment.succeeded' })),
  field('order', 'Order id in body', el('input', { size: 38 })),
  field('since', 'Since', el('input', { type: 'datetime-local' })),
  field('until', 'Until', el('input', { type: 'datetime-local' })),
  el('button', { type: 'submit', class: 'primary' }, 'Filter'));
  return form;
}

async function deadLetter(main, id) {
  if (!canReadDeadLetters()) {
    main.append(el('h1', {}, 'Dead letter'), notice('Reading dead letters needs a token with the scope orders:admin.'));
    return;
  }
  const answer = await api(`/v1/dead-letters/${encodeURIComponent(id)}`);
  if (answer.status !== 200) {
    main.append(el('h1', {}, 'Dead letter'), notice(failure(answer), 'error'));
    return;
  }
  const letter = answer.body;
  const orderId = orderOf(letter.body);
  const status = el('div');
  const act = (action, note) => acting(status, async () => {
    const body = note ? { note } : {};
    const result = await api(`/v1/dead-letters/${letter.id}/${action}`, { method: 'POST', key: newKey(), body });
    if (result.status !== 200) {
      status.replaceChildren(notice(failure(result), 'error'));
      return;
    }
    await render();
  });
  main.append(
    el('h1', {}, 'Dead letter'),
    el('p', {}, link('/console/dead-letters?status=parked', '← parked dead letters')),
    el('dl', {},
      el('dt', {}, 'Id'), el('dd', {}, letter.id),
      el('dt', {}, 'Status'), el('dd', { id: 'letter-status' }, letter.status),
      el('dt', {}, 'Reason'), el('dd', { id: 'letter-reason' }, letter.reason),
      el('dt', {}, 'Type'), el('dd', {}, letter.type || '(not an envelope)'),
      el('dt', {}, 'Event id'), el('dd', {}, letter.event_id || ''),
      el('dt', {}, 'Routing key'), el('dd', {}, letter.routing_key),
      el('dt', {}, 'Times dead-lettered'), el('dd', {}, String(letter.times)),
      el('dt', {}, 'First / last'), el('dd', {}, `${when(letter.first_dead_lettered_at)} / ${when(letter.last_dead_lettered_at)}`),
      el('dt', {}, 'Order'), el('dd', {}, orderId ? link(`/console/orders/${encodeURIComponent(orderId)}`, orderId) : '—')),
    status);
  if (canAct() && letter.status === 'parked') {
    const reason = el('input', {
      name: 'note', required: true, maxlength: 500, size: 50, placeholder: 'why it can be dropped',
      oninput: () => reason.setCustomValidity(''),
    });
    const discard = el('form', {
      id: 'discard',
      class: 'actions',
      onsubmit: (event) => {
        event.preventDefault();
        if (!reason.value.trim()) {
          reason.setCustomValidity('Say why it can be dropped.');
          reason.reportValidity();
          return;
        }
        act('discard', reason.value.trim());
      },
    }, el('label', {}, 'Reason ', reason), el('button', { type: 'submit', class: 'danger' }, 'Discard'));
    main.append(
      el('div', { class: 'actions' },
        el('button', { type: 'button', id: 'replay', class: 'primary', onclick: () => act('replay') }, 'Replay')),
      discard);
  }
  main.append(
    el('h2', {}, `Body (${letter.body_bytes} bytes${letter.body_truncated ? ', cut' : ''})`),
    el('pre', { id: 'letter-body' }, pretty(letter.body)),
    el('h2', {}, 'Headers'),
    el('pre', {}, JSON.stringify(letter.headers, null, 2)),
    el('h2', {}, 'Actions taken'),
    (letter.actions || []).length
      ? el('table', { id: 'letter-actions' },
        el('thead', {}, el('tr', {}, el('th', {}, 'Action'), el('th', {}, 'By'), el('th', {}, 'Through'),
          el('th', {}, 'When'), el('th', {}, 'Note'), el('th', {}, 'Idempotency-Key'))),
        el('tbody', {}, letter.actions.map((action) => el('tr', {},
          el('td', {}, action.action), el('td', {}, action.by), el('td', {}, action.source), el('td', {}, when(action.at)),
          el('td', {}, action.note || ''), el('td', {}, action.idempotency_key || '(another client\'s)')))))
      : el('p', { class: 'muted' }, 'None yet.'));
}

/** Runs an action's request; a failure (the network, a signed-out token) is shown in `status`. */
async function acting(status, request) {
  try {
    await request();
  } catch (error) {
    if (error instanceof SignedOut) {
      render();
      return;
    }
    status.replaceChildren(notice(`The action failed: ${String(error.message || error)}`, 'error'));
  }
}

/** A JSON body indented; anything else as it is. */
function pretty(body) {
  try {
    return JSON.stringify(JSON.parse(body), null, 2);
  } catch {
    return body;
  }
}

/** The order a message names in `data.order_id`, if its body is an envelope. */
function orderOf(body) {
  try {
    const id = JSON.parse(body).data.order_id;
    return typeof id === 'string' && UUID.test(id) ? id : null;
  } catch {
    return null;
  }
}

// ---- orders --------------------------------------------------------------------------------

async function timeline(main, id) {
  main.append(el('h1', {}, 'Order'));
  if (!UUID.test(id)) {
    main.append(notice('An order id is a UUID.', 'error'));
    return;
  }
  // An order's records grow without bound (one busy order can hold 100k versions): each list is
  // read a page at a time, and the timeline shows what the pages read so far put in order.
  const lists = [
    records(`/v1/orders/${id}/history`, 'change', (change) => change.at, changeItem),
    records(`/v1/orders/${id}/payments`, 'money', (entry) => entry.received_at, ledgerItem),
    records(`/v1/orders/${id}/events`, 'event', (event) => event.created_at, eventItem),
  ];
  const [order, ...read] = await Promise.all([
    api(`/v1/orders/${id}`),
    ...lists.map((l) => readPage(l).catch((error) => error)),
  ]);
  if (order.status !== 200) {
    main.append(notice(failure(order), 'error'),
      el('p', {}, link(`/console/search?${new URLSearchParams({ q: id })}`, 'Search for it as a transfer or customer id')));
    return;
  }
  const failed = read.find((result) => result instanceof Error);
  if (failed) throw failed;
  const o = order.body;
  main.append(orderCard(o));
  if (canReadDeadLetters()) {
    const { items } = await all('/v1/dead-letters', {}).catch(() => ({ items: [] }));
    const naming = items.filter((l) => l.body.toLowerCase().includes(id.toLowerCase()));
    const byTime = (a, b) => Date.parse(a.first_dead_lettered_at) - Date.parse(b.first_dead_lettered_at);
    lists.push({
      kind: 'dead', buffer: naming.sort(byTime), done: true,
      at: (letter) => letter.first_dead_lettered_at, node: deadLetterItem,
    });
  }
  const list = el('ol', { class: 'timeline', id: 'timeline' });
  const shown = el('p', { id: 'timeline-shown', class: 'muted' });
  const more = el('button', { type: 'button', id: 'timeline-more' }, 'Load more');
  const status = el('div');
  let lastVersion = 0;
  /** Shows what the pages read so far put in order; returns how many entries it added. */
  const show = () => {
    const entries = merged(lists);
    for (const { from, item } of entries) {
      if (from.kind === 'change') lastVersion = item.version;
      list.append(el('li', { class: from.kind }, el('div', { class: 'when' }, when(from.at(item))), from.node(item)));
    }
    const complete = lists.every((l) => l.done && !l.buffer.length);
    const versions = lastVersion ? `Versions 1–${lastVersion} of ${o.version}` : `None of the ${o.version} versions`;
    shown.textContent = complete
      ? `All ${o.version} versions shown.`
      : `${versions} shown, among ${list.children.length} entries; more to load.`;
    more.hidden = complete;
    return entries.length;
  };
  // A click reads the next page of the list that holds the timeline back, then of the next one
  // that does, until a page's worth is shown: at most one page of each list per click, however
  // long the order.
  more.addEventListener('click', () => acting(status, async () => {
    more.disabled = true;
    try {
      const read = new Set();
      let added = 0;
      for (;;) {
        const holding = lists.filter((l) => !l.done && !l.buffer.length && !read.has(l));
        if (!holding.length || added >= PAGE) break;
        holding.forEach((l) => read.add(l));
        await Promise.all(holding.map(readPage));
        added += show();
      }
    } finally {
      more.disabled = false;
    }
  }));
  main.append(el('h2', {}, 'Timeline'), list, shown, el('div', { class: 'actions' }, more), status);
  show();
}

/** The order's state: what an operator looks for first. */
function orderCard(o) {
  const rows = [
    ['Id', o.id],
    ['Status', el('span', { id: 'order-status' }, o.status)],
    o.shipment && ['Shipment', el('span', { id: 'order-shipment' },
      `${o.shipment.carrier}, tracking number ${o.shipment.tracking_number}`)],
    o.cancellation_reason && ['Cancellation reason', el('span', { id: 'order-cancellation-reason' }, o.cancellation_reason)],
    ['Refund due', el('span', { id: 'order-refund-due', class: o.refund_due_minor > 0 ? 'bad' : '' },
      money(o.refund_due_minor, o.currency))],
    ['Version', String(o.version)],
    ['Customer', link(`/console/search?${new URLSearchParams({ q: o.customer_id })}`, o.customer_id)],
    ['Amount', money(o.amount_minor, o.currency)],
    ['Paid', money(o.paid_minor, o.currency)],
    ['Refunded', money(o.refunded_minor, o.currency)],
  ].filter(Boolean);
  return el('dl', { id: 'order' }, rows.flatMap(([term, value]) => [el('dt', {}, term), el('dd', {}, value)]));
}

/** One of an order's lists, read a page at a time: the entries read and not yet shown, where the
 * next page starts, and whether there is one. */
function records(path, kind, at, node) {
  return { path, kind, at, node, buffer: [], after: null, done: false };
}

async function readPage(list) {
  const params = new URLSearchParams({ limit: String(PAGE) });
  if (list.after) params.set('after', list.after);
  const answer = await api(`${list.path}?${params}`);
  if (answer.status !== 200) throw new Error(failure(answer));
  list.buffer.push(...answer.body.items);
  list.after = answer.body.next;
  list.done = !answer.body.next;
}

/** Takes the entries of `lists` in time order (each list keeping its own order; a tie goes to the
 * earlier list), as far as the pages read tell: it stops where a list whose next page is unread
 * has nothing left, since that page may hold an earlier entry. */
function merged(lists) {
  const out = [];
  for (;;) {
    if (lists.some((l) => !l.done && !l.buffer.length)) return out;
    let from = null;
    for (const l of lists) {
      if (l.buffer.length && (!from || Date.parse(l.at(l.buffer[0])) < Date.parse(from.at(from.buffer[0])))) from = l;
    }
    if (!from) return out;
    out.push({ from, item: from.buffer.shift() });
  }
}

function changeItem(change) {
  const cause = change.cause;
  const by = {
    api: `REST client ${cause.client_id || '?'}${cause.idempotency_key ? `, key ${cause.idempotency_key}` : ''}`,
    amqp: `AMQP event ${cause.event_id || '?'}`,
    timer: 'the payment-expiry timer',
    cli: `the command line${cause.client_id ? ` (${cause.client_id})` : ''}`,
  }[cause.source] || cause.source;
  return el('div', {},
    el('strong', {}, `v${change.version} ${change.kind}`),
    ` ${change.from || '—'} → ${change.to}`,
    el('div', { class: 'muted' }, `by ${by}${change.transfer_id ? ` · transfer ${change.transfer_id}` : ''}`));
}

function ledgerItem(entry) {
  return el('div', {},
    el('strong', {}, entry.direction === 'in' ? 'payment received' : 'refund sent'),
    ` ${money(entry.amount_minor, entry.currency)}`,
    el('div', { class: 'muted' }, `transfer ${entry.transfer_id} · through ${entry.source}`));
}

function eventItem(event) {
  const state = {
    pending: 'waiting for the relay',
    published: `published ${when(event.published_at)}`,
    set_aside: `set aside: ${event.set_aside_reason}`,
  }[event.state] || event.state;
  return el('div', {},
    el('strong', {}, `event ${event.type || '?'}`), ` (v${event.order_version ?? '?'}) ${state}`,
    el('div', { class: 'muted' }, `event id ${event.event_id}`));
}

function deadLetterItem(letter) {
  return el('div', {},
    el('strong', {}, 'dead letter '), link(`/console/dead-letters/${letter.id}`, letter.type || 'message'),
    ` (${letter.status})`,
    el('div', { class: 'muted' }, letter.reason));
}

/** What the search box found for `text` (not an order id): the order holding that transfer or
 * refund id, and the orders of that customer. */
async function search(main, text) {
  main.append(el('h1', {}, 'Search'));
  if (!text) return;
  const [byTransfer, byCustomer] = await Promise.all([
    api(`/v1/orders?${new URLSearchParams({ transfer_id: text, limit: '1' })}`),
    all('/v1/orders', { customer_id: text }).catch(() => ({ items: [], complete: true })),
  ]);
  const holder = byTransfer.status === 200 ? byTransfer.body.items[0] : null;
  main.append(el('h2', {}, `Transfer ${text}`), holder
    ? el('p', { id: 'transfer-holder' }, 'In the ledger of order ', link(`/console/orders/${holder.id}`, holder.id))
    : el('p', { class: 'muted' }, 'No order holds a payment or refund with this id.'));
  main.append(el('h2', {}, `Customer ${text}`));
  const { items, complete } = byCustomer;
  main.append(el('p', {}, `${items.length} order(s)${complete ? '' : `, the newest ${MAX_ROWS}`}.`));
  if (!items.length) return;
  main.append(el('table', { id: 'customer-orders' },
    el('thead', {}, el('tr', {}, el('th', {}, 'Order'), el('th', {}, 'Status'), el('th', {}, 'Amount'), el('th', {}, 'Created'))),
    el('tbody', {}, items.map((order) => el('tr', {},
      el('td', {}, link(`/console/orders/${order.id}`, order.id)),
      el('td', {}, order.status),
      el('td', {}, money(order.amount_minor, order.currency)),
      el('td', {}, when(order.created_at)))))));
}

// ---- start ---------------------------------------------------------------------------------

document.addEventListener('click', (event) => {
  const anchor = event.target.closest('a');
  if (!anchor || anchor.origin !== window.location.origin || !anchor.pathname.startsWith('/console')) return;
  if (event.ctrlKey || event.metaKey || event.shiftKey || event.button !== 0) return;
  event.preventDefault();
  go(anchor.pathname + anchor.search);
});
window.addEventListener('popstate', render);
document.addEventListener('visibilitychange', () => {
  if (!document.hidden && refresh) render();
});
document.getElementById('search').addEventListener('submit', (event) => {
  event.preventDefault();
  const text = document.getElementById('search-input').value.trim();
  if (!text) return;
  go(UUID.test(text) ? `/console/orders/${text.toLowerCase()}` : `/console/search?${new URLSearchParams({ q: text })}`);
});
render();
