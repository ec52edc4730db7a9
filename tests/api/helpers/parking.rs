//! Dead letters parked straight into the test's database, as the dead-letter consumer parks what
//! the service dead-lettered: for the tests of the dead-letter endpoints.

use lapin::BasicProperties;
use lapin::types::{AMQPValue, FieldTable};
use uuid::Uuid;

use order_service::amqp::parking::dead_letter_of;
use order_service::app::App;
use order_service::config::DEFAULT_AMQP_DELIVERY_LIMIT;

use super::TestApp;

impl TestApp {
    /// Parks a dead letter as the dead-letter consumer would receive it from the service: with
    /// `reason` as its `x-error-reason`, the service's other bookkeeping headers and a
    /// `traceparent` of the publisher's; returns its id.
    pub async fn park(
        &self,
        routing_key: &str,
        message_id: Option<&str>,
        body: &[u8],
        reason: &str,
    ) -> Uuid {
        let mut headers = FieldTable::default();
        for (key, value) in [
            ("x-error-reason", AMQPValue::LongString(reason.into())),
            ("x-attempt", AMQPValue::LongUInt(1)),
            (
                "x-original-routing-key",
                AMQPValue::LongString(routing_key.into()),
            ),
            ("traceparent", AMQPValue::LongString(TRACEPARENT.into())),
        ] {
            headers.insert(key.into(), value);
        }
        let mut properties = BasicProperties::default().with_headers(headers);
        if let Some(id) = message_id {
            properties = properties.with_message_id(id.into());
        }
        let letter = dead_letter_of(routing_key, &properties, body, DEFAULT_AMQP_DELIVERY_LIMIT);
        App::new(self.pool.clone())
            .park(&letter)
            .await
            .expect("park a dead letter")
            .as_uuid()
    }
}

/// The publisher's trace header on the dead letters [`TestApp::park`] makes.
pub const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
