//! libpq's connection keywords, each with the environment variable that gives its default and
//! what the service does with it: use it, honour only the values whose meaning it keeps, or
//! refuse it by name (docs/operations/configuration.md "DATABASE_URL"). A keyword libpq does not
//! know is refused as libpq refuses it ("invalid connection option").

/// What the service does with a keyword that has a value.
#[derive(Debug, Clone, Copy)]
pub(super) enum Policy {
    /// Read and honoured.
    Use,
    /// Honoured for these values (compared as written), refused for any other.
    Only(&'static [&'static str]),
    /// Like `Only`, compared without regard to case (as libpq or the server compare them).
    OnlyAnyCase(&'static [&'static str]),
    /// Refused whatever its value, for this reason.
    Refuse(&'static str),
}

pub(super) struct Keyword {
    pub name: &'static str,
    pub env: Option<&'static str>,
    pub policy: Policy,
    /// Its value is never shown, and an item written after it is described, not quoted.
    pub secret: bool,
}

const fn keyword(name: &'static str, env: Option<&'static str>, policy: Policy) -> Keyword {
    Keyword {
        name,
        env,
        policy,
        secret: false,
    }
}

const fn secret(name: &'static str, env: Option<&'static str>, policy: Policy) -> Keyword {
    Keyword {
        name,
        env,
        policy,
        secret: true,
    }
}

const NO_KEEPALIVE: &str = "sqlx 0.9 sets no TCP keepalive nor user timeout on its sockets";
const NO_GSS: &str = "sqlx 0.9 has no GSSAPI";

