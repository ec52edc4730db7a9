//! What `order-service dead-letters` prints: for people, tables and fields with every value's
//! control characters escaped (`table`); for scripts (`--json`), the REST API's shapes.

use anyhow::Context;

use super::table::{Table, cut, printable};
use crate::app::Outcome;
use crate::app::dead_letters::DeadLetterDetails;
use crate::app::dead_letters::dead_letter_views::{DeadLetterList, DeadLetterView};

/// One action's answer: the dead letter (JSON), or a line saying what was done.
pub(super) fn acted(
    what: &str,
    outcome: &Outcome<DeadLetterDetails>,
    json: bool,
) -> anyhow::Result<String> {
    let view = DeadLetterView::from(outcome.value());
    if json {
        return to_json(&view);
    }
    Ok(format!("{what} {}{}\n", view.id, replay_note(outcome)))
}

/// Says when nothing new was done: the key had already done it.
pub(super) fn replay_note<T>(outcome: &Outcome<T>) -> &'static str {
    match outcome {
        Outcome::Applied(_) => "",
        Outcome::AlreadyApplied(_) | Outcome::Replayed(_) => {
            " (done before under this Idempotency-Key; nothing new was done)"
        }
    }
}

pub(super) fn to_json<T: serde::Serialize>(value: &T) -> anyhow::Result<String> {
    let mut text = serde_json::to_string_pretty(value).context("JSON output")?;
    text.push('\n');
    Ok(text)
}

pub(super) fn list_table(list: &DeadLetterList) -> String {
    let mut table = Table::new(&[
        "ID",
        "STATUS",
        "TIMES",
        "TYPE",
        "LAST DEAD-LETTERED",
        "REASON",
    ]);
    for letter in &list.items {
        table.row(&[
            &letter.id.to_string(),
            as_text(&letter.status).as_str(),
            &letter.times.to_string(),
            letter.event_type.as_deref().unwrap_or("-"),
            &letter.last_dead_lettered_at.to_rfc3339(),
            &cut(&letter.reason, 100),
        ]);
    }
    let mut out = table.render();
    if let Some(next) = &list.next {
        out.push_str(&format!("next page: --after {next}\n"));
    }
    out
}

pub(super) fn details(view: &DeadLetterView) -> String {
    let mut fields = Table::new(&["id", &view.id.to_string()]);
    for (name, value) in [
        ("status", as_text(&view.status)),
        ("times", view.times.to_string()),
        ("reason", view.reason.clone()),
        (
            "type",
            view.event_type.clone().unwrap_or_else(|| "-".into()),
        ),
        (
            "event id",
            view.event_id.clone().unwrap_or_else(|| "-".into()),
        ),
        (
            "message id",
            view.message_id.clone().unwrap_or_else(|| "-".into()),
        ),
        ("routing key", view.routing_key.clone()),
        ("first", view.first_dead_lettered_at.to_rfc3339()),
        ("last", view.last_dead_lettered_at.to_rfc3339()),
        ("headers", view.headers.to_string()),
    ] {
        fields.row(&[name, &value]);
    }
    let cut_note = if view.body_truncated { ", cut" } else { "" };
    let mut out = fields.render();
    out.push_str(&format!(
        "body ({} bytes{cut_note}):\n{}\n",
        view.body_bytes,
        printable(&view.body)
    ));
    let actions = view.actions.as_deref().unwrap_or_default();
    if !actions.is_empty() {
        let mut table = Table::new(&["ACTION", "BY", "AT"]);
        for action in actions {
            table.row(&[
                as_text(&action.action).as_str(),
                &action.by,
                &action.at.to_rfc3339(),
            ]);
        }
        out.push_str("actions:\n");
        out.push_str(&table.render());
    }
    out
}

/// A view enum as its JSON string (`parked`, `replay`, …).
fn as_text<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}
