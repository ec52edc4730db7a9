//! Wiring: build the application from its configuration, bind the listener, run until shutdown.

use std::future::Future;
use std::time::Duration;

use anyhow::Context;
use axum::Router;
use sqlx::PgPool;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::app::App;
use crate::config::Config;
use crate::http::{self, AppState};
use crate::{store, telemetry};

pub struct Application {
    listener: TcpListener,
    router: Router,
    pool: PgPool,
    config: Config,
}

impl Application {
    /// Prepares the database (waiting for Postgres if it is not up yet), then binds the listener.
    pub async fn build(config: Config, shutdown: &CancellationToken) -> anyhow::Result<Self> {
        let options = store::connect_options(&config.database_url, config.lock_timeout())
            .context("DATABASE_URL is not a valid Postgres URL")?;
        wait_for_database(&options, shutdown).await?;
        let pool = store::pool(options, config.db_max_connections);
        let state = AppState {
            app: App::new(pool.clone()),
            metrics: telemetry::metrics(),
            broker: None,
        };
        let listener = TcpListener::bind(config.http_addr)
            .await
            .with_context(|| format!("cannot listen on {}", config.http_addr))?;
        Ok(Self {
            listener,
            router: http::router(state),
            pool,
            config,
        })
    }

    pub fn port(&self) -> u16 {
        self.listener.local_addr().map(|a| a.port()).unwrap_or(0)
    }

    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Serves until `shutdown` fires, then lets in-flight requests finish (bounded by the grace
    /// period) and closes the pool.
    pub async fn run_until(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        let address = self.listener.local_addr()?;
        tracing::info!(%address, docs = %format!("http://{address}/docs"), "serving");
        let grace = self.config.shutdown_grace();
        let (stopping_tx, stopping_rx) = tokio::sync::oneshot::channel::<()>();
        let server = axum::serve(self.listener, self.router).with_graceful_shutdown(async move {
            shutdown.await;
            tracing::info!("shutting down: finishing in-flight requests");
            let _ = stopping_tx.send(());
        });
        let server = async { server.await.context("HTTP server failed") };
        let deadline = async {
            let _ = stopping_rx.await;
            tokio::time::sleep(grace).await;
        };
        tokio::select! {
            result = server => result?,
            () = deadline => tracing::warn!(?grace, "grace period over; dropping remaining requests"),
        }
        self.pool.close().await;
        tracing::info!("stopped");
        Ok(())
    }
}

async fn wait_for_database(
    options: &sqlx::postgres::PgConnectOptions,
    shutdown: &CancellationToken,
) -> anyhow::Result<()> {
    let mut delay = Duration::from_millis(250);
    loop {
        match store::prepare_database(options).await {
            Ok(()) => return Ok(()),
            Err(store::StoreError::Unavailable(cause)) => {
                tracing::warn!(%cause, retry_in = ?delay, "postgres is not reachable yet");
            }
            Err(e) => return Err(e).context("cannot prepare the database"),
        }
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            () = shutdown.cancelled() => anyhow::bail!("stopped while waiting for postgres"),
        }
        delay = (delay * 2).min(Duration::from_secs(10));
    }
}

/// Resolves on SIGINT (Ctrl-C) or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = terminate => {}
    }
}
