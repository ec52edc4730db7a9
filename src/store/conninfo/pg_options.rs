//! sqlx's options for each host, made with its builder methods from the keywords read (never by
//! writing a URL for sqlx to parse: sqlx would log what it does not know, values included).
//! libpq's defaults apply where a keyword is unset: the user is the OS user, the database the
//! user, `sslmode` is `prefer`, a host without a password looks in the password file.
//!
//! sqlx's constructor reads `PGHOST`, `PGPORT`, `PGUSER`, `PGPASSWORD`, `PGDATABASE`,
//! `PGSSLMODE`, `PGSSLROOTCERT`, `PGSSLCERT`, `PGSSLKEY`, `PGAPPNAME` and `PGOPTIONS` from the
//! process itself and has no way to unset them; every one but `PGOPTIONS` is overwritten here
//! with what libpq would use, and `options` is refused beside `PGOPTIONS` (`OptionsTwice`).

use std::path::PathBuf;

use sqlx::postgres::{PgConnectOptions, PgSslMode};

use super::error::ConninfoError;
use super::hosts::{Endpoint, Target};
use super::keywords::Source;
use super::pgpass::PasswordFile;
use super::settings::{Setting, Settings};
use super::url::is_c_space;

/// What libpq sends as startup settings from these variables (its `EnvironmentOptions`), unless
/// a variable says `default`.
const ENVIRONMENT_SETTINGS: [(&str, &str); 3] = [
    ("PGDATESTYLE", "datestyle"),
    ("PGTZ", "timezone"),
    ("PGGEQO", "geqo"),
];

/// One of sqlx's builder methods that take a file.
type SetFile = fn(PgConnectOptions, PathBuf) -> PgConnectOptions;

