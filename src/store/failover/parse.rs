//! `DATABASE_URL` as libpq reads it: a URL whose authority lists several hosts
//! (`postgres://user:pass@h1:p1,[::1]:p2,h3/db?target_session_attrs=read-write&…`) or the
//! key/value form (`host=h1,h2 port=5432,5433 dbname=db user=app`). Each host becomes one
//! single-host URL that sqlx parses as it always has, so every other parameter (`sslmode`,
//! `application_name`, `options`, …) reaches every host. Errors name the part that is wrong and
//! never the password.

use std::time::Duration;

use sqlx::postgres::PgConnectOptions;

use super::{Database, SessionAttrs};

/// Bounds a connect attempt to one host when the URL does not (docs/operations/configuration.md).
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// What is wrong with a `DATABASE_URL`; no variant holds the password.
#[derive(Debug, thiserror::Error)]
pub enum UrlError {
    #[error("DATABASE_URL must start with postgres:// or postgresql://, or be key=value pairs")]
    Scheme,
    #[error("host {index} of DATABASE_URL is empty")]
    EmptyHost { index: usize },
    #[error("host {index} of DATABASE_URL ({host}) is malformed")]
    BadHost { index: usize, host: String },
    #[error("the port of host {index} of DATABASE_URL ({port}) is not a port number")]
    BadPort { index: usize, port: String },
    #[error("DATABASE_URL lists {hosts} hosts but {ports} ports (give one port, or one per host)")]
    PortCount { hosts: usize, ports: usize },
    #[error(
        "target_session_attrs={0} is not supported (this service writes: any, read-write or primary)"
    )]
    SessionAttrs(String),
    #[error("connect_timeout={0} is not a whole number of seconds")]
    ConnectTimeout(String),
    #[error("key/value DATABASE_URL: `{0}` is not key=value")]
    Pair(String),
    #[error("host {index} of DATABASE_URL ({host}) is refused")]
    Rejected {
        index: usize,
        host: String,
        #[source]
        source: sqlx::Error,
    },
}

/// One host as written: a name, an IPv4 or a bracketed IPv6 address, and maybe a port.
#[derive(Debug, PartialEq)]
struct Host<'a> {
    name: &'a str,
    port: Option<&'a str>,
}

impl Database {
    /// Parses `url` (see the module doc); the hosts are kept in the order written.
    pub fn parse(url: &str) -> Result<Self, UrlError> {
        let url = url.trim();
        let rest = match ["postgres://", "postgresql://"]
            .iter()
            .find_map(|scheme| url.strip_prefix(scheme))
        {
            Some(rest) => rest.to_owned(),
            None if url.contains('=') => from_pairs(url)?,
            None => return Err(UrlError::Scheme),
        };
        let end = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(end);
        let (userinfo, host_list) = match authority.rfind('@') {
            Some(at) => (&authority[..=at], &authority[at + 1..]),
            None => ("", authority),
        };
        let (path, query) = tail.split_once('?').unwrap_or((tail, ""));

        let mut attrs = SessionAttrs::ReadWrite;
        let mut connect_timeout = DEFAULT_CONNECT_TIMEOUT;
        let mut port_list: Option<&str> = None;
        let mut kept = Vec::new();
        for pair in query.split('&').filter(|pair| !pair.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            match key {
                "target_session_attrs" => attrs = session_attrs(value)?,
                "connect_timeout" => connect_timeout = seconds(value)?,
                "port" if value.contains(',') => port_list = Some(value),
                _ => kept.push(pair),
            }
        }

        // One host goes to sqlx as written (an empty host, a socket directory, …), as it always
        // has; only a list is taken apart.
        let hosts = if host_list.contains(',') {
            host_list
                .split(',')
                .enumerate()
                .map(|(index, written)| host(index + 1, written))
                .collect::<Result<Vec<_>, _>>()?
        } else {
            vec![Host {
                name: host_list,
                port: None,
            }]
        };
        let ports = ports_for(&hosts, port_list)?;
        let query = if kept.is_empty() {
            String::new()
        } else {
            format!("?{}", kept.join("&"))
        };
        let options = hosts
            .iter()
            .zip(ports)
            .enumerate()
            .map(|(index, (host, port))| {
                let port = port.map(|port| format!(":{port}")).unwrap_or_default();
                let single = format!("postgres://{userinfo}{}{port}{path}{query}", host.name);
                single
                    .parse::<PgConnectOptions>()
                    .map_err(|source| UrlError::Rejected {
                        index: index + 1,
                        host: host.name.to_owned(),
                        source,
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            hosts: options,
            attrs,
            connect_timeout,
        })
    }
}

fn session_attrs(value: &str) -> Result<SessionAttrs, UrlError> {
    match value {
        "any" => Ok(SessionAttrs::Any),
        "read-write" => Ok(SessionAttrs::ReadWrite),
        "primary" => Ok(SessionAttrs::Primary),
        other => Err(UrlError::SessionAttrs(other.to_owned())),
    }
}

/// libpq's `connect_timeout`: whole seconds, where zero or less means no bound and anything
/// below two counts as two.
fn seconds(value: &str) -> Result<Duration, UrlError> {
    let secs: i64 = value
        .parse()
        .map_err(|_| UrlError::ConnectTimeout(value.to_owned()))?;
    Ok(match u64::try_from(secs) {
        Ok(0) | Err(_) => Duration::MAX,
        Ok(secs) => Duration::from_secs(secs.max(2)),
    })
}

fn host(index: usize, written: &str) -> Result<Host<'_>, UrlError> {
    let bad = || UrlError::BadHost {
        index,
        host: written.to_owned(),
    };
    let (name, port) = if written.starts_with('[') {
        let close = written.find(']').ok_or_else(bad)?;
        let (name, after) = written.split_at(close + 1);
        match after {
            "" => (name, None),
            _ => (name, Some(after.strip_prefix(':').ok_or_else(bad)?)),
        }
    } else {
        match written.split_once(':') {
            Some((name, port)) => (name, Some(port)),
            None => (written, None),
        }
    };
    if name.is_empty() {
        return Err(UrlError::EmptyHost { index });
    }
    if let Some(port) = port {
        port_number(index, port)?;
    }
    Ok(Host { name, port })
}

fn port_number(index: usize, port: &str) -> Result<u16, UrlError> {
    match port.parse::<u16>() {
        Ok(number) if number > 0 => Ok(number),
        _ => Err(UrlError::BadPort {
            index,
            port: port.to_owned(),
        }),
    }
}

/// Each host's port: its own, else the `port` list's (one for all, or one per host, as libpq),
/// else none (sqlx's default, 5432).
fn ports_for<'a>(
    hosts: &[Host<'a>],
    list: Option<&'a str>,
) -> Result<Vec<Option<&'a str>>, UrlError> {
    let listed: Vec<&str> = list
        .map(|list| list.split(',').collect())
        .unwrap_or_default();
    if listed.len() > 1 && listed.len() != hosts.len() {
        return Err(UrlError::PortCount {
            hosts: hosts.len(),
            ports: listed.len(),
        });
    }
    hosts
        .iter()
        .enumerate()
        .map(|(index, host)| {
            let port = host
                .port
                .or_else(|| listed.get(index).or(listed.first()).copied())
                .filter(|port| !port.is_empty());
            if let Some(port) = port {
                port_number(index + 1, port)?;
            }
            Ok(port)
        })
        .collect()
}

