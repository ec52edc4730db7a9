//! The API suite's harness, one idea a file: the application under test (a database of the
//! test's own, the router in-process or over TCP), responses, one helper per endpoint, what the
//! database holds, parked dead letters, and what requests carry.

mod app;
mod bodies;
mod endpoints;
mod parking;
mod response;
mod stored;

pub use app::{InProcess, TestApp, connection_heavy, serve_tcp};
pub use bodies::{
    envelope, json_post, order_body, payment_body, raw_post, refund_body, shipment_body, unique_key,
};
pub use parking::TRACEPARENT;
pub use response::TestResponse;
pub use stored::MoneyRow;
