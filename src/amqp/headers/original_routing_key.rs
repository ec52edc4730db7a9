//! Where a message first arrived: the routing key a retry, a dead letter and a replay carry on.
//! Only a key the inbox binds (an inbound type) is believed: the key a message was delivered
//! with, else the service's `x-original-routing-key` (a retry comes back from its delay queue
//! with the inbox's name as its key), else the broker's `x-death` record. A publisher's forged
//! header can therefore name nothing but an inbound type, and an oversized one is never copied
//! (docs/hostile-input.md).

use lapin::types::{AMQPValue, FieldTable};

use super::header_names::{DEATH_HEADER, ORIGINAL_ROUTING_KEY_HEADER};
use crate::amqp::inbound::INBOUND_TYPES;

/// The routing key a message of `headers`, delivered with `delivered_with`, first arrived with:
/// the first of the candidates above that the inbox binds, else `delivered_with` itself.
pub fn original_routing_key(headers: Option<&FieldTable>, delivered_with: &str) -> String {
    let header = |name: &str| headers.and_then(|h| h.inner().get(name));
    let from_header = header(ORIGINAL_ROUTING_KEY_HEADER).and_then(short_text);
    let from_death = header(DEATH_HEADER).and_then(newest_death_routing_key);
    [Some(delivered_with.to_owned()), from_header, from_death]
        .into_iter()
        .flatten()
        .find(|key| INBOUND_TYPES.contains(&key.as_str()))
        .unwrap_or_else(|| delivered_with.to_owned())
}

/// The first routing key of the newest `x-death` entry.
fn newest_death_routing_key(value: &AMQPValue) -> Option<String> {
    let AMQPValue::FieldTable(death) = newest_death(value)? else {
        return None;
    };
    match death.inner().get("routing-keys") {
        Some(AMQPValue::FieldArray(keys)) => keys.as_slice().first().and_then(short_text),
        _ => None,
    }
}

/// The newest entry of an `x-death` header.
pub(in crate::amqp) fn newest_death(value: &AMQPValue) -> Option<&AMQPValue> {
    let AMQPValue::FieldArray(deaths) = value else {
        return None;
    };
    deaths.as_slice().first()
}

/// A text value short enough to be a routing key (255 bytes); longer ones are not copied.
fn short_text(value: &AMQPValue) -> Option<String> {
    let bytes = match value {
        AMQPValue::LongString(s) => s.as_bytes(),
        AMQPValue::ShortString(s) => s.as_str().as_bytes(),
        _ => return None,
    };
    if bytes.len() > 255 {
        return None;
    }
    std::str::from_utf8(bytes).ok().map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_header(value: &str) -> FieldTable {
        let mut table = FieldTable::default();
        table.insert(
            ORIGINAL_ROUTING_KEY_HEADER.into(),
            AMQPValue::LongString(value.into()),
        );
        table
    }

    #[test]
    fn the_key_a_message_was_delivered_with_wins_when_the_inbox_binds_it() {
        let forged = with_header("shipment.dispatched");
        assert_eq!(
            original_routing_key(Some(&forged), "payment.succeeded"),
            "payment.succeeded"
        );
    }

    #[test]
    fn a_retry_back_from_its_delay_queue_keeps_the_services_header() {
        let header = with_header("payment.succeeded");
        assert_eq!(
            original_routing_key(Some(&header), "order-service.inbox"),
            "payment.succeeded"
        );
    }

    #[test]
    fn a_header_that_names_no_inbound_type_or_is_oversized_is_ignored() {
        for value in ["elsewhere", &"p".repeat(130 * 1024)] {
            let header = with_header(value);
            assert_eq!(
                original_routing_key(Some(&header), "order-service.inbox"),
                "order-service.inbox"
            );
        }
    }
}
