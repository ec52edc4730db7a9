//! A pool that stays on the node with the role wanted across failovers, without a restart.
//!
//! sqlx 0.9 connects a pool to one `PgConnectOptions`, which `Pool::set_connect_options` may
//! replace for the connections it opens next. So: a watcher task keeps one connection of its own
//! to the chosen host and asks its role every [`WATCH_EVERY`] (or at once when the pool saw a
//! wrong node); when that fails it searches the hosts in order (`Database::find`) and points
//! the pool at the first that will do. Meanwhile the pool itself checks each connection, each
//! check bounded by the connect timeout:
//! - a new one on the wrong node is closed (`after_connect`);
//! - one given back is asked its role before it goes back to the idle queue (`after_release`):
//!   a connection cut by a failover, left on a node turned read-only, or on a node that stopped
//!   answering (a paused VM: its socket stays open and silent) is dropped, never handed out
//!   again, and never holds a place in the pool for longer than the timeout;
//! - one that waited in the idle queue longer than [`CHECK_IDLE_AFTER`] is asked again before
//!   it is handed out (`before_acquire`, in place of sqlx's ping); a fresher one is not: it was
//!   checked when given back, less than a second ago. Should its node have changed role since
//!   without cutting it (pg_auto_failover and Patroni restart a demoted primary, which cuts
//!   every connection), its write fails (25006: 503, or the message waits) and the check on its
//!   release drops it.
//!
//! Every check also compares the server the connection is on with the one the watcher chose
//! (`Node`), so an old primary that still says it takes writes is not used, and closes a
//! connection found inside a transaction block (docs/postgres-failover.md "What the service
//! does").

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use sqlx::postgres::PgPoolOptions;
use sqlx::{PgConnection, PgPool};
use tokio::sync::Notify;

use super::{Database, Node, wrong_role};
use crate::store::CHECK_IDLE_AFTER;

/// How often the watcher asks the chosen node its role.
pub const WATCH_EVERY: Duration = Duration::from_secs(1);

struct Shared {
    database: Database,
    /// Woken by a connection found on the wrong node.
    suspect: Notify,
    /// The host the pool connects to now (an index into the hosts).
    chosen: AtomicUsize,
    /// The server the watcher found there, as it names itself: a connection on any other is
    /// not kept, even if that node still says it takes writes (an old primary let go after a
    /// freeze does, until its keeper demotes it).
    chosen_node: Mutex<Option<Node>>,
}

pub fn pool(database: Database, max_connections: u32) -> PgPool {
    let shared = Arc::new(Shared {
        database,
        suspect: Notify::new(),
        chosen: AtomicUsize::new(0),
        chosen_node: Mutex::new(None),
    });
    let on_connect = Arc::clone(&shared);
    let on_acquire = Arc::clone(&shared);
    let on_release = Arc::clone(&shared);
    let pool = PgPoolOptions::new()
        .max_connections(max_connections)
        .acquire_timeout(Duration::from_secs(3))
        .after_connect(move |conn, _| {
            let shared = Arc::clone(&on_connect);
            Box::pin(async move {
                if shared.still_acceptable(conn).await? {
                    return Ok(());
                }
                // The pool closes it and connects again to whatever the watcher chose.
                let host = &shared.database.hosts[shared.chosen.load(Ordering::Relaxed)];
                Err(wrong_role(host, shared.database.attrs))
            })
        })
        .test_before_acquire(false)
        .before_acquire(move |conn, meta| {
            let shared = Arc::clone(&on_acquire);
            Box::pin(async move {
                if meta.idle_for < CHECK_IDLE_AFTER {
                    return Ok(true);
                }
                shared.still_acceptable(conn).await
            })
        })
        .after_release(move |conn, _| {
            let shared = Arc::clone(&on_release);
            Box::pin(async move { shared.still_acceptable(conn).await })
        })
        .connect_lazy_with(shared.database.hosts[0].clone());
    tokio::spawn(watch(pool.clone(), shared));
    pool
}

impl Shared {
    /// Whether a connection of the pool may be kept: its node still has the role wanted. Any
    /// doubt (an error, no answer in time) wakes the watcher, and an `Err` makes sqlx drop the
    /// connection without a goodbye, which a silent node would never answer.
    async fn still_acceptable(&self, conn: &mut PgConnection) -> Result<bool, sqlx::Error> {
        let acceptable = self.database.report(conn).await.map(|report| {
            let chosen = self
                .chosen_node
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            // A connection inside a transaction block nobody holds (upstream sqlx 0.9 returns one
            // to the pool when a `BEGIN` is cancelled before the server answered it; our patched
            // driver rolls it back, vendor/README.md "sqlx-postgres 0.9.0", and this is the
            // second guard) would run the next user's autocommit writes in that block,
            // uncommitted: closed instead.
            self.database.wants(&report)
                && !report.in_transaction
                && chosen.as_ref().is_none_or(|node| *node == report.node)
        });
        if !matches!(acceptable, Ok(true)) {
            self.suspect.notify_one();
        }
        acceptable
    }
}

/// Until the pool is closed: keep a connection to the chosen node, and when it fails or has
/// the wrong role, find the node that will do and point the pool there.
async fn watch(pool: PgPool, shared: Arc<Shared>) {
    let closed = pool.close_event();
    tokio::pin!(closed);
    let mut chosen: Option<PgConnection> = None;
    loop {
        let fine = match chosen.as_mut() {
            Some(conn) => matches!(shared.database.is_acceptable(conn).await, Ok(true)),
            None => false,
        };
        if !fine {
            chosen = choose(&pool, &shared).await;
        }
        tokio::select! {
            () = &mut closed => return,
            () = shared.suspect.notified() => {}
            () = tokio::time::sleep(WATCH_EVERY) => {}
        }
    }
}

/// Finds the first host that will do, makes it (and the server there) the pool's choice, and
/// returns the watcher's connection to it.
async fn choose(pool: &PgPool, shared: &Shared) -> Option<PgConnection> {
    let found = shared.database.find().await;
    let (index, mut conn) = match found {
        Ok(found) => found,
        Err(error) => {
            tracing::warn!(%error, cause = %error.last, "postgres: no host will do yet");
            return None;
        }
    };
    let report = shared.database.report(&mut conn).await.ok()?;
    *shared
        .chosen_node
        .lock()
        .unwrap_or_else(PoisonError::into_inner) = Some(report.node);
    if shared.chosen.swap(index, Ordering::Relaxed) != index {
        let host = &shared.database.hosts[index];
        tracing::info!(host = host.get_host(), port = host.get_port(), attrs = %shared.database.attrs, "postgres: new connections go to this host");
        pool.set_connect_options(host.clone());
    }
    Some(conn)
}
