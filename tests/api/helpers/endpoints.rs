//! One helper per endpoint: the request as a client sends it, and for the common cases a helper
//! that sends it with fresh keys and ids and asserts it succeeded.

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use serde_json::{Value, json};
use uuid::Uuid;

use order_service::app::MAX_PAGE;

use super::bodies::get_request;
use super::{TestApp, TestResponse, payment_body, refund_body, shipment_body, unique_key};

impl TestApp {
    pub async fn get(&self, path: &str) -> TestResponse {
        self.request(get_request(path)).await
    }

    /// A POST with a JSON body and, if given, an Idempotency-Key and extra headers.
    pub async fn post_with(
        &self,
        path: &str,
        key: Option<&str>,
        headers: &[(&str, &str)],
        body: &Value,
    ) -> TestResponse {
        let mut builder = Request::builder()
            .method(Method::POST)
            .uri(path)
            .header("content-type", "application/json");
        if let Some(key) = key {
            builder = builder.header("idempotency-key", key);
        }
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        self.request(
            builder
                .body(Body::from(body.to_string()))
                .expect("valid request"),
        )
        .await
    }

    pub async fn post(&self, path: &str, key: &str, body: &Value) -> TestResponse {
        self.post_with(path, Some(key), &[], body).await
    }

    pub async fn place_order(&self, key: &str, body: &Value) -> TestResponse {
        self.post("/v1/orders", key, body).await
    }

    /// Places a EUR order of `amount` and returns its id.
    pub async fn placed_order(&self, amount: i64) -> Uuid {
        let response = self
            .place_order(
                &unique_key(),
                &json!({"customer_id": "c-1", "amount_minor": amount, "currency": "EUR"}),
            )
            .await;
        assert_eq!(response.status, StatusCode::CREATED, "{}", response.text);
        response.body["id"].as_str().unwrap().parse().unwrap()
    }

    pub async fn pay(&self, order: Uuid, key: &str, body: &Value) -> TestResponse {
        self.post(&format!("/v1/orders/{order}/payments"), key, body)
            .await
    }

    /// Records a EUR payment with a fresh key and transfer id; asserts 201.
    pub async fn paid(&self, order: Uuid, amount: i64) -> TestResponse {
        let response = self
            .pay(
                order,
                &unique_key(),
                &json!({"transfer_id": unique_key(), "amount_minor": amount, "currency": "EUR"}),
            )
            .await;
        assert_eq!(response.status, StatusCode::CREATED, "{}", response.text);
        response
    }

    /// Records a EUR payment under this transfer id with a fresh key; asserts 201.
    pub async fn paid_with(&self, order: Uuid, transfer_id: &str, amount: i64) -> TestResponse {
        let response = self
            .pay(
                order,
                &unique_key(),
                &payment_body(transfer_id, amount, "EUR"),
            )
            .await;
        assert_eq!(response.status, StatusCode::CREATED, "{}", response.text);
        response
    }

    pub async fn ship(&self, order: Uuid, key: &str, body: &Value) -> TestResponse {
        self.post(&format!("/v1/orders/{order}/ship"), key, body)
            .await
    }

    pub async fn cancel(&self, order: Uuid, key: &str, body: &Value) -> TestResponse {
        self.post(&format!("/v1/orders/{order}/cancel"), key, body)
            .await
    }

    /// Ships with a fresh key; asserts 200.
    pub async fn shipped(&self, order: Uuid, carrier: &str, tracking: &str) -> TestResponse {
        let response = self
            .ship(order, &unique_key(), &shipment_body(carrier, tracking))
            .await;
        assert_eq!(response.status, StatusCode::OK, "{}", response.text);
        response
    }

    /// Cancels with a fresh key; asserts 200.
    pub async fn cancelled(&self, order: Uuid, reason: &str) -> TestResponse {
        let response = self
            .cancel(order, &unique_key(), &json!({ "reason": reason }))
            .await;
        assert_eq!(response.status, StatusCode::OK, "{}", response.text);
        response
    }

    pub async fn order(&self, order: Uuid) -> TestResponse {
        self.get(&format!("/v1/orders/{order}")).await
    }

    /// The order's whole history, every page of it.
    pub async fn history(&self, order: Uuid) -> Vec<Value> {
        self.every_page(&format!("/v1/orders/{order}/history"), MAX_PAGE)
            .await
    }

    /// Every item of the listing at `path` (with or without a query of filters), in order,
    /// following `next` with pages of `limit` to the last one; asserts each page is 200, and
    /// full unless it is the last.
    pub async fn every_page(&self, path: &str, limit: u16) -> Vec<Value> {
        let separator = if path.contains('?') { '&' } else { '?' };
        let mut items = vec![];
        let mut after: Option<String> = None;
        loop {
            let page_path = match &after {
                Some(after) => format!("{path}{separator}limit={limit}&after={after}"),
                None => format!("{path}{separator}limit={limit}"),
            };
            let page = self.get(&page_path).await;
            assert_eq!(page.status, StatusCode::OK, "{page_path}: {}", page.text);
            let page_items = page.body["items"].as_array().expect("items");
            after = page.body["next"].as_str().map(str::to_owned);
            if after.is_some() {
                assert_eq!(page_items.len(), usize::from(limit), "{page_path}");
            } else {
                assert!(page_items.len() <= usize::from(limit), "{page_path}");
            }
            items.extend(page_items.iter().cloned());
            if after.is_none() {
                return items;
            }
        }
    }

    /// Places a EUR order of `amount` and pays it in full; returns its id (the order is at
    /// version 2, PAID).
    pub async fn paid_order(&self, amount: i64) -> Uuid {
        let id = self.placed_order(amount).await;
        self.paid(id, amount).await;
        id
    }

    /// The order's whole ledger as the API lists it, every page of it.
    pub async fn ledger(&self, order: Uuid) -> Vec<Value> {
        self.every_page(&format!("/v1/orders/{order}/payments"), MAX_PAGE)
            .await
    }

    pub async fn refund(&self, order: Uuid, key: &str, body: &Value) -> TestResponse {
        self.post(&format!("/v1/orders/{order}/refunds"), key, body)
            .await
    }

    /// Records a EUR refund under this refund id with a fresh key; asserts 201.
    pub async fn refunded(&self, order: Uuid, refund_id: &str, amount: i64) -> TestResponse {
        let response = self
            .refund(order, &unique_key(), &refund_body(refund_id, amount, "EUR"))
            .await;
        assert_eq!(response.status, StatusCode::CREATED, "{}", response.text);
        response
    }
}
