//! Requests whose database connection is cut at their commit, so that the service cannot know
//! whether they took effect (issue 23, a Postgres failover): such a request answers 503 with
//! `Retry-After`, and its retry with the same Idempotency-Key replays the committed answer (the
//! commit happened) or applies the request now (it did not), never twice. The proxy cuts either
//! after Postgres got the commit ([`CommitCut::AnswerLost`]) or before ([`CommitCut::CommitLost`]).

use std::time::Duration;

use axum::http::StatusCode;
use serde_json::Value;
use sqlx::postgres::PgPoolOptions;
use uuid::Uuid;

use order_service_testkit::proxy::CommitCut;

use crate::helpers::{TestApp, TestResponse, order_body, payment_body};

/// Longer than a request takes, shorter than the suite's patience: a cut request must not hang.
const ANSWER_WITHIN: Duration = Duration::from_secs(15);

#[tokio::test]
async fn a_placement_whose_commit_answer_is_lost_answers_503_and_its_retry_replays_the_order() {
    let retry = placement_cut_at_commit(CommitCut::AnswerLost).await;
    assert!(retry.is_replay(), "{:?}", retry.headers);
}

#[tokio::test]
async fn a_placement_whose_commit_never_arrived_answers_503_and_its_retry_places_the_order() {
    let retry = placement_cut_at_commit(CommitCut::CommitLost).await;
    assert!(!retry.is_replay(), "{:?}", retry.headers);
}

#[tokio::test]
async fn a_payment_whose_commit_answer_is_lost_answers_503_and_its_retry_replays_the_receipt() {
    let retry = payment_cut_at_commit(CommitCut::AnswerLost).await;
    assert!(retry.is_replay(), "{:?}", retry.headers);
}

#[tokio::test]
async fn a_payment_whose_commit_never_arrived_answers_503_and_its_retry_records_it() {
    let retry = payment_cut_at_commit(CommitCut::CommitLost).await;
    assert!(!retry.is_replay(), "{:?}", retry.headers);
}

/// Places an order whose commit is cut as `cut` says, then retries it; returns the retry's
/// answer, checked to be the one an uncut placement gives.
async fn placement_cut_at_commit(cut: CommitCut) -> TestResponse {
    let (app, proxy) = TestApp::spawn_behind_proxy().await;
    let body = order_body("c-1", 1000, "EUR");

    proxy.cut_next_commit(cut);
    let cut_off = in_time(app.place_order("place-1", &body)).await;

    assert!(proxy.commit_was_cut());
    assert_retry_later(&cut_off);
    let committed = [1, 0, 1, 1];
    let written = if cut == CommitCut::AnswerLost {
        committed
    } else {
        [0, 0, 0, 0]
    };
    assert_eq!(app.snapshot().await, written);

    let retry = in_time(app.place_order("place-1", &body)).await;
    let repeat = app.place_order("place-1", &body).await;

    assert_eq!(retry.status, StatusCode::CREATED, "{}", retry.text);
    assert_eq!(retry.header("etag"), Some("\"1\""));
    assert_answers_alike(&retry, &repeat);
    assert_eq!(repeat.header("location"), retry.header("location"));
    let order: Uuid = retry.body["id"].as_str().unwrap().parse().unwrap();
    // An uncut placement answers with the order as it is stored.
    assert_eq!(retry.body, app.order(order).await.body);
    assert_eq!(retry.body["status"], "PENDING_PAYMENT");
    assert_eq!(retry.body["amount_minor"], 1000);
    assert_eq!(app.snapshot().await, committed);
    assert_eq!(app.checked_history(order).await.len(), 1);
    assert_eq!(app.outbox_types(order).await, ["order.created"]);
    retry
}

