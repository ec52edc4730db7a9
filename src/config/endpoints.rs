//! `AMQP_URL`: the RabbitMQ node, or several nodes of one cluster separated by commas, that the
//! service may connect to (docs/operations/configuration.md; docs/operations/scaling.md).
//! [`AmqpEndpoints::parse`] is the one place a list is judged; a list it refuses stops the service
//! at start, with a message that names the item and never shows a password.

use std::ffi::OsStr;
use std::fmt;

use clap::builder::TypedValueParser;
use clap::error::ErrorKind;
use lapin::uri::AMQPUri;

use super::redact_url;

/// The nodes `AMQP_URL` lists, in the order given: at least one, each an `amqp://` or `amqps://`
/// URL, no node twice, all naming the same vhost. Shown (`Display`, `Debug`) with passwords
/// replaced by `***`.
#[derive(Clone, PartialEq, Eq)]
pub struct AmqpEndpoints(Vec<AmqpEndpoint>);

/// One node's URL, as written in `AMQP_URL`; shown with its password replaced by `***`.
#[derive(Clone, PartialEq, Eq)]
pub struct AmqpEndpoint(String);

/// Why `AMQP_URL` was refused. Items are numbered from 1 and shown redacted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EndpointsError {
    #[error(
        "AMQP_URL is empty: give one amqp:// URL, or several nodes of one cluster separated by commas"
    )]
    Empty,
    #[error("item {position} of AMQP_URL is empty (two commas in a row, or one at either end?)")]
    EmptyItem { position: usize },
    #[error("item {position} of AMQP_URL ({url}) does not start with amqp:// or amqps://")]
    Scheme { position: usize, url: String },
    #[error("item {position} of AMQP_URL ({url}) is not a valid AMQP URL: {reason}")]
    Invalid {
        position: usize,
        url: String,
        reason: String,
    },
    #[error(
        "item {position} of AMQP_URL ({url}) names vhost {vhost:?} but item 1 names {first:?}: \
         the nodes of one cluster are listed with the one vhost the service uses"
    )]
    VhostMismatch {
        position: usize,
        url: String,
        vhost: String,
        first: String,
    },
    #[error("item {position} of AMQP_URL ({url}) names the same node as item {earlier}")]
    Duplicate {
        position: usize,
        url: String,
        earlier: usize,
    },
}

impl AmqpEndpoints {
    /// Parses a comma-separated list (spaces around items are ignored).
    pub fn parse(list: &str) -> Result<Self, EndpointsError> {
        if list.trim().is_empty() {
            return Err(EndpointsError::Empty);
        }
        let mut parsed: Vec<(AmqpEndpoint, AMQPUri)> = vec![];
        for (index, item) in list.split(',').enumerate() {
            let position = index + 1;
            let item = item.trim();
            let uri = parse_item(position, item)?;
            let url = || shown(item);
            if let Some((_, first)) = parsed.first()
                && first.vhost != uri.vhost
            {
                return Err(EndpointsError::VhostMismatch {
                    position,
                    url: url(),
                    vhost: uri.vhost,
                    first: first.vhost.clone(),
                });
            }
            let node = |u: &AMQPUri| (u.authority.host.to_lowercase(), u.authority.port);
            if let Some(earlier) = parsed.iter().position(|(_, u)| node(u) == node(&uri)) {
                return Err(EndpointsError::Duplicate {
                    position,
                    url: url(),
                    earlier: earlier + 1,
                });
            }
            parsed.push((AmqpEndpoint(item.to_owned()), uri));
        }
        Ok(Self(parsed.into_iter().map(|(e, _)| e).collect()))
    }

    /// The nodes in the order `AMQP_URL` lists them; never empty.
    pub fn as_slice(&self) -> &[AmqpEndpoint] {
        &self.0
    }

    /// The clap parser of `--amqp-url`/`AMQP_URL`: its error names the faulty item (redacted)
    /// where clap's own would repeat the whole value, passwords included.
    pub fn value_parser() -> impl TypedValueParser<Value = Self> {
        EndpointsParser
    }
}

fn parse_item(position: usize, item: &str) -> Result<AMQPUri, EndpointsError> {
    if item.is_empty() {
        return Err(EndpointsError::EmptyItem { position });
    }
    let url = || shown(item);
    let scheme = item.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
    if !matches!(scheme.as_deref(), Some("amqp" | "amqps")) {
        return Err(EndpointsError::Scheme {
            position,
            url: url(),
        });
    }
    // What the parser leaves out takes lapin's defaults: `amqp://` alone is localhost:5672, "/".
    item.parse::<AMQPUri>()
        .map_err(|reason| EndpointsError::Invalid {
            position,
            url: url(),
            // The parser may quote its input: never with the password.
            reason: reason.replace(item, &url()),
        })
}

/// An item as an error may show it: without a password, even when it is not a URL
/// (`amqp:user:password@host` lacks the `//` that [`redact_url`] looks for).
fn shown(item: &str) -> String {
    match item.rsplit_once('@') {
        Some((_, host)) if !item.contains("://") => format!("***@{host}"),
        _ => redact_url(item),
    }
}

impl AmqpEndpoint {
    /// The URL with its password, for connecting only; never log it (log the endpoint itself).
    pub fn url(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for AmqpEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&redact_url(&self.0))
    }
}

