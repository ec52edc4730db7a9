//! `If-Match` on ship and cancel as RFC 9110 §13.1.1 evaluates it (docs/contract.md, "Conditional
//! requests"): several fields are one list, and any strong member equal to the order's ETag
//! lets the change through; `*` matches any existing order; a weak tag, or a tag this API never
//! issues, matches nothing (412); a member that is no entity-tag is 400. A change already made
//! is a replay whatever `If-Match` says.

use axum::http::StatusCode;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::helpers::{TestApp, TestResponse, raw_post, shipment_body, unique_key};

/// A paid order (version 2, to ship) and a pending one (version 1, to cancel).
struct Orders {
    app: TestApp,
    paid: Uuid,
    pending: Uuid,
}

impl Orders {
    async fn spawn() -> Self {
        let app = TestApp::spawn().await;
        let paid = app.paid_order(1000).await;
        let pending = app.placed_order(1000).await;
        Self { app, paid, pending }
    }

    /// POSTs `body` to `path` with one `If-Match` field per entry of `if_match`.
    async fn post(&self, path: &str, if_match: &[&str], body: &Value) -> TestResponse {
        let key = unique_key();
        let mut headers: Vec<(&str, &[u8])> = vec![
            ("content-type", b"application/json"),
            ("idempotency-key", key.as_bytes()),
        ];
        headers.extend(if_match.iter().map(|v| ("if-match", v.as_bytes())));
        self.app
            .request(raw_post(path, &headers, body.to_string()))
            .await
    }

    async fn ship(&self, if_match: &[&str]) -> TestResponse {
        let path = format!("/v1/orders/{}/ship", self.paid);
        self.post(&path, if_match, &shipment_body("DHL", "T-1"))
            .await
    }

    async fn cancel(&self, if_match: &[&str]) -> TestResponse {
        let path = format!("/v1/orders/{}/cancel", self.pending);
        self.post(&path, if_match, &json!({"reason": "r"})).await
    }
}

#[tokio::test]
async fn several_if_match_fields_are_one_list_and_any_strong_member_may_match() {
    let o = Orders::spawn().await;

    // The paid order is at "2": the second field names it.
    let ship = o.ship(&["\"1\"", "\"2\""]).await;
    // The pending order is at "1": the last member of one field names it.
    let cancel = o.cancel(&["\"7\", W/\"1\", \"1\""]).await;

    assert_eq!(ship.status, StatusCode::OK, "{}", ship.text);
    assert_eq!(cancel.status, StatusCode::OK, "{}", cancel.text);
    assert_eq!(o.app.row(o.paid).await.status, "SHIPPED");
    assert_eq!(o.app.row(o.pending).await.status, "CANCELLED");
}

#[tokio::test]
async fn a_star_matches_any_existing_order() {
    let o = Orders::spawn().await;

    let ship = o.ship(&["*"]).await;
    let cancel = o.cancel(&[" * "]).await;

    assert_eq!(ship.status, StatusCode::OK, "{}", ship.text);
    assert_eq!(cancel.status, StatusCode::OK, "{}", cancel.text);
}

#[tokio::test]
async fn a_weak_or_foreign_etag_never_matches_so_the_change_is_412() {
    let o = Orders::spawn().await;
    let before = o.app.snapshot().await;

    for if_match in [
        &["W/\"2\""][..],
        &["W/\"2\"", "W/\"1\""],
        &["\"abc\""],
        &["\"02\""],
        &["\"0\""],
        &["\"\""],
        &["\"a,b\", W/\"2\""],
    ] {
        let problem = o.ship(if_match).await;
        let problem = problem.problem(StatusCode::PRECONDITION_FAILED);
        assert_eq!(problem["current_version"], 2, "{if_match:?}");
        let problem = o.cancel(if_match).await;
        problem.problem(StatusCode::PRECONDITION_FAILED);
    }

    assert_eq!(o.app.snapshot().await, before);
    assert_eq!(o.app.row(o.paid).await.status, "PAID");
    assert_eq!(o.app.row(o.pending).await.status, "PENDING_PAYMENT");
}

#[tokio::test]
async fn an_if_match_member_that_is_no_entity_tag_is_400() {
    let o = Orders::spawn().await;
    let before = o.app.snapshot().await;

    for if_match in [
        &["\"2\", 2"][..],
        &["\"2\" \"1\""],
        &["\"2\"", "2"],
        &["*", "\"2\""],
        &["*, \"2\""],
        &["w/\"2\""],
        &["W/2"],
        &["\"2"],
        &[""],
        &[" , "],
    ] {
        o.ship(if_match).await.problem(StatusCode::BAD_REQUEST);
        o.cancel(if_match).await.problem(StatusCode::BAD_REQUEST);
    }

    assert_eq!(o.app.snapshot().await, before);
}

#[tokio::test]
async fn a_change_already_made_is_a_replay_whatever_if_match_names() {
    let o = Orders::spawn().await;
    assert_eq!(o.ship(&[]).await.status, StatusCode::OK);
    assert_eq!(o.cancel(&[]).await.status, StatusCode::OK);

    for if_match in [&["\"1\""][..], &["W/\"3\""], &["\"abc\"", "\"2\""]] {
        let ship = o.ship(if_match).await;
        assert_eq!(ship.status, StatusCode::OK, "{if_match:?}: {}", ship.text);
        assert!(ship.is_replay(), "{if_match:?}");
        let cancel = o.cancel(if_match).await;
        assert_eq!(
            cancel.status,
            StatusCode::OK,
            "{if_match:?}: {}",
            cancel.text
        );
        assert!(cancel.is_replay(), "{if_match:?}");
    }
}
