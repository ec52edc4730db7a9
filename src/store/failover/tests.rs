//! Every form of `DATABASE_URL` the service takes, and every way one is refused.

use super::*;

fn parsed(url: &str) -> Database {
    Database::parse(url).unwrap_or_else(|e| panic!("{url}: {e}"))
}

fn refused(url: &str) -> String {
    match Database::parse(url) {
        Ok(database) => panic!("{url} was taken: {database:?}"),
        Err(error) => {
            let mut text = error.to_string();
            let mut source = std::error::Error::source(&error);
            while let Some(cause) = source {
                text.push_str(&format!(": {cause}"));
                source = cause.source();
            }
            text
        }
    }
}

fn addresses(database: &Database) -> Vec<(String, u16)> {
    database
        .hosts()
        .iter()
        .map(|host| (host.get_host().to_owned(), host.get_port()))
        .collect()
}

#[test]
fn a_single_host_url_reads_as_sqlx_reads_it() {
    let url = "postgres://app:secret@db.internal:6432/orders?sslmode=disable&application_name=svc";
    let database = parsed(url);
    let ours = &database.hosts()[0];
    let sqlx: PgConnectOptions = url.parse().expect("sqlx takes it");
    assert_eq!(database.hosts().len(), 1);
    assert_eq!(format!("{ours:?}"), format!("{sqlx:?}"));
    assert_eq!(ours.get_database(), Some("orders"));
    assert_eq!(ours.get_application_name(), Some("svc"));
}

#[test]
fn a_url_without_a_host_or_with_a_socket_directory_goes_where_libpq_goes() {
    // Was left to sqlx, which looked for a socket file and fell back to localhost, and took a
    // bracketed IPv6 address as a host name it could never resolve.
    let sockets = |url: &str| {
        let database = parsed(url);
        let host = &database.hosts()[0];
        (host.get_socket().cloned(), host.get_port())
    };
    let default = Some(std::path::PathBuf::from("/var/run/postgresql"));
    assert_eq!(sockets("postgres:///orders"), (default.clone(), 5432));
    assert_eq!(
        sockets("postgresql://app@/orders?host=/srv/pg&port=6543"),
        (Some("/srv/pg".into()), 6543)
    );
    assert_eq!(
        sockets("postgres://%2Fvar%2Frun%2Fpostgresql/orders"),
        (default, 5432)
    );
    assert_eq!(
        addresses(&parsed("postgres://app@[::1]:6432/orders")),
        [("::1".into(), 6432)]
    );
}

#[test]
fn the_formation_url_lists_every_host_in_order_with_the_same_database() {
    let database =
        parsed("postgres://h:5501,h:5502,h:5503/order_service?target_session_attrs=read-write");
    assert_eq!(
        addresses(&database),
        [("h".into(), 5501), ("h".into(), 5502), ("h".into(), 5503)]
    );
    assert!(
        database
            .hosts()
            .iter()
            .all(|host| host.get_database() == Some("order_service"))
    );
    assert_eq!(database.attrs(), SessionAttrs::ReadWrite);
}

#[test]
fn names_ipv4_and_bracketed_ipv6_hosts_mix_and_a_missing_port_is_5432() {
    let database = parsed("postgresql://u@db-1.example,10.0.0.7:5433,[::1]:5434,[fe80::2]/x");
    assert_eq!(
        addresses(&database),
        [
            ("db-1.example".into(), 5432),
            ("10.0.0.7".into(), 5433),
            ("::1".into(), 5434),
            ("fe80::2".into(), 5432),
        ]
    );
}

#[test]
fn every_other_parameter_reaches_every_host() {
    let database = parsed(
        "postgres://app:p%40ss@a:1,b:2/db?sslmode=require&application_name=svc&options=-c%20search_path%3Dx",
    );
    for host in database.hosts() {
        assert_eq!(host.get_username(), "app");
        assert_eq!(host.get_database(), Some("db"));
        assert_eq!(host.get_application_name(), Some("svc"));
        assert!(matches!(
            host.get_ssl_mode(),
            sqlx::postgres::PgSslMode::Require
        ));
        assert_eq!(host.get_options(), Some("-c search_path=x"));
    }
}

#[test]
fn target_session_attrs_any_read_write_and_primary_are_taken_and_read_write_is_the_default() {
    let attrs = |query: &str| parsed(&format!("postgres://a,b/db{query}")).attrs();
    assert_eq!(attrs(""), SessionAttrs::ReadWrite);
    assert_eq!(attrs("?target_session_attrs=any"), SessionAttrs::Any);
    assert_eq!(
        attrs("?target_session_attrs=read-write"),
        SessionAttrs::ReadWrite
    );
    assert_eq!(
        attrs("?target_session_attrs=primary"),
        SessionAttrs::Primary
    );
}

#[test]
fn connect_timeout_bounds_each_host_as_libpq_counts_it() {
    let timeout = |query: &str| parsed(&format!("postgres://a,b/db{query}")).connect_timeout();
    assert_eq!(timeout(""), DEFAULT_CONNECT_TIMEOUT);
    assert_eq!(timeout("?connect_timeout=7"), Duration::from_secs(7));
    assert_eq!(timeout("?connect_timeout=1"), Duration::from_secs(2));
    assert_eq!(timeout("?connect_timeout=0"), Duration::MAX);
}

#[test]
fn a_port_list_gives_one_port_per_host_and_a_single_port_gives_it_to_all() {
    let each = parsed("postgres://a,b/db?port=5501,5502");
    assert_eq!(addresses(&each), [("a".into(), 5501), ("b".into(), 5502)]);
    let all = parsed("postgres://a,b/db?port=5501");
    assert_eq!(addresses(&all), [("a".into(), 5501), ("b".into(), 5501)]);
}

