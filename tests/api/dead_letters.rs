//! `/v1/dead-letters` over REST (docs/contract.md#parked-dead-letters): finding, grouping,
//! replaying and discarding parked dead letters; their actions' Idempotency-Keys, which behave as
//! an order request's do; an action that finds its dead letter settled writes nothing; and the
//! `orders:admin` scope.

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use serde_json::{Value, json};
use uuid::Uuid;

use order_service::amqp::inbound::INBOUND_TYPES;
use order_service::amqp::properties;
use order_service::app::dead_letters::DeadLetterFilter;
use order_service::auth::generate_token;
use order_service::domain::{
    DeadLetterAction, DeadLetterId, Fingerprint, IdempotencyKey, KeyScope, Source,
};
use order_service::store::Guarded;
use order_service::store::dead_letter_actions::{self, Actor, ReplayTo, Targets};
use order_service::telemetry::TraceContext;

use crate::helpers::{TRACEPARENT, TestApp, TestResponse, envelope, order_body, unique_key};

const PREMATURE: &str = "premature: order 1 does not exist yet (gave up after 10 attempts)";

/// A payment envelope, as a payment that came too early would be parked.
fn payment(event_id: &str) -> Vec<u8> {
    envelope(
        event_id,
        "payment.succeeded",
        json!({"order_id": Uuid::new_v4(), "transfer_id": event_id, "amount_minor": 100, "currency": "EUR"}),
    )
}

async fn park_payment(app: &TestApp, event_id: &str, reason: &str) -> Uuid {
    app.park(
        "payment.succeeded",
        Some(event_id),
        &payment(event_id),
        reason,
    )
    .await
}

async fn replay(app: &TestApp, id: Uuid, key: &str) -> TestResponse {
    app.post(&format!("/v1/dead-letters/{id}/replay"), key, &json!({}))
        .await
}

async fn discard(app: &TestApp, id: Uuid, key: &str) -> TestResponse {
    app.post(&format!("/v1/dead-letters/{id}/discard"), key, &json!({}))
        .await
}

async fn ids(app: &TestApp, query: &str) -> Vec<Value> {
    let response = app.get(&format!("/v1/dead-letters{query}")).await;
    assert_eq!(
        response.status,
        StatusCode::OK,
        "{query}: {}",
        response.text
    );
    response.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["id"].clone())
        .collect()
}

/// The raw outbox rows: `(exchange, routing_key, body, properties)`, oldest first.
async fn raw_outbox(app: &TestApp) -> Vec<(String, String, Vec<u8>, Value)> {
    sqlx::query_as(
        "SELECT exchange, routing_key, body, properties FROM outbox \
         WHERE body IS NOT NULL ORDER BY id",
    )
    .fetch_all(&app.pool)
    .await
    .expect("read the outbox")
}

#[tokio::test]
async fn dead_letters_are_listed_newest_first_in_keyset_pages_and_filtered() {
    let app = TestApp::spawn().await;
    let poison = app
        .park(
            "payment.succeeded",
            Some("m-1"),
            b"{poison",
            "poison: not a JSON envelope",
        )
        .await;
    let early = park_payment(&app, "ev-2", PREMATURE).await;
    let odd = app
        .park(
            "order.placed",
            Some("ev-3"),
            &envelope("ev-3", "order.placed", json!({})),
            "conflict: 100% of order_id reused",
        )
        .await;

    let page = app.get("/v1/dead-letters?limit=2").await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text);
    let first: Vec<&Value> = page.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| &i["id"])
        .collect();
    assert_eq!(first, [&json!(odd), &json!(early)]);
    let next = page.body["next"].as_str().expect("a next page");
    assert_eq!(
        ids(&app, &format!("?limit=2&after={next}")).await,
        [json!(poison)]
    );

    // `reason` is a case-insensitive substring; `%` and `_` in it are plain characters.
    assert_eq!(ids(&app, "?reason=PREMATURE").await, [json!(early)]);
    assert_eq!(ids(&app, "?reason=%25").await, [json!(odd)]);
    assert_eq!(ids(&app, "?reason=_").await, [json!(odd)]);
    assert_eq!(ids(&app, "?type=payment.succeeded").await, [json!(early)]);
    assert_eq!(
        ids(&app, "?status=parked&type=order.placed").await,
        [json!(odd)]
    );
    assert!(ids(&app, "?status=replayed").await.is_empty());
    assert_eq!(ids(&app, "").await.len(), 3);

    for bad in [
        "?limit=0",
        "?limit=101",
        "?after=zz",
        "?status=lost",
        "?reason=",
        &format!("?type={}", "t".repeat(256)),
    ] {
        app.get(&format!("/v1/dead-letters{bad}"))
            .await
            .problem(StatusCode::BAD_REQUEST);
    }
}

