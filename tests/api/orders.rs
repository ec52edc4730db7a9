//! Placing, reading and listing orders.

use axum::http::StatusCode;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::helpers::{TestApp, order_body, unique_key};

#[tokio::test]
async fn placing_an_order_creates_it_pending_with_its_history_and_event() {
    let app = TestApp::spawn().await;

    let response = app
        .place_order("key-1", &order_body("customer-42", 4999, "EUR"))
        .await;

    assert_eq!(response.status, StatusCode::CREATED, "{}", response.text);
    let id = response.body["id"].as_str().unwrap();
    assert_eq!(
        response.header("location"),
        Some(format!("/v1/orders/{id}").as_str())
    );
    assert_eq!(response.header("etag"), Some("\"1\""));
    assert!(!response.is_replay());
    assert_eq!(response.body["status"], "PENDING_PAYMENT");
    assert_eq!(response.body["version"], 1);
    assert_eq!(response.body["paid_minor"], 0);
    assert_eq!(response.body["amount_minor"], 4999);
    assert_eq!(response.body["currency"], "EUR");
    assert_eq!(response.body["refund_required"], false);
    assert!(response.body["shipment"].is_null());

    let id: Uuid = id.parse().unwrap();
    let (status, version): (String, i64) =
        sqlx::query_as("SELECT status, version FROM orders WHERE id = $1")
            .bind(id)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!((status.as_str(), version), ("PENDING_PAYMENT", 1));
    let history = app.history(id).await;
    assert_eq!(history.len(), 1);
    assert_eq!(history[0]["kind"], "created");
    assert!(history[0]["from"].is_null());
    assert_eq!(history[0]["to"], "PENDING_PAYMENT");
    assert_eq!(history[0]["cause"]["source"], "api");
    assert_eq!(history[0]["cause"]["idempotency_key"], "key-1");
    assert_eq!(app.outbox_types(id).await, vec!["order.created"]);
}

#[tokio::test]
async fn a_client_chosen_id_is_kept() {
    let app = TestApp::spawn().await;
    let id = Uuid::new_v4();
    let mut body = order_body("c", 100, "USD");
    body["id"] = json!(id);

    let response = app.place_order(&unique_key(), &body).await;

    assert_eq!(response.status, StatusCode::CREATED);
    assert_eq!(response.body["id"], json!(id));
}

#[tokio::test]
async fn placing_an_existing_id_with_the_same_content_replays_and_with_other_content_conflicts() {
    let app = TestApp::spawn().await;
    let id = Uuid::new_v4();
    let mut body = order_body("c", 100, "USD");
    body["id"] = json!(id);
    app.place_order(&unique_key(), &body).await;

    let same = app.place_order(&unique_key(), &body).await;
    assert_eq!(same.status, StatusCode::CREATED);
    assert!(same.is_replay());
    assert_eq!(same.body["id"], json!(id));

    body["amount_minor"] = json!(101);
    let other = app.place_order(&unique_key(), &body).await;
    let problem = other.problem(StatusCode::CONFLICT);
    assert_eq!(problem["current_status"], "PENDING_PAYMENT");

    assert_eq!(app.count("orders").await, 1);
    assert_eq!(app.count("order_transitions").await, 1);
    assert_eq!(app.count("outbox").await, 1);
}

#[tokio::test]
async fn getting_an_order_returns_it_with_its_etag() {
    let app = TestApp::spawn().await;
    let id = app.placed_order(700).await;
    app.paid(id, 200).await;

    let response = app.order(id).await;

    assert_eq!(response.status, StatusCode::OK);
    assert_eq!(response.header("etag"), Some("\"2\""));
    assert_eq!(response.body["paid_minor"], 200);
    assert_eq!(response.body["version"], 2);
}

#[tokio::test]
async fn an_unknown_order_is_404_and_a_malformed_id_is_400() {
    let app = TestApp::spawn().await;

    app.order(Uuid::new_v4())
        .await
        .problem(StatusCode::NOT_FOUND);
    app.get("/v1/orders/not-a-uuid")
        .await
        .problem(StatusCode::BAD_REQUEST);
    app.get(&format!("/v1/orders/{}/history", Uuid::new_v4()))
        .await
        .problem(StatusCode::NOT_FOUND);
    app.get("/v1/nothing-here")
        .await
        .problem(StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn the_listing_is_newest_first_and_pages_with_the_next_cursor() {
    let app = TestApp::spawn().await;
    let mut placed = vec![];
    for _ in 0..7 {
        placed.push(app.placed_order(100).await);
    }
    placed.reverse();

    let mut seen = vec![];
    let mut path = "/v1/orders?limit=3".to_owned();
    loop {
        let page = app.get(&path).await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.text);
        let items = page.body["items"].as_array().unwrap();
        assert!(items.len() <= 3);
        seen.extend(
            items
                .iter()
                .map(|o| o["id"].as_str().unwrap().parse::<Uuid>().unwrap()),
        );
        match page.body["next"].as_str() {
            Some(next) => path = format!("/v1/orders?limit=3&after={next}"),
            None => break,
        }
    }
    assert_eq!(seen, placed);
}

#[tokio::test]
async fn the_listing_filters_by_status() {
    let app = TestApp::spawn().await;
    let paid = app.placed_order(100).await;
    app.paid(paid, 100).await;
    app.placed_order(100).await;

    let page = app.get("/v1/orders?status=PAID").await;

    let items = page.body["items"].as_array().unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["id"], json!(paid));
    assert!(page.body["next"].is_null());
}

