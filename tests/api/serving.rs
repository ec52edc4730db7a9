//! Serving over TCP: a connection that does not send its request in time is closed, connections
//! beyond the cap wait until one closes, and shutdown lets in-flight requests finish.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use order_service::http::ConnectionLimits;

use crate::helpers::{TestApp, serve_tcp};

/// Bounds how long a test waits for the server to act; not a performance assertion.
const PATIENCE: Duration = Duration::from_secs(10);

struct Served {
    address: std::net::SocketAddr,
    shutdown: CancellationToken,
    server: JoinHandle<()>,
    _app: TestApp,
}

async fn serve(limits: ConnectionLimits) -> Served {
    let app = TestApp::spawn().await;
    let (address, shutdown, server) = serve_tcp(app.router.clone(), limits).await;
    Served {
        address,
        shutdown,
        server,
        _app: app,
    }
}

/// Reads until the server closes the connection (or `PATIENCE` runs out: `None`).
async fn until_closed(stream: &mut TcpStream) -> Option<String> {
    let mut answer = Vec::new();
    match tokio::time::timeout(PATIENCE, stream.read_to_end(&mut answer)).await {
        Ok(_) => Some(String::from_utf8_lossy(&answer).into_owned()),
        Err(_) => None,
    }
}

const HALF_A_REQUEST: &[u8] =
    b"POST /v1/orders HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n";
const LIVENESS: &[u8] = b"GET /health/live HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n";

#[tokio::test]
async fn a_connection_that_sends_half_a_request_is_closed_after_the_header_read_timeout() {
    let served = serve(ConnectionLimits {
        header_read_timeout: Duration::from_millis(200),
        ..ConnectionLimits::default()
    })
    .await;
    let mut slow = TcpStream::connect(served.address).await.unwrap();
    slow.write_all(HALF_A_REQUEST).await.unwrap();

    let answer = until_closed(&mut slow).await;

    let answer = answer.expect("the half-sent connection is closed");
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 408"),
        "{answer}"
    );
    // A whole request is still served.
    let mut client = TcpStream::connect(served.address).await.unwrap();
    client.write_all(LIVENESS).await.unwrap();
    let answer = until_closed(&mut client).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

#[tokio::test]
async fn a_kept_alive_connection_waiting_for_its_next_request_is_closed_in_time_too() {
    let served = serve(ConnectionLimits {
        header_read_timeout: Duration::from_millis(200),
        ..ConnectionLimits::default()
    })
    .await;
    let mut client = TcpStream::connect(served.address).await.unwrap();
    client
        .write_all(b"GET /health/live HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();

    let answer = until_closed(&mut client).await;

    let answer = answer.expect("the idle kept-alive connection is closed");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

#[tokio::test]
async fn a_connection_on_which_nothing_moves_is_closed_after_the_idle_timeout() {
    // The head may take a minute: only the idle timeout can close this connection in time.
    let served = serve(ConnectionLimits {
        header_read_timeout: Duration::from_secs(60),
        idle_timeout: Duration::from_millis(300),
        ..ConnectionLimits::default()
    })
    .await;
    let mut silent = TcpStream::connect(served.address).await.unwrap();
    silent.write_all(HALF_A_REQUEST).await.unwrap();

    let answer = until_closed(&mut silent).await;

    assert_eq!(
        answer.as_deref(),
        Some(""),
        "the silent connection is closed"
    );
}

#[tokio::test]
async fn connections_beyond_the_cap_wait_until_an_open_one_closes() {
    let served = serve(ConnectionLimits {
        max_connections: 1,
        ..ConnectionLimits::default()
    })
    .await;
    let mut first = TcpStream::connect(served.address).await.unwrap();
    first.write_all(HALF_A_REQUEST).await.unwrap();
    let mut second = TcpStream::connect(served.address).await.unwrap();
    second.write_all(LIVENESS).await.unwrap();

    let mut byte = [0u8; 1];
    let while_first_is_open =
        tokio::time::timeout(Duration::from_millis(500), second.read(&mut byte)).await;
    assert!(
        while_first_is_open.is_err(),
        "the second connection was served while the first held the only slot"
    );

    drop(first);
    let answer = until_closed(&mut second).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

#[tokio::test]
async fn on_shutdown_the_request_in_flight_finishes_new_connections_are_refused_and_idle_ones_closed()
 {
    let served = serve(ConnectionLimits::default()).await;
    let mut idle = TcpStream::connect(served.address).await.unwrap();
    idle.write_all(b"GET /health/live HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let mut head = [0u8; 12];
    idle.read_exact(&mut head).await.unwrap();
    assert_eq!(&head, b"HTTP/1.1 200");
    // A request in flight: its head is read and the server waits for its body (it asks for it
    // with 100 Continue once it starts reading).
    let body = r#"{"customer_id": "c-1", "amount_minor": 100, "currency": "EUR"}"#;
    let mut in_flight = TcpStream::connect(served.address).await.unwrap();
    in_flight
        .write_all(
            format!(
                "POST /v1/orders HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n\
                 idempotency-key: k-shutdown\r\nexpect: 100-continue\r\n\
                 content-length: {}\r\n\r\n",
                body.len()
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    let mut continue_line = [0u8; 12];
    in_flight.read_exact(&mut continue_line).await.unwrap();
    assert_eq!(&continue_line, b"HTTP/1.1 100");

    served.shutdown.cancel();

    order_service_testkit::eventually("the listener to close", PATIENCE, || async {
        TcpStream::connect(served.address)
            .await
            .is_err()
            .then_some(())
    })
    .await;
    assert!(
        until_closed(&mut idle).await.is_some(),
        "the idle kept-alive connection is closed"
    );
    in_flight.write_all(body.as_bytes()).await.unwrap();
    let answer = until_closed(&mut in_flight).await.unwrap();
    assert!(answer.contains("HTTP/1.1 201"), "{answer}");
    tokio::time::timeout(PATIENCE, served.server)
        .await
        .expect("the server returns once its connections are done")
        .unwrap();
}
