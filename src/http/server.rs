//! Serving the router over TCP (HTTP/1.1, as before): hyper with the limits `axum::serve` does not
//! set. A request head must arrive within the header-read timeout (hyper's timer also runs while a
//! kept-alive connection waits for its next request), a connection on which no byte moves either
//! way for the idle timeout is closed (a client that stops reading its answer), and at most
//! `max_connections` are open at once: beyond that the server stops accepting, so new connections
//! wait in the kernel's listen backlog until one closes (docs/operations/configuration.md "Limits
//! and timeouts"). Graceful shutdown: stop accepting, let in-flight requests finish, close idle
//! connections; the caller bounds the wait.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::time::Instant;

use crate::config::{
    DEFAULT_HTTP_HEADER_READ_TIMEOUT_MS, DEFAULT_HTTP_IDLE_TIMEOUT_SECS,
    DEFAULT_HTTP_MAX_CONNECTIONS, LimitsConfig,
};

/// What one connection may cost.
#[derive(Debug, Clone)]
pub struct ConnectionLimits {
    pub header_read_timeout: Duration,
    pub idle_timeout: Duration,
    pub max_connections: usize,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            header_read_timeout: Duration::from_millis(DEFAULT_HTTP_HEADER_READ_TIMEOUT_MS),
            idle_timeout: Duration::from_secs(DEFAULT_HTTP_IDLE_TIMEOUT_SECS),
            max_connections: DEFAULT_HTTP_MAX_CONNECTIONS,
        }
    }
}

impl From<&LimitsConfig> for ConnectionLimits {
    fn from(config: &LimitsConfig) -> Self {
        Self {
            header_read_timeout: config.header_read_timeout(),
            idle_timeout: config.idle_timeout(),
            max_connections: config.max_connections,
        }
    }
}

/// Serves `router` on `listener` until `shutdown` resolves, then stops accepting and returns
/// once every open connection has finished its in-flight request and closed.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()>,
) {
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let graceful = GracefulShutdown::new();
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    tokio::pin!(shutdown);
    loop {
        // A slot first: at the cap the listener is not polled, and connections queue in the
        // kernel's backlog rather than taking file descriptors of this process.
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => slot,
            () = &mut shutdown => break,
        };
        let Ok(slot) = slot else { break };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(error) => {
                    // Out of file descriptors, say: back off instead of spinning.
                    tracing::warn!(%error, "cannot accept a connection; retrying in 1 s");
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_secs(1)) => continue,
                        () = &mut shutdown => break,
                    }
                }
            },
            () = &mut shutdown => break,
        };
        // Small answers: do not wait to coalesce them.
        let _ = stream.set_nodelay(true);
        let (stream, activity) = Watched::new(stream);
        let connection = graceful.watch(builder.serve_connection(
            TokioIo::new(stream),
            TowerToHyperService::new(router.clone()),
        ));
        let idle_timeout = limits.idle_timeout;
        tokio::spawn(async move {
            tokio::select! {
                // An error here is the client's (gone, too slow, malformed); hyper answered
                // what it could.
                _ = connection => {}
                () = activity.idle_for(idle_timeout) => {
                    tracing::debug!(?idle_timeout, "closing an idle connection");
                }
            }
            drop(slot);
        });
    }
    drop(listener);
    graceful.shutdown().await;
}

/// When bytes last moved on a connection.
#[derive(Clone)]
struct Activity {
    start: Instant,
    last_ms: Arc<AtomicU64>,
}

impl Activity {
    fn touch(&self) {
        let elapsed = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ms.store(elapsed, Ordering::Relaxed);
    }

    /// Resolves once nothing has moved for `limit`.
    async fn idle_for(&self, limit: Duration) {
        loop {
            let last = self.start + Duration::from_millis(self.last_ms.load(Ordering::Relaxed));
            let deadline = last + limit;
            if Instant::now() >= deadline {
                return;
            }
            tokio::time::sleep_until(deadline).await;
        }
    }
}

/// A TCP stream that records its [`Activity`].
struct Watched {
    inner: TcpStream,
    activity: Activity,
}

impl Watched {
    fn new(inner: TcpStream) -> (Self, Activity) {
        let activity = Activity {
            start: Instant::now(),
            last_ms: Arc::new(AtomicU64::new(0)),
        };
        (
            Self {
                inner,
                activity: activity.clone(),
            },
            activity,
        )
    }
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.touch();
        }
        polled
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        polled
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