/// Every keyword of libpq 15 to 18, in libpq's order.
pub(super) const KEYWORDS: &[Keyword] = &[
    keyword(
        "service",
        Some("PGSERVICE"),
        Policy::Refuse("the service reads no service file: write its settings in DATABASE_URL"),
    ),
    keyword("user", Some("PGUSER"), Policy::Use),
    secret("password", Some("PGPASSWORD"), Policy::Use),
    keyword("passfile", Some("PGPASSFILE"), Policy::Use),
    keyword(
        "channel_binding",
        Some("PGCHANNELBINDING"),
        Policy::Only(&["disable", "prefer"]),
    ),
    keyword("connect_timeout", Some("PGCONNECT_TIMEOUT"), Policy::Use),
    keyword("dbname", Some("PGDATABASE"), Policy::Use),
    keyword("host", Some("PGHOST"), Policy::Use),
    keyword(
        "hostaddr",
        Some("PGHOSTADDR"),
        Policy::Refuse("sqlx connects to the host it verifies: give the address as host"),
    ),
    keyword("port", Some("PGPORT"), Policy::Use),
    keyword(
        "client_encoding",
        Some("PGCLIENTENCODING"),
        Policy::OnlyAnyCase(&["UTF8", "UTF-8", "UNICODE"]),
    ),
    keyword("options", Some("PGOPTIONS"), Policy::Use),
    keyword("application_name", Some("PGAPPNAME"), Policy::Use),
    keyword("fallback_application_name", None, Policy::Use),
    keyword("keepalives", None, Policy::Only(&["0"])),
    keyword("keepalives_idle", None, Policy::Refuse(NO_KEEPALIVE)),
    keyword("keepalives_interval", None, Policy::Refuse(NO_KEEPALIVE)),
    keyword("keepalives_count", None, Policy::Refuse(NO_KEEPALIVE)),
    keyword("tcp_user_timeout", None, Policy::Refuse(NO_KEEPALIVE)),
    keyword("sslmode", Some("PGSSLMODE"), Policy::Use),
    keyword(
        "sslnegotiation",
        Some("PGSSLNEGOTIATION"),
        Policy::Only(&["postgres"]),
    ),
    keyword(
        "sslcompression",
        Some("PGSSLCOMPRESSION"),
        Policy::Only(&["0"]),
    ),
    keyword("sslcert", Some("PGSSLCERT"), Policy::Use),
    keyword("sslkey", Some("PGSSLKEY"), Policy::Use),
    keyword(
        "sslcertmode",
        Some("PGSSLCERTMODE"),
        Policy::Only(&["allow"]),
    ),
    secret(
        "sslpassword",
        None,
        Policy::Refuse("sqlx reads no encrypted client key: give an unencrypted sslkey"),
    ),
    keyword("sslrootcert", Some("PGSSLROOTCERT"), Policy::Use),
    keyword(
        "sslcrl",
        Some("PGSSLCRL"),
        Policy::Refuse("sqlx checks no certificate revocation list"),
    ),
    keyword(
        "sslcrldir",
        Some("PGSSLCRLDIR"),
        Policy::Refuse("sqlx checks no certificate revocation list"),
    ),
    keyword("sslsni", Some("PGSSLSNI"), Policy::Only(&["1"])),
    keyword(
        "sslkeylogfile",
        Some("PGSSLKEYLOGFILE"),
        Policy::Refuse("sqlx writes no TLS key log"),
    ),
    keyword(
        "requirepeer",
        Some("PGREQUIREPEER"),
        Policy::Refuse("sqlx does not check the peer of a Unix socket"),
    ),
    keyword(
        "require_auth",
        Some("PGREQUIREAUTH"),
        Policy::Refuse("sqlx cannot restrict the server's authentication methods"),
    ),
    keyword(
        "ssl_min_protocol_version",
        Some("PGSSLMINPROTOCOLVERSION"),
        Policy::OnlyAnyCase(&["TLSv1.2"]),
    ),
    keyword(
        "ssl_max_protocol_version",
        Some("PGSSLMAXPROTOCOLVERSION"),
        Policy::OnlyAnyCase(&["TLSv1.3"]),
    ),
    keyword(
        "min_protocol_version",
        Some("PGMINPROTOCOLVERSION"),
        Policy::Only(&["3.0"]),
    ),
    keyword(
        "max_protocol_version",
        Some("PGMAXPROTOCOLVERSION"),
        Policy::Only(&["3.0"]),
    ),
    keyword(
        "gssencmode",
        Some("PGGSSENCMODE"),
        Policy::Only(&["disable", "prefer"]),
    ),
    keyword("krbsrvname", Some("PGKRBSRVNAME"), Policy::Refuse(NO_GSS)),
    keyword("gsslib", Some("PGGSSLIB"), Policy::Refuse(NO_GSS)),
    keyword(
        "gssdelegation",
        Some("PGGSSDELEGATION"),
        Policy::Only(&["0"]),
    ),
    keyword(
        "replication",
        None,
        Policy::Refuse("the service opens no replication connection"),
    ),
    keyword(
        "target_session_attrs",
        Some("PGTARGETSESSIONATTRS"),
        Policy::Use,
    ),
    keyword(
        "load_balance_hosts",
        Some("PGLOADBALANCEHOSTS"),
        Policy::Only(&["disable"]),
    ),
    keyword("oauth_issuer", None, Policy::Refuse("sqlx has no OAuth")),
    keyword("oauth_client_id", None, Policy::Refuse("sqlx has no OAuth")),
    secret(
        "oauth_client_secret",
        None,
        Policy::Refuse("sqlx has no OAuth"),
    ),
    keyword("oauth_scope", None, Policy::Refuse("sqlx has no OAuth")),
    secret(
        "scram_client_key",
        None,
        Policy::Refuse("sqlx takes no SCRAM keys"),
    ),
    secret(
        "scram_server_key",
        None,
        Policy::Refuse("sqlx takes no SCRAM keys"),
    ),
];

pub(super) fn find(name: &str) -> Option<&'static Keyword> {
    KEYWORDS.iter().find(|keyword| keyword.name == name)
}

/// Where a value came from: the text of `DATABASE_URL`, or an environment variable that libpq
/// reads for a keyword the text leaves out. Shown after a keyword in errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Text,
    Env(&'static str),
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Text => Ok(()),
            Self::Env(name) => write!(f, " (from the environment variable {name})"),
        }
    }
}
