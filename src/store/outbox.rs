//! The `outbox` table: events written in the transaction of the change they report.

use sqlx::PgConnection;
use uuid::Uuid;

use super::StoreError;
use crate::domain::{EventType, OrderId};

pub struct NewEvent {
    pub event_id: Uuid,
    pub event_type: EventType,
    pub order_id: OrderId,
    pub order_version: i64,
    /// The whole envelope, exactly as it will be published.
    pub payload: serde_json::Value,
}

pub async fn insert(conn: &mut PgConnection, event: &NewEvent) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO outbox (event_id, event_type, order_id, order_version, payload) \
         VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(event.event_id)
    .bind(event.event_type.as_ref())
    .bind(event.order_id.as_uuid())
    .bind(event.order_version)
    .bind(&event.payload)
    .execute(conn)
    .await?;
    Ok(())
}