/// The key/value form as the rest of a URL: `host` and `port` go to the authority, every other
/// pair to the query (sqlx reads `dbname`, `user`, `password`, `sslmode`, … there).
fn from_pairs(pairs: &str) -> Result<String, UrlError> {
    let mut hosts = String::new();
    let mut query = Vec::new();
    for (key, value) in split_pairs(pairs)? {
        match key.as_str() {
            // A bare IPv6 address is bracketed, as the URL form writes it.
            "host" | "hostaddr" => {
                hosts = value
                    .split(',')
                    .map(|host| match host.contains(':') && !host.starts_with('[') {
                        true => format!("[{host}]"),
                        false => host.to_owned(),
                    })
                    .collect::<Vec<_>>()
                    .join(",");
            }
            "port" => query.push(format!("port={}", value.replace(' ', ""))),
            _ => query.push(format!("{key}={}", encode(&value))),
        }
    }
    if hosts.is_empty() {
        return Err(UrlError::EmptyHost { index: 1 });
    }
    // A single port belongs to the host; the list form is spread by `ports_for`.
    let query = query.join("&");
    Ok(format!("{hosts}/?{query}"))
}

/// `key=value` pairs separated by spaces; a value may be single-quoted, with `\'` and `\\`.
fn split_pairs(text: &str) -> Result<Vec<(String, String)>, UrlError> {
    let mut pairs = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.peek().is_none() {
            return Ok(pairs);
        }
        let key: String =
            std::iter::from_fn(|| chars.next_if(|c| *c != '=' && !c.is_whitespace())).collect();
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.next() != Some('=') {
            return Err(UrlError::Pair(key));
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let mut value = String::new();
        if chars.next_if_eq(&'\'').is_some() {
            loop {
                match chars.next() {
                    Some('\\') => value.extend(chars.next()),
                    Some('\'') => break,
                    Some(c) => value.push(c),
                    None => return Err(UrlError::Pair(key)),
                }
            }
        } else {
            while let Some(c) = chars.next_if(|c| !c.is_whitespace()) {
                if c == '\\' {
                    value.extend(chars.next());
                } else {
                    value.push(c);
                }
            }
        }
        pairs.push((key, value));
    }
}

/// Percent-encodes all but URL-safe characters, so a value reads back as written.
fn encode(value: &str) -> String {
    value
        .bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                char::from(byte).to_string()
            }
            other => format!("%{other:02X}"),
        })
        .collect()
}
