//! A minimal HTTP/1.1 client (one request per connection) for suites that drive the service's
//! binary over TCP.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

pub async fn get(port: u16, path: &str) -> std::io::Result<(u16, String)> {
    send(
        port,
        &format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"),
    )
    .await
}

pub async fn post(port: u16, path: &str, key: &str, body: &str) -> std::io::Result<(u16, String)> {
    post_with(port, path, key, body, &[]).await
}

/// [`post`] with more headers.
pub async fn post_with(
    port: u16,
    path: &str,
    key: &str,
    body: &str,
    headers: &[(&str, &str)],
) -> std::io::Result<(u16, String)> {
    let extra: String = headers
        .iter()
        .map(|(name, value)| format!("{name}: {value}\r\n"))
        .collect();
    send(
        port,
        &format!(
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
             Idempotency-Key: {key}\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ),
    )
    .await
}

async fn send(port: u16, request: &str) -> std::io::Result<(u16, String)> {
    let exchange = async {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).await?;
        stream.write_all(request.as_bytes()).await?;
        let mut response = Vec::new();
        stream.read_to_end(&mut response).await?;
        let text = String::from_utf8_lossy(&response).into_owned();
        let status = text
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| std::io::Error::other("no status line"))?;
        let body = text
            .split_once("\r\n\r\n")
            .map(|(_, b)| b.to_owned())
            .unwrap_or_default();
        Ok((status, body))
    };
    tokio::time::timeout(Duration::from_secs(15), exchange)
        .await
        .map_err(|_| std::io::Error::other("timed out"))?
}
