//! One Postgres connection through the test proxy, relayed message by message (each framed by
//! its length prefix, so a message split across reads is whole before it is judged), so that the
//! proxy can tell where a transaction commits and cut the connection right there
//! ([`crate::proxy::Proxy::cut_next_commit`]).
//!
//! A transaction commits at one of two frontend messages:
//! - the simple query `COMMIT` (how sqlx ends a transaction it began: `Q`, length 11,
//!   `COMMIT\0`);
//! - the `Sync` that ends a statement run outside a transaction (autocommit, how the service's
//!   commands write): Postgres commits the statement's implicit transaction there. Only a `Sync`
//!   after a statement that modifies data counts, so the command's read before its write is not
//!   taken for its commit.
//!
//! Whether a statement runs outside a transaction is what the server last said in its
//! `ReadyForQuery` (`I`: idle); whether it modifies data is a guess from its text (see
//! [`modifies`]), enough for the statements of this service.
//!
//! It also counts the client's pings ([`Watched::pings`]): a `Sync` with nothing before it since
//! the last round trip, which asks the server for nothing but its `ReadyForQuery` (how sqlx checks
//! a connection).

use std::collections::HashSet;
use std::io;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// How a connection is cut at a commit. Either way its client learns no outcome: its connection
/// closes while it waits for the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommitCut {
    /// The commit reaches Postgres, which commits; its answer is dropped, then both sides close.
    AnswerLost,
    /// The commit never reaches Postgres: both sides close instead, and the transaction rolls
    /// back.
    CommitLost,
}

/// The request codes of the untyped messages a client may send before its startup message.
const SSL_REQUEST: u32 = 80_877_103;
const GSSENC_REQUEST: u32 = 80_877_104;

/// What the Postgres connections of one proxy share with the test that owns it.
#[derive(Default)]
pub struct Watched {
    /// The cut to make at the next commit, if any (taken: one shot).
    pub armed: Mutex<Option<CommitCut>>,
    /// The pings the clients sent.
    pub pings: AtomicU64,
}

/// Relays `client` to `server` until either side closes, or until the connection is cut at a
/// commit because `watched` held a cut.
pub async fn relay(
    mut client: TcpStream,
    mut server: TcpStream,
    watched: &Watched,
) -> io::Result<()> {
    startup(&mut client, &mut server).await?;
    let (client_in, mut client_out) = client.split();
    let (server_in, mut server_out) = server.split();
    let session = Session::default();
    // Both directions are polled by this one future: neither waits on the other's writes.
    tokio::select! {
        ended = frontend(BufReader::new(client_in), &mut server_out, &session, watched) => ended,
        ended = backend(BufReader::new(server_in), &mut client_out, &session) => ended,
    }
}

/// The startup phase, whose messages have no type byte. The proxy declines encryption itself
/// (`N`), so that what follows stays readable, and forwards the startup message.
async fn startup(client: &mut TcpStream, server: &mut TcpStream) -> io::Result<()> {
    loop {
        let length = client.read_u32().await?;
        let mut body = vec![0; body_length(length)?];
        client.read_exact(&mut body).await?;
        let code = body
            .get(..4)
            .map(|code| u32::from_be_bytes(code.try_into().unwrap()));
        if let Some(SSL_REQUEST | GSSENC_REQUEST) = code {
            client.write_all(b"N").await?;
            continue;
        }
        server.write_all(&length.to_be_bytes()).await?;
        server.write_all(&body).await?;
        return Ok(());
    }
}

/// What both directions of one connection share.
#[derive(Default)]
struct Session {
    /// The transaction status of the server's last `ReadyForQuery`.
    status: AtomicU8,
    /// A commit was forwarded under [`CommitCut::AnswerLost`]: its answer is not relayed.
    answer_lost: AtomicBool,
}

impl Session {
    fn idle(&self) -> bool {
        self.status.load(Ordering::SeqCst) == b'I'
    }
}

