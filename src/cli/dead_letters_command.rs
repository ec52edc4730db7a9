//! `order-service dead-letters …`: list, show, replay and discard parked dead letters from the
//! command line. An action is the REST request it stands for, with cause `cli` (recorded as the
//! client `cli`), an Idempotency-Key generated per invocation unless `--idempotency-key` is given,
//! and the fingerprint of the equivalent `POST /v1/dead-letters/…`: a retry with the same key
//! answers as a REST retry does. Each invocation starts a trace of its own, which a replayed
//! message continues.

use clap::{Args, Subcommand, ValueEnum};
use serde_json::{Value, json};
use uuid::Uuid;

use super::output::{acted, details, list_table, replay_note, to_json};
use crate::amqp::inbound::INBOUND_TYPES;
use crate::app::dead_letters::dead_letter_views::{BulkReplayView, DeadLetterList, DeadLetterView};
use crate::app::dead_letters::{DeadLetterFilter, DeadLetterPageRequest};
use crate::app::{App, fingerprint, page_tokens};
use crate::config::Config;
use crate::domain::{
    BoundedText, Cause, DeadLetterAction, DeadLetterId, DeadLetterStatus, IdempotencyKey,
    ReplayRoutes, action_note, reason_filter, type_filter,
};
use crate::store;
use crate::telemetry::TraceContext;

#[derive(Debug, Args)]
pub struct DeadLettersArgs {
    #[command(subcommand)]
    command: DeadLettersCommand,
    /// Print the REST API's JSON instead of a table.
    #[arg(long, global = true)]
    json: bool,
}

