//! A counterexample as a reader follows it: the sequence of actions, each with what it did.

use stateright::Model;
use stateright::Path;

use crate::protocol::{Action, Protocol};
use crate::state::State;

/// The steps of `path`, numbered, one line each.
pub fn trace(model: &Protocol, path: &Path<State, Action>) -> String {
    let mut lines = Vec::new();
    let mut state = model.init_states().remove(0);
    for action in path.clone().into_actions() {
        let (next, note) = model.step(&state, &action);
        lines.push(format!("{:>3}. {note}", lines.len() + 1));
        state = next;
    }
    lines.join("\n")
}
