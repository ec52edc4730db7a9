//! Just enough of PromQL to see what a query reads: the metric of each selector with its label
//! matchers, and the labels named by grouping and matching clauses (`by`, `without`, `on`,
//! `ignoring`, `group_left`, `group_right`). Whether a query is valid PromQL is promtool's
//! job (`.ci/promtool-check.sh`); this reads the names so they can be checked against what the
//! service exports.

/// What one query reads.
#[derive(Debug, Default)]
pub struct Query {
    pub selectors: Vec<Selector>,
    /// Labels named by `by (...)`, `on (...)` and the like.
    pub grouping: Vec<String>,
    /// Labels named by `by (...)` alone: where there are some, the result carries no others.
    pub kept: Vec<String>,
}

/// `metric{label="value", ...}`.
#[derive(Debug)]
pub struct Selector {
    pub metric: String,
    /// (label, value) for each matcher, whatever its operator.
    pub matchers: Vec<(String, String)>,
}

/// Words that are not metric names where a metric name could stand: operators spelt as words,
/// and aggregations, which may be followed by `by (...)` before their parenthesis.
const KEYWORDS: &[&str] = &[
    "and",
    "or",
    "unless",
    "bool",
    "offset",
    "inf",
    "nan",
    "atan2",
    "sum",
    "min",
    "max",
    "avg",
    "group",
    "stddev",
    "stdvar",
    "count",
    "count_values",
    "bottomk",
    "topk",
    "quantile",
    "limitk",
    "limit_ratio",
];

/// Clauses followed by a parenthesised list of labels.
const LABEL_LISTS: &[&str] = &[
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
];

pub fn parse(expr: &str) -> Result<Query, String> {
    let mut lexer = Lexer {
        chars: expr.chars().collect(),
        at: 0,
    };
    let mut query = Query::default();
    while let Some(c) = lexer.peek() {
        match c {
            c if c.is_whitespace() => lexer.at += 1,
            '"' | '\'' | '`' => {
                lexer.string()?;
            }
            '#' => lexer.skip_while(|c| c != '\n'),
            '[' => lexer.skip_past(']')?,
            '{' => return Err(format!("a selector without a metric name in `{expr}`")),
            c if c.is_ascii_digit() || c == '.' => {
                lexer.skip_while(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_')
            }
            c if c.is_ascii_alphabetic() || c == '_' || c == ':' => {
                let word = lexer.identifier();
                let next = lexer.next_significant();
                if LABEL_LISTS.contains(&word.as_str()) && next == Some('(') {
                    let labels = lexer.label_list()?;
                    if word == "by" {
                        query.kept.extend(labels.iter().cloned());
                    }
                    query.grouping.extend(labels);
                } else if next == Some('(') || KEYWORDS.contains(&word.to_lowercase().as_str()) {
                    // A function or aggregation, or an operator spelt as a word.
                } else {
                    let matchers = if next == Some('{') {
                        lexer.matchers()?
                    } else {
                        Vec::new()
                    };
                    query.selectors.push(Selector {
                        metric: word,
                        matchers,
                    });
                }
            }
            _ => lexer.at += 1,
        }
    }
    Ok(query)
}

struct Lexer {
    chars: Vec<char>,
    at: usize,
}

impl Lexer {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn skip_while(&mut self, keep: impl Fn(char) -> bool) {
        while self.peek().is_some_and(&keep) {
            self.at += 1;
        }
    }

    /// Skips whitespace and returns the character that follows, without consuming it.
    fn next_significant(&mut self) -> Option<char> {
        self.skip_while(char::is_whitespace);
        self.peek()
    }

    fn skip_past(&mut self, end: char) -> Result<(), String> {
        self.skip_while(|c| c != end);
        self.expect(end)
    }

    fn expect(&mut self, wanted: char) -> Result<(), String> {
        match self.next_significant() {
            Some(c) if c == wanted => {
                self.at += 1;
                Ok(())
            }
            other => Err(format!("expected `{wanted}`, found {other:?}")),
        }
    }

    fn identifier(&mut self) -> String {
        let start = self.at;
        self.skip_while(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':');
        self.chars[start..self.at].iter().collect()
    }

    /// A quoted string; returns its content (escapes kept as written).
    fn string(&mut self) -> Result<String, String> {
        let quote = self.peek().ok_or("expected a string")?;
        self.at += 1;
        let start = self.at;
        while let Some(c) = self.peek() {
            match c {
                '\\' => self.at += 2,
                c if c == quote => {
                    let text = self.chars[start..self.at].iter().collect();
                    self.at += 1;
                    return Ok(text);
                }
                _ => self.at += 1,
            }
        }
        Err("an unterminated string".to_owned())
    }

    /// `(a, b, ...)`, possibly empty.
    fn label_list(&mut self) -> Result<Vec<String>, String> {
        self.list('(', ')', |lexer| Ok(lexer.identifier()))
    }

    /// `{label op "value", ...}`.
    fn matchers(&mut self) -> Result<Vec<(String, String)>, String> {
        self.list('{', '}', |lexer| {
            let label = lexer.identifier();
            lexer.skip_while(|c| c.is_whitespace() || matches!(c, '=' | '!' | '~'));
            Ok((label, lexer.string()?))
        })
    }

    /// Comma-separated items between `open` and `close`, each starting with a label name and
    /// read by `item`.
    fn list<T>(
        &mut self,
        open: char,
        close: char,
        mut item: impl FnMut(&mut Self) -> Result<T, String>,
    ) -> Result<Vec<T>, String> {
        self.expect(open)?;
        let mut items = Vec::new();
        loop {
            match self.next_significant() {
                Some(c) if c == close => {
                    self.at += 1;
                    return Ok(items);
                }
                Some(',') => self.at += 1,
                Some(c) if c.is_ascii_alphabetic() || c == '_' => items.push(item(self)?),
                other => return Err(format!("expected a label or `{close}`, found {other:?}")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_yields_its_selectors_and_grouping_labels() {
        let query = parse(
            r#"histogram_quantile(0.99, sum by (le, route) (rate(http_request_duration_seconds_bucket{job=~"$job", route!~"/health/.*"}[$__rate_interval])))
              / on (route) group_left () max without (instance) (up offset 5m) > bool 0.5 unless vector(1)"#,
        )
        .unwrap();

        let metrics: Vec<_> = query.selectors.iter().map(|s| s.metric.as_str()).collect();
        assert_eq!(metrics, ["http_request_duration_seconds_bucket", "up"]);
        assert_eq!(
            query.selectors[0].matchers,
            [
                ("job".to_owned(), "$job".to_owned()),
                ("route".to_owned(), "/health/.*".to_owned())
            ]
        );
        assert_eq!(query.grouping, ["le", "route", "route", "instance"]);
        assert_eq!(query.kept, ["le", "route"]);
    }
}
