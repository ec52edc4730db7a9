//! Request bodies are strict JSON objects (docs/decisions.md): a JSON array
//! is never read as a request, even one whose elements are the fields in order; a key given twice
//! is refused rather than the last one winning; and no problem detail names a Rust type of the
//! service, whatever shape of body it answers.

use axum::http::StatusCode;
use uuid::Uuid;

use crate::helpers::{TestApp, TestResponse, json_post};

/// Every POST under `/v1`, each on a resource its body would change if it were accepted: a
/// pending order (payments, cancellation), a paid one (shipment, refund) and a parked dead letter.
struct Endpoints {
    app: TestApp,
    pending: Uuid,
    paid: Uuid,
    letter: Uuid,
}

impl Endpoints {
    async fn spawn() -> Self {
        let app = TestApp::spawn().await;
        let pending = app.placed_order(1000).await;
        let paid = app.paid_order(1000).await;
        let letter = app
            .park(
                "payment.succeeded",
                Some("ev-1"),
                b"{poison",
                "poison: not a JSON envelope",
            )
            .await;
        Self {
            app,
            pending,
            paid,
            letter,
        }
    }

    fn place(&self) -> String {
        "/v1/orders".into()
    }
    fn pay(&self) -> String {
        format!("/v1/orders/{}/payments", self.pending)
    }
    fn refund(&self) -> String {
        format!("/v1/orders/{}/refunds", self.paid)
    }
    fn ship(&self) -> String {
        format!("/v1/orders/{}/ship", self.paid)
    }
    fn cancel(&self) -> String {
        format!("/v1/orders/{}/cancel", self.pending)
    }
    fn replay(&self) -> String {
        format!("/v1/dead-letters/{}/replay", self.letter)
    }
    fn discard(&self) -> String {
        format!("/v1/dead-letters/{}/discard", self.letter)
    }
    fn bulk_replay(&self) -> String {
        "/v1/dead-letters/replay".into()
    }

    fn all(&self) -> [String; 8] {
        [
            self.place(),
            self.pay(),
            self.refund(),
            self.ship(),
            self.cancel(),
            self.replay(),
            self.discard(),
            self.bulk_replay(),
        ]
    }

    async fn post(&self, path: &str, body: &str) -> TestResponse {
        self.app.request(json_post(path, body.to_owned())).await
    }

    /// Every table as it is, and whether the dead letter is still parked.
    async fn state(&self) -> ([i64; 4], String) {
        let status: String = sqlx::query_scalar("SELECT status FROM dead_letters WHERE id = $1")
            .bind(self.letter)
            .fetch_one(&self.app.pool)
            .await
            .expect("read the dead letter");
        (self.app.snapshot().await, status)
    }

    /// Sends `body` to `path` and checks that it is refused with a problem of `status` and that
    /// nothing changed.
    async fn refuses(&self, path: &str, body: &str, status: StatusCode) -> TestResponse {
        let before = self.state().await;
        let response = self.post(path, body).await;
        assert_eq!(
            response.status, status,
            "POST {path} {body}: {}",
            response.text
        );
        response.problem(status);
        assert_eq!(self.state().await, before, "POST {path} {body}");
        response
    }
}

