//! Settings of payment expiry.

use std::time::Duration;

use clap::Args;

use super::{
    DEFAULT_ORDER_EXPIRY_BATCH, DEFAULT_ORDER_EXPIRY_SWEEP_SECS, DEFAULT_ORDER_PAYMENT_TIMEOUT_SECS,
};

/// Payment expiry: how long an order may wait for its payment, and how each instance sweeps.
#[derive(Debug, Clone, Args)]
pub struct ExpiryConfig {
    /// An order still PENDING_PAYMENT this long after it was placed is cancelled with reason
    /// `payment_timeout` (seconds; 0 = never).
    #[arg(long = "order-payment-timeout-secs", global = true, env = "ORDER_PAYMENT_TIMEOUT_SECS", default_value_t = DEFAULT_ORDER_PAYMENT_TIMEOUT_SECS)]
    pub payment_timeout_secs: u64,

    /// How often an instance looks for expired orders (seconds).
    #[arg(long = "order-expiry-sweep-secs", global = true, env = "ORDER_EXPIRY_SWEEP_SECS", default_value_t = DEFAULT_ORDER_EXPIRY_SWEEP_SECS, value_parser = clap::value_parser!(u64).range(1..))]
    pub sweep_secs: u64,

    /// The most orders one sweep cancels; a full sweep is followed by another at once.
    #[arg(long = "order-expiry-batch", global = true, env = "ORDER_EXPIRY_BATCH", default_value_t = DEFAULT_ORDER_EXPIRY_BATCH, value_parser = clap::value_parser!(u32).range(1..))]
    pub batch: u32,
}

impl ExpiryConfig {
    /// `None` when orders never expire.
    pub fn payment_timeout(&self) -> Option<Duration> {
        (self.payment_timeout_secs > 0).then(|| Duration::from_secs(self.payment_timeout_secs))
    }

    pub fn sweep_interval(&self) -> Duration {
        Duration::from_secs(self.sweep_secs)
    }
}
