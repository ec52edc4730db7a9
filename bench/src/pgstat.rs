//! Rows written, per table, from Postgres' own counters (`n_tup_ins + n_tup_upd + n_tup_del` in
//! `pg_stat_user_tables`).
//!
//! A backend publishes its counters at the end of a transaction at most once a second, and an
//! idle one only about 10 s later — but always when it exits. So a snapshot is taken only when no
//! other session is connected to the database (the writers were closed or stopped first): then
//! every write that happened is counted, with no guess at a flush delay.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::bail;
use sqlx::Connection;

use crate::scratch::Db;

/// The tables a duplicate must not touch.
pub const DOMAIN_TABLES: [&str; 4] = ["orders", "transfers", "order_transitions", "outbox"];

/// Rows written so far, by table.
pub type Writes = BTreeMap<String, i64>;

/// Waits until no other session is connected to `db`, then reads the counters of `tables`.
pub async fn snapshot(db: &Db, tables: &[&str]) -> anyhow::Result<Writes> {
    let mut conn = db.connect().await?;
    let started = Instant::now();
    loop {
        let others: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity \
             WHERE datname = current_database() AND pid <> pg_backend_pid() \
               AND backend_type = 'client backend'",
        )
        .fetch_one(&mut conn)
        .await?;
        if others == 0 {
            break;
        }
        if started.elapsed() > Duration::from_secs(30) {
            bail!(
                "{others} sessions still connected to {} after 30 s",
                db.name
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // A leaving backend drops out of pg_stat_activity just before it flushes its counters.
    tokio::time::sleep(Duration::from_millis(500)).await;
    sqlx::query("SELECT pg_stat_clear_snapshot()")
        .execute(&mut conn)
        .await?;
    let tables: Vec<String> = tables.iter().map(|t| (*t).to_owned()).collect();
    let rows: Vec<(String, i64)> = sqlx::query_as(
        "SELECT relname::text, (n_tup_ins + n_tup_upd + n_tup_del)::bigint \
         FROM pg_stat_user_tables WHERE relname = ANY($1)",
    )
    .bind(&tables)
    .fetch_all(&mut conn)
    .await?;
    conn.close().await?;
    let mut writes: Writes = tables.into_iter().map(|t| (t, 0)).collect();
    writes.extend(rows);
    Ok(writes)
}

/// `after − before`, table by table.
pub fn delta(before: &Writes, after: &Writes) -> Writes {
    after
        .iter()
        .map(|(table, rows)| {
            let base = before.get(table).copied().unwrap_or(0);
            (table.clone(), rows - base)
        })
        .collect()
}

pub fn total(writes: &Writes) -> i64 {
    writes.values().sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_delta_is_taken_table_by_table() {
        let before: Writes = [("orders".to_owned(), 10), ("outbox".to_owned(), 4)].into();
        let after: Writes = [("orders".to_owned(), 12), ("outbox".to_owned(), 4)].into();
        let delta = delta(&before, &after);
        assert_eq!(delta["orders"], 2);
        assert_eq!(delta["outbox"], 0);
        assert_eq!(total(&delta), 2);
    }
}
