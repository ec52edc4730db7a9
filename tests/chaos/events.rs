//! Clauses 2 and 3 of the definition at the top of `check.rs`, on one order's outbox rows and the
//! copies of its events the subscriber captured: pure functions, so they are tested here too.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::check::Outbox;
use crate::cluster::Captured;
use crate::model::Expected;

const REFUND_REQUIRED: &str = "order.refund_required";
const REFUNDED: &str = "order.refunded";

fn version(event: &Captured) -> i64 {
    event.body["data"]["version"].as_i64().unwrap_or(0)
}

/// The event types that are counted (all but `order.refund_required`), sorted.
fn counted<'a>(types: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut types: Vec<String> = types
        .filter(|t| *t != REFUND_REQUIRED)
        .map(str::to_owned)
        .collect();
    types.sort();
    types
}

/// Every difference in the events of one order. `refunds` maps each refund id to the version
/// of the history row that recorded it.
pub fn check(
    outbox: &[Outbox],
    captured: &[&Captured],
    refunds: &BTreeMap<&str, Option<i64>>,
    want: &Expected,
) -> Vec<String> {
    let mut diffs = vec![];
    // Invariant 4: the model's events, each published.
    let types = counted(outbox.iter().map(|o| o.event_type.as_str()));
    if types != want.events {
        diffs.push(format!(
            "outbox events: expected {:?}, got {types:?}",
            want.events
        ));
    }
    if outbox.iter().any(|o| !o.published) {
        diffs.push("an outbox row was never published".into());
    }

    // Every event captured at least once, nothing captured that was not committed.
    let first = first_copies(captured, &mut diffs);
    let committed: HashSet<String> = outbox.iter().map(|o| o.event_id.to_string()).collect();
    for event in outbox {
        if !first.contains_key(event.event_id.to_string().as_str()) {
            diffs.push(format!(
                "{} {} was never received",
                event.event_type, event.event_id
            ));
        }
    }
    for id in first.keys().filter(|id| !committed.contains(**id)) {
        diffs.push(format!("received {id}, which no outbox row holds"));
    }
    let mut received: Vec<&Captured> = first.into_values().collect();
    received.sort_by_key(|c| version(c));
    let types = counted(received.iter().map(|c| c.routing_key.as_str()));
    if types != want.events {
        diffs.push(format!(
            "received events: expected {:?}, got {types:?}",
            want.events
        ));
    }

    // Clause 2: one order.refunded per refund id, at the version that recorded it.
    for (refund_id, at) in refunds {
        let announced = received
            .iter()
            .filter(|c| c.routing_key == REFUNDED && Some(version(c)) == *at)
            .count();
        if announced != 1 {
            diffs.push(format!(
                "refund {refund_id} (v{at:?}) announced {announced} times"
            ));
        }
    }

    // Clause 3: order.refund_required exactly where the flag turns on.
    diffs.extend(refund_required_consistent(&received, want.refund_required));
    diffs
}

/// The first copy of each message, by id. Every copy of a message must be identical, and the
/// first copies must arrive in version order (invariant 4: a redelivered copy may come late, a
/// new event may not overtake an older one of the same order).
fn first_copies<'a>(
    captured: &[&'a Captured],
    diffs: &mut Vec<String>,
) -> HashMap<&'a str, &'a Captured> {
    let mut first: HashMap<&str, &Captured> = HashMap::new();
    let mut last_version = 0;
    for copy in captured {
        match first.get(copy.message_id.as_str()) {
            Some(original) if original.body != copy.body => {
                diffs.push(format!(
                    "message {} published with two bodies",
                    copy.message_id
                ));
            }
            Some(_) => {}
            None => {
                if version(copy) < last_version {
                    diffs.push(format!(
                        "{} (v{}) published after v{last_version}",
                        copy.routing_key,
                        version(copy)
                    ));
                }
                last_version = version(copy);
                first.insert(&copy.message_id, copy);
            }
        }
    }
    first
}

