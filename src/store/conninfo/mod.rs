//! `DATABASE_URL` read as libpq reads a connection string (docs/operations/configuration.md
//! "DATABASE_URL"), then made into one sqlx `PgConnectOptions` per host with sqlx's builder
//! methods. The steps are libpq's: the text becomes keyword/value settings (`url` for
//! `postgres://` and `postgresql://`, `pairs` for `keyword=value`; libpq's `PQconninfoParse`),
//! libpq's environment variables fill what it leaves out (`settings`, by the table of
//! `keywords`), and the host and port lists are split and checked as libpq does before
//! connecting (`hosts`, `pg_options`, `pgpass`). Whatever libpq would honour and the service
//! would not is refused by name.
//! `tests/database_url/` runs libpq's own parser beside this one over a table of strings.
//!
//! A hand parser, not a crate: tokio-postgres's `Config` reads both forms, host lists and
//! socket paths, but unlike libpq it accepts invalid percent-encoding, port 0 and an empty
//! host (as a host name ""), refuses spaces around a port, refuses `sslmode=verify-ca` and
//! `verify-full`, `sslrootcert`, `sslcert` and `sslkey` (as unknown options) and
//! `target_session_attrs=primary`, and it would bring a second Postgres driver into the
//! service for its parser alone. What it gets wrong would need the same hand-written checks
//! around it; the checks alone, tested against libpq, are smaller.

mod error;
mod hosts;
mod keywords;
mod pairs;
mod pg_options;
mod pgpass;
mod settings;
mod url;

#[cfg(test)]
mod tests;

use std::time::Duration;

use sqlx::postgres::PgConnectOptions;

pub use error::{ConninfoError, Part};
pub use hosts::{DEFAULT_PORT, DEFAULT_SOCKET_DIR};
pub use keywords::Source;

use settings::Settings;

/// The role a node must have (libpq's `target_session_attrs`): the values libpq knows that a
/// service that writes can use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::Display)]
#[strum(serialize_all = "kebab-case")]
pub enum SessionAttrs {
    Any,
    /// `SHOW transaction_read_only` is `off`: a new transaction may write.
    ReadWrite,
    /// `pg_is_in_recovery()` is false: the node is not a standby.
    Primary,
}

/// A `DATABASE_URL` read: its hosts, in order, each with every other setting, and the two
/// settings the service applies itself. `Debug` shows hosts and ports only.
#[derive(Clone)]
pub struct Conninfo {
    hosts: Vec<PgConnectOptions>,
    passwords: Vec<Option<String>>,
    settings: Settings,
    attrs: Option<SessionAttrs>,
    connect_timeout: Option<Duration>,
}

/// `host:port` of each of `hosts`: what a `Debug` shows of them, since the options' own `Debug`
/// would show the password.
pub fn shown_hosts(hosts: &[PgConnectOptions]) -> Vec<String> {
    hosts
        .iter()
        .map(|host| format!("{}:{}", host.get_host(), host.get_port()))
        .collect()
}

impl std::fmt::Debug for Conninfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conninfo")
            .field("hosts", &shown_hosts(&self.hosts))
            .field("keywords", &self.settings)
            .finish_non_exhaustive()
    }
}

impl Conninfo {
    /// Reads `text`, with libpq's environment variables (`PGHOST`, `PGPASSWORD`, …) from the
    /// process for what it leaves out.
    pub fn parse(text: &str) -> Result<Self, ConninfoError> {
        Self::parse_with_env(text, &|name| std::env::var(name).ok())
    }

    /// Reads `text` with `env` as the environment. Outside tests `env` must be the process's:
    /// sqlx reads some of the same variables itself (`pg_options`).
    pub fn parse_with_env(
        text: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, ConninfoError> {
        let mut settings = match url::strip_prefix(text) {
            Some(rest) => url::parse(rest)?,
            None => pairs::parse(text)?,
        };
        settings.add_defaults(env);
        settings.check_policies()?;
        let attrs = session_attrs(&settings)?;
        let connect_timeout = connect_timeout(&settings)?;
        let endpoints = hosts::endpoints(&settings)?;
        let (hosts, passwords) = pg_options::build(&settings, &endpoints, env)?
            .into_iter()
            .unzip();
        Ok(Self {
            hosts,
            passwords,
            settings,
            attrs,
            connect_timeout,
        })
    }

    /// One `PgConnectOptions` per host, in the order written.
    pub fn hosts(&self) -> &[PgConnectOptions] {
        &self.hosts
    }

    pub fn into_hosts(self) -> Vec<PgConnectOptions> {
        self.hosts
    }

    /// The password host `index` (from 0) sends: the one given, or the password file's.
    pub fn password(&self, index: usize) -> Option<&str> {
        self.passwords.get(index).and_then(Option::as_deref)
    }

    /// The value `keyword` has, from the text or the environment; `None` for a secret.
    pub fn setting(&self, keyword: &str) -> Option<&str> {
        if keywords::find(keyword).is_none_or(|known| known.secret) {
            return None;
        }
        self.settings
            .get(keyword)
            .map(|setting| setting.value.as_str())
    }

    /// Every keyword set, from the text or the environment, with its value; secrets left out.
    pub fn keywords(&self) -> impl Iterator<Item = (&'static str, &str)> {
        self.settings.shown()
    }

    /// `target_session_attrs`, if set.
    pub fn attrs(&self) -> Option<SessionAttrs> {
        self.attrs
    }

    /// `connect_timeout` as libpq counts it, if set: zero or less is no bound
    /// (`Duration::MAX`), and less than two seconds is two.
    pub fn connect_timeout(&self) -> Option<Duration> {
        self.connect_timeout
    }
}

fn session_attrs(settings: &Settings) -> Result<Option<SessionAttrs>, ConninfoError> {
    let Some(setting) = settings.get("target_session_attrs") else {
        return Ok(None);
    };
    let unsupported = |honoured: &str| ConninfoError::UnsupportedValue {
        keyword: "target_session_attrs",
        value: setting.value.clone(),
        from: setting.from,
        honoured: honoured.to_owned(),
    };
    match setting.value.as_str() {
        "any" => Ok(Some(SessionAttrs::Any)),
        "read-write" => Ok(Some(SessionAttrs::ReadWrite)),
        "primary" => Ok(Some(SessionAttrs::Primary)),
        "read-only" | "standby" | "prefer-standby" => Err(unsupported(
            "any, read-write or primary (the service writes)",
        )),
        _ => Err(ConninfoError::InvalidValue {
            keyword: "target_session_attrs",
            value: setting.value.clone(),
            from: setting.from,
            expected: "any, read-write, read-only, primary, standby, prefer-standby",
        }),
    }
}

fn connect_timeout(settings: &Settings) -> Result<Option<Duration>, ConninfoError> {
    let Some(setting) = settings.get("connect_timeout") else {
        return Ok(None);
    };
    let seconds = hosts::libpq_int(&setting.value).ok_or_else(|| ConninfoError::NotInteger {
        keyword: "connect_timeout",
        value: setting.value.clone(),
        from: setting.from,
    })?;
    Ok(Some(match u64::try_from(seconds) {
        Ok(0) | Err(_) => Duration::MAX,
        Ok(seconds) => Duration::from_secs(seconds.max(2)),
    }))
}
