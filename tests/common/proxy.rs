//! A TCP proxy the tests can cut: it stands between the service and Postgres or RabbitMQ, so a
//! test can make a dependency unreachable (and reachable again) without touching the shared
//! server other tests use.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

pub struct Proxy {
    pub port: u16,
    up: Arc<AtomicBool>,
    turned_away: Arc<AtomicU64>,
    cut: watch::Sender<u64>,
}

impl Proxy {
    /// Listens on an ephemeral port and forwards to `target`.
    pub async fn start(target: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let port = listener.local_addr().expect("local addr").port();
        let up = Arc::new(AtomicBool::new(true));
        let (cut, _) = watch::channel(0u64);
        let turned_away = Arc::new(AtomicU64::new(0));
        let accepting = up.clone();
        let refusals = turned_away.clone();
        let cuts = cut.clone();
        tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                if !accepting.load(Ordering::SeqCst) {
                    refusals.fetch_add(1, Ordering::SeqCst);
                    drop(client);
                    continue;
                }
                let mut cut = cuts.subscribe();
                tokio::spawn(async move {
                    let Ok(mut server) = TcpStream::connect(target).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
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
        }
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
