//! The protocol as built, checked for every interleaving within the CI bounds: every invariant
//! holds in every reachable state, and every example the model must reach is reached.

use std::collections::BTreeSet;
use std::time::Instant;

use order_service_model::{INVARIANTS, Protocol, Variant, trace};
use stateright::{Checker, Model};

/// Checks `model` exhaustively; returns the examples it reached.
fn check(name: &str, model: &Protocol) -> BTreeSet<&'static str> {
    println!("{name}: {}", model.bounds());
    let started = Instant::now();
    let checker = model.clone().checker().threads(2).spawn_bfs().join();
    println!(
        "{name}: {} states ({} visited), max depth {}, in {:.1?}",
        checker.unique_state_count(),
        checker.state_count(),
        checker.max_depth(),
        started.elapsed()
    );
    for invariant in INVARIANTS {
        if let Some(path) = checker.discovery(invariant) {
            panic!("{name}: {invariant} fails:\n{}", trace(model, &path));
        }
    }
    model
        .properties()
        .into_iter()
        .filter(|p| !p.expectation.discovery_is_failure())
        .filter(|p| checker.discovery(p.name).is_some())
        .map(|p| p.name)
        .collect()
}

#[test]
fn every_invariant_holds_in_every_interleaving_within_the_bounds() {
    let model = Protocol::races(Variant::Faithful);
    let mut reached = check("races", &model);
    reached.extend(check("faults", &Protocol::faults(Variant::Faithful)));
    for property in model.properties() {
        if !property.expectation.discovery_is_failure() {
            assert!(
                reached.contains(property.name),
                "the model never reaches \"{}\"",
                property.name
            );
        }
    }
}
