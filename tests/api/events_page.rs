//! `/docs/events` in a real browser: headless Chromium loads the page from the service over
//! loopback with every other destination unreachable, runs the vendored renderer, and the
//! rendered DOM must name every event the service consumes and publishes. Chromium is a CI
//! dependency (`.ci/run` installs Debian's `chromium`); without it this test fails, saying so.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::Request;
use axum::middleware::{self, Next};
use strum::IntoEnumIterator;

use order_service::amqp::inbound::INBOUND_TYPES;
use order_service::domain::EventType;
use order_service::http::ConnectionLimits;

use crate::helpers::{TestApp, serve_tcp};

/// Where Debian's package puts it; `CHROMIUM` names another binary.
const DEFAULT_CHROMIUM: &str = "/usr/bin/chromium";
/// Bounds the whole browser run; not a performance assertion.
const PATIENCE: Duration = Duration::from_secs(120);

#[tokio::test]
async fn the_events_page_renders_every_event_offline_in_a_real_browser() {
    let chromium = chromium();
    let app = TestApp::spawn().await;
    let requested = Arc::new(Mutex::new(Vec::<(String, u16)>::new()));
    let log = requested.clone();
    let router =
        app.router
            .clone()
            .layer(middleware::from_fn(move |request: Request, next: Next| {
                let log = log.clone();
                async move {
                    let path = request.uri().path().to_owned();
                    let response = next.run(request).await;
                    log.lock().unwrap().push((path, response.status().as_u16()));
                    response
                }
            }));
    let (address, shutdown, server) = serve_tcp(router, ConnectionLimits::default()).await;
    let profile = Profile::new();

    let output = tokio::time::timeout(
        PATIENCE,
        tokio::process::Command::new(&chromium)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                &format!("--user-data-dir={}", profile.0.display()),
                // Loopback goes direct (Chromium never proxies it); everything else to a port
                // nothing listens on, so no request can leave the machine.
                &format!("--proxy-server=http://127.0.0.1:{}", closed_port()),
                // Console messages (CSP violations, failed loads, script errors) on stderr.
                "--enable-logging=stderr",
                "--v=0",
                "--virtual-time-budget=30000",
                "--dump-dom",
                &format!("http://{address}/docs/events"),
            ])
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("chromium finished in time")
    .expect("chromium runs");
    shutdown.cancel();
    let _ = server.await;

    let dom = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "chromium failed: {stderr}");
    let console: Vec<&str> = stderr.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "the page logged: {console:#?}");
    assert!(dom.contains("order-service events"), "no title in: {dom}");
    let outbound = EventType::iter().map(<&str>::from);
    for event in INBOUND_TYPES.iter().copied().chain(outbound) {
        assert!(dom.contains(event), "{event} is not on the rendered page");
    }
    assert!(dom.contains("order-service.inbox") && dom.contains("order-service.dlx"));
    // Everything the page used came from this service and was there (the browser may also have
    // asked for the icon, `/favicon.ico`, which is there too).
    let answered = requested.lock().unwrap().clone();
    let failed: Vec<_> = answered
        .iter()
        .filter(|(_, status)| *status >= 400)
        .collect();
    assert!(failed.is_empty(), "failed requests: {failed:?}");
    let mut requested: Vec<String> = answered.into_iter().map(|(path, _)| path).collect();
    requested.retain(|path| path != "/favicon.ico");
    requested.sort();
    requested.dedup();
    assert_eq!(
        requested,
        [
            "/asyncapi.json",
            "/docs/events",
            "/docs/events/asyncapi.css",
            "/docs/events/asyncapi.js",
            "/docs/events/events.js",
        ]
    );
}

fn chromium() -> PathBuf {
    let path = PathBuf::from(std::env::var("CHROMIUM").unwrap_or_else(|_| DEFAULT_CHROMIUM.into()));
    assert!(
        path.is_file(),
        "{} not found: this test needs a headless Chromium (Debian: `apt-get install -y \
         chromium`, which .ci/run does; or set CHROMIUM to its path)",
        path.display()
    );
    path
}

/// A loopback port nothing listens on (bound, then released).
fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// Chromium's profile directory, of this test alone, removed at the end.
struct Profile(PathBuf);

impl Profile {
    fn new() -> Self {
        let dir =
            std::env::temp_dir().join(format!("order-service-chromium-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).expect("a profile directory");
        Self(dir)
    }
}

impl Drop for Profile {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
