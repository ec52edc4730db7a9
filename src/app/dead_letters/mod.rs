//! Parked dead letters (docs/contract.md#parked-dead-letters): parking what the dead-letter
//! consumer hands over, the reads operators use to find and group them, and (in `actions`) the
//! replay and discard commands.

mod actions;
pub mod dead_letter_views;

use sqlx::PgConnection;
use strum::VariantArray;

use super::queries::Cursor;
use super::{App, AppError, deadline};
use crate::domain::{DeadLetterId, ReasonClass};
use crate::store::dead_letter_actions::{self, TakenAction};
use crate::store::dead_letters::{self, DeadLetter, ParkedGroup};

pub use crate::store::dead_letters::{DeadLetterFilter, NewDeadLetter};

/// The most body bytes a read returns; the stored body (what a replay publishes) stays whole.
pub const BODY_SHOWN_BYTES: i32 = 64 * 1024;
/// The most actions shown with a dead letter, newest first.
const ACTIONS_SHOWN: i64 = 20;
/// The most groups the summary lists, largest first (event types come from message bodies, so
/// their number is the senders' choice).
const SUMMARY_GROUPS: i64 = 100;

/// One dead letter and the actions taken on it.
#[derive(Debug, Clone, PartialEq)]
pub struct DeadLetterDetails {
    pub letter: DeadLetter,
    pub actions: Vec<TakenAction>,
}

/// A page request of the listing: filters (all must hold), a page size and where the previous
/// page ended.
#[derive(Debug, Clone)]
pub struct DeadLetterPageRequest {
    pub filter: DeadLetterFilter,
    pub limit: u16,
    pub after: Option<Cursor<DeadLetterId>>,
}

#[derive(Debug, Clone)]
pub struct DeadLetterPage {
    pub items: Vec<DeadLetter>,
    /// Where the next page starts; `None` on the last page.
    pub next: Option<Cursor<DeadLetterId>>,
}

/// What a bulk replay did: how many dead letters it replayed, and how many of those the filter
/// matched it left parked because a replay would lose or misroute them (domain::ReplayRoutes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BulkReplay {
    pub replayed: u64,
    pub skipped: u64,
}

/// The parked dead letters at a glance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParkedSummary {
    pub parked: i64,
    /// By reason class and event type, largest first; at most [`SUMMARY_GROUPS`].
    pub groups: Vec<ParkedGroup>,
}

impl App {
    /// Parks a dead letter (the same message again is its row, `times` + 1, parked again).
    pub async fn park(&self, letter: &NewDeadLetter) -> Result<DeadLetterId, AppError> {
        Ok(deadline::bounded(dead_letters::park(&self.pool, letter)).await?)
    }

    pub async fn dead_letter(&self, id: DeadLetterId) -> Result<DeadLetterDetails, AppError> {
        let mut conn = self.connection().await?;
        details(&mut conn, id).await
    }

    /// Newest first by when they were last dead-lettered.
    pub async fn dead_letters(
        &self,
        page: DeadLetterPageRequest,
    ) -> Result<DeadLetterPage, AppError> {
        let limit = usize::from(page.limit);
        // One extra row tells whether another page follows.
        let mut items = dead_letters::list(
            &self.pool,
            &page.filter,
            page.after.map(|c| (c.at, c.id)),
            limit as i64 + 1,
            BODY_SHOWN_BYTES,
        )
        .await?;
        let next = if items.len() > limit {
            items.truncate(limit);
            items.last().map(|letter| Cursor {
                at: letter.last_dead_lettered_at,
                id: letter.id,
            })
        } else {
            None
        };
        Ok(DeadLetterPage { items, next })
    }

    pub async fn parked_summary(&self) -> Result<ParkedSummary, AppError> {
        let (parked, groups) = dead_letters::parked_groups(&self.pool, SUMMARY_GROUPS).await?;
        Ok(ParkedSummary { parked, groups })
    }

    /// How many dead letters are parked, for every reason class (0 for those with none).
    pub async fn parked_by_class(&self) -> Result<Vec<(ReasonClass, i64)>, AppError> {
        let counted = deadline::bounded(dead_letters::parked_by_class(&self.pool)).await?;
        Ok(ReasonClass::VARIANTS
            .iter()
            .map(|class| {
                let count = counted
                    .iter()
                    .find(|(counted, _)| counted == class)
                    .map_or(0, |(_, count)| *count);
                (*class, count)
            })
            .collect())
    }
}

/// The dead letter as it is now, with its latest actions.
async fn details(conn: &mut PgConnection, id: DeadLetterId) -> Result<DeadLetterDetails, AppError> {
    let letter = dead_letters::find(conn, id, BODY_SHOWN_BYTES)
        .await?
        .ok_or(AppError::DeadLetterNotFound(id))?;
    let actions = dead_letter_actions::for_dead_letter(conn, id, ACTIONS_SHOWN).await?;
    Ok(DeadLetterDetails { letter, actions })
}