impl fmt::Debug for AmqpEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AmqpEndpoint({self})")
    }
}

impl fmt::Display for AmqpEndpoints {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown: Vec<String> = self.0.iter().map(ToString::to_string).collect();
        f.write_str(&shown.join(","))
    }
}

impl fmt::Debug for AmqpEndpoints {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AmqpEndpoints({self})")
    }
}

#[derive(Clone)]
struct EndpointsParser;

impl TypedValueParser for EndpointsParser {
    type Value = AmqpEndpoints;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        _arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<AmqpEndpoints, clap::Error> {
        let refuse = |message: String| {
            clap::Error::raw(ErrorKind::ValueValidation, format!("{message}\n")).with_cmd(cmd)
        };
        let list = value
            .to_str()
            .ok_or_else(|| refuse("AMQP_URL is not valid UTF-8".to_owned()))?;
        AmqpEndpoints::parse(list).map_err(|error| refuse(error.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "amqp://app:secret-a@10.0.0.1:5672/%2f";
    const B: &str = "amqp://app:secret-b@10.0.0.2:5672/%2f";

    fn refused(list: &str) -> EndpointsError {
        AmqpEndpoints::parse(list).expect_err(list)
    }

    #[test]
    fn one_url_or_a_comma_separated_list_is_accepted_in_its_order() {
        let one = AmqpEndpoints::parse(A).unwrap();
        assert_eq!(one.as_slice().len(), 1);
        assert_eq!(one.as_slice()[0].url(), A);

        let list = AmqpEndpoints::parse(&format!(" {A} , {B},amqps://app:s@mq-3/%2f")).unwrap();
        let urls: Vec<&str> = list.as_slice().iter().map(AmqpEndpoint::url).collect();
        assert_eq!(urls, [A, B, "amqps://app:s@mq-3/%2f"]);
    }

    #[test]
    fn every_password_is_redacted_when_shown() {
        let list = AmqpEndpoints::parse(&format!("{A},{B}")).unwrap();
        let shown = format!("{list} {list:?} {:?}", list.as_slice()[1]);
        assert!(!shown.contains("secret"), "{shown}");
        assert!(
            shown.contains("amqp://app:***@10.0.0.1:5672/%2f,amqp://app:***@10.0.0.2:5672/%2f"),
            "{shown}"
        );
    }

    #[test]
    fn an_empty_list_or_item_is_refused_with_its_position() {
        assert_eq!(refused(""), EndpointsError::Empty);
        assert_eq!(refused("  "), EndpointsError::Empty);
        assert_eq!(
            refused(&format!("{A},,{B}")),
            EndpointsError::EmptyItem { position: 2 }
        );
        assert_eq!(
            refused(&format!("{A},")),
            EndpointsError::EmptyItem { position: 2 }
        );
        assert_eq!(
            refused(&format!(" ,{A}")),
            EndpointsError::EmptyItem { position: 1 }
        );
    }

    #[test]
    fn another_scheme_is_refused_without_showing_the_password() {
        let error = refused(&format!("{A},http://app:secret-c@10.0.0.3/%2f"));
        assert_eq!(
            error,
            EndpointsError::Scheme {
                position: 2,
                url: "http://app:***@10.0.0.3/%2f".into()
            }
        );
        assert!(matches!(
            refused("10.0.0.1:5672"),
            EndpointsError::Scheme { position: 1, .. }
        ));
        let no_slashes = refused("amqp:app:secret@10.0.0.1");
        assert_eq!(
            no_slashes,
            EndpointsError::Scheme {
                position: 1,
                url: "***@10.0.0.1".into()
            }
        );
    }

    #[test]
    fn an_unparsable_url_is_refused_with_the_reason() {
        for bad in [
            "amqp://app:secret@10.0.0.1:99999/%2f",
            "amqp://app:secret@10.0.0.1:5672/%2f?heartbeat=soon",
            "amqp://app:secret@:5672/%2f",
            "amqp://app:secret@10.0.0.1:5672/%2f?auth_mechanism=magic",
        ] {
            let error = refused(&format!("{A},{bad}"));
            assert!(
                matches!(error, EndpointsError::Invalid { position: 2, .. }),
                "{bad}: {error:?}"
            );
            assert!(!error.to_string().contains("secret@"), "{error}");
        }
    }

    #[test]
    fn nodes_of_one_list_must_share_the_vhost() {
        let error = refused(&format!("{A},amqp://app:secret@10.0.0.2:5672/orders"));
        assert_eq!(
            error,
            EndpointsError::VhostMismatch {
                position: 2,
                url: "amqp://app:***@10.0.0.2:5672/orders".into(),
                vhost: "orders".into(),
                first: "/".into(),
            }
        );
        // `%2f` and the default (no path) are both the vhost "/".
        AmqpEndpoints::parse(&format!("{A},amqp://app:secret@10.0.0.2:5672")).unwrap();
    }

    #[test]
    fn a_node_listed_twice_is_refused() {
        let error = refused(&format!("{A},{B},amqp://other:x@10.0.0.1/%2f"));
        assert!(
            matches!(
                error,
                EndpointsError::Duplicate {
                    position: 3,
                    earlier: 1,
                    ..
                }
            ),
            "{error:?}"
        );
    }
}
