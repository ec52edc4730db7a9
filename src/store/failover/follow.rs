//! A pool that stays on the node with the role wanted across failovers, without a restart.
//!
//! sqlx 0.9 connects a pool to one `PgConnectOptions`, which `Pool::set_connect_options` may
//! replace for the connections it opens next. So: a watcher task keeps one connection of its own
//! to the chosen host and asks its role every [`WATCH_EVERY`] (or at once when the pool saw a
//! wrong node); when that fails it searches the hosts in order (`Database::find`) and points
//! the pool at the first that will do. Meanwhile the pool itself checks each connection: a new
//! one on the wrong node is closed (`after_connect`), and an idle one is asked its role before
//! it is handed out (`before_acquire`, in place of sqlx's ping), so a connection cut by a
//! failover or left on a node turned read-only is dropped, never handed out again.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use sqlx::postgres::PgPoolOptions;
use sqlx::{PgConnection, PgPool};
use tokio::sync::Notify;

use super::{Database, wrong_role};

/// How often the watcher asks the chosen node its role.
pub const WATCH_EVERY: Duration = Duration::from_secs(1);

struct Shared {
    database: Database,
    /// Woken by a connection found on the wrong node.
    suspect: Notify,
    /// The host the pool connects to now (an index into the hosts).
    chosen: AtomicUsize,
}

pub fn pool(database: Database, max_connections: u32) -> PgPool {
    let shared = Arc::new(Shared {
        database,
        suspect: Notify::new(),
        chosen: AtomicUsize::new(0),
    });
    let on_connect = Arc::clone(&shared);
    let on_acquire = Arc::clone(&shared);
    let pool = PgPoolOptions::new()
        .max_connections(max_connections)
        .acquire_timeout(Duration::from_secs(3))
        .after_connect(move |conn, _| {
            let shared = Arc::clone(&on_connect);
            Box::pin(async move {
                if shared.database.is_acceptable(conn).await? {
                    return Ok(());
                }
                shared.suspect.notify_one();
                // The pool closes it and connects again to whatever the watcher chose.
                let host = &shared.database.hosts[shared.chosen.load(Ordering::Relaxed)];
                Err(wrong_role(host, shared.database.attrs))
            })
        })
        .test_before_acquire(false)
        .before_acquire(move |conn, _| {
            let shared = Arc::clone(&on_acquire);
            Box::pin(async move {
                let acceptable = shared.database.is_acceptable(conn).await;
                if !matches!(acceptable, Ok(true)) {
                    shared.suspect.notify_one();
                }
                acceptable
            })
        })
        .connect_lazy_with(shared.database.hosts[0].clone());
    tokio::spawn(watch(pool.clone(), shared));
    pool
}

/// Until the pool is closed: keep a connection to the chosen node, and when it fails or has
/// the wrong role, find the node that will do and point the pool there.
async fn watch(pool: PgPool, shared: Arc<Shared>) {
    let closed = pool.close_event();
    tokio::pin!(closed);
    let mut chosen: Option<(usize, PgConnection)> = None;
    loop {
        let fine = match chosen.as_mut() {
            Some((_, conn)) => matches!(shared.database.is_acceptable(conn).await, Ok(true)),
            None => false,
        };
        if !fine {
            chosen = None;
            match shared.database.find().await {
                Ok((index, conn)) => {
                    if shared.chosen.swap(index, Ordering::Relaxed) != index {
                        let host = &shared.database.hosts[index];
                        tracing::info!(host = host.get_host(), port = host.get_port(), attrs = %shared.database.attrs, "postgres: new connections go to this host");
                        pool.set_connect_options(host.clone());
                    }
                    chosen = Some((index, conn));
                }
                Err(error) => {
                    tracing::warn!(%error, cause = %error.last, "postgres: no host will do yet");
                }
            }
        }
        tokio::select! {
            () = &mut closed => return,
            () = shared.suspect.notified() => {}
            () = tokio::time::sleep(WATCH_EVERY) => {}
        }
    }
}