/// One `PgConnectOptions` per endpoint, in order, each with the password it will send (given,
/// or found in the password file), which sqlx's options do not let us read back.
pub(super) fn build(
    settings: &Settings,
    endpoints: &[Endpoint],
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<(PgConnectOptions, Option<String>)>, ConninfoError> {
    let mut base = PgConnectOptions::new_without_pgpass().ssl_mode(ssl_mode(settings)?);
    let user = match settings.non_empty("user") {
        Some(user) => user.value.clone(),
        None => os_user()?,
    };
    base = base.username(&user);
    let database = settings
        .non_empty("dbname")
        .map_or(user.clone(), |dbname| dbname.value.clone());
    base = base.database(&database);
    let files: [(&str, SetFile); 3] = [
        ("sslrootcert", |options, path| options.ssl_root_cert(path)),
        ("sslcert", |options, path| options.ssl_client_cert(path)),
        ("sslkey", |options, path| options.ssl_client_key(path)),
    ];
    for (keyword, set) in files {
        if let Some(path) = settings.non_empty(keyword) {
            if keyword == "sslrootcert" && path.value == "system" {
                return Err(ConninfoError::Unsupported {
                    keyword,
                    from: path.from,
                    reason: "sslrootcert=system (the system's CAs, libpq 16) is not honoured by \
                             sqlx: give the CA file",
                });
            }
            base = set(base, PathBuf::from(&path.value));
        }
    }
    // An empty application_name is sent as none, and the fallback is not used (libpq).
    let application_name = match settings.get("application_name") {
        Some(given) => Some(given),
        None => settings.get("fallback_application_name"),
    };
    if let Some(name) = application_name.filter(|name| !name.value.is_empty()) {
        base = base.application_name(&name.value);
    }
    if let Some(options) = settings.non_empty("options") {
        let pairs = backend_options(options)?;
        // From PGOPTIONS, sqlx's constructor has put it in already, as libpq would send it.
        if options.from == Source::Text {
            if env("PGOPTIONS").is_some() {
                return Err(ConninfoError::OptionsTwice);
            }
            if !pairs.is_empty() {
                base = base.options(pairs);
            }
        }
    }
    let from_environment: Vec<_> = ENVIRONMENT_SETTINGS
        .iter()
        .filter_map(|(variable, name)| {
            env(variable)
                .filter(|value| !value.eq_ignore_ascii_case("default"))
                .map(|value| (*name, value))
        })
        .collect();
    // sqlx's `options` starts an empty list when given none: send nothing rather than "".
    if !from_environment.is_empty() {
        base = base.options(from_environment);
    }

    let password = settings
        .non_empty("password")
        .map(|given| given.value.clone());
    let file = match password {
        Some(_) => None,
        None => password_file(settings, env)
            .as_deref()
            .and_then(PasswordFile::read),
    };
    Ok(endpoints
        .iter()
        .map(|endpoint| {
            let mut options = match &endpoint.target {
                Target::Tcp(name) => base.clone().host(name),
                Target::Socket(dir) => base.clone().host(&dir.to_string_lossy()).socket(dir),
            }
            .port(endpoint.port);
            let password = password.clone().or_else(|| {
                file.as_ref()
                    .and_then(|file| file.lookup(endpoint, &database, &user))
            });
            if let Some(password) = &password {
                options = options.password(password);
            }
            (options, password)
        })
        .collect())
}

/// libpq's default user: the name of the effective user id (sqlx's own default, through
/// whoami without its `std` feature, was "anonymous").
fn os_user() -> Result<String, ConninfoError> {
    whoami::username().map_err(|_| ConninfoError::NoOsUser)
}

/// `sslmode`, checked as libpq checks it (exactly as written); `prefer` if unset.
fn ssl_mode(settings: &Settings) -> Result<PgSslMode, ConninfoError> {
    let Some(Setting { value, from }) = settings.get("sslmode") else {
        return Ok(PgSslMode::Prefer);
    };
    Ok(match value.as_str() {
        "disable" => PgSslMode::Disable,
        "allow" => PgSslMode::Allow,
        "prefer" => PgSslMode::Prefer,
        "require" => PgSslMode::Require,
        "verify-ca" => PgSslMode::VerifyCa,
        "verify-full" => PgSslMode::VerifyFull,
        _ => {
            return Err(ConninfoError::InvalidValue {
                keyword: "sslmode",
                value: value.clone(),
                from: *from,
                expected: "disable, allow, prefer, require, verify-ca, verify-full",
            });
        }
    })
}

/// `passfile` (or `PGPASSFILE`), else `.pgpass` in the home directory.
fn password_file(settings: &Settings, env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    match settings.non_empty("passfile") {
        Some(file) => Some(PathBuf::from(&file.value)),
        None => env("HOME").map(|home| PathBuf::from(home).join(".pgpass")),
    }
}

/// The server settings an `options` value carries, split as the server splits it (at
/// unescaped whitespace, `\` taking the next character) and read as its command line: `-c
/// name=value`, `-cname=value` or `--name=value` (a `-` in the name read as `_`, as the server reads it). sqlx writes
/// them back escaped, as `-c name=value`.
fn backend_options(setting: &Setting) -> Result<Vec<(String, String)>, ConninfoError> {
    let mut words = Vec::new();
    let mut chars = setting.value.chars().peekable();
    loop {
        while chars.next_if(|c| is_c_space(*c)).is_some() {}
        if chars.peek().is_none() {
            break;
        }
        let mut word = String::new();
        while let Some(c) = chars.next_if(|c| !is_c_space(*c)) {
            if c == '\\' {
                word.extend(chars.next());
            } else {
                word.push(c);
            }
        }
        words.push(word);
    }
    let refused = |switch: &str| ConninfoError::OptionsSwitch {
        switch: switch.chars().take(2).collect(),
        from: setting.from,
    };
    let mut pairs = Vec::new();
    let mut words = words.into_iter();
    while let Some(word) = words.next() {
        let assignment = if word == "-c" {
            words.next().ok_or_else(|| refused(&word))?
        } else if let Some(rest) = word.strip_prefix("--").or_else(|| word.strip_prefix("-c")) {
            rest.to_owned()
        } else {
            return Err(refused(&word));
        };
        let (name, value) = assignment.split_once('=').ok_or_else(|| refused(&word))?;
        pairs.push((name.replace('-', "_"), value.to_owned()));
    }
    Ok(pairs)
}
