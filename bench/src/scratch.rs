//! Everything the bench creates on the shared servers — databases and broker topologies with
//! names of its own run — registered as it is made, so [`Scratch::cleanup`] removes all of it at
//! the end, whether the run succeeded or not.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use anyhow::Context;
use lapin::options::ConfirmSelectOptions;
use lapin::{Channel, Connection};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{ConnectOptions, PgConnection, PgPool};

use order_service::amqp::{Topology, connect};
use order_service::config::{self, AmqpConfig};
use order_service::store;

/// A database of this run.
#[derive(Debug, Clone)]
pub struct Db {
    pub name: String,
    pub url: String,
}

impl Db {
    pub fn options(&self) -> anyhow::Result<PgConnectOptions> {
        Ok(store::connect_options(
            &self.url,
            config::DEFAULT_LOCK_TIMEOUT,
        )?)
    }

    /// A connection of its own (closed by the caller, or when dropped).
    pub async fn connect(&self) -> anyhow::Result<PgConnection> {
        Ok(self.options()?.connect().await?)
    }

    /// The database `name` on the server `server_url` points at (whichever database it names).
    pub fn on_server(server_url: &str, name: String) -> Self {
        let (base, query) = match server_url.split_once('?') {
            Some((base, query)) => (base, format!("?{query}")),
            None => (server_url, String::new()),
        };
        let base = base.rsplit_once('/').map_or(base, |(server, _)| server);
        Self {
            url: format!("{base}/{name}{query}"),
            name,
        }
    }

    /// Creates it if missing and migrates it to the service's schema.
    pub async fn migrate(&self) -> anyhow::Result<()> {
        store::prepare_database(&self.options()?)
            .await
            .with_context(|| format!("cannot create database {}", self.name))
    }

    /// The statement that drops it, whoever is still connected.
    pub fn drop_statement(&self) -> sqlx::AssertSqlSafe<String> {
        drop_statement(&self.name)
    }
}

fn drop_statement(name: &str) -> sqlx::AssertSqlSafe<String> {
    sqlx::AssertSqlSafe(format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"))
}

pub struct Scratch {
    pub run_id: String,
    pub amqp_url: String,
    pub admin: PgPool,
    /// Confirm-mode channel the bench publishes inbound events on.
    pub channel: Channel,
    connection: Connection,
    server_url: String,
    pub log_dir: PathBuf,
    databases: Mutex<Vec<String>>,
    topologies: Mutex<Vec<Topology>>,
}

impl Scratch {
    pub async fn open(postgres_url: &str, amqp_url: &str) -> anyhow::Result<Self> {
        let run_id = uuid::Uuid::new_v4().simple().to_string()[..12].to_owned();
        let admin = PgPoolOptions::new()
            .max_connections(2)
            .acquire_timeout(Duration::from_secs(10))
            .connect(postgres_url)
            .await
            .with_context(|| format!("cannot reach Postgres at {postgres_url}"))?;
        if let Ok(data_directory) = sqlx::query_scalar::<_, String>("SHOW data_directory")
            .fetch_one(&admin)
            .await
        {
            crate::resources::find_postmaster(&data_directory);
        }
        let connection = connect(amqp_url, "order-service-bench")
            .await
            .with_context(|| format!("cannot reach RabbitMQ at {amqp_url}"))?;
        let channel = connection.create_channel().await?;
        channel
            .confirm_select(ConfirmSelectOptions::default())
            .await?;
        let log_dir = std::env::temp_dir().join(format!("order-service-bench-{run_id}"));
        std::fs::create_dir_all(&log_dir)?;
        Ok(Self {
            run_id,
            amqp_url: amqp_url.to_owned(),
            admin,
            channel,
            connection,
            server_url: postgres_url.to_owned(),
            log_dir,
            databases: Mutex::new(vec![]),
            topologies: Mutex::new(vec![]),
        })
    }

    /// Names (and registers) a database; the service creates it when started on it.
    pub fn database(&self, label: &str) -> Db {
        let name = format!("order_service_bench_{}_{label}", self.run_id);
        if let Ok(mut names) = self.databases.lock() {
            names.push(name.clone());
        }
        Db::on_server(&self.server_url, name)
    }

    /// A database created and migrated now, with the service's schema.
    pub async fn migrated_database(&self, label: &str) -> anyhow::Result<Db> {
        let db = self.database(label);
        db.migrate().await?;
        Ok(db)
    }

    /// Drops a database of this run now (cleanup would otherwise do it at the end).
    pub async fn drop_database(&self, db: &Db) -> anyhow::Result<()> {
        sqlx::query(db.drop_statement())
            .execute(&self.admin)
            .await?;
        if let Ok(mut names) = self.databases.lock() {
            names.retain(|n| n != &db.name);
        }
        Ok(())
    }

    /// The service's AMQP settings with names of this run (the service's defaults otherwise), and
    /// its topology, declared now so events can be published before the service starts.
    pub async fn topology(&self, label: &str) -> anyhow::Result<(AmqpConfig, Topology)> {
        let prefix = format!("bench-{}-{label}", self.run_id);
        // Only the names are the run's own; every other setting is the service's default.
        let config = AmqpConfig {
            enabled: true,
            ..AmqpConfig::default()
        }
        .named_under(&prefix);
        let topology = Topology::from_config(&config);
        if let Ok(mut all) = self.topologies.lock() {
            all.push(topology.clone());
        }
        topology
            .declare(&self.channel)
            .await
            .context("cannot declare the bench's topology")?;
        Ok((config, topology))
    }

    /// Deletes a topology of this run now.
    pub async fn delete_topology(&self, topology: &Topology) -> anyhow::Result<()> {
        topology.delete(&self.channel).await?;
        if let Ok(mut all) = self.topologies.lock() {
            all.retain(|t| t.inbox != topology.inbox);
        }
        Ok(())
    }

    /// Drops every database and deletes every exchange and queue this run still has. Best effort:
    /// reports what it could not remove and goes on.
    pub async fn cleanup(&self) {
        let databases = self.databases.lock().map(|d| d.clone()).unwrap_or_default();
        for name in databases {
            if let Err(e) = sqlx::query(drop_statement(&name))
                .execute(&self.admin)
                .await
            {
                eprintln!("warning: could not drop database {name}: {e}");
            }
        }
        let topologies = self
            .topologies
            .lock()
            .map(|t| t.clone())
            .unwrap_or_default();
        if !topologies.is_empty() {
            // The publishing channel may have been closed by an error: use a fresh one.
            match self.connection.create_channel().await {
                Ok(channel) => {
                    for topology in topologies {
                        if let Err(e) = topology.delete(&channel).await {
                            eprintln!("warning: could not delete {}: {e}", topology.inbox);
                        }
                    }
                }
                Err(e) => eprintln!("warning: could not delete the bench's queues: {e}"),
            }
        }
        let _ = self.connection.close(200, "bye".into()).await;
        self.admin.close().await;
    }
}
