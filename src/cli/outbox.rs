//! `order-service outbox status|stop-marking|start-marking|rebase`: the relay's cursor, through
//! the application's commands, against `DATABASE_URL` (docs/operations/upgrading.md "Upgrading:
//! the outbox as a log", docs/operations/runbook.md "OrderServiceOutboxRelayRefuses").

use clap::{Args, Subcommand};

use crate::app::App;
use crate::config::Config;
use crate::store;

#[derive(Debug, Args)]
pub struct OutboxArgs {
    #[command(subcommand)]
    command: OutboxCommand,
}

#[derive(Debug, Subcommand)]
enum OutboxCommand {
    /// Where the relay's cursor stands, and whether relays mark published rows for 0.2.0.
    Status,
    /// Relays stop marking published rows: run once no instance of 0.2.0 runs or will run again.
    StopMarking,
    /// Relays mark published rows again, and what the cursor passed is marked now: run before
    /// rolling back to 0.2.0.
    StartMarking,
    /// After a restore into a cluster whose transaction ids are lower than the log's positions:
    /// repositions the log so that the relay goes on (with every relay stopped).
    Rebase,
}

pub async fn run(args: OutboxArgs, config: &Config) -> anyhow::Result<()> {
    let database = store::database(&config.database_url, config.lock_timeout())?;
    let app = App::new(database.pool(1));
    match args.command {
        OutboxCommand::Status => {
            let status = app.outbox_status().await?;
            println!(
                "cursor: position {} row {} (moved at {})",
                status.cursor_pos, status.cursor_id, status.cursor_moved_at
            );
            println!("next transaction id: {}", status.next_xid);
            println!(
                "marks published rows for 0.2.0: {}",
                if status.marks_published { "yes" } else { "no" }
            );
            if status.ahead() {
                println!(
                    "the cursor is ahead of the server's transaction ids: run `order-service outbox rebase`"
                );
            }
        }
        OutboxCommand::StopMarking => {
            let was = app.stop_marking_published().await?;
            println!(
                "relays no longer mark published rows{}",
                if was { "" } else { " (they did not)" }
            );
        }
        OutboxCommand::StartMarking => {
            let (was, marked) = app.start_marking_published().await?;
            println!(
                "relays mark published rows{}; {marked} rows the cursor passed marked now",
                if was { " (they did already)" } else { "" }
            );
        }
        OutboxCommand::Rebase => match app.rebase_outbox().await? {
            Some(moved) => println!("{moved} rows repositioned; the relay goes on from them"),
            None => {
                println!("the cursor is not ahead of the server's transaction ids: nothing done")
            }
        },
    }
    Ok(())
}