#[tokio::test]
async fn the_listing_rejects_bad_limits_statuses_and_cursors() {
    let app = TestApp::spawn().await;
    for query in [
        "limit=0",
        "limit=101",
        "limit=x",
        "status=LOST",
        "after=zz",
        "after=00",
    ] {
        app.get(&format!("/v1/orders?{query}"))
            .await
            .problem(StatusCode::BAD_REQUEST);
    }
    assert_eq!(app.get("/v1/orders?limit=100").await.status, StatusCode::OK);
}

/// Places an order for `customer` and returns its id.
async fn placed_for(app: &TestApp, customer: &str) -> Uuid {
    let response = app
        .place_order(&unique_key(), &order_body(customer, 100, "EUR"))
        .await;
    assert_eq!(response.status, StatusCode::CREATED, "{}", response.text);
    response.body["id"].as_str().unwrap().parse().unwrap()
}

/// Every order the listing at `path` (a query without `after`) gives, following `next` with
/// pages of `limit` (`TestApp::every_page` checks each page's size), after checking that each
/// order passes `check`.
async fn every_page(app: &TestApp, path: &str, limit: u16, check: impl Fn(&Value)) -> Vec<Uuid> {
    app.every_page(path, limit)
        .await
        .iter()
        .map(|item| {
            check(item);
            item["id"].as_str().unwrap().parse().unwrap()
        })
        .collect()
}

