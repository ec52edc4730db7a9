//! The relay's cursor as an operator changes it (`order-service outbox …`, docs/operations/upgrading.md
//! "Upgrading: the outbox as a log"): where it stands, marking published rows for 0.2.0 or not,
//! and rebasing the log after a restore (docs/operations/runbook.md
//! "OrderServiceOutboxRelayRefuses").

use super::{App, AppError, bounded};
use crate::store::outbox::relay_mode::{self, RelayStatus};

impl App {
    pub async fn outbox_status(&self) -> Result<RelayStatus, AppError> {
        Ok(bounded(relay_mode::status(&self.pool)).await?)
    }

    /// Relays stop marking `published_at`; `true` if they marked until now.
    pub async fn stop_marking_published(&self) -> Result<bool, AppError> {
        Ok(relay_mode::stop_marking(&self.pool).await?)
    }

    /// Relays mark `published_at` again, and what the cursor passed is marked now: whether they
    /// marked already, and how many rows were marked.
    pub async fn start_marking_published(&self) -> Result<(bool, u64), AppError> {
        Ok(relay_mode::start_marking(&self.pool).await?)
    }

    /// The rows repositioned, or `None` when the cursor is not ahead of the server's
    /// transaction ids.
    pub async fn rebase_outbox(&self) -> Result<Option<u64>, AppError> {
        Ok(relay_mode::rebase(&self.pool).await?)
    }
}