/// Pays an order in full with a payment whose commit is cut as `cut` says, then retries it;
/// returns the retry's answer, checked to be the one an uncut payment gives.
async fn payment_cut_at_commit(cut: CommitCut) -> TestResponse {
    let (app, proxy) = TestApp::spawn_behind_proxy().await;
    let order = app.placed_order(1000).await;
    let body = payment_body("tr-1", 1000, "EUR");

    proxy.cut_next_commit(cut);
    let cut_off = in_time(app.pay(order, "pay-1", &body)).await;

    assert!(proxy.commit_was_cut());
    assert_retry_later(&cut_off);
    let committed = [1, 1, 2, 2];
    let written = if cut == CommitCut::AnswerLost {
        committed
    } else {
        [1, 0, 1, 1]
    };
    assert_eq!(app.snapshot().await, written);

    let retry = in_time(app.pay(order, "pay-1", &body)).await;
    let repeat = app.pay(order, "pay-1", &body).await;

    assert_eq!(retry.status, StatusCode::CREATED, "{}", retry.text);
    assert_eq!(retry.header("etag"), Some("\"2\""));
    assert_answers_alike(&retry, &repeat);
    // An uncut payment answers with the order as it is stored and its ledger entry.
    assert_eq!(retry.body["order"], app.order(order).await.body);
    assert_eq!(retry.body["order"]["status"], "PAID");
    let ledger: Vec<Value> = app.ledger(order).await;
    assert_eq!(ledger, [retry.body["transfer"].clone()]);
    assert_eq!(retry.body["transfer"]["transfer_id"], "tr-1");
    assert_eq!(app.snapshot().await, committed);
    assert_eq!(app.checked_money(order).await.paid_minor, 1000);
    assert_eq!(app.checked_history(order).await.len(), 2);
    assert_eq!(
        app.outbox_types(order).await,
        ["order.created", "order.paid"]
    );
    retry
}

/// The proxy's cut on its own, on a transaction begun with `BEGIN` and ended with `COMMIT`: the
/// cut commit fails on the client's side, whether or not it happened, and the next one goes
/// through.
#[tokio::test]
async fn the_proxy_cuts_an_explicit_transaction_at_its_commit_once() {
    let (app, proxy) = TestApp::spawn_behind_proxy().await;
    sqlx::query("CREATE TABLE marks (n int)")
        .execute(&app.pool)
        .await
        .unwrap();
    let url = format!(
        "postgres://postgres@127.0.0.1:{}/{}",
        proxy.port, app.db.name
    );
    // Through the proxy with sslmode=prefer (the default): the proxy declines SSL itself.
    let through = PgPoolOptions::new()
        .max_connections(1)
        .connect(&url)
        .await
        .unwrap();
    let marks = || async {
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM marks")
            .fetch_one(&app.pool)
            .await
            .unwrap()
    };

    for (cut, n, kept) in [(CommitCut::AnswerLost, 1, 1), (CommitCut::CommitLost, 2, 1)] {
        proxy.cut_next_commit(cut);
        assert!(mark(&through, n).await.is_err(), "{cut:?}");
        assert!(proxy.commit_was_cut());
        assert_eq!(marks().await, kept, "{cut:?}");
    }
    mark(&through, 3).await.unwrap();
    assert_eq!(marks().await, 2);
}

/// Inserts `n` into `marks` in a transaction of its own.
async fn mark(pool: &sqlx::PgPool, n: i32) -> Result<(), sqlx::Error> {
    let mut tx = pool.begin().await?;
    sqlx::query("INSERT INTO marks VALUES ($1)")
        .bind(n)
        .execute(&mut *tx)
        .await?;
    tx.commit().await
}

/// The answer to a request whose outcome the service cannot know: try again later.
#[track_caller]
fn assert_retry_later(response: &TestResponse) {
    response.problem(StatusCode::SERVICE_UNAVAILABLE);
    let retry_after = response.header("retry-after");
    assert!(
        retry_after.is_some_and(|secs| secs.parse::<u32>().is_ok()),
        "Retry-After: {retry_after:?}"
    );
}

/// A later repeat answers like `retry`, byte for byte, as a replay.
#[track_caller]
fn assert_answers_alike(retry: &TestResponse, repeat: &TestResponse) {
    assert_eq!(repeat.status, retry.status, "{}", repeat.text);
    assert!(repeat.is_replay(), "{:?}", repeat.headers);
    assert_eq!(repeat.text, retry.text);
    assert_eq!(repeat.header("etag"), retry.header("etag"));
}

/// `request`'s answer, which must come within [`ANSWER_WITHIN`].
async fn in_time(request: impl Future<Output = TestResponse>) -> TestResponse {
    tokio::time::timeout(ANSWER_WITHIN, request)
        .await
        .expect("an answer, not a hang")
}
