//! The binary with a host list, as an operator starts it: it prepares the database on the
//! writable node, and refuses a malformed list naming the part, never the password.

use std::process::Command;

use order_service_testkit::private_postgres::PrivatePostgres;

use crate::{admin, set_read_only};

#[tokio::test]
async fn migrate_creates_the_database_on_the_writable_node_of_the_formation_url() {
    let (standby, primary) = (PrivatePostgres::start(), PrivatePostgres::start());
    set_read_only(&standby, true).await;
    let url = format!(
        "postgres://postgres@127.0.0.1:{},127.0.0.1:{}/order_service?target_session_attrs=read-write",
        standby.port, primary.port
    );
    let output = Command::new(env!("CARGO_BIN_EXE_order-service"))
        .arg("migrate")
        .env("DATABASE_URL", &url)
        .output()
        .expect("run order-service migrate");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(has_orders_table(&primary).await);
    assert!(!has_database(&standby).await);
}

#[test]
fn a_malformed_host_list_stops_the_service_naming_the_part_without_the_password() {
    let output = Command::new(env!("CARGO_BIN_EXE_order-service"))
        .arg("migrate")
        .env(
            "DATABASE_URL",
            "postgres://app:db-secret-3@db-1:5432,db-2:x,db-3:5432/orders",
        )
        .output()
        .expect("run order-service migrate");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(
        stderr.contains("the port of host 2 of DATABASE_URL is not a number"),
        "{stderr}"
    );
    assert!(!stderr.contains("db-secret-3"), "{stderr}");
}

async fn has_database(pg: &PrivatePostgres) -> bool {
    let mut conn = admin(pg, "postgres").await;
    sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = 'order_service')")
        .fetch_one(&mut conn)
        .await
        .unwrap()
}

async fn has_orders_table(pg: &PrivatePostgres) -> bool {
    let mut conn = admin(pg, "order_service").await;
    sqlx::query_scalar("SELECT to_regclass('orders') IS NOT NULL")
        .fetch_one(&mut conn)
        .await
        .unwrap()
}
