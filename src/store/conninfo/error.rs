//! Why a `DATABASE_URL` was refused. No variant holds a password, nor any text that could be part
//! of one: a value is shown only where it cannot be a piece of a secret (a known keyword's value,
//! a numeric port), and an item that follows a secret is described, never quoted.

use super::keywords::Source;

/// What is wrong with a `DATABASE_URL` (or the libpq environment variables that complete it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConninfoError {
    #[error(
        "DATABASE_URL must start with postgres:// or postgresql://, or be key=value pairs \
         (an item has no `=`)"
    )]
    NotKeyValue,
    #[error("key/value DATABASE_URL: `{0}` is not key=value")]
    MissingEquals(String),
    #[error(
        "key/value DATABASE_URL: the item after `{0}` is not key=value (quote a value that \
         holds spaces: {0}='…')"
    )]
    MissingEqualsAfterSecret(&'static str),
    #[error("key/value DATABASE_URL: the quoted value of `{0}` is never closed")]
    Unterminated(String),
    #[error("DATABASE_URL: invalid connection option `{0}` (libpq knows no such keyword)")]
    UnknownKeyword(String),
    #[error(
        "DATABASE_URL: an item is not a connection option (its keyword is not shown: it does \
         not look like one)"
    )]
    UnknownNotShown,
    #[error(
        "DATABASE_URL: the item after `{0}` is not a connection option (percent-encode `&` as \
         %26 in a URL, or quote the value in key/value form)"
    )]
    UnknownAfterSecret(&'static str),
    #[error("DATABASE_URL: query parameter `{0}` has no `=`")]
    QueryWithoutEquals(String),
    #[error("DATABASE_URL: query parameter `{0}` has a second `=` (percent-encode it as %3D)")]
    QueryExtraEquals(String),
    #[error(
        "DATABASE_URL: {0} is not valid percent-encoding (`%` must be followed by two hex digits)"
    )]
    Percent(Part),
    #[error("DATABASE_URL: {0} holds %00, which libpq forbids")]
    PercentZero(Part),
    #[error("DATABASE_URL: {0} is not UTF-8 once percent-decoded")]
    NotUtf8(Part),
    #[error(
        "DATABASE_URL holds an `@` after its user information: percent-encode `@` as %40 and `/` \
         as %2F in the user name, the password or any other value"
    )]
    StrayAt,
    #[error("DATABASE_URL ends with whitespace, which libpq would keep in the last value")]
    TrailingWhitespace,
    #[error("host {0} of DATABASE_URL: an IPv6 address opens `[` but never closes it")]
    UnclosedIpv6(usize),
    #[error("host {0} of DATABASE_URL: an IPv6 address between `[` and `]` is empty")]
    EmptyIpv6(usize),
    #[error(
        "host {0} of DATABASE_URL: a `]` must be followed by `:port`, `,`, `/`, `?` or the end"
    )]
    AfterIpv6(usize),
    #[error(
        "host {0} of DATABASE_URL holds an `@` (percent-encode `@` in a user name or password as %40)"
    )]
    AtInHost(usize),
    #[error(
        "host {0} of DATABASE_URL is an abstract Unix socket (`@…`), which the service cannot open"
    )]
    AbstractSocket(usize),
    #[error("the port of host {index} of DATABASE_URL ({port}) is not a port number (1 to 65535)")]
    PortRange { index: usize, port: String },
    #[error("the port of host {0} of DATABASE_URL is not a number")]
    PortNotNumber(usize),
    #[error("DATABASE_URL lists {hosts} hosts but {ports} ports (give one port, or one per host)")]
    PortCount { hosts: usize, ports: usize },
    #[error("{keyword}={value}{from} is not one of {expected}")]
    InvalidValue {
        keyword: &'static str,
        value: String,
        from: Source,
        expected: &'static str,
    },
    #[error("{keyword}={value}{from} is not a whole number")]
    NotInteger {
        keyword: &'static str,
        value: String,
        from: Source,
    },
    #[error("`{keyword}`{from} is not supported: {reason}")]
    Unsupported {
        keyword: &'static str,
        from: Source,
        reason: &'static str,
    },
    #[error("{keyword}={value}{from} is not supported: the service honours only {honoured}")]
    UnsupportedValue {
        keyword: &'static str,
        value: String,
        from: Source,
        honoured: String,
    },
    #[error("options{from}: only `-c name=value` and `--name=value` are supported, not `{switch}`")]
    OptionsSwitch { switch: String, from: Source },
    #[error("DATABASE_URL names no user and the OS user's name cannot be found: give user")]
    NoOsUser,
    #[error(
        "options in DATABASE_URL and PGOPTIONS in the environment: the service cannot leave \
         PGOPTIONS out (sqlx reads it), so unset one of them"
    )]
    OptionsTwice,
}

impl ConninfoError {
    /// An unknown keyword, quoted if it looks like one (lowercase letters, digits and `_`, as
    /// all of libpq's are), else described.
    pub fn unknown_keyword(text: String) -> Self {
        let looks_like_one = !text.is_empty()
            && text.len() <= 64
            && text
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if looks_like_one {
            Self::UnknownKeyword(text)
        } else {
            Self::UnknownNotShown
        }
    }
}

/// The part of a URL a decoding error is in; a value is named by its keyword, never quoted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    User,
    Password,
    Hosts,
    Ports,
    Database,
    QueryKeyword,
    QueryValue(String),
}

impl std::fmt::Display for Part {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::User => f.write_str("the user name"),
            Self::Password => f.write_str("the password"),
            Self::Hosts => f.write_str("the host list"),
            Self::Ports => f.write_str("the port list"),
            Self::Database => f.write_str("the database name"),
            Self::QueryKeyword => f.write_str("a query parameter's name"),
            Self::QueryValue(keyword) => write!(f, "the value of query parameter `{keyword}`"),
        }
    }
}
