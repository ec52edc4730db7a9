//! An order's own records — its history, its ledger and its events — a page at a time
//! (docs/contract.md "Pages"): at most `limit` entries (1–100, 20 by default) and a `next` token
//! while more follow; following `next` gives every entry exactly once, in order, as the
//! database holds them; a bad `limit` or `after` is a 400 problem.

use axum::http::StatusCode;
use serde_json::{Value, json};
use uuid::Uuid;

use order_service::app::DEFAULT_PAGE;

use crate::helpers::TestApp;

const LISTINGS: [&str; 3] = ["history", "payments", "events"];

/// An order with more records than a default page in each listing: a payment of the whole
/// amount, then 12 times a payment of 1 more (which turns `refund_required` on) and its refund.
/// 26 versions; 25 ledger entries, payments and refunds alternating; 26 events (`order.created`,
/// `order.paid`, then `order.refund_required` and `order.refunded` 12 times).
async fn busy_order(app: &TestApp) -> Uuid {
    let order = app.placed_order(10).await;
    app.paid_with(order, "tr-0", 10).await;
    for n in 1..=12 {
        app.paid_with(order, &format!("tr-in-{n}"), 1).await;
        app.refunded(order, &format!("tr-out-{n}"), 1).await;
    }
    order
}

/// The transfer ids of the order's ledger in the order its changes recorded them, as stored.
async fn recorded_transfers(app: &TestApp, order: Uuid) -> Vec<String> {
    sqlx::query_scalar(
        "SELECT transfer_id FROM order_transitions \
         WHERE order_id = $1 AND transfer_id IS NOT NULL ORDER BY version",
    )
    .bind(order)
    .fetch_all(&app.pool)
    .await
    .expect("read the history's transfers")
}

/// The order's events as stored, in outbox order.
async fn stored_events(app: &TestApp, order: Uuid) -> Vec<Uuid> {
    sqlx::query_scalar("SELECT event_id FROM outbox WHERE order_id = $1 ORDER BY id")
        .bind(order)
        .fetch_all(&app.pool)
        .await
        .expect("read the outbox")
}

fn field<'a>(items: &'a [Value], name: &str) -> Vec<&'a Value> {
    items.iter().map(|item| &item[name]).collect()
}

#[tokio::test]
async fn following_next_gives_each_record_of_an_order_exactly_once_in_order() {
    let app = TestApp::spawn().await;
    let order = busy_order(&app).await;

    // `every_page` asserts each page but the last holds exactly `limit` entries.
    let history = app
        .every_page(&format!("/v1/orders/{order}/history"), 7)
        .await;
    let versions: Vec<i64> = history
        .iter()
        .map(|e| e["version"].as_i64().unwrap())
        .collect();
    assert_eq!(versions, (1..=26).collect::<Vec<_>>());
    assert_eq!(history, app.checked_history(order).await);

    let ledger = app
        .every_page(&format!("/v1/orders/{order}/payments"), 7)
        .await;
    let mut expected = vec!["tr-0".to_owned()];
    for n in 1..=12 {
        expected.extend([format!("tr-in-{n}"), format!("tr-out-{n}")]);
    }
    let listed: Vec<&str> = ledger
        .iter()
        .map(|e| e["transfer_id"].as_str().unwrap())
        .collect();
    assert_eq!(listed, expected);
    assert_eq!(listed, recorded_transfers(&app, order).await);
    let directions: Vec<&Value> = field(&ledger, "direction");
    assert_eq!(directions[..3], [&json!("in"), &json!("in"), &json!("out")]);

    let events = app
        .every_page(&format!("/v1/orders/{order}/events"), 7)
        .await;
    let ids: Vec<Uuid> = events
        .iter()
        .map(|e| e["event_id"].as_str().unwrap().parse().unwrap())
        .collect();
    assert_eq!(ids, stored_events(&app, order).await);
    assert_eq!(ids.len(), 26);
    let types = field(&events, "type");
    assert_eq!(
        types[..4],
        [
            &json!("order.created"),
            &json!("order.paid"),
            &json!("order.refund_required"),
            &json!("order.refunded")
        ]
    );
}

