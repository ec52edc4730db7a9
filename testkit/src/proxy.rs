//! A TCP proxy the tests can cut: it stands between the service and Postgres or RabbitMQ, so a
//! test can make a dependency unreachable (and reachable again) without touching the shared
//! server other tests use. A proxy to Postgres ([`Proxy::postgres`]) can also cut one
//! connection at the commit of a transaction ([`Proxy::cut_next_commit`]), so that its client
//! cannot know whether the transaction committed, and counts its clients' pings
//! ([`Proxy::pings`]).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

pub use crate::postgres_relay::CommitCut;
use crate::postgres_relay::{Watched, relay as relay_postgres};

pub struct Proxy {
    pub port: u16,
    up: Arc<AtomicBool>,
    turned_away: Arc<AtomicU64>,
    cut: watch::Sender<u64>,
    /// What its Postgres connections report and obey: the cut [`Proxy::cut_next_commit`] armed,
    /// taken by the first commit through the proxy, and the pings counted.
    watched: Arc<Watched>,
}

impl Proxy {
    /// Listens on an ephemeral port and forwards to `target`, byte for byte.
    pub async fn start(target: SocketAddr) -> Self {
        Self::listen(target, false).await
    }

    /// Listens on an ephemeral port and forwards to `target`, a Postgres server, message by
    /// message, so that [`Proxy::cut_next_commit`] can find the commits. It declines SSL itself:
    /// its clients talk to it in plain text.
    pub async fn postgres(target: SocketAddr) -> Self {
        Self::listen(target, true).await
    }

    async fn listen(target: SocketAddr, postgres: bool) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let port = listener.local_addr().expect("local addr").port();
        let up = Arc::new(AtomicBool::new(true));
        let (cut, _) = watch::channel(0u64);
        let turned_away = Arc::new(AtomicU64::new(0));
        let accepting = up.clone();
        let refusals = turned_away.clone();
        let cuts = cut.clone();
        let watched = Arc::new(Watched::default());
        let shared = watched.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                if !accepting.load(Ordering::SeqCst) {
                    refusals.fetch_add(1, Ordering::SeqCst);
                    drop(client);
                    continue;
                }
                let mut cut = cuts.subscribe();
                let shared = shared.clone();
                tokio::spawn(async move {
                    let Ok(server) = TcpStream::connect(target).await else {
                        return;
                    };
                    tokio::select! {
                        _ = relay(client, server, postgres.then_some(&*shared)) => {}
                        _ = cut.changed() => {}
                    }
                });
            }
        });
        Self {
            port,
            up,
            turned_away,
            cut,
            watched,
        }
    }

    /// Cuts the connection of the next transaction to commit through this proxy, as `how`
    /// says; one shot: the commits after it go through. Only a [`Proxy::postgres`] sees commits.
    pub fn cut_next_commit(&self, how: CommitCut) {
        *self.watched.armed.lock().unwrap() = Some(how);
    }

    /// No cut is armed any more: the one [`Proxy::cut_next_commit`] armed has happened.
    pub fn commit_was_cut(&self) -> bool {
        self.watched.armed.lock().unwrap().is_none()
    }

    /// How many pings (a `Sync` alone: a connection check, not a statement) its clients sent to
    /// Postgres so far. Only a [`Proxy::postgres`] counts them.
    pub fn pings(&self) -> u64 {
        self.watched.pings.load(Ordering::SeqCst)
    }

    /// Drops every open connection and refuses new ones until [`Proxy::restore`].
    pub fn sever(&self) {
        self.up.store(false, Ordering::SeqCst);
        self.cut.send_modify(|n| *n += 1);
    }

    pub fn restore(&self) {
        self.up.store(true, Ordering::SeqCst);
    }

    /// Connections refused while severed: each one is the client trying to reach the target
    /// again, which a test can wait for instead of sleeping through the outage.
    pub fn turned_away(&self) -> u64 {
        self.turned_away.load(Ordering::SeqCst)
    }
}

/// Relays one connection until either side closes: message by message to Postgres, `watched`,
/// else byte for byte.
async fn relay(mut client: TcpStream, mut server: TcpStream, watched: Option<&Watched>) {
    let _ = match watched {
        Some(watched) => relay_postgres(client, server, watched).await,
        None => tokio::io::copy_bidirectional(&mut client, &mut server)
            .await
            .map(drop),
    };
}