#[derive(Debug, Subcommand)]
enum DeadLettersCommand {
    /// List dead letters, newest first.
    List {
        #[arg(long, value_enum)]
        status: Option<Status>,
        /// Only those whose reason contains this text (case-insensitive); `premature:` gives a class.
        #[arg(long)]
        reason: Option<String>,
        /// Only those of this event type.
        #[arg(long = "type")]
        event_type: Option<String>,
        /// Page size, 1–100.
        #[arg(long, default_value_t = page_tokens::DEFAULT_PAGE)]
        limit: u16,
        /// The `next` cursor of the previous page.
        #[arg(long)]
        after: Option<String>,
    },
    /// Show one dead letter: its reason, headers, body and the actions taken on it.
    Show { id: DeadLetterId },
    /// Replay parked dead letters: the ids given, or every one matching --reason and --type (at
    /// most 1000 per call), or --all.
    Replay {
        ids: Vec<DeadLetterId>,
        #[arg(long, conflicts_with = "ids")]
        reason: Option<String>,
        #[arg(long = "type", conflicts_with = "ids")]
        event_type: Option<String>,
        /// Every parked dead letter (at most 1000 per call).
        #[arg(long, conflicts_with_all = ["ids", "reason", "event_type"])]
        all: bool,
        #[arg(long)]
        idempotency_key: Option<String>,
    },
    /// Discard a parked dead letter.
    Discard {
        id: DeadLetterId,
        /// Why: kept with the action and shown with the dead letter (1–500 characters).
        #[arg(long)]
        note: Option<String>,
        #[arg(long)]
        idempotency_key: Option<String>,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Status {
    Parked,
    Replayed,
    Discarded,
}

impl From<Status> for DeadLetterStatus {
    fn from(status: Status) -> Self {
        match status {
            Status::Parked => DeadLetterStatus::Parked,
            Status::Replayed => DeadLetterStatus::Replayed,
            Status::Discarded => DeadLetterStatus::Discarded,
        }
    }
}

/// Runs the subcommand against the configured database; what it prints goes to stdout.
pub async fn run(args: DeadLettersArgs, config: &Config) -> anyhow::Result<()> {
    let database = store::database(&config.database_url, config.lock_timeout())?;
    let app = App::new(database.pool(2)).replaying_to(
        &config.amqp.inbound_exchange,
        ReplayRoutes::new(INBOUND_TYPES),
    );
    let trace = TraceContext::start();
    let json = args.json;
    match args.command {
        DeadLettersCommand::List {
            status,
            reason,
            event_type,
            limit,
            after,
        } => {
            let (limit, after) =
                page_tokens::page(Some(limit), after.as_deref()).map_err(anyhow::Error::from)?;
            let filter = DeadLetterFilter {
                status: status.map(Into::into),
                reason: reason.as_deref().map(reason_filter).transpose()?,
                event_type: event_type.as_deref().map(type_filter).transpose()?,
                ids: None,
            };
            let page = app
                .dead_letters(DeadLetterPageRequest {
                    filter,
                    limit,
                    after,
                })
                .await?;
            let list = DeadLetterList {
                items: page.items.iter().map(DeadLetterView::from).collect(),
                next: page.next.map(|c| page_tokens::encode(&c)),
            };
            print!(
                "{}",
                if json {
                    to_json(&list)?
                } else {
                    list_table(&list)
                }
            );
        }
        DeadLettersCommand::Show { id } => {
            let view = DeadLetterView::from(&app.dead_letter(id).await?);
            print!(
                "{}",
                if json {
                    to_json(&view)?
                } else {
                    details(&view)
                }
            );
        }
        DeadLettersCommand::Replay {
            ids,
            reason,
            event_type,
            all,
            idempotency_key,
        } => {
            let key = key(idempotency_key.as_deref())?;
            if let [id] = ids.as_slice() {
                let action = DeadLetterAction::Replay;
                return act_on_one(&app, *id, action, key, None, &trace, json).await;
            }
            if ids.is_empty() && reason.is_none() && event_type.is_none() && !all {
                anyhow::bail!("name dead letters to replay: ids, --reason, --type, or --all");
            }
            let mut body = serde_json::Map::new();
            if !ids.is_empty() {
                body.insert(
                    "ids".into(),
                    json!(ids.iter().map(DeadLetterId::as_uuid).collect::<Vec<Uuid>>()),
                );
            }
            if let Some(reason) = &reason {
                body.insert("reason".into(), json!(reason));
            }
            if let Some(event_type) = &event_type {
                body.insert("type".into(), json!(event_type));
            }
            let filter = DeadLetterFilter {
                status: None,
                reason: reason.as_deref().map(reason_filter).transpose()?,
                event_type: event_type.as_deref().map(type_filter).transpose()?,
                ids: (!ids.is_empty()).then_some(ids),
            };
            let cause = cause(key, "/v1/dead-letters/replay", &Value::Object(body));
            let outcome = app.replay_dead_letters(filter, &cause, &trace).await?;
            let view = BulkReplayView::from(*outcome.value());
            if json {
                print!("{}", to_json(&view)?);
            } else {
                println!(
                    "replayed {} dead letters{}",
                    view.replayed,
                    replay_note(&outcome)
                );
                if view.skipped > 0 {
                    println!(
                        "skipped {} whose routing key the inbox is not bound to (they stay parked)",
                        view.skipped
                    );
                }
            }
        }
        DeadLettersCommand::Discard {
            id,
            note,
            idempotency_key,
        } => {
            let key = key(idempotency_key.as_deref())?;
            let note = note.as_deref().map(action_note).transpose()?;
            let action = DeadLetterAction::Discard;
            act_on_one(&app, id, action, key, note.as_ref(), &trace, json).await?;
        }
    }
    Ok(())
}

/// Replays or discards one dead letter, as `POST /v1/dead-letters/{id}/{action}` would.
async fn act_on_one(
    app: &App,
    id: DeadLetterId,
    action: DeadLetterAction,
    key: IdempotencyKey,
    note: Option<&BoundedText>,
    trace: &TraceContext,
    json: bool,
) -> anyhow::Result<()> {
    let path = format!("/v1/dead-letters/{id}/{action}");
    // The body the API would have been sent: the fingerprint a retry with the key must match.
    let body = match note {
        Some(note) => json!({"note": note.as_str()}),
        None => json!({}),
    };
    let cause = cause(key, &path, &body);
    let outcome = app
        .act_on_dead_letter(id, action, note, &cause, trace)
        .await?;
    print!("{}", acted(action.status().as_ref(), &outcome, json)?);
    Ok(())
}

/// The key given, or a fresh one, said on stderr so that the operator can retry with it.
fn key(given: Option<&str>) -> anyhow::Result<IdempotencyKey> {
    let key = match given {
        Some(key) => IdempotencyKey::parse(key)?,
        None => IdempotencyKey::parse(&format!("cli-{}", Uuid::now_v7()))?,
    };
    eprintln!("idempotency key: {key} (pass --idempotency-key {key} to retry this action)");
    Ok(key)
}

/// The cause of an action: the command line, with the fingerprint of the REST request it stands
/// for.
fn cause(key: IdempotencyKey, path: &str, body: &Value) -> Cause {
    Cause::Cli {
        key,
        fingerprint: fingerprint::of_request("POST", path, body),
    }
}