#[tokio::test]
async fn a_page_holds_exactly_limit_records_and_a_next_while_more_follow() {
    let app = TestApp::spawn().await;
    let order = busy_order(&app).await;

    for listing in LISTINGS {
        let first = app
            .get(&format!("/v1/orders/{order}/{listing}?limit=5"))
            .await;
        assert_eq!(first.status, StatusCode::OK, "{listing}: {}", first.text);
        assert_eq!(
            first.body["items"].as_array().unwrap().len(),
            5,
            "{listing}"
        );
        let next = first.body["next"].as_str().expect("a next token");
        let second = app
            .get(&format!(
                "/v1/orders/{order}/{listing}?limit=5&after={next}"
            ))
            .await;
        assert_eq!(second.status, StatusCode::OK, "{listing}: {}", second.text);
        assert_eq!(
            second.body["items"].as_array().unwrap().len(),
            5,
            "{listing}"
        );
        assert_ne!(second.body["items"][0], first.body["items"][0], "{listing}");

        let whole = app
            .get(&format!("/v1/orders/{order}/{listing}?limit=100"))
            .await;
        assert!(whole.body["next"].is_null(), "{listing}: {}", whole.text);
        let all = whole.body["items"].as_array().unwrap();
        assert!((25..=26).contains(&all.len()), "{listing}: {}", all.len());
        assert_eq!(
            all[5], second.body["items"][0],
            "{listing}: the second page goes on"
        );
    }
}

#[tokio::test]
async fn without_a_limit_a_page_holds_the_default_page_size() {
    let app = TestApp::spawn().await;
    let order = busy_order(&app).await;

    for listing in LISTINGS {
        let page = app.get(&format!("/v1/orders/{order}/{listing}")).await;
        assert_eq!(page.status, StatusCode::OK, "{listing}: {}", page.text);
        let items = page.body["items"].as_array().unwrap();
        assert_eq!(items.len(), usize::from(DEFAULT_PAGE), "{listing}");
        assert!(page.body["next"].is_string(), "{listing}");
    }
}

#[tokio::test]
async fn a_bad_limit_or_cursor_of_an_orders_records_is_a_400_problem() {
    let app = TestApp::spawn().await;
    let order = busy_order(&app).await;
    let history_token = app
        .get(&format!("/v1/orders/{order}/history?limit=1"))
        .await
        .body["next"]
        .as_str()
        .unwrap()
        .to_owned();
    app.placed_order(100).await;
    app.placed_order(100).await;
    let orders_token = app.get("/v1/orders?limit=1").await.body["next"]
        .as_str()
        .unwrap()
        .to_owned();

    let refused = [
        ("limit=0".to_owned(), "invalid-query"),
        ("limit=101".to_owned(), "invalid-query"),
        ("limit=-1".to_owned(), "invalid-query"),
        ("limit=x".to_owned(), "invalid-query"),
        ("after=zz".to_owned(), "invalid-cursor"),
        ("after=00".to_owned(), "invalid-cursor"),
        (
            format!("after={}", hex::encode("history.0")),
            "invalid-cursor",
        ),
        (format!("after={orders_token}"), "invalid-cursor"),
    ];
    for listing in LISTINGS {
        for (query, problem) in &refused {
            let response = app
                .get(&format!("/v1/orders/{order}/{listing}?{query}"))
                .await;
            assert_eq!(
                response.problem(StatusCode::BAD_REQUEST)["type"],
                format!("https://order-service.dev/problems/{problem}"),
                "{listing}?{query}"
            );
        }
        // One listing's token is not another's.
        let foreign = app
            .get(&format!(
                "/v1/orders/{order}/{listing}?after={history_token}"
            ))
            .await;
        if listing == "history" {
            assert_eq!(foreign.status, StatusCode::OK, "{}", foreign.text);
        } else {
            foreign.problem(StatusCode::BAD_REQUEST);
        }
        let largest = app
            .get(&format!("/v1/orders/{order}/{listing}?limit=100"))
            .await;
        assert_eq!(
            largest.status,
            StatusCode::OK,
            "{listing}: {}",
            largest.text
        );
        app.get(&format!("/v1/orders/{}/{listing}?limit=5", Uuid::new_v4()))
            .await
            .problem(StatusCode::NOT_FOUND);
    }
}