/// Client to server: forwards each message, counts pings, and cuts at a commit if a cut is
/// armed.
async fn frontend(
    mut from: impl AsyncRead + Unpin,
    to: &mut (impl AsyncWrite + Unpin),
    session: &Session,
    watched: &Watched,
) -> io::Result<()> {
    // Names of the prepared statements that modify data.
    let mut modifying = HashSet::new();
    // Whether the messages since the last `Sync` bind such a statement.
    let mut binds_modifying = false;
    // Whether nothing was sent since the last round trip (a `Sync` or a simple query) ended.
    let mut bare = true;
    loop {
        let message = Message::read(&mut from).await?;
        if message.kind == b'S' && bare {
            watched.pings.fetch_add(1, Ordering::SeqCst);
        }
        bare = matches!(message.kind, b'S' | b'Q');
        let commits = match message.kind {
            b'Q' => {
                let [sql] = message.strings();
                is_commit(sql) || (session.idle() && modifies(sql))
            }
            b'P' => {
                let [name, sql] = message.strings();
                if modifies(sql) {
                    modifying.insert(name.to_vec());
                } else {
                    modifying.remove(name);
                }
                false
            }
            b'B' => {
                let [_portal, statement] = message.strings();
                binds_modifying |= modifying.contains(statement);
                false
            }
            b'S' => std::mem::take(&mut binds_modifying) && session.idle(),
            _ => false,
        };
        let cut = if commits {
            watched.armed.lock().unwrap().take()
        } else {
            None
        };
        match cut {
            None => message.write(to).await?,
            Some(CommitCut::CommitLost) => return Ok(()),
            Some(CommitCut::AnswerLost) => {
                session.answer_lost.store(true, Ordering::SeqCst);
                message.write(to).await?;
                // The backend ends the connection once the server has answered.
                return std::future::pending().await;
            }
        }
    }
}

/// Server to client: forwards each message, noting the transaction status; once a commit's
/// answer is to be lost, drops the server's messages up to its `ReadyForQuery`, then ends.
async fn backend(
    mut from: impl AsyncRead + Unpin,
    to: &mut (impl AsyncWrite + Unpin),
    session: &Session,
) -> io::Result<()> {
    loop {
        let message = Message::read(&mut from).await?;
        let ready = message.kind == b'Z';
        if let (true, Some(status)) = (ready, message.body.first()) {
            session.status.store(*status, Ordering::SeqCst);
        }
        if !session.answer_lost.load(Ordering::SeqCst) {
            message.write(to).await?;
        } else if ready {
            return Ok(());
        }
    }
}

/// A typed message of the protocol: its type byte and its body (without the length prefix).
struct Message {
    kind: u8,
    body: Vec<u8>,
}

impl Message {
    async fn read(from: &mut (impl AsyncRead + Unpin)) -> io::Result<Self> {
        let kind = from.read_u8().await?;
        let length = from.read_u32().await?;
        let mut body = vec![0; body_length(length)?];
        from.read_exact(&mut body).await?;
        Ok(Self { kind, body })
    }

    async fn write(&self, to: &mut (impl AsyncWrite + Unpin)) -> io::Result<()> {
        let length = u32::try_from(self.body.len() + 4).expect("a message's length fits");
        let mut bytes = Vec::with_capacity(self.body.len() + 5);
        bytes.push(self.kind);
        bytes.extend_from_slice(&length.to_be_bytes());
        bytes.extend_from_slice(&self.body);
        to.write_all(&bytes).await
    }

    /// The first `N` null-terminated strings of the body (empty ones past its end).
    fn strings<const N: usize>(&self) -> [&[u8]; N] {
        let mut rest = self.body.as_slice();
        std::array::from_fn(|_| {
            let end = rest.iter().position(|b| *b == 0).unwrap_or(rest.len());
            let string = &rest[..end];
            rest = rest.get(end + 1..).unwrap_or_default();
            string
        })
    }
}

/// The body's length from a length prefix, which counts itself.
fn body_length(prefix: u32) -> io::Result<usize> {
    prefix
        .checked_sub(4)
        .map(|length| length as usize)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "a length under 4"))
}

/// `COMMIT` (any case, an optional `;`): the end of a transaction begun with `BEGIN`.
fn is_commit(sql: &[u8]) -> bool {
    let sql = String::from_utf8_lossy(sql);
    sql.trim()
        .trim_end_matches(';')
        .trim()
        .eq_ignore_ascii_case("COMMIT")
}

/// Whether `sql` modifies data, guessed from its words: `INSERT`, `UPDATE`, `DELETE` or `MERGE`,
/// save the `UPDATE` of a row lock (`FOR UPDATE`, `FOR NO KEY UPDATE`).
fn modifies(sql: &[u8]) -> bool {
    let sql = String::from_utf8_lossy(sql).to_ascii_uppercase();
    let words: Vec<&str> = sql
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|word| !word.is_empty())
        .collect();
    words.iter().enumerate().any(|(i, word)| match *word {
        "INSERT" | "DELETE" | "MERGE" => true,
        "UPDATE" => !matches!(
            i.checked_sub(1).map(|before| words[before]),
            Some("FOR" | "KEY")
        ),
        _ => false,
    })
}
