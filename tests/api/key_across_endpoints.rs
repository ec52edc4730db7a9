//! One Idempotency-Key is one request whichever endpoint used it, under concurrency too: an
//! order command and a dead-letter action sent at the same moment with one client's key never
//! both succeed, and each one's retry answers as its first answer did.

use axum::http::StatusCode;
use serde_json::json;
use uuid::Uuid;

use crate::helpers::{TestApp, TestResponse, envelope, order_body, unique_key};

const ROUNDS: usize = 24;

async fn parked_payment(app: &TestApp) -> Uuid {
    let event_id = format!("evt-{}", Uuid::new_v4());
    let body = envelope(
        &event_id,
        "payment.succeeded",
        json!({"order_id": Uuid::new_v4(), "transfer_id": event_id, "amount_minor": 100, "currency": "EUR"}),
    );
    app.park(
        "payment.succeeded",
        Some(&event_id),
        &body,
        "premature: no order",
    )
    .await
}

async fn discard(app: &TestApp, id: Uuid, key: &str) -> TestResponse {
    app.post(&format!("/v1/dead-letters/{id}/discard"), key, &json!({}))
        .await
}

#[tokio::test]
async fn an_order_and_a_discard_racing_with_one_key_never_both_succeed_and_each_retry_replays_its_own_answer()
 {
    let app = TestApp::spawn().await;
    let mut wins = (0, 0);
    for round in 0..ROUNDS {
        let letter = parked_payment(&app).await;
        let key = unique_key();
        let order = order_body(&format!("c-{round}"), 1000, "EUR");

        let (placed, discarded) =
            futures::join!(app.place_order(&key, &order), discard(&app, letter, &key));

        let order_won = placed.status == StatusCode::CREATED;
        let discard_won = discarded.status == StatusCode::OK;
        assert!(
            order_won != discard_won,
            "round {round}: the order answered {} ({}), the discard {} ({})",
            placed.status,
            placed.text,
            discarded.status,
            discarded.text
        );
        let loser = if order_won { &discarded } else { &placed };
        assert_eq!(
            loser.problem(StatusCode::UNPROCESSABLE_ENTITY)["type"]
                .as_str()
                .map(|t| t.ends_with("idempotency-key-reused")),
            Some(true),
            "round {round}: {}",
            loser.text
        );

        // What the database holds agrees with the answers.
        let orders: i64 = sqlx::query_scalar("SELECT count(*) FROM orders WHERE customer_id = $1")
            .bind(format!("c-{round}"))
            .fetch_one(&app.pool)
            .await
            .expect("count orders");
        let status: String = sqlx::query_scalar("SELECT status FROM dead_letters WHERE id = $1")
            .bind(letter)
            .fetch_one(&app.pool)
            .await
            .expect("the dead letter");
        assert_eq!(orders, i64::from(order_won), "round {round}");
        assert_eq!(
            status,
            if discard_won { "discarded" } else { "parked" },
            "round {round}"
        );

        // Each retry answers as its first answer did: the winner's replays, the loser's is
        // refused again.
        let placed_again = app.place_order(&key, &order).await;
        let discarded_again = discard(&app, letter, &key).await;
        if order_won {
            assert_eq!(placed_again.status, StatusCode::CREATED, "round {round}");
            assert!(placed_again.is_replay(), "round {round}");
            assert_eq!(placed_again.body["id"], placed.body["id"]);
            discarded_again.problem(StatusCode::UNPROCESSABLE_ENTITY);
        } else {
            assert_eq!(discarded_again.status, StatusCode::OK, "round {round}");
            assert!(discarded_again.is_replay(), "round {round}");
            assert_eq!(discarded_again.body["status"], "discarded");
            placed_again.problem(StatusCode::UNPROCESSABLE_ENTITY);
        }
        if order_won {
            wins.0 += 1;
        } else {
            wins.1 += 1;
        }
    }
    println!("orders won {}, discards won {}", wins.0, wins.1);
}