#[tokio::test]
async fn a_json_array_is_never_read_as_a_request_body() {
    let e = Endpoints::spawn().await;

    // Each array lists the body's fields in declaration order, as serde would read a struct
    // from a sequence: accepted, each would change something.
    for (path, array) in [
        (e.place(), r#"[null,"c",5,"EUR"]"#),
        (e.pay(), r#"["t-1",1000,"EUR"]"#),
        (e.refund(), r#"["r-1",100,"EUR"]"#),
        (e.ship(), r#"["DHL","T-1"]"#),
        (e.cancel(), r#"["changed my mind"]"#),
        (e.replay(), "[]"),
        (e.discard(), "[]"),
        (e.bulk_replay(), "[null,null,null]"),
    ] {
        let response = e
            .refuses(&path, array, StatusCode::UNPROCESSABLE_ENTITY)
            .await;
        let detail = response.body["detail"].as_str().unwrap_or_default();
        assert!(
            detail.contains("JSON object"),
            "POST {path} {array}: {detail}"
        );
    }
    for path in e.all() {
        for scalar in ["null", "5", r#""text""#, "true"] {
            e.refuses(&path, scalar, StatusCode::UNPROCESSABLE_ENTITY)
                .await;
        }
    }
}

#[tokio::test]
async fn a_key_given_twice_is_refused_rather_than_the_last_one_winning() {
    let e = Endpoints::spawn().await;

    for (path, body) in [
        (
            e.place(),
            r#"{"customer_id":"c","amount_minor":1,"amount_minor":1000,"currency":"EUR"}"#,
        ),
        // The same key spelt with an escape is the same key.
        (
            e.place(),
            r#"{"customer_id":"c","amount_minor":1000,"currency":"EUR","\u0063urrency":"USD"}"#,
        ),
        (
            e.pay(),
            r#"{"transfer_id":"t-1","transfer_id":"t-2","amount_minor":1000,"currency":"EUR"}"#,
        ),
        (
            e.refund(),
            r#"{"refund_id":"r-1","amount_minor":100,"currency":"EUR","amount_minor":200}"#,
        ),
        (
            e.ship(),
            r#"{"carrier":"DHL","carrier":"UPS","tracking_number":"T-1"}"#,
        ),
        (e.cancel(), r#"{"reason":"a","reason":"b"}"#),
        (
            e.bulk_replay(),
            r#"{"type":"order.placed","type":"payment.succeeded"}"#,
        ),
        (e.replay(), r#"{"x":1,"x":1}"#),
        (e.discard(), r#"{"x":1,"x":1}"#),
    ] {
        let response = e.refuses(&path, body, StatusCode::BAD_REQUEST).await;
        let detail = response.body["detail"].as_str().unwrap_or_default();
        assert!(detail.contains("twice"), "POST {path} {body}: {detail}");
    }
}

/// Whether `word` is written like a Rust type name of several words: a capital, small letters,
/// another capital (`PlaceOrderRequest`; `UUID` and `EUR` are not).
fn is_camel_case(word: &str) -> bool {
    let mut chars = word.chars();
    chars.next().is_some_and(|c| c.is_ascii_uppercase())
        && word.chars().any(|c| c.is_ascii_lowercase())
        && word.chars().skip(1).any(|c| c.is_ascii_uppercase())
}

/// Type names of one word that the request bodies' fields are read into, Rust's integer types
/// among them.
const ONE_WORD_TYPES: [&str; 17] = [
    "Option", "Vec", "String", "Uuid", "Value", "Map", "Money", "Currency", "Version", "i16",
    "i32", "i64", "u16", "u32", "u64", "usize", "f64",
];

/// The problem's detail, checked for traces of the service's Rust types.
#[track_caller]
fn assert_names_no_type(response: &TestResponse, context: &str) {
    let detail = response.body["detail"]
        .as_str()
        .unwrap_or_else(|| panic!("{context}: no detail in {}", response.text));
    for marker in ["struct ", "enum ", "::"] {
        assert!(
            !detail.contains(marker),
            "{context}: the detail names a Rust type ({marker:?}): {detail}"
        );
    }
    let types: Vec<&str> = detail
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|word| is_camel_case(word) || ONE_WORD_TYPES.contains(word))
        .collect();
    assert!(types.is_empty(), "{context}: {types:?} in {detail}");
}

#[tokio::test]
async fn no_problem_detail_names_a_rust_type_whatever_the_body() {
    let e = Endpoints::spawn().await;
    let malformed = [
        "",
        "{",
        "[",
        "[]",
        "[1]",
        "[1,2,3,4,5]",
        r#"[null,"c",5,"EUR"]"#,
        r#"[{"a":1}]"#,
        "null",
        "0",
        "-1.5",
        r#""text""#,
        "true",
        r#"{"x":1}"#,
        r#"{"x":1,"x":2}"#,
        r#"{"id":[],"customer_id":{},"amount_minor":[1],"currency":null}"#,
        r#"{"id":"nope","customer_id":1,"amount_minor":"1","currency":5}"#,
        r#"{"transfer_id":[],"refund_id":{},"amount_minor":1.5,"currency":[]}"#,
        r#"{"carrier":{"a":1},"tracking_number":[1]}"#,
        r#"{"reason":[],"reason2":{}}"#,
        r#"{"reason":{}}"#,
        r#"{"ids":{},"reason":[],"type":1}"#,
        r#"{"ids":[1,"x",null]}"#,
        r#"{"ids":"all"}"#,
        r#"{"ids":[[]]}"#,
    ];

    for path in e.all() {
        for body in malformed {
            let response = e.post(&path, body).await;
            assert!(
                matches!(
                    response.status,
                    StatusCode::BAD_REQUEST | StatusCode::UNPROCESSABLE_ENTITY
                ),
                "POST {path} {body}: {}",
                response.text
            );
            response.problem(response.status);
            assert_names_no_type(&response, &format!("POST {path} {body}"));
        }
    }
}

#[test]
fn camel_case_words_are_told_from_other_capitals() {
    for word in ["PlaceOrderRequest", "InboundWire", "DeadLetterId"] {
        assert!(is_camel_case(word), "{word}");
    }
    for word in ["UUID", "EUR", "Idempotency", "JSON", "i64", "fA", "Uuid"] {
        assert!(!is_camel_case(word), "{word}");
    }
}