#[tokio::test]
async fn one_dead_letter_shows_its_reason_headers_and_body_cut_for_reading() {
    let app = TestApp::spawn().await;
    let binary = app
        .park(
            "payment.succeeded",
            None,
            &[0xff, b'a'],
            "poison: not a JSON envelope",
        )
        .await;
    let huge = app
        .park(
            "order.placed",
            None,
            &vec![b'x'; 70_000],
            "poison: message too large",
        )
        .await;

    let shown = app.get(&format!("/v1/dead-letters/{binary}")).await;
    assert_eq!(shown.status, StatusCode::OK, "{}", shown.text);
    let letter = &shown.body;
    assert_eq!(letter["body"], "\u{FFFD}a", "the bytes, lossy");
    assert_eq!(letter["body_bytes"], 2);
    assert_eq!(letter["body_truncated"], false);
    assert_eq!(letter["reason"], "poison: not a JSON envelope");
    assert_eq!(letter["reason_class"], "poison");
    assert_eq!(letter["routing_key"], "payment.succeeded");
    assert_eq!(
        (&letter["event_id"], &letter["type"]),
        (&json!(null), &json!(null))
    );
    assert_eq!(letter["headers"], json!({"traceparent": TRACEPARENT}));
    assert_eq!(
        (&letter["times"], &letter["status"]),
        (&json!(1), &json!("parked"))
    );
    assert_eq!(letter["actions"], json!([]));
    assert!(letter["first_dead_lettered_at"].is_string());

    let huge = app.get(&format!("/v1/dead-letters/{huge}")).await;
    assert_eq!(huge.body["body"].as_str().unwrap().len(), 64 * 1024);
    assert_eq!(huge.body["body_bytes"], 70_000);
    assert_eq!(huge.body["body_truncated"], true);

    app.get(&format!("/v1/dead-letters/{}", Uuid::new_v4()))
        .await
        .problem(StatusCode::NOT_FOUND);
    app.get("/v1/dead-letters/not-a-uuid")
        .await
        .problem(StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn the_summary_counts_parked_dead_letters_by_reason_class_and_type() {
    let app = TestApp::spawn().await;
    park_payment(&app, "ev-1", PREMATURE).await;
    let gone = park_payment(&app, "ev-2", PREMATURE).await;
    park_payment(&app, "ev-3", PREMATURE).await;
    app.park("order.placed", None, b"{", "poison: not a JSON envelope")
        .await;
    assert_eq!(
        discard(&app, gone, &unique_key()).await.status,
        StatusCode::OK
    );

    let summary = app.get("/v1/dead-letters/summary").await;
    assert_eq!(summary.status, StatusCode::OK, "{}", summary.text);
    assert_eq!(summary.body["parked"], 3);
    let groups: Vec<(Value, Value, Value)> = summary.body["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["reason_class"].clone(),
                g["type"].clone(),
                g["count"].clone(),
            )
        })
        .collect();
    assert_eq!(
        groups,
        [
            (json!("premature"), json!("payment.succeeded"), json!(2)),
            (json!("poison"), json!(null), json!(1)),
        ]
    );
}

