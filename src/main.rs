//! The `order-service` binary: `serve` (default), `migrate`, `openapi`.

use clap::{Parser, Subcommand};
use tokio_util::sync::CancellationToken;

use order_service::config::Config;
use order_service::startup::{Application, shutdown_signal};
use order_service::{http, store, telemetry};

#[derive(Parser)]
#[command(
    name = "order-service",
    version,
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
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command.unwrap_or(Command::Serve) {
        Command::Openapi => {
            println!("{}", http::openapi_json());
            Ok(())
        }
        Command::Migrate => {
            telemetry::init_logging(cli.config.log_format);
            let options =
                store::connect_options(&cli.config.database_url, cli.config.lock_timeout())?;
            store::prepare_database(&options).await?;
            tracing::info!("database ready");
            Ok(())
        }
        Command::Serve => {
            telemetry::init_logging(cli.config.log_format);
            let shutdown = CancellationToken::new();
            let on_signal = shutdown.clone();
            tokio::spawn(async move {
                shutdown_signal().await;
                on_signal.cancel();
            });
            let application = Application::build(cli.config, &shutdown).await?;
            application.run_until(shutdown).await
        }
    }
}