#[tokio::test]
async fn a_ledger_entry_recorded_while_a_reader_pages_is_on_a_later_page_never_skipped() {
    let app = TestApp::spawn().await;
    let order = app.placed_order(1000).await;
    for n in 1..=3 {
        app.paid_with(order, &format!("tr-{n}"), 1).await;
    }
    let path = format!("/v1/orders/{order}/payments");
    let first = app.get(&format!("{path}?limit=2")).await;
    let next = first.body["next"].as_str().unwrap().to_owned();

    // A payment recorded now whose `received_at` is older than the page just read, as one
    // decided in a batch that began before the page's entries were written.
    app.paid_with(order, "tr-late", 1).await;
    sqlx::query("UPDATE transfers SET received_at = '2000-01-01T00:00:00Z' WHERE transfer_id = $1")
        .bind("tr-late")
        .execute(&app.pool)
        .await
        .unwrap();

    let rest = app.get(&format!("{path}?limit=100&after={next}")).await;
    let mut seen: Vec<&Value> = field(first.body["items"].as_array().unwrap(), "transfer_id");
    seen.extend(field(rest.body["items"].as_array().unwrap(), "transfer_id"));
    assert_eq!(
        seen,
        [
            &json!("tr-1"),
            &json!("tr-2"),
            &json!("tr-3"),
            &json!("tr-late")
        ]
    );
}

#[tokio::test]
async fn an_event_set_aside_keeps_its_place_among_the_orders_events() {
    let app = TestApp::spawn().await;
    let order = busy_order(&app).await;
    let events = stored_events(&app, order).await;
    let aside = events[1];
    // What the relay does with a row it cannot publish: moves it, its id kept.
    sqlx::query(
        "WITH moved AS (DELETE FROM outbox WHERE event_id = $1 RETURNING *) \
         INSERT INTO outbox_set_aside (id, event_id, event_type, order_id, order_version, \
             payload, exchange, routing_key, body, properties, traceparent, tracestate, \
             created_at, reason) \
         SELECT id, event_id, event_type, order_id, order_version, payload, exchange, \
             routing_key, body, properties, traceparent, tracestate, created_at, \
             'unroutable: a test' FROM moved",
    )
    .bind(aside)
    .execute(&app.pool)
    .await
    .expect("set the event aside");

    let listed = app
        .every_page(&format!("/v1/orders/{order}/events"), 1)
        .await;
    let ids: Vec<Uuid> = listed
        .iter()
        .map(|e| e["event_id"].as_str().unwrap().parse().unwrap())
        .collect();
    assert_eq!(ids, events);
    assert_eq!(listed[1]["state"], "set_aside");
    assert_eq!(listed[1]["set_aside_reason"], "unroutable: a test");
    assert_eq!(listed[0]["state"], "pending");
    assert_eq!(listed[2]["state"], "pending");
}

#[tokio::test]
async fn an_order_with_no_ledger_entries_lists_an_empty_last_page() {
    let app = TestApp::spawn().await;
    let order = app.placed_order(100).await;

    let page = app.get(&format!("/v1/orders/{order}/payments")).await;

    assert_eq!(page.status, StatusCode::OK, "{}", page.text);
    assert_eq!(page.body, json!({"items": [], "next": null}));
}