#[tokio::test]
async fn a_replay_marks_it_replayed_and_queues_its_original_in_the_outbox_in_one_step() {
    let app = TestApp::spawn().await;
    let body = payment("ev-1");
    let id = app
        .park("payment.succeeded", Some("ev-1"), &body, PREMATURE)
        .await;

    let replayed = replay(&app, id, "replay-1").await;
    assert_eq!(replayed.status, StatusCode::OK, "{}", replayed.text);
    assert!(!replayed.is_replay());
    assert_eq!(replayed.body["status"], "replayed");
    let action = &replayed.body["actions"][0];
    assert_eq!(
        (&action["action"], &action["by"], &action["source"]),
        (&json!("replay"), &json!("anonymous"), &json!("api"))
    );

    let outbox = raw_outbox(&app).await;
    assert_eq!(outbox.len(), 1);
    let (exchange, routing_key, sent, stored) = &outbox[0];
    assert_eq!(
        (exchange.as_str(), routing_key.as_str()),
        ("commerce.events", "payment.succeeded")
    );
    assert_eq!(sent, &body);
    let sent = properties::decode(stored);
    assert_eq!(sent.message_id().as_ref().unwrap().as_str(), "ev-1");
    let headers = sent.headers().clone().unwrap();
    let names: Vec<&str> = headers.inner().keys().map(|k| k.as_str()).collect();
    assert_eq!(names, ["traceparent"], "no bookkeeping header is replayed");

    // Not parked any more: another replay or a discard is refused, and nothing is sent again.
    for refused in [
        replay(&app, id, "replay-2").await,
        discard(&app, id, "discard-1").await,
    ] {
        let problem = refused.problem(StatusCode::CONFLICT);
        assert_eq!(problem["current_status"], "replayed");
        assert!(
            problem["type"]
                .as_str()
                .unwrap()
                .ends_with("/dead-letter-not-parked"),
            "{problem}"
        );
    }
    assert_eq!(raw_outbox(&app).await.len(), 1);
    assert_eq!(app.count("dead_letter_actions").await, 1);
    replay(&app, Uuid::new_v4(), "replay-3")
        .await
        .problem(StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_discarded_dead_letter_is_not_replayed_unless_it_dies_again() {
    let app = TestApp::spawn().await;
    let id = park_payment(&app, "ev-1", PREMATURE).await;

    let discarded = discard(&app, id, "discard").await;
    assert_eq!(discarded.status, StatusCode::OK, "{}", discarded.text);
    assert_eq!(discarded.body["status"], "discarded");
    let refused = replay(&app, id, "too-late").await;
    assert_eq!(
        refused.problem(StatusCode::CONFLICT)["current_status"],
        "discarded"
    );
    assert!(raw_outbox(&app).await.is_empty());

    // Dead-lettered again: the same row, parked again with its latest reason, replayable.
    let again = park_payment(&app, "ev-1", "premature: still no order").await;
    assert_eq!(again, id);
    let replayed = replay(&app, id, "replay").await;
    assert_eq!(replayed.status, StatusCode::OK, "{}", replayed.text);
    assert_eq!(replayed.body["times"], 2);
    assert_eq!(replayed.body["reason"], "premature: still no order");
    let actions: Vec<&Value> = replayed.body["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| &a["action"])
        .collect();
    assert_eq!(actions, [&json!("replay"), &json!("discard")]);
    assert_eq!(raw_outbox(&app).await.len(), 1);
}

#[tokio::test]
async fn an_action_retried_with_its_key_answers_the_same_and_another_request_under_it_is_422() {
    let app = TestApp::spawn().await;
    let a = park_payment(&app, "ev-a", PREMATURE).await;
    let b = park_payment(&app, "ev-b", PREMATURE).await;

    let first = replay(&app, a, "key-1").await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.text);
    let retry = replay(&app, a, "key-1").await;
    assert_eq!(retry.status, StatusCode::OK, "{}", retry.text);
    assert!(retry.is_replay());
    assert_eq!(retry.body["id"], first.body["id"]);
    assert_eq!(app.count("dead_letter_actions").await, 1);
    assert_eq!(raw_outbox(&app).await.len(), 1);

    // The same key for anything else: another dead letter, another action, another endpoint.
    for other in [
        replay(&app, b, "key-1").await,
        discard(&app, b, "key-1").await,
        app.post("/v1/dead-letters/replay", "key-1", &json!({}))
            .await,
        app.place_order("key-1", &order_body("c-1", 100, "EUR"))
            .await,
    ] {
        assert_eq!(
            other.problem(StatusCode::UNPROCESSABLE_ENTITY)["type"],
            "https://order-service.dev/problems/idempotency-key-reused"
        );
    }
    // And an order request's key is not a dead-letter action's.
    let placed = app
        .place_order("order-key", &order_body("c-1", 100, "EUR"))
        .await;
    assert_eq!(placed.status, StatusCode::CREATED);
    replay(&app, b, "order-key")
        .await
        .problem(StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        app.get(&format!("/v1/dead-letters/{b}")).await.body["status"],
        "parked"
    );

    // Bad requests are refused before anything runs.
    let path = format!("/v1/dead-letters/{b}/replay");
    app.post_with(&path, None, &[], &json!({}))
        .await
        .problem(StatusCode::BAD_REQUEST);
    app.post(&path, &unique_key(), &json!({"comment": "why"}))
        .await
        .problem(StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(app.count("dead_letter_actions").await, 1);
}

#[tokio::test]
async fn a_bulk_replay_takes_the_parked_ones_matching_every_filter_at_most_1000() {
    let app = TestApp::spawn().await;
    let early = park_payment(&app, "ev-1", PREMATURE).await;
    let done = park_payment(&app, "ev-2", PREMATURE).await;
    let shipment = app
        .park(
            "shipment.dispatched",
            Some("ev-3"),
            &envelope("ev-3", "shipment.dispatched", json!({})),
            "premature: an order cannot move from PENDING_PAYMENT to SHIPPED",
        )
        .await;
    let poison = app
        .park(
            "payment.succeeded",
            None,
            b"{",
            "poison: not a JSON envelope",
        )
        .await;
    assert_eq!(
        replay(&app, done, &unique_key()).await.status,
        StatusCode::OK
    );

    let bulk = |key: &'static str, body: Value| {
        let app = &app;
        async move { app.post("/v1/dead-letters/replay", key, &body).await }
    };
    let by_reason = bulk(
        "bulk-1",
        json!({"reason": "premature", "type": "payment.succeeded"}),
    )
    .await;
    assert_eq!(by_reason.status, StatusCode::OK, "{}", by_reason.text);
    assert_eq!(by_reason.body, json!({"replayed": 1, "skipped": 0}));
    let retried = bulk(
        "bulk-1",
        json!({"reason": "premature", "type": "payment.succeeded"}),
    )
    .await;
    assert_eq!(retried.body, json!({"replayed": 1, "skipped": 0}));
    assert!(retried.is_replay());
    let status = |id: Uuid| {
        let app = &app;
        async move { app.get(&format!("/v1/dead-letters/{id}")).await.body["status"].clone() }
    };
    assert_eq!(status(early).await, "replayed");
    assert_eq!(status(shipment).await, "parked");

    let by_ids = bulk(
        "bulk-2",
        json!({"ids": [shipment, poison, done, Uuid::new_v4()]}),
    )
    .await;
    assert_eq!(
        by_ids.body,
        json!({"replayed": 2, "skipped": 0}),
        "the parked ones only"
    );
    let everything = bulk("bulk-3", json!({})).await;
    assert_eq!(everything.body, json!({"replayed": 0, "skipped": 0}));
    assert_eq!(raw_outbox(&app).await.len(), 4);

    for invalid in [
        json!({"ids": vec![Uuid::nil(); 1001]}),
        json!({"reason": ""}),
        json!({"reason": "x", "class": "poison"}),
    ] {
        bulk("bulk-4", invalid)
            .await
            .problem(StatusCode::UNPROCESSABLE_ENTITY);
    }
}

#[tokio::test]
async fn twin_replays_under_one_key_replay_it_once_and_rivals_under_two_keys_once_too() {
    let app = TestApp::spawn().await;
    let id = park_payment(&app, "ev-1", PREMATURE).await;
    let (one, two) = tokio::join!(replay(&app, id, "twin"), replay(&app, id, "twin"));
    assert_eq!((one.status, two.status), (StatusCode::OK, StatusCode::OK));
    assert_eq!(
        [one.is_replay(), two.is_replay()]
            .iter()
            .filter(|r| **r)
            .count(),
        1,
        "one applied, one replayed"
    );

    let other = park_payment(&app, "ev-2", PREMATURE).await;
    let (one, two) = tokio::join!(
        replay(&app, other, "rival-1"),
        replay(&app, other, "rival-2")
    );
    let mut statuses = [one.status, two.status];
    statuses.sort();
    assert_eq!(statuses, [StatusCode::OK, StatusCode::CONFLICT]);
    assert_eq!(raw_outbox(&app).await.len(), 2);
    assert_eq!(app.count("dead_letter_actions").await, 2);
}

#[tokio::test]
async fn a_replay_of_a_dead_letter_settled_since_it_was_read_records_and_sends_nothing() {
    // The action is one statement: the action row and the outbox row are taken from the dead
    // letters it settles, so when the one it names is no longer parked, nothing is written.
    let app = TestApp::spawn().await;
    let id = park_payment(&app, "ev-1", PREMATURE).await;
    assert_eq!(discard(&app, id, "first").await.status, StatusCode::OK);
    let (actions, outbox) = (
        app.count("dead_letter_actions").await,
        app.count("outbox").await,
    );
    let (key, fingerprint) = (
        IdempotencyKey::parse("late").unwrap(),
        Fingerprint::new("f".into()),
    );
    let one = DeadLetterFilter {
        ids: Some(vec![DeadLetterId::from_uuid(id)]),
        ..DeadLetterFilter::default()
    };
    let mut conn = app.pool.acquire().await.unwrap();

    let taken = dead_letter_actions::act(
        &mut conn,
        DeadLetterAction::Replay,
        &Targets {
            filter: &one,
            limit: 1,
            at_least: 1,
        },
        &Actor {
            source: Source::Api,
            scope: KeyScope {
                client: "anonymous",
                key: &key,
                fingerprint: &fingerprint,
            },
            note: None,
        },
        Some(&ReplayTo {
            exchange: "commerce.events",
            routing_keys: INBOUND_TYPES,
            trace: &TraceContext::start(),
        }),
        None,
    )
    .await
    .unwrap();

    assert!(matches!(taken, Guarded::Lost), "{taken:?}");
    assert_eq!(app.count("dead_letter_actions").await, actions);
    assert_eq!(app.count("outbox").await, outbox);
}

#[tokio::test]
async fn a_client_without_orders_admin_is_403_on_every_dead_letter_route_and_one_with_it_is_served()
{
    let shop = generate_token().unwrap();
    let ops = generate_token().unwrap();
    let app = TestApp::spawn_with_clients(&[
        ("shop", &shop, "orders:read,orders:write"),
        ("ops", &ops, "orders:admin"),
    ])
    .await;
    let id = park_payment(&app, "ev-1", PREMATURE).await;
    let routes = [
        (Method::GET, "/v1/dead-letters".to_owned()),
        (Method::GET, "/v1/dead-letters/summary".to_owned()),
        (Method::GET, format!("/v1/dead-letters/{id}")),
        (Method::POST, "/v1/dead-letters/replay".to_owned()),
        (Method::POST, format!("/v1/dead-letters/{id}/discard")),
        (Method::POST, format!("/v1/dead-letters/{id}/replay")),
    ];
    let send = |method: Method, path: &str, token: &str| {
        let mut builder = Request::builder()
            .method(method.clone())
            .uri(path)
            .header("authorization", format!("Bearer {token}"));
        let body = if method == Method::POST {
            builder = builder
                .header("content-type", "application/json")
                .header("idempotency-key", unique_key());
            Body::from("{}")
        } else {
            Body::empty()
        };
        app.request(builder.body(body).unwrap())
    };

    for (method, path) in &routes {
        let refused = send(method.clone(), path, &shop).await;
        refused.problem(StatusCode::FORBIDDEN);
        assert!(
            refused
                .header("www-authenticate")
                .unwrap()
                .contains("scope=\"orders:admin\""),
            "{method} {path}"
        );
    }
    assert_eq!(
        app.get(&format!("/v1/dead-letters/{id}")).await.status,
        StatusCode::UNAUTHORIZED
    );
    for (method, path) in &routes {
        let served = send(method.clone(), path, &ops).await;
        assert!(
            served.status == StatusCode::OK || served.status == StatusCode::CONFLICT,
            "{method} {path}: {}",
            served.text
        );
    }
    let shown = send(Method::GET, &format!("/v1/dead-letters/{id}"), &ops).await;
    assert_eq!(shown.body["actions"][0]["by"], "ops", "{}", shown.text);
    // orders:admin is dead letters only.
    send(Method::GET, "/v1/orders", &ops)
        .await
        .problem(StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn a_dead_letter_whose_routing_key_the_inbox_does_not_bind_is_refused_and_nothing_is_sent() {
    let app = TestApp::spawn().await;
    // A publisher-supplied `x-original-routing-key` longer than AMQP allows, and a short one that
    // no binding of the inbox matches.
    let long_key = app
        .park(
            &"k".repeat(300),
            Some("ev-long"),
            &payment("ev-long"),
            PREMATURE,
        )
        .await;
    let foreign = app
        .park(
            "inventory.reserved",
            Some("ev-foreign"),
            &payment("ev-foreign"),
            PREMATURE,
        )
        .await;
    let good = park_payment(&app, "ev-good", PREMATURE).await;

    for id in [long_key, foreign] {
        let refused = replay(&app, id, &unique_key()).await;
        let problem = refused.problem(StatusCode::CONFLICT);
        assert_eq!(
            problem["type"],
            "https://order-service.dev/problems/dead-letter-not-replayable"
        );
        assert_eq!(problem["current_status"], "parked");
    }
    assert!(raw_outbox(&app).await.is_empty(), "nothing was sent");
    assert_eq!(app.count("dead_letter_actions").await, 0);

    // A bulk replay sends the replayable ones and skips the others, which stay parked.
    let bulk = app
        .post("/v1/dead-letters/replay", &unique_key(), &json!({}))
        .await;
    assert_eq!(bulk.status, StatusCode::OK, "{}", bulk.text);
    assert_eq!(bulk.body, json!({"replayed": 1, "skipped": 2}));
    let sent = raw_outbox(&app).await;
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].1, "payment.succeeded");
    for (id, status) in [
        (long_key, "parked"),
        (foreign, "parked"),
        (good, "replayed"),
    ] {
        let shown = app.get(&format!("/v1/dead-letters/{id}")).await;
        assert_eq!(shown.body["status"], status, "{id}");
    }
}

#[tokio::test]
async fn a_discard_keeps_its_note_and_the_actor_alone_sees_its_key() {
    let (token_a, token_b) = (generate_token().unwrap(), generate_token().unwrap());
    let app = TestApp::spawn_with_clients(&[
        ("ops-a", &token_a, "orders:admin"),
        ("ops-b", &token_b, "orders:admin"),
    ])
    .await;
    let (as_a, as_b) = (format!("Bearer {token_a}"), format!("Bearer {token_b}"));
    let id = park_payment(&app, "ev-note", PREMATURE).await;
    let note = "a test message sent to production by mistake";
    let path = format!("/v1/dead-letters/{id}/discard");
    let post = |key: &'static str, body: Value| {
        let (path, auth) = (path.clone(), as_a.clone());
        let app = &app;
        async move {
            app.post_with(&path, Some(key), &[("authorization", &auth)], &body)
                .await
        }
    };

    let too_long = post("discard-long", json!({"note": "x".repeat(501)})).await;
    let problem = too_long.problem(StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        problem["detail"].as_str().unwrap().contains("note"),
        "{problem}"
    );
    let discarded = post("discard-note", json!({"note": note})).await;
    assert_eq!(discarded.status, StatusCode::OK, "{}", discarded.text);
    let action = &discarded.body["actions"][0];
    assert_eq!(action["action"], "discard");
    assert_eq!(action["by"], "ops-a");
    assert_eq!(action["note"], note);
    assert_eq!(action["idempotency_key"], "discard-note");
    // The same key with another note is another request.
    let other = post("discard-note", json!({"note": "other"})).await;
    assert_eq!(
        other.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        other.text
    );

    let shown_to = |auth: String| {
        let request = axum::http::Request::builder()
            .uri(format!("/v1/dead-letters/{id}"))
            .header("authorization", auth)
            .body(axum::body::Body::empty())
            .unwrap();
        app.request(request)
    };
    let to_a = shown_to(as_a.clone()).await;
    assert_eq!(to_a.body["actions"][0]["idempotency_key"], "discard-note");
    let to_b = shown_to(as_b.clone()).await;
    assert_eq!(to_b.body["actions"][0]["note"], note);
    assert_eq!(to_b.body["actions"][0]["by"], "ops-a");
    assert!(
        to_b.body["actions"][0]["idempotency_key"].is_null(),
        "{}",
        to_b.text
    );
}
