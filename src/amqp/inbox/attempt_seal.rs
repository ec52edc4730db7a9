//! Which delivery through the retry path a message is, as only the service can say. The count
//! (`x-attempt`) decides when a premature message is given up (`AMQP_MAX_ATTEMPTS`), and any
//! publisher can set a header of that name; so a retry the service publishes also carries
//! `x-attempt-seal`, an HMAC-SHA256 of the count, the message id and the body under a key every
//! instance reads from the database (`store::service_keys`). A count without a valid seal — a
//! publisher's, or a seal copied onto another message — is not read: the delivery is a first
//! attempt (docs/hostile-input.md "Properties decide nothing").

use hmac::{Hmac, Mac};
use lapin::BasicProperties;
use lapin::types::{AMQPValue, FieldTable};
use sha2::Sha256;

use crate::amqp::headers::{ATTEMPT_HEADER, ATTEMPT_SEAL_HEADER};
use crate::app::AppError;

/// Seals and reads attempt counts with the service's shared key.
pub(super) struct AttemptSeal {
    keyed: Hmac<Sha256>,
}

impl AttemptSeal {
    /// A seal under `key` (`store::service_keys`); HMAC takes a key of any length, so this
    /// fails only if that stops being true.
    pub(super) fn new(key: &[u8]) -> Result<Self, AppError> {
        let keyed = Hmac::new_from_slice(key)
            .map_err(|_| AppError::Invariant("the attempt seal's key cannot key an HMAC"))?;
        Ok(Self { keyed })
    }

    /// The MAC of `attempt` on the message with `properties` and `body`: the count, then the
    /// message id (length-prefixed, so no id and body can be shifted into one another), then the
    /// body.
    fn mac(&self, attempt: u32, properties: &BasicProperties, body: &[u8]) -> Hmac<Sha256> {
        let mut mac = self.keyed.clone();
        mac.update(&attempt.to_be_bytes());
        match properties.message_id() {
            Some(id) => {
                let id = id.as_str().as_bytes();
                mac.update(&[1]);
                mac.update(&(id.len() as u64).to_be_bytes());
                mac.update(id);
            }
            None => mac.update(&[0]),
        }
        mac.update(body);
        mac
    }

    /// Writes `attempt` and its seal into `headers`, for the message with `properties` and
    /// `body` (its `message_id` is the one the replacement carries).
    pub(super) fn write(
        &self,
        headers: &mut FieldTable,
        attempt: u32,
        properties: &BasicProperties,
        body: &[u8],
    ) {
        let seal = self.mac(attempt, properties, body).finalize().into_bytes();
        headers.insert(ATTEMPT_HEADER.into(), AMQPValue::LongUInt(attempt));
        headers.insert(
            ATTEMPT_SEAL_HEADER.into(),
            AMQPValue::LongString(hex::encode(seal).into()),
        );
    }

    /// Which delivery through the retry path this is: the sealed count, or 1 for a message the
    /// service never retried and for any count it did not seal.
    pub(super) fn attempt_of(&self, properties: &BasicProperties, body: &[u8]) -> u32 {
        let headers = properties.headers().as_ref().map(FieldTable::inner);
        let (Some(AMQPValue::LongUInt(attempt)), Some(AMQPValue::LongString(seal))) = (
            headers.and_then(|h| h.get(ATTEMPT_HEADER)),
            headers.and_then(|h| h.get(ATTEMPT_SEAL_HEADER)),
        ) else {
            return 1;
        };
        let Ok(seal) = hex::decode(seal.as_bytes()) else {
            return 1;
        };
        match self.mac(*attempt, properties, body).verify_slice(&seal) {
            Ok(()) => (*attempt).max(1),
            Err(_) => 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sealed(seal: &AttemptSeal, attempt: u32, id: &str, body: &[u8]) -> BasicProperties {
        let properties = BasicProperties::default().with_message_id(id.into());
        let mut headers = FieldTable::default();
        seal.write(&mut headers, attempt, &properties, body);
        properties.with_headers(headers)
    }

    #[test]
    fn a_count_the_service_sealed_is_read_back() {
        let seal = AttemptSeal::new(b"a key of the service's").unwrap();
        let properties = sealed(&seal, 7, "evt-1", b"{}");
        assert_eq!(seal.attempt_of(&properties, b"{}"), 7);
    }

    #[test]
    fn a_count_without_its_seal_or_with_another_seal_is_a_first_attempt() {
        let seal = AttemptSeal::new(b"a key of the service's").unwrap();
        let mut forged = FieldTable::default();
        forged.insert(ATTEMPT_HEADER.into(), AMQPValue::LongUInt(10));
        let unsealed = BasicProperties::default().with_headers(forged.clone());
        assert_eq!(seal.attempt_of(&unsealed, b"{}"), 1);

        forged.insert(
            ATTEMPT_SEAL_HEADER.into(),
            AMQPValue::LongString("00".repeat(32).into()),
        );
        let badly_sealed = BasicProperties::default().with_headers(forged);
        assert_eq!(seal.attempt_of(&badly_sealed, b"{}"), 1);

        // Sealed under another key (another deployment's, or a guess).
        let other = sealed(
            &AttemptSeal::new(b"another key").unwrap(),
            10,
            "evt-1",
            b"{}",
        );
        assert_eq!(seal.attempt_of(&other, b"{}"), 1);
    }

    #[test]
    fn a_seal_copied_onto_another_message_or_count_does_not_hold() {
        let seal = AttemptSeal::new(b"a key of the service's").unwrap();
        let genuine = sealed(&seal, 10, "evt-1", b"{\"a\":1}");
        // The same headers on another body, or another message id.
        assert_eq!(seal.attempt_of(&genuine, b"{\"a\":2}"), 1);
        let moved = genuine.clone().with_message_id("evt-2".into());
        assert_eq!(seal.attempt_of(&moved, b"{\"a\":1}"), 1);
        // The count raised under the genuine seal.
        let mut raised = genuine.headers().clone().unwrap_or_default();
        raised.insert(ATTEMPT_HEADER.into(), AMQPValue::LongUInt(11));
        let raised = genuine.with_headers(raised);
        assert_eq!(seal.attempt_of(&raised, b"{\"a\":1}"), 1);
    }
}
