//! Wiring: build the service (the HTTP listener, the AMQP consumer, the outbox relay and the
//! dead-letter parker around one [`App`]) from its configuration, bind the listener, run until
//! shutdown.

use std::time::Duration;

use anyhow::Context;
use axum::Router;
use sqlx::PgPool;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::amqp::inbound::INBOUND_TYPES;
use crate::amqp::{Consumer, EventStream, Parker, Relay};

use crate::app::App;
use crate::auth::{self, AuthMode};
use crate::config::Config;
use crate::domain::ReplayRoutes;
use crate::health::Readiness;
use crate::http::{self, ApiState, ConnectionLimits, HttpSettings, OpenPaths};
use crate::{expiry_sweep, release, store, telemetry};

/// The running process: what `order-service serve` starts. Tests build one on port 0.
pub struct Service {
    listener: TcpListener,
    router: Router,
    pool: PgPool,
    app: App,
    config: Config,
    consumer: Option<Consumer>,
    relay: Option<Relay>,
    parker: Option<Parker>,
}

impl Service {
    /// Decides who may call the API (refusing to start an unprotected API on a reachable
    /// address), prepares the database (waiting for Postgres if it is not up yet), then binds
    /// the listener.
    pub async fn build(config: Config, shutdown: &CancellationToken) -> anyhow::Result<Self> {
        tracing::info!(
            version = release::VERSION,
            revision = release::REVISION,
            "starting"
        );
        let http_settings = http_settings(&config)?;
        let database = store::database(&config.database_url, config.lock_timeout())
            .context("DATABASE_URL is not a valid Postgres URL")?;
        wait_for_database(&database, shutdown).await?;
        let pool = database.pool(config.db_max_connections);
        // Replays go where the topology binds the inbox: every inbound type.
        let app = App::new(pool.clone()).replaying_to(
            &config.amqp.inbound_exchange,
            ReplayRoutes::new(INBOUND_TYPES),
        );
        let readiness = Readiness::default();
        let consumer = config.amqp.enabled.then(|| {
            Consumer::new(
                app.clone(),
                &config.amqp_url,
                config.amqp.clone(),
                readiness.register("consumer"),
            )
            .with_max_message_bytes(config.limits.amqp_max_message_bytes)
        });
        let relay = config.amqp.enabled.then(|| {
            Relay::new(
                database
                    .clone()
                    .map_hosts(store::outbox::relay_connection)
                    .pool(store::outbox::RELAY_CONNECTIONS),
                &config.amqp_url,
                config.amqp.outbound_exchange.clone(),
                config.relay.clone(),
                readiness.register("relay"),
            )
            .woken_by(app.relay_wakeup())
            .keeping_events_in(EventStream::from_config(&config.amqp))
        });
        let parker = config.amqp.enabled.then(|| {
            Parker::new(
                app.clone(),
                &config.amqp_url,
                &config.amqp,
                readiness.register("parker"),
            )
            .with_max_message_bytes(config.limits.amqp_max_message_bytes)
        });
        let state = ApiState {
            app: app.clone(),
            metrics: telemetry::metrics(),
            readiness,
        };
        release::export_build_info();
        let listener = TcpListener::bind(config.http_addr)
            .await
            .with_context(|| format!("cannot listen on {}", config.http_addr))?;
        Ok(Self {
            listener,
            router: http::router_with(state, http_settings),
            pool,
            app,
            config,
            consumer,
            relay,
            parker,
        })
    }

    pub fn port(&self) -> u16 {
        self.listener.local_addr().map(|a| a.port()).unwrap_or(0)
    }

    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Serves the API and runs the background components until `shutdown` fires, then stops
    /// taking work, lets in-flight requests and messages finish (bounded by the grace period)
    /// and closes the pool.
    pub async fn run_until(self, shutdown: CancellationToken) -> anyhow::Result<()> {
        let address = self.listener.local_addr()?;
        tracing::info!(%address, docs = %format!("http://{address}/docs"), "serving");
        let grace = self.config.shutdown_grace();
        let background = TaskTracker::new();
        if let Some(consumer) = self.consumer {
            background.spawn(consumer.run(shutdown.clone()));
        }
        if let Some(relay) = self.relay {
            background.spawn(relay.run(shutdown.clone()));
        }
        if let Some(parker) = self.parker {
            background.spawn(parker.run(shutdown.clone()));
        }
        background.spawn(expiry_sweep::run(
            self.app.clone(),
            self.config.expiry.clone(),
            shutdown.clone(),
        ));
        background.close();

        let stop = shutdown.clone();
        let server = http::serve(
            self.listener,
            self.router,
            ConnectionLimits::from(&self.config.limits),
            async move {
                stop.cancelled().await;
                tracing::info!("shutting down: finishing in-flight requests and messages");
            },
        );
        let everything = async {
            server.await;
            // The server returns only once shutting down; make sure the rest stops too.
            shutdown.cancel();
            background.wait().await;
        };
        let deadline = async {
            shutdown.cancelled().await;
            tokio::time::sleep(grace).await;
        };
        tokio::select! {
            () = everything => {}
            () = deadline => tracing::warn!(?grace, "grace period over; dropping remaining work"),
        }
        self.pool.close().await;
        tracing::info!("stopped");
        Ok(())
    }
}

/// The HTTP side's settings; fails (and the service does not start) on unusable client
/// configuration or an unprotected API on a reachable address.
fn http_settings(config: &Config) -> anyhow::Result<HttpSettings> {
    let auth = auth::from_config(&config.auth, config.http_addr)?;
    match &auth {
        AuthMode::Enforced(clients) => {
            let ids: Vec<&str> = clients
                .client_ids()
                .into_iter()
                .map(|id| id.as_str())
                .collect();
            tracing::info!(clients = ?ids, "API authentication enforced");
        }
        AuthMode::Open if config.auth.disabled => tracing::warn!(
            address = %config.http_addr,
            "AUTHENTICATION IS DISABLED (AUTH_DISABLED=true): anyone who can reach this address \
             can read and change every order"
        ),
        AuthMode::Open => tracing::warn!(
            address = %config.http_addr,
            "NO API CLIENTS CONFIGURED: the API is open to every local caller (allowed only on a \
             loopback address); configure AUTH_CLIENTS or AUTH_CLIENTS_FILE before exposing it"
        ),
    }
    // A request waiting on the database moves no byte: the idle timeout must not cut it first.
    if config.limits.idle_timeout() <= config.limits.request_timeout() {
        anyhow::bail!("HTTP_IDLE_TIMEOUT_SECS must exceed HTTP_REQUEST_TIMEOUT_MS");
    }
    let open_paths = OpenPaths::new(&config.auth.open_paths).map_err(anyhow::Error::msg)?;
    Ok(HttpSettings {
        auth,
        open_paths,
        limits: http::Limits::from(&config.limits),
    })
}

async fn wait_for_database(
    database: &store::Database,
    shutdown: &CancellationToken,
) -> anyhow::Result<()> {
    let mut delay = Duration::from_millis(250);
    loop {
        match store::prepare(database).await {
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
