//! The payment-expiry sweeper: when `ORDER_PAYMENT_TIMEOUT_SECS` is set, every instance looks
//! for overdue unpaid orders every `ORDER_EXPIRY_SWEEP_SECS` and cancels them through
//! [`App::expire_overdue`]. Several instances sweeping at once is safe (each cancellation is a
//! guarded write), merely redundant. Each sweep is a span that starts a trace of its own, which
//! the events of the orders it cancels carry.

use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::app::App;
use crate::config::ExpiryConfig;
use crate::telemetry::{TraceContext, continue_trace, error_chain};

/// Sweeps until `shutdown`. Does nothing when orders never expire.
pub async fn run(app: App, config: ExpiryConfig, shutdown: CancellationToken) {
    let Some(timeout) = config.payment_timeout() else {
        return;
    };
    tracing::info!(?timeout, every = ?config.sweep_interval(), "payment expiry on");
    loop {
        let span = tracing::info_span!(
            "expiry_sweep",
            trace_id = tracing::field::Empty,
            span_id = tracing::field::Empty,
        );
        let trace = continue_trace(&span, None);
        let wait = sweep(&app, &config, timeout, &trace).instrument(span).await;
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(wait) => {}
        }
    }
}

/// One sweep under `trace`; returns how long to wait before the next.
async fn sweep(
    app: &App,
    config: &ExpiryConfig,
    timeout: Duration,
    trace: &TraceContext,
) -> Duration {
    match app.expire_overdue(timeout, config.batch, trace).await {
        // More may be waiting: sweep again at once (each sweep is bounded).
        Ok(sweep) if sweep.full => Duration::ZERO,
        Ok(sweep) => {
            if sweep.expired > 0 {
                tracing::info!(expired = sweep.expired, "expired unpaid orders");
            }
            config.sweep_interval()
        }
        Err(error) => {
            tracing::warn!(error = %error_chain(&error), "payment expiry sweep failed");
            config.sweep_interval()
        }
    }
}
