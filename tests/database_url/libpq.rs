//! The service's reading of `DATABASE_URL` against libpq's own (`libpq_oracle.py`, which runs
//! libpq's `PQconninfoParse` and the connect-time steps libpq documents): for every string of
//! the table, the same hosts, ports, user, database, password and other keywords, or both
//! refuse. The rows marked `Ours` are the service's documented refusals of what libpq takes
//! (docs/operations/configuration.md "DATABASE_URL"); each must name what it refuses.

use std::collections::BTreeMap;
use std::io::Write;
use std::process::{Command, Stdio};

use order_service::store::conninfo::Conninfo;
use serde_json::Value;

/// What the service must do with a string.
enum Expect {
    /// Read it as libpq does, or refuse it as libpq does.
    Libpq,
    /// Refuse it, naming this, though libpq takes it.
    Ours(&'static str),
}

use Expect::{Libpq, Ours};

#[rustfmt::skip]
const TABLE: &[(&str, Expect)] = &[
    // URLs: hosts, IPv6, sockets, ports.
    ("postgres://app:secret@db.internal:6432/orders?sslmode=disable&application_name=svc", Libpq),
    ("postgresql://app@[::1]:5432/db", Libpq),
    ("postgres://u@[::1]:5432,[fe80::2],10.0.0.7:5433/db", Libpq),
    ("postgres://h1,h2,h3/db?port=5501,5502,5503", Libpq),
    ("postgres://h1:5501,h2/db", Libpq),
    ("postgres://h1,,h2/db", Libpq),
    ("postgres:///orders", Libpq),
    ("postgres://", Libpq),
    ("postgres://:5433/db", Libpq),
    ("postgres://%2Fvar%2Frun%2Fpostgresql/db", Libpq),
    ("postgres://app@/orders?host=/srv/pg&port=6543", Libpq),
    ("postgres://h:%35432/db", Libpq),
    ("postgres://h:0/db", Libpq),
    ("postgres://h:65536/db", Libpq),
    ("postgres://h:x/db", Libpq),
    ("postgres://a,b,c/db?port=1,2", Libpq),
    ("postgres://[::1/db", Libpq),
    ("postgres://[]/db", Libpq),
    ("postgres://[::1]x/db", Libpq),
    // URLs: user information and percent-encoding.
    ("postgres://user:pa%3Fss%40w%3Ard%2F@h/db", Libpq),
    ("postgres://user:Se?cret@h/db", Libpq),
    ("postgres://user:pa:ss#w@h/db", Libpq),
    ("postgres://user:p%20w,x&y=z@h/db", Libpq),
    ("postgres://us%65r@h/d%62", Libpq),
    ("postgres://u:%zz@h/db", Libpq),
    ("postgres://h/d%4", Libpq),
    ("postgres://h/%00", Libpq),
    ("postgres://u:p/ss@h/db", Libpq),
    ("postgres://u:p@ss@h/db", Ours("`@`")),
    ("postgres://h/db?application_name=a@b", Ours("`@`")),
    ("postgres://h/db ", Ours("whitespace")),
    // URLs: query parameters.
    ("postgres://h/db?ssl=true", Libpq),
    ("postgres://h/db?application_name=a+b%20c", Libpq),
    ("postgres://h/db?options=-c%20search_path%3Dx&connect_timeout=7&target_session_attrs=primary", Libpq),
    ("postgres://h/db?sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem&sslcert=c&sslkey=k", Libpq),
    ("postgres://h/db?dbname=other&user=me&password=pw&host=h2", Libpq),
    ("postgres://h/db?passwd=x", Libpq),
    ("postgres://h/db?a", Libpq),
    ("postgres://h/db?x=1=2", Libpq),
    ("postgres://h/db?&", Libpq),
    ("postgres://h/db?sslmode=bogus", Libpq),
    ("postgres://h/db?connect_timeout=soon", Libpq),
    ("postgres://h/db?target_session_attrs=nonsense", Libpq),
    ("postgres://h/db?target_session_attrs=standby", Ours("target_session_attrs")),
    ("postgres://h/db?service=foo", Ours("service")),
    ("postgres://h/db?hostaddr=127.0.0.1", Ours("hostaddr")),
    // Key/value: hosts, sockets, ports.
    ("host=a,b,::1 port=5501,5502,5503 dbname=orders user=app target_session_attrs=primary", Libpq),
    ("host=::1 dbname=db", Libpq),
    ("host=/some/dir dbname=db", Libpq),
    ("host=/var/run/postgresql", Libpq),
    ("host=a,,b dbname=x", Libpq),
    ("host=a port=0", Libpq),
    ("host=a port=' 5432 '", Libpq),
    ("host=a port=+5432", Libpq),
    ("host=a port=5432,5433", Libpq),
    ("host=a,b port=", Libpq),
    ("host=a user= dbname=", Libpq),
    ("host=@abstract", Ours("abstract")),
    // Key/value: quoting, passwords, unknown and unsupported keywords.
    ("host=a password='it\\'s q' dbname = 'my db'", Libpq),
    ("host=a password=p\\ w\\\\x", Libpq),
    ("host=a password=Sec ret", Libpq),
    ("host=a password='unterminated", Libpq),
    ("host=a passwd=Secret", Libpq),
    ("host=a password='x'dbname=y", Libpq),
    ("host=a dbname", Libpq),
    ("=x", Libpq),
    ("mysql://u:p@h/db", Libpq),
    ("", Libpq),
    ("  \t ", Libpq),
    ("host=a sslmode=require sslcert=/c.pem sslkey=/k.pem application_name='my app' fallback_application_name=fb", Libpq),
    ("host=a options='-c geqo=off -c statement_timeout=5min' connect_timeout=-1", Libpq),
    ("host=a gssencmode=disable channel_binding=prefer keepalives=0 sslsni=1", Libpq),
    ("service=foo", Ours("service")),
    ("host=a keepalives_idle=30", Ours("keepalives_idle")),
    ("host=a gssencmode=require", Ours("gssencmode")),
    ("host=a channel_binding=require", Ours("channel_binding")),
    ("host=a sslpassword=Secret", Ours("sslpassword")),
];

#[test]
fn every_string_of_the_table_is_read_as_libpq_reads_it_or_refused_by_name() {
    let oracle = libpq(TABLE.iter().map(|(text, _)| *text));
    let readings = oracle["readings"]
        .as_array()
        .expect("the oracle's readings");
    assert_eq!(readings.len(), TABLE.len());
    let mut refused_alike = 0;
    for ((text, expect), libpq) in TABLE.iter().zip(readings) {
        let ours = Conninfo::parse_with_env(text, &|_| None);
        match (expect, ours, libpq.get("refused")) {
            (Libpq, Ok(ours), None) => assert_eq!(reading(&ours), *libpq, "{text:?}"),
            (Libpq, Err(_), Some(_)) => refused_alike += 1,
            (Ours(named), Err(error), None) => {
                let message = error.to_string();
                assert!(message.contains(named), "{text:?}: {message}");
            }
            (_, ours, libpq) => panic!("{text:?}: ours {ours:?}, libpq {libpq:?}"),
        }
    }
    assert!(
        refused_alike >= 15,
        "the table refuses {refused_alike} strings alike"
    );
}

#[test]
fn every_keyword_libpq_knows_is_read_or_refused_by_name_never_unknown() {
    let oracle = libpq(std::iter::empty());
    let keywords = oracle["keywords"].as_array().expect("libpq's keywords");
    assert!(keywords.len() > 30, "{keywords:?}");
    for keyword in keywords {
        let keyword = keyword.as_str().expect("a keyword");
        let text = format!("host=h {keyword}=0");
        if let Err(error) = Conninfo::parse_with_env(&text, &|_| None) {
            let message = error.to_string();
            assert!(!message.contains("invalid connection option"), "{message}");
            assert!(message.contains(keyword), "{text}: {message}");
        }
    }
}

/// Ours, in the oracle's shape.
fn reading(ours: &Conninfo) -> Value {
    let hosts: Vec<Value> = ours
        .hosts()
        .iter()
        .map(|host| match host.get_socket() {
            Some(dir) => serde_json::json!(["socket", dir.to_string_lossy(), host.get_port()]),
            None => serde_json::json!(["tcp", host.get_host(), host.get_port()]),
        })
        .collect();
    let passwords: Vec<Option<&str>> = (0..hosts.len()).map(|i| ours.password(i)).collect();
    assert!(passwords.windows(2).all(|pair| pair[0] == pair[1]));
    let own = ["host", "port", "user", "dbname"];
    let params: BTreeMap<&str, &str> = ours
        .keywords()
        .filter(|(keyword, _)| !own.contains(keyword))
        .collect();
    let first = &ours.hosts()[0];
    serde_json::json!({
        "hosts": hosts,
        "user": first.get_username(),
        "dbname": first.get_database(),
        "password": passwords[0],
        "params": params,
    })
}

/// libpq's readings of `texts` and the keywords it knows, from `libpq_oracle.py`. Fails if
/// Python or libpq is missing: CI installs PostgreSQL, which brings libpq.
fn libpq<'a>(texts: impl Iterator<Item = &'a str>) -> Value {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/database_url/libpq_oracle.py"
    );
    let mut child = Command::new("python3")
        .arg(script)
        // libpq reads PG* variables when it resolves its default host: none may leak in.
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 runs the libpq oracle");
    let input = serde_json::to_vec(&texts.collect::<Vec<_>>()).expect("JSON");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(&input)
        .expect("the oracle reads the table");
    let output = child.wait_with_output().expect("the oracle finishes");
    assert!(
        output.status.success(),
        "the libpq oracle failed (is libpq5 installed?): {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("the oracle's JSON")
}