#[test]
fn the_key_value_form_is_taken_too() {
    let database = parsed(
        "host=a,b,::1 port=5501,5502,5503 dbname=orders user=app password='it\\'s q' target_session_attrs=primary sslmode=disable",
    );
    assert_eq!(
        addresses(&database),
        [("a".into(), 5501), ("b".into(), 5502), ("::1".into(), 5503)]
    );
    assert_eq!(database.attrs(), SessionAttrs::Primary);
    let first = &database.hosts()[0];
    assert_eq!(first.get_database(), Some("orders"));
    assert_eq!(first.get_username(), "app");
}

#[test]
fn the_debug_form_names_hosts_but_not_the_password() {
    let shown = format!("{:?}", parsed("postgres://app:s3cret@a:1,b/db"));
    assert!(shown.contains("a:1") && shown.contains("b:5432"), "{shown}");
    assert!(!shown.contains("s3cret"), "{shown}");
}

#[test]
fn a_malformed_url_is_refused_naming_the_part_and_never_the_password() {
    let cases = [
        ("mysql://app:s3cret@a/db", "must start with postgres://"),
        (
            "postgres://app:s3cret@a,b:99999/db",
            "port of host 2 of DATABASE_URL (99999)",
        ),
        (
            "postgres://app:s3cret@a,b:x/db",
            "port of host 2 of DATABASE_URL is not a number",
        ),
        (
            "postgres://app:s3cret@[::1/db",
            "host 1 of DATABASE_URL: an IPv6 address opens `[` but never closes it",
        ),
        (
            "postgres://app:s3cret@[::1]x/db",
            "host 1 of DATABASE_URL: a `]` must be followed",
        ),
        (
            "postgres://app:s3cret@a,b,c/db?port=1,2",
            "lists 3 hosts but 2 ports",
        ),
        (
            "postgres://app:s3cret@a,b/db?target_session_attrs=standby",
            "target_session_attrs=standby",
        ),
        (
            "postgres://app:s3cret@a,b/db?connect_timeout=soon",
            "connect_timeout=soon",
        ),
        (
            "postgres://app:s3cret@a,b/db?sslmode=sometimes",
            "sslmode=sometimes is not one of",
        ),
        (
            "host=a password=s3cret dbname",
            "the item after `password` is not key=value",
        ),
        (
            "host=a password='s3cret",
            "the quoted value of `password` is never closed",
        ),
    ];
    for (url, part) in cases {
        let message = refused(url);
        assert!(message.contains(part), "{url}: {message}");
        assert!(!message.contains("s3cret"), "{url}: {message}");
    }
}

#[test]
fn an_empty_host_is_the_default_socket_as_libpq_has_it() {
    // Were refused as "host N of DATABASE_URL is empty"; libpq uses its default host.
    let database = parsed("postgres://app:s3cret@a,,b/db");
    assert_eq!(database.hosts()[1].get_host(), "/var/run/postgresql");
    let alone = parsed("password=s3cret dbname=x");
    assert_eq!(alone.hosts()[0].get_host(), "/var/run/postgresql");
}

/// The shared local Postgres as a one-host `Database`, and a connection to it.
async fn local_postgres() -> (Database, PgConnection) {
    let url = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable";
    let conn = PgConnection::connect(url)
        .await
        .expect("the local Postgres");
    (parsed(url), conn)
}

/// A `BEGIN` whose caller gives up before the server answers (a deadline, a frozen primary)
/// leaves no transaction block behind: the patched sqlx-postgres queues the `ROLLBACK`
/// (vendor/README.md "sqlx-postgres 0.9.0"). Upstream the connection stayed inside the block,
/// so whatever ran on it next in autocommit was never committed: on a single-host pool, which
/// has no check to catch it, a placement answered 201 and then lost.
#[tokio::test]
async fn a_begin_cancelled_before_its_answer_leaves_the_connection_in_autocommit() {
    let (database, mut conn) = local_postgres().await;
    // The server runs the BEGIN at once and answers only after the sleep: the caller's
    // deadline passes in between, as it does when a primary stops answering.
    let cancelled = tokio::time::timeout(
        Duration::from_millis(200),
        conn.begin_with("BEGIN; SELECT pg_sleep(1)"),
    )
    .await
    .is_err();
    assert!(cancelled, "the deadline should have cancelled the BEGIN");
    let after = database.report(&mut conn).await.expect("a report");
    assert!(
        !after.in_transaction,
        "a cancelled BEGIN left the connection inside a transaction block"
    );
    conn.close().await.expect("close");
}

/// The pool's check tells a connection left inside a transaction block (a `BEGIN` whose caller
/// was cancelled before the server answered: upstream sqlx 0.9 then returns the connection to
/// the pool without a rollback) from one in autocommit, so `follow` closes the first instead of
/// handing its next user a block that user's autocommit writes would never leave.
#[tokio::test]
async fn the_role_check_says_when_it_runs_inside_a_transaction_block() {
    let (database, mut conn) = local_postgres().await;
    let idle = database.report(&mut conn).await.expect("a report");
    assert!(
        !idle.in_transaction,
        "autocommit read as a transaction block"
    );
    sqlx::raw_sql("BEGIN")
        .execute(&mut conn)
        .await
        .expect("BEGIN");
    let inside = database.report(&mut conn).await.expect("a report");
    assert!(inside.in_transaction, "a transaction block went unnoticed");
    assert!(
        inside.writable,
        "the block is still read-write: the role alone would keep it"
    );
    conn.close().await.expect("close");
}
