//! The password file, read as libpq's `passwordFromFile` reads it, for a host that has no
//! password: `passfile` (or `PGPASSFILE`), else `~/.pgpass`; ignored unless it is a regular file
//! that neither group nor others may read; lines `host:port:database:user:password`, `*`
//! matching any field, `\` escaping `:` and `\`, `#` starting a comment; the first match wins.
//! A host given as the default socket directory (or empty) is matched as `localhost`.
//! Nothing read here is ever logged.

use std::path::Path;

use super::hosts::{DEFAULT_PORT, DEFAULT_SOCKET_DIR, Endpoint, Target};

/// The password file's lines, if it may be used.
pub(super) struct PasswordFile(String);

impl PasswordFile {
    /// Reads `path`, as libpq: a missing file is no file; an insecure one is ignored, with a
    /// warning that names the path only.
    pub fn read(path: &Path) -> Option<Self> {
        let metadata = std::fs::metadata(path).ok()?;
        if !metadata.is_file() {
            tracing::warn!(path = %path.display(), "the password file is not a plain file: ignored");
            return None;
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            if metadata.permissions().mode() & 0o077 != 0 {
                tracing::warn!(
                    path = %path.display(),
                    "the password file has group or world access (it should be 0600 or less): ignored"
                );
                return None;
            }
        }
        std::fs::read_to_string(path).ok().map(Self)
    }

    /// The password of the first line that matches `endpoint`, `database` and `user`.
    pub fn lookup(&self, endpoint: &Endpoint, database: &str, user: &str) -> Option<String> {
        let host = match &endpoint.target {
            Target::Socket(dir) if dir == Path::new(DEFAULT_SOCKET_DIR) => "localhost".to_owned(),
            Target::Socket(dir) => dir.to_string_lossy().into_owned(),
            Target::Tcp(name) => name.clone(),
        };
        let port = match endpoint.port_text.as_str() {
            "" => DEFAULT_PORT.to_string(),
            written => written.to_owned(),
        };
        self.0
            .lines()
            .filter(|line| !line.starts_with('#'))
            .find_map(|line| {
                let rest = matches(line, &host)?;
                let rest = matches(rest, &port)?;
                let rest = matches(rest, database)?;
                let rest = matches(rest, user)?;
                Some(unescape(rest))
            })
    }
}

/// libpq's `pwdfMatchesString`: whether the first field of `line` is `*` or `token` (with `\`
/// escapes); the rest of the line after that field's `:`.
fn matches<'a>(line: &'a str, token: &str) -> Option<&'a str> {
    if let Some(rest) = line.strip_prefix("*:") {
        return Some(rest);
    }
    let mut expected = token.chars();
    let mut chars = line.char_indices();
    while let Some((at, c)) = chars.next() {
        let (c, escaped) = match c {
            '\\' => match chars.next() {
                Some((_, next)) => (next, true),
                None => return None,
            },
            c => (c, false),
        };
        if c == ':' && !escaped {
            return expected.next().is_none().then(|| &line[at + 1..]);
        }
        if expected.next() != Some(c) {
            return None;
        }
    }
    None
}

/// The password field: up to an unescaped `:` or the end, with `\` escapes removed.
fn unescape(field: &str) -> String {
    let mut password = String::new();
    let mut chars = field.chars();
    while let Some(c) = chars.next() {
        match c {
            ':' => break,
            '\\' => password.push(chars.next().unwrap_or('\\')),
            c => password.push(c),
        }
    }
    password
}
