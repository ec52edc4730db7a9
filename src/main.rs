//! The `order-service` binary: `serve` (default), `migrate`, `openapi`, `asyncapi`, `token`,
//! `dead-letters`, `outbox`.

// The service never unwraps: a failure is an error it handles or reports.
#![warn(clippy::unwrap_used, clippy::expect_used)]

use anyhow::Context;
use clap::{Parser, Subcommand};
use tokio_util::sync::CancellationToken;

use order_service::auth::{Client, Scopes, TokenDigest, generate_token};
use order_service::cli::{DeadLettersArgs, OutboxArgs};
use order_service::config::Config;
use order_service::domain::ClientId;
use order_service::startup::{Service, shutdown_signal};
use order_service::{amqp, http, store, telemetry};

/// Freed memory goes back to the system within seconds of a burst
/// (docs/hostile-input.md#memory).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[derive(Parser)]
#[command(
    name = "order-service",
    version = order_service::release::DESCRIPTION,
    about = "Owns the lifecycle of orders and the money paid for them"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    config: Config,
}

#[derive(Subcommand)]
enum Command {
    /// Run the REST API (the default).
    Serve,
    /// Create the database if missing and apply migrations, then exit.
    Migrate,
    /// Print the OpenAPI document (what openapi/openapi.json must equal).
    Openapi,
    /// Print the AsyncAPI document of the messaging contract, with the default names (what
    /// openapi/asyncapi.json must equal).
    Asyncapi,
    /// Create an API client's token: prints the token (give it to the client; it is shown only
    /// here) and the configuration line holding its SHA-256 (add it to AUTH_CLIENTS or
    /// AUTH_CLIENTS_FILE). Two lines on stdout; explanations on stderr.
    Token {
        /// The client's id: 1–64 characters of A-Z a-z 0-9 . _ @ -
        #[arg(long)]
        client: String,
        /// Comma-separated scopes.
        #[arg(long, default_value = "orders:read,orders:write")]
        scopes: String,
    },
    /// Find, show, replay and discard parked dead letters (the same commands as
    /// /v1/dead-letters, against DATABASE_URL; actions are recorded as the client `cli`).
    DeadLetters(DeadLettersArgs),
    /// The outbox relay's cursor: status, stop-marking / start-marking (published rows marked for
    /// 0.2.0, around an upgrade or a rollback), rebase (after a restore).
    Outbox(OutboxArgs),
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command.unwrap_or(Command::Serve) {
        Command::Openapi => {
            println!("{}", http::openapi_json());
            Ok(())
        }
        Command::Asyncapi => {
            println!("{}", amqp::asyncapi::to_pretty_json());
            Ok(())
        }
        Command::Token { client, scopes } => {
            let token = generate_token().context("no random source")?;
            // Parsed back from its own line so that what is printed is certain to be accepted.
            let scopes = Scopes::parse(&scopes).map_err(anyhow::Error::msg)?;
            let client = Client {
                id: ClientId::parse(&client)?,
                scopes,
            };
            let line = client.config_line(&TokenDigest::of(&token));
            order_service::auth::ClientRegistry::parse(&line, "--client")?;
            eprintln!(
                "# The token for client {} (shown once; the service keeps only its hash):",
                client.id
            );
            println!("{token}");
            eprintln!(
                "# Its line for AUTH_CLIENTS (entries separated by ';') or AUTH_CLIENTS_FILE:"
            );
            println!("{line}");
            Ok(())
        }
        Command::DeadLetters(args) => {
            order_service::cli::dead_letters_command::run(args, &cli.config).await
        }
        Command::Outbox(args) => order_service::cli::outbox::run(args, &cli.config).await,
        Command::Migrate => {
            telemetry::init_logging(cli.config.log_format);
            let database = store::database(&cli.config.database_url, cli.config.lock_timeout())?;
            store::prepare(&database).await?;
            tracing::info!("database ready");
            Ok(())
        }
        Command::Serve => {
            let telemetry = telemetry::init(cli.config.log_format)?;
            let shutdown = CancellationToken::new();
            let on_signal = shutdown.clone();
            tokio::spawn(async move {
                shutdown_signal().await;
                on_signal.cancel();
            });
            let served = async {
                let service = Service::build(cli.config, &shutdown).await?;
                service.run_until(shutdown).await
            }
            .await;
            // The spans of the last requests and messages leave before the process does.
            telemetry.shutdown().await;
            served
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn a_flag_is_accepted_after_the_subcommand() {
        let cli = Cli::try_parse_from([
            "order-service",
            "serve",
            "--amqp-url",
            "amqp://other:5672/%2f",
        ])
        .unwrap();
        assert!(matches!(cli.command, Some(Command::Serve)));
        assert_eq!(
            cli.config.amqp_url.as_slice()[0].url(),
            "amqp://other:5672/%2f"
        );
    }

    #[test]
    fn every_configuration_flag_is_global() {
        let command = Cli::command();
        let local: Vec<_> = command
            .get_arguments()
            .filter(|a| a.get_long().is_some() && !a.is_global_set())
            .filter(|a| !matches!(a.get_id().as_str(), "help" | "version"))
            .map(|a| a.get_id().to_string())
            .collect();
        assert!(local.is_empty(), "not global: {local:?}");
    }
}
