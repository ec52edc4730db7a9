//! The order state machine: statuses, history kinds, and the one transition table
//! (`docs/contract.md#transitions`).

use strum::{AsRefStr, Display, EnumString, IntoStaticStr};

/// Where an order is in its life. The strum names are how the store writes a status (and how
/// logs and metrics show it); what the API and events show is `app::views::OrderStatusView`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Display, EnumString, AsRefStr, IntoStaticStr)]
#[strum(serialize_all = "SCREAMING_SNAKE_CASE")]
pub enum OrderStatus {
    PendingPayment,
    Paid,
    Shipped,
    Cancelled,
}

/// What a history row records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Display, EnumString, AsRefStr, IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum TransitionKind {
    Created,
    PaymentRecorded,
    Paid,
    Shipped,
    Cancelled,
    /// Money went back; the status stays.
    RefundRecorded,
}

/// A command that may move an order to another status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    Place,
    /// A payment that brings `paid_minor` to at least the order's amount.
    CompletePayment,
    Ship,
    Cancel,
}

/// Why the table refuses a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The order is already where the command leads: a replay if the content matches.
    AlreadyThere,
    /// The command no longer (or not yet) applies: the order's status stays as it is.
    NoChange,
    /// The command is not legal from the current status.
    Invalid { to: OrderStatus },
}

/// The transition table: where `command` takes an order in status `from` (`None`: no order yet).
pub fn transition(from: Option<OrderStatus>, command: Command) -> Result<OrderStatus, Refusal> {
    use OrderStatus::*;
    match (from, command) {
        (None, Command::Place) => Ok(PendingPayment),
        (Some(_), Command::Place) => Err(Refusal::AlreadyThere),
        (Some(PendingPayment), Command::CompletePayment) => Ok(Paid),
        // Money is a fact: it is recorded, but it never moves a paid, shipped or cancelled order.
        (Some(Paid | Shipped | Cancelled), Command::CompletePayment) => Err(Refusal::NoChange),
        (Some(Paid), Command::Ship) => Ok(Shipped),
        (Some(Shipped), Command::Ship) => Err(Refusal::AlreadyThere),
        (Some(PendingPayment | Cancelled), Command::Ship) => Err(Refusal::Invalid { to: Shipped }),
        (Some(PendingPayment), Command::Cancel) => Ok(Cancelled),
        (Some(Cancelled), Command::Cancel) => Err(Refusal::AlreadyThere),
        (Some(Paid | Shipped), Command::Cancel) => Err(Refusal::Invalid { to: Cancelled }),
        (None, Command::CompletePayment | Command::Ship | Command::Cancel) => {
            Err(Refusal::NoChange)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::OrderStatus::*;
    use super::*;

    const STATUSES: [Option<OrderStatus>; 5] = [
        None,
        Some(PendingPayment),
        Some(Paid),
        Some(Shipped),
        Some(Cancelled),
    ];
    const COMMANDS: [Command; 4] = [
        Command::Place,
        Command::CompletePayment,
        Command::Ship,
        Command::Cancel,
    ];

    fn expected(from: Option<OrderStatus>, command: Command) -> Result<OrderStatus, Refusal> {
        match (from, command) {
            (None, Command::Place) => Ok(PendingPayment),
            (Some(_), Command::Place) => Err(Refusal::AlreadyThere),
            (Some(PendingPayment), Command::CompletePayment) => Ok(Paid),
            (Some(Paid), Command::Ship) => Ok(Shipped),
            (Some(Shipped), Command::Ship) => Err(Refusal::AlreadyThere),
            (Some(PendingPayment), Command::Ship) => Err(Refusal::Invalid { to: Shipped }),
            (Some(Cancelled), Command::Ship) => Err(Refusal::Invalid { to: Shipped }),
            (Some(PendingPayment), Command::Cancel) => Ok(Cancelled),
            (Some(Cancelled), Command::Cancel) => Err(Refusal::AlreadyThere),
            (Some(Paid), Command::Cancel) => Err(Refusal::Invalid { to: Cancelled }),
            (Some(Shipped), Command::Cancel) => Err(Refusal::Invalid { to: Cancelled }),
            _ => Err(Refusal::NoChange),
        }
    }

    #[test]
    fn every_status_and_command_pair_follows_the_design_table() {
        for from in STATUSES {
            for command in COMMANDS {
                assert_eq!(
                    transition(from, command),
                    expected(from, command),
                    "{from:?} × {command:?}"
                );
            }
        }
    }

    #[test]
    fn the_only_legal_changes_are_the_four_arrows_of_the_design() {
        let mut arrows = vec![];
        for from in STATUSES {
            for command in COMMANDS {
                if let Ok(to) = transition(from, command) {
                    arrows.push((from, to));
                }
            }
        }
        assert_eq!(
            arrows,
            vec![
                (None, PendingPayment),
                (Some(PendingPayment), Paid),
                (Some(PendingPayment), Cancelled),
                (Some(Paid), Shipped),
            ]
        );
    }

    #[test]
    fn statuses_round_trip_through_their_wire_names() {
        for status in [PendingPayment, Paid, Shipped, Cancelled] {
            assert_eq!(status.to_string().parse::<OrderStatus>().unwrap(), status);
        }
        assert_eq!(PendingPayment.as_ref(), "PENDING_PAYMENT");
        assert_eq!(TransitionKind::PaymentRecorded.as_ref(), "payment_recorded");
    }
}