/// Walks the events (one copy each) in version order, tracking `data.refund_required`: an
/// `order.refund_required` exactly at each false→true step, an `order.refunded` at each
/// true→false step, and the model's flag at the end.
fn refund_required_consistent(received: &[&Captured], want: bool) -> Vec<String> {
    let mut diffs = vec![];
    let mut by_version: BTreeMap<i64, Vec<&Captured>> = BTreeMap::new();
    for event in received {
        by_version.entry(version(event)).or_default().push(event);
    }
    let mut flag = false;
    for (version, events) in by_version {
        let data = &events[0].body["data"];
        if events.iter().any(|e| &e.body["data"] != data) {
            diffs.push(format!("the events of v{version} carry different orders"));
        }
        let Some(now) = data["refund_required"].as_bool() else {
            diffs.push(format!("v{version} carries no refund_required"));
            continue;
        };
        let has = |t: &str| events.iter().any(|e| e.routing_key == t);
        match (flag, now, has(REFUND_REQUIRED)) {
            (false, true, false) => diffs.push(format!(
                "refund_required turned on at v{version} without {REFUND_REQUIRED}"
            )),
            (before, after, true) if before || !after => diffs.push(format!(
                "{REFUND_REQUIRED} at v{version}, where the flag went {before} -> {after}"
            )),
            (true, false, _) if !has(REFUNDED) => diffs.push(format!(
                "refund_required turned off at v{version} without {REFUNDED}"
            )),
            _ => {}
        }
        flag = now;
    }
    if flag != want {
        diffs.push(format!(
            "the events leave refund_required {flag}, the model {want}"
        ));
    }
    diffs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(routing_key: &str, version: i64, refund_required: bool) -> Captured {
        Captured {
            message_id: format!("{routing_key}/{version}"),
            routing_key: routing_key.into(),
            body: json!({"data": {"version": version, "refund_required": refund_required}}),
        }
    }

    fn walk(events: &[Captured], want: bool) -> Vec<String> {
        refund_required_consistent(&events.iter().collect::<Vec<_>>(), want)
    }

    fn order_of(events: &[Captured]) -> Vec<String> {
        let mut diffs = vec![];
        first_copies(&events.iter().collect::<Vec<_>>(), &mut diffs);
        diffs
    }

    #[test]
    fn a_late_copy_is_no_inversion_but_a_new_event_overtaking_an_older_one_is() {
        let redelivered = [
            event("order.created", 1, false),
            event("order.paid", 2, false),
            event("order.created", 1, false),
            event("order.shipped", 3, false),
        ];
        assert_eq!(order_of(&redelivered), Vec::<String>::new());
        let inverted = [
            event("order.created", 1, false),
            event("order.shipped", 3, false),
            event("order.paid", 2, false),
        ];
        assert_eq!(
            order_of(&inverted),
            vec!["order.paid (v2) published after v3".to_owned()]
        );
    }

    #[test]
    fn the_flag_may_turn_on_and_off_as_often_as_refunds_and_payments_race() {
        let events = [
            event("order.created", 1, false),
            event("order.paid", 3, true),
            event(REFUND_REQUIRED, 3, true),
            event(REFUNDED, 4, false),
            event(REFUND_REQUIRED, 6, true),
        ];
        assert_eq!(walk(&events, true), Vec::<String>::new());
        // A refund first: the flag never turns on, and no event says it did.
        let events = [event("order.created", 1, false), event(REFUNDED, 2, false)];
        assert_eq!(walk(&events, false), Vec::<String>::new());
    }

    #[test]
    fn a_flag_turned_on_silently_or_announced_without_turning_on_is_a_violation() {
        let silent = [
            event("order.created", 1, false),
            event("order.paid", 2, true),
        ];
        assert_eq!(walk(&silent, true).len(), 1);
        let twice = [
            event("order.created", 1, false),
            event(REFUND_REQUIRED, 2, true),
            event(REFUND_REQUIRED, 3, true),
        ];
        assert_eq!(walk(&twice, true).len(), 1);
        let off_by_a_payment = [
            event("order.created", 1, false),
            event(REFUND_REQUIRED, 2, true),
            event("order.paid", 3, false),
        ];
        assert_eq!(walk(&off_by_a_payment, false).len(), 1);
        let wrong_end = [event("order.created", 1, false)];
        assert_eq!(walk(&wrong_end, true).len(), 1);
    }
}
