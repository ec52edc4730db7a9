//! The model can fail: each deliberately broken variant of the protocol breaks the invariant
//! that guards the place it changes, and the checker prints the counterexample as a trace. The
//! search is breadth-first on one thread, so each trace is a shortest one.

use std::collections::BTreeSet;

use order_service_model::{
    ACKNOWLEDGED_WRITE_KEPT, EFFECT_AT_MOST_ONCE, INVARIANTS, KEY_IS_ONE_REQUEST,
    PUBLISHED_AT_LEAST_ONCE, PUBLISHED_IN_VERSION_ORDER, Protocol, Variant, trace,
};
use stateright::{Checker, HasDiscoveries, Model};

/// Checks `variant` under the CI bounds until `invariant` fails; prints and returns its trace.
fn counterexample(variant: Variant, invariant: &'static str) -> String {
    let model = Protocol::races(variant);
    let checker = model
        .clone()
        .checker()
        .finish_when(HasDiscoveries::AnyOf(BTreeSet::from([invariant])))
        .spawn_bfs()
        .join();
    let path = checker
        .discovery(invariant)
        .unwrap_or_else(|| panic!("{variant:?} never breaks \"{invariant}\""));
    let trace = trace(&model, &path);
    println!(
        "{variant:?} breaks \"{invariant}\" ({} states):\n{trace}\n",
        checker.unique_state_count()
    );
    trace
}

#[test]
fn without_the_version_guard_a_write_overwrites_an_acknowledged_one() {
    let trace = counterexample(Variant::NoVersionGuard, ACKNOWLEDGED_WRITE_KEPT);
    assert!(trace.contains("Applied"), "{trace}");
}

#[test]
fn without_the_ledger_s_unique_key_one_transfer_is_recorded_twice() {
    let trace = counterexample(Variant::NoLedgerUnique, EFFECT_AT_MOST_ONCE);
    assert!(trace.contains("transfer: 0"), "{trace}");
}

#[test]
fn positions_by_transaction_id_alone_publish_a_later_version_first() {
    let trace = counterexample(Variant::PosIsOwnXid, PUBLISHED_IN_VERSION_ORDER);
    assert!(trace.contains("relay"), "{trace}");
}

#[test]
fn a_key_checked_per_table_lets_two_requests_take_effect() {
    let trace = counterexample(Variant::KeyPerTable, KEY_IS_ONE_REQUEST);
    assert!(
        trace.contains("REST r0") && trace.contains("REST r1"),
        "{trace}"
    );
}

#[test]
fn a_relay_ignoring_the_horizon_skips_a_late_commit() {
    let trace = counterexample(Variant::NoHorizon, PUBLISHED_AT_LEAST_ONCE);
    assert!(trace.contains("relay"), "{trace}");
}

/// The history's `UNIQUE (order_id, version)` is a version guard of its own: without the
/// UPDATE's guard, every invariant still holds. (So the broken variant above drops both.)
#[test]
fn the_history_s_version_key_alone_still_guards_every_write() {
    let model = Protocol::races(Variant::UpdateGuardOnlyDropped);
    let checker = model.clone().checker().threads(2).spawn_bfs().join();
    for invariant in INVARIANTS {
        if let Some(path) = checker.discovery(invariant) {
            panic!("{invariant} fails:\n{}", trace(&model, &path));
        }
    }
}