#[tokio::test]
async fn the_listing_filters_by_customer_and_pages_through_their_orders_newest_first() {
    let app = TestApp::spawn().await;
    let mut alice = vec![];
    let mut bob = vec![];
    // Interleaved, so that a page boundary falls between orders of other customers.
    for i in 0..7 {
        alice.push(placed_for(&app, "alice").await);
        if i % 2 == 0 {
            bob.push(placed_for(&app, "bob").await);
        }
        placed_for(&app, "carol").await;
    }
    alice.reverse();
    bob.reverse();

    let listed_alice = every_page(&app, "/v1/orders?customer_id=alice", 3, |order| {
        assert_eq!(order["customer_id"], "alice");
    })
    .await;
    let listed_bob = every_page(&app, "/v1/orders?customer_id=bob", 3, |order| {
        assert_eq!(order["customer_id"], "bob");
    })
    .await;
    let nobody = app.get("/v1/orders?customer_id=dave").await;

    assert_eq!(listed_alice, alice);
    assert_eq!(listed_bob, bob);
    assert_eq!(nobody.status, StatusCode::OK, "{}", nobody.text);
    assert_eq!(nobody.body["items"], json!([]));
    assert!(nobody.body["next"].is_null());
    let (stored,): (i64,) =
        sqlx::query_as("SELECT count(*) FROM orders WHERE customer_id = 'alice'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(stored, alice.len() as i64);
}

#[tokio::test]
async fn the_customer_filter_combines_with_the_status_filter_across_pages() {
    let app = TestApp::spawn().await;
    let mut alice_paid = vec![];
    for i in 0..6 {
        let order = placed_for(&app, "alice").await;
        if i % 2 == 0 {
            app.paid(order, 100).await;
            alice_paid.push(order);
        }
        let other = placed_for(&app, "bob").await;
        app.paid(other, 100).await;
    }
    let alice_cancelled = placed_for(&app, "alice").await;
    app.cancelled(alice_cancelled, "changed my mind").await;
    alice_paid.reverse();

    let paid = every_page(
        &app,
        "/v1/orders?customer_id=alice&status=PAID",
        2,
        |order| {
            assert_eq!(order["customer_id"], "alice");
            assert_eq!(order["status"], "PAID");
        },
    )
    .await;
    let pending = every_page(
        &app,
        "/v1/orders?status=PENDING_PAYMENT&customer_id=alice",
        1,
        |order| {
            assert_eq!(order["customer_id"], "alice");
            assert_eq!(order["status"], "PENDING_PAYMENT");
        },
    )
    .await;
    let cancelled = app
        .get("/v1/orders?customer_id=alice&status=CANCELLED")
        .await;
    let bob_pending = app
        .get("/v1/orders?customer_id=bob&status=PENDING_PAYMENT")
        .await;

    assert_eq!(paid, alice_paid);
    assert_eq!(pending.len(), 3);
    let items = cancelled.body["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{}", cancelled.text);
    assert_eq!(items[0]["id"], json!(alice_cancelled));
    assert_eq!(bob_pending.body["items"], json!([]));
    let (stored,): (i64,) = sqlx::query_as(
        "SELECT count(*) FROM orders WHERE customer_id = 'alice' AND status = 'PAID'",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(stored, 3);
}

#[tokio::test]
async fn an_invalid_customer_id_filter_is_a_400_problem() {
    let app = TestApp::spawn().await;
    placed_for(&app, "alice").await;
    let too_long = "c".repeat(65);

    for query in [
        "customer_id=".to_owned(),
        format!("customer_id={too_long}"),
        "customer_id=al%01ice".to_owned(),
        "customer_id=alice&status=LOST".to_owned(),
    ] {
        let response = app.get(&format!("/v1/orders?{query}")).await;
        let problem = response.problem(StatusCode::BAD_REQUEST);
        assert!(
            problem["type"].as_str().unwrap().ends_with("invalid-query"),
            "{query}: {problem}"
        );
    }
    let longest = app
        .get(&format!("/v1/orders?customer_id={}", "c".repeat(64)))
        .await;
    assert_eq!(longest.status, StatusCode::OK, "{}", longest.text);
}

#[tokio::test]
async fn a_forged_cursor_with_a_date_postgres_cannot_store_is_400() {
    let app = TestApp::spawn().await;
    // The year 10000 BC, in the cursor's format: hex of `<unix micros>.<order id>`.
    let micros: i64 = -377_705_116_800_000_000;
    let forged = hex::encode(format!("{micros}.{}", Uuid::new_v4()));

    let response = app.get(&format!("/v1/orders?after={forged}")).await;

    assert_eq!(
        response.problem(StatusCode::BAD_REQUEST)["type"],
        "https://order-service.dev/problems/invalid-cursor"
    );
}

#[tokio::test]
async fn an_orders_events_say_whether_each_was_published() {
    let app = TestApp::spawn().await;
    let order = app.placed_order(1000).await;
    app.paid_with(order, "tr-events", 1000).await;

    let events = app.get(&format!("/v1/orders/{order}/events")).await;
    assert_eq!(events.status, StatusCode::OK, "{}", events.text);
    let items = events.body["items"].as_array().unwrap().clone();
    let seen: Vec<(Value, Value, Value)> = items
        .iter()
        .map(|e| {
            (
                e["type"].clone(),
                e["order_version"].clone(),
                e["state"].clone(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            (json!("order.created"), json!(1), json!("pending")),
            (json!("order.paid"), json!(2), json!("pending")),
        ]
    );
    let first: Uuid = items[0]["event_id"].as_str().unwrap().parse().unwrap();
    sqlx::query("UPDATE outbox SET published_at = now() WHERE event_id = $1")
        .bind(first)
        .execute(&app.pool)
        .await
        .unwrap();
    let events = app.get(&format!("/v1/orders/{order}/events")).await;
    assert_eq!(events.body["items"][0]["state"], "published");
    assert!(events.body["items"][0]["published_at"].is_string());
    assert_eq!(events.body["items"][1]["state"], "pending");

    let unknown = app
        .get(&format!("/v1/orders/{}/events", Uuid::new_v4()))
        .await;
    unknown.problem(StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_transfer_id_finds_the_order_whose_ledger_holds_it() {
    let app = TestApp::spawn().await;
    let order = app.placed_order(1000).await;
    app.placed_order(1000).await;
    app.paid_with(order, "tr-find-me", 400).await;

    let found = app.get("/v1/orders?transfer_id=tr-find-me").await;
    assert_eq!(found.status, StatusCode::OK, "{}", found.text);
    let ids: Vec<&Value> = found.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| &o["id"])
        .collect();
    assert_eq!(ids, [&json!(order)]);
    let none = app.get("/v1/orders?transfer_id=tr-nobody").await;
    assert_eq!(none.body["items"], json!([]));
    let invalid = app.get("/v1/orders?transfer_id=").await;
    invalid.problem(StatusCode::BAD_REQUEST);
}
