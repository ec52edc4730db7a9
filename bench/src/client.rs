//! A small HTTP/1.1 client over hyper-util's pooled legacy client (kept-alive connections): what
//! the REST clients, the readiness probe and the metrics scrape use.

use std::time::Duration;

use anyhow::Context;
use axum::body::Bytes;
use axum::http::{Method, Request, StatusCode, header};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

#[derive(Clone)]
pub struct Http {
    client: Client<HttpConnector, Full<Bytes>>,
    base: String,
}

/// What a request returned.
#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    pub replayed: bool,
    pub body: Bytes,
}

impl Http {
    pub fn new(port: u16, max_idle: usize) -> Self {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        let client = Client::builder(TokioExecutor::new())
            .pool_max_idle_per_host(max_idle)
            .pool_idle_timeout(Duration::from_secs(30))
            .build(connector);
        Self {
            client,
            base: format!("http://127.0.0.1:{port}"),
        }
    }

    pub async fn get(&self, path: &str) -> anyhow::Result<Answer> {
        let request = Request::builder()
            .method(Method::GET)
            .uri(format!("{}{path}", self.base))
            .body(Full::new(Bytes::new()))?;
        self.send(request).await
    }

    /// `POST path` with a JSON body and an Idempotency-Key.
    pub async fn post(&self, path: &str, key: &str, body: Vec<u8>) -> anyhow::Result<Answer> {
        let request = Request::builder()
            .method(Method::POST)
            .uri(format!("{}{path}", self.base))
            .header(header::CONTENT_TYPE, "application/json")
            .header("idempotency-key", key)
            .body(Full::new(Bytes::from(body)))?;
        self.send(request).await
    }

    async fn send(&self, request: Request<Full<Bytes>>) -> anyhow::Result<Answer> {
        let response = self
            .client
            .request(request)
            .await
            .context("HTTP request failed")?;
        let status = response.status();
        let replayed = response
            .headers()
            .get("idempotent-replayed")
            .is_some_and(|v| v.as_bytes() == b"true");
        let body = response.into_body().collect().await?.to_bytes();
        Ok(Answer {
            status,
            replayed,
            body,
        })
    }
}
