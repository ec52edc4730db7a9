//! A stand-in OpenTelemetry collector on 127.0.0.1: it answers every OTLP/HTTP request with 200
//! and keeps what came, decoding the spans of `POST /v1/traces` (protobuf). Its connections are
//! bounded in size and it stops with the test.

use std::sync::{Arc, Mutex};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use prost::Message;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// The largest request body the collector reads; larger ones end the connection.
const MAX_BODY: usize = 16 * 1024 * 1024;

/// One request as it arrived.
#[derive(Debug, Clone)]
pub struct Received {
    pub method: String,
    pub path: String,
    pub content_type: Option<String>,
    pub spans: Vec<ExportedSpan>,
}

/// One span of an export request.
#[derive(Debug, Clone)]
pub struct ExportedSpan {
    pub service_name: Option<String>,
    pub name: String,
    pub trace_id: Vec<u8>,
    pub span_id: Vec<u8>,
    pub parent_span_id: Vec<u8>,
}

pub struct Collector {
    /// What `OTEL_EXPORTER_OTLP_ENDPOINT` should name: the base URL, without `/v1/traces`.
    pub endpoint: String,
    received: Arc<Mutex<Vec<Received>>>,
    task: JoinHandle<()>,
}

impl Collector {
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let endpoint = format!("http://{}", listener.local_addr().expect("address"));
        let received = Arc::new(Mutex::new(Vec::new()));
        let keep = received.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream, keep.clone()));
            }
        });
        Self {
            endpoint,
            received,
            task,
        }
    }

    pub fn received(&self) -> Vec<Received> {
        self.received.lock().expect("lock").clone()
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<ExportedSpan> {
        self.received().into_iter().flat_map(|r| r.spans).collect()
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Reads requests from one connection (kept alive) until it closes or misbehaves.
async fn serve(stream: TcpStream, received: Arc<Mutex<Vec<Received>>>) {
    let mut stream = BufReader::new(stream);
    while let Some(request) = read_request(&mut stream).await {
        received.lock().expect("lock").push(request);
        let answer =
            "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
        if stream.get_mut().write_all(answer.as_bytes()).await.is_err() {
            return;
        }
    }
}

async fn read_request(stream: &mut BufReader<TcpStream>) -> Option<Received> {
    let mut line = String::new();
    stream.read_line(&mut line).await.ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let path = parts.next()?.to_owned();
    let mut length = 0;
    let mut content_type = None;
    loop {
        let mut header = String::new();
        stream.read_line(&mut header).await.ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':')?;
        match name.trim().to_ascii_lowercase().as_str() {
            "content-length" => length = value.trim().parse().ok()?,
            "content-type" => content_type = Some(value.trim().to_owned()),
            _ => {}
        }
    }
    if length > MAX_BODY {
        return None;
    }
    let mut body = vec![0; length];
    stream.read_exact(&mut body).await.ok()?;
    let spans = if path == "/v1/traces" {
        decode(&body)
    } else {
        vec![]
    };
    Some(Received {
        method,
        path,
        content_type,
        spans,
    })
}

fn decode(body: &[u8]) -> Vec<ExportedSpan> {
    let Ok(request) = ExportTraceServiceRequest::decode(body) else {
        return vec![];
    };
    let mut spans = vec![];
    for resource_spans in request.resource_spans {
        let service_name = resource_spans.resource.and_then(|resource| {
            resource
                .attributes
                .into_iter()
                .find(|attribute| attribute.key == "service.name")
                .and_then(|attribute| match attribute.value?.value? {
                    AnyValue::StringValue(name) => Some(name),
                    _ => None,
                })
        });
        for scope in resource_spans.scope_spans {
            for span in scope.spans {
                spans.push(ExportedSpan {
                    service_name: service_name.clone(),
                    name: span.name,
                    trace_id: span.trace_id,
                    span_id: span.span_id,
                    parent_span_id: span.parent_span_id,
                });
            }
        }
    }
    spans
}
