//! The hosts and ports, as libpq's `pqConnectOptions2` splits them at connect time: `host` is a
//! comma-separated list (one default host if it is unset or empty); an item beginning with `/`
//! is a Unix-socket directory, an empty item is the default host; `port` is one port for every
//! host or one per host, an empty item being 5432. A port is read as libpq reads an integer
//! (`strtol`: spaces around it and a sign allowed) and must be 1 to 65535.

use std::path::PathBuf;

use super::error::ConninfoError;
use super::settings::Settings;
use super::url::is_c_space;

/// Where libpq connects for an empty host: the socket directory Debian's libpq is built with
/// (the platform the service is built, run and tested on; upstream builds use `/tmp`).
pub const DEFAULT_SOCKET_DIR: &str = "/var/run/postgresql";

pub const DEFAULT_PORT: u16 = 5432;

/// What one host of the list names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A host name, or an IPv4 or IPv6 address (without brackets).
    Tcp(String),
    /// The directory of a Unix socket (`.s.PGSQL.<port>` in it).
    Socket(PathBuf),
}

/// One host with its port: `port_text` is the port as written (or empty), which the password
/// file is matched against as libpq matches it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub target: Target,
    pub port: u16,
    pub port_text: String,
}

/// The hosts of `settings`, in order, each with its port.
pub(super) fn endpoints(settings: &Settings) -> Result<Vec<Endpoint>, ConninfoError> {
    let hosts: Vec<&str> = match settings.non_empty("host") {
        Some(host) => host.value.split(',').collect(),
        None => vec![""],
    };
    let targets = hosts
        .iter()
        .enumerate()
        .map(|(index, host)| target(index + 1, host))
        .collect::<Result<Vec<_>, _>>()?;
    let ports: Vec<&str> = match settings.non_empty("port") {
        Some(port) => port.value.split(',').collect(),
        None => vec![""],
    };
    if ports.len() != 1 && ports.len() != targets.len() {
        return Err(ConninfoError::PortCount {
            hosts: targets.len(),
            ports: ports.len(),
        });
    }
    targets
        .into_iter()
        .enumerate()
        .map(|(index, target)| {
            let port_text = ports.get(index).or(ports.first()).copied().unwrap_or("");
            Ok(Endpoint {
                target,
                port: port(index + 1, port_text)?,
                port_text: port_text.to_owned(),
            })
        })
        .collect()
}

fn target(index: usize, host: &str) -> Result<Target, ConninfoError> {
    if host.is_empty() {
        Ok(Target::Socket(PathBuf::from(DEFAULT_SOCKET_DIR)))
    } else if host.starts_with('/') {
        Ok(Target::Socket(PathBuf::from(host)))
    } else if host.starts_with('@') {
        Err(ConninfoError::AbstractSocket(index))
    } else if host.contains('@') {
        // No host name holds one (libpq would fail to resolve it): a password's `@` went astray.
        Err(ConninfoError::AtInHost(index))
    } else {
        Ok(Target::Tcp(host.to_owned()))
    }
}

/// The port of host `index`, written `text`: an empty one is 5432.
fn port(index: usize, text: &str) -> Result<u16, ConninfoError> {
    if text.is_empty() {
        return Ok(DEFAULT_PORT);
    }
    let number = libpq_int(text).ok_or(ConninfoError::PortNotNumber(index))?;
    u16::try_from(number)
        .ok()
        .filter(|port| *port > 0)
        .ok_or_else(|| ConninfoError::PortRange {
            index,
            port: text.trim_matches(is_c_space).to_owned(),
        })
}

/// An integer as libpq's `pqParseIntParam` reads it: `strtol` in base 10 (spaces before it, a
/// sign), spaces after it, nothing else, within a C `int`.
pub(super) fn libpq_int(text: &str) -> Option<i32> {
    let trimmed = text.trim_matches(is_c_space);
    // `strtol` skips spaces before the sign only: "- 1" is not a number.
    let digits = trimmed.strip_prefix(['+', '-']).unwrap_or(trimmed);
    if digits.is_empty() || !digits.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    trimmed.parse::<i32>().ok()
}
