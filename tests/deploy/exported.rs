//! The metrics the service exports, read from its source: every `counter!`, `gauge!` and
//! `histogram!` under `src/` with a literal name, and the label keys given with it. Reading the
//! source rather than a scrape sees every metric, including those that appear only once
//! something happens (a reconnect, a relay failure).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
}

#[derive(Debug)]
pub struct Metric {
    pub kind: Kind,
    pub labels: BTreeSet<String>,
}

/// Labels Prometheus attaches to every scraped series.
pub const TARGET_LABELS: &[&str] = &["job", "instance"];

/// Series Prometheus itself records for each scrape target.
const PROMETHEUS_OWN: &[&str] = &["up"];

pub type Exported = BTreeMap<String, Metric>;

/// Every metric registered under `src/`.
pub fn in_source(root: &Path) -> Exported {
    let mut exported = Exported::new();
    for file in rust_files(root) {
        let text = std::fs::read_to_string(&file).expect("a readable source file");
        for (kind, name, labels) in registrations(&text) {
            let metric = exported.entry(name.clone()).or_insert_with(|| Metric {
                kind,
                labels: BTreeSet::new(),
            });
            assert_eq!(
                metric.kind,
                kind,
                "{name} is registered as two kinds ({})",
                file.display()
            );
            metric.labels.extend(labels);
        }
    }
    exported
}

/// What the kit may read: the service's metrics and Prometheus' own.
pub fn readable(root: &Path) -> Exported {
    let mut metrics = in_source(root);
    for name in PROMETHEUS_OWN {
        metrics.insert(
            (*name).to_owned(),
            Metric {
                kind: Kind::Gauge,
                labels: BTreeSet::new(),
            },
        );
    }
    metrics
}

/// The metric a series name belongs to, and the labels that series may carry: a histogram's
/// `_bucket`, `_sum` and `_count` series belong to it (`_bucket` adds `le`).
pub fn resolve<'a>(exported: &'a Exported, series: &str) -> Option<(&'a Metric, Vec<String>)> {
    let with_targets = |metric: &Metric| {
        let mut labels: Vec<String> = metric.labels.iter().cloned().collect();
        labels.extend(TARGET_LABELS.iter().map(|l| (*l).to_owned()));
        labels
    };
    if let Some(metric) = exported.get(series) {
        return Some((metric, with_targets(metric)));
    }
    ["_bucket", "_sum", "_count"].iter().find_map(|suffix| {
        let metric = exported.get(series.strip_suffix(suffix)?)?;
        if metric.kind != Kind::Histogram {
            return None;
        }
        let mut labels = with_targets(metric);
        if *suffix == "_bucket" {
            labels.push("le".to_owned());
        }
        Some((metric, labels))
    })
}

fn rust_files(directory: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(directory).expect("a readable source directory") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

/// (kind, name, label keys) of each metrics macro in `text` whose name is a literal.
fn registrations(text: &str) -> Vec<(Kind, String, Vec<String>)> {
    let mut found = Vec::new();
    for (macro_name, kind) in [
        ("counter!(", Kind::Counter),
        ("gauge!(", Kind::Gauge),
        ("histogram!(", Kind::Histogram),
    ] {
        for (start, _) in text.match_indices(macro_name) {
            let arguments = &text[start + macro_name.len()..];
            let literals = string_literals(arguments);
            let Some((name, _)) = literals.first() else {
                continue;
            };
            let labels = literals
                .iter()
                .filter(|(_, then)| then.trim_start().starts_with("=>"))
                .map(|(label, _)| label.clone())
                .collect();
            found.push((kind, name.clone(), labels));
        }
    }
    found
}

/// The string literals among a macro's arguments (up to its closing parenthesis), each with
/// the text that follows it.
fn string_literals(arguments: &str) -> Vec<(String, &str)> {
    let mut literals = Vec::new();
    let mut depth = 1;
    let mut rest = arguments;
    while let Some(c) = rest.chars().next() {
        match c {
            '(' => depth += 1,
            ')' if depth == 1 => break,
            ')' => depth -= 1,
            '"' => {
                let Some(end) = rest[1..].find('"') else {
                    break;
                };
                let after = &rest[end + 2..];
                literals.push((rest[1..=end].to_owned(), after));
                rest = after;
                continue;
            }
            _ => {}
        }
        rest = &rest[c.len_utf8()..];
    }
    literals
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_macro_yields_its_name_and_label_keys() {
        let source = r#"
            metrics::counter!(
                "order_changes_total",
                "kind" => kind,
                "from" => format!("{}", x),
            )
            .increment(1);
            metrics::histogram!("outbox_publish_latency_seconds").record(1.0);
        "#;

        let found = registrations(source);

        assert_eq!(
            found,
            [
                (
                    Kind::Counter,
                    "order_changes_total".to_owned(),
                    vec!["kind".to_owned(), "from".to_owned()]
                ),
                (
                    Kind::Histogram,
                    "outbox_publish_latency_seconds".to_owned(),
                    vec![]
                ),
            ]
        );
    }
}
