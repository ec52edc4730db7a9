//! Reading the operations kit in `deploy/` (docs/operations/observability.md "Operations kit"): the
//! alert rules and the dashboard's queries.
//!
//! The rules file is read line by line rather than with a YAML parser (the service needs none):
//! a rule's fields are the `key: value` lines under its `- alert:` line, and an `expr` is either
//! the rest of its line or a block (`|`) of the more indented lines below it. promtool loads the
//! same file as real YAML in CI, so a file this reading would misunderstand fails there.

use std::path::{Path, PathBuf};

use serde_json::Value;

pub fn repository() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn read(path: &str) -> String {
    std::fs::read_to_string(repository().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// One alerting rule: its name and its fields (`expr`, `for`, `severity`, `summary`, ...).
#[derive(Debug)]
pub struct Alert {
    pub name: String,
    pub fields: Vec<(String, String)>,
}

impl Alert {
    pub fn field(&self, key: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// The alerting rules of a Prometheus rules file.
pub fn alerts(text: &str) -> Vec<Alert> {
    let lines: Vec<&str> = text.lines().collect();
    let mut alerts: Vec<Alert> = Vec::new();
    let mut at = 0;
    while at < lines.len() {
        let line = lines[at];
        at += 1;
        let trimmed = line.trim_start().trim_start_matches("- ");
        let Some((key, value)) = trimmed.split_once(':') else {
            continue;
        };
        let (key, value) = (key.trim(), value.trim());
        if key.starts_with('#') {
            continue;
        }
        if key == "alert" {
            alerts.push(Alert {
                name: unquoted(value),
                fields: Vec::new(),
            });
            continue;
        }
        let Some(alert) = alerts.last_mut() else {
            continue;
        };
        let value = if value.starts_with('|') || value.starts_with('>') {
            let indent = indentation(line);
            let mut block = Vec::new();
            while at < lines.len()
                && (lines[at].trim().is_empty() || indentation(lines[at]) > indent)
            {
                block.push(lines[at].trim());
                at += 1;
            }
            block.join("\n")
        } else {
            unquoted(value)
        };
        alert.fields.push((key.to_owned(), value));
    }
    alerts
}

fn indentation(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

fn unquoted(value: &str) -> String {
    let quoted = value.len() >= 2
        && ((value.starts_with('"') && value.ends_with('"'))
            || (value.starts_with('\'') && value.ends_with('\'')));
    if quoted {
        value[1..value.len() - 1].to_owned()
    } else {
        value.to_owned()
    }
}

/// A query of the dashboard: where it is, its PromQL and its legend.
#[derive(Debug)]
pub struct PanelQuery {
    pub panel: String,
    pub expr: String,
    pub legend: String,
}

/// Every panel of a dashboard, those inside collapsed rows included.
pub fn panels(dashboard: &Value) -> Vec<&Value> {
    fn walk<'a>(items: &'a Value, into: &mut Vec<&'a Value>) {
        for panel in items.as_array().into_iter().flatten() {
            into.push(panel);
            walk(&panel["panels"], into);
        }
    }
    let mut all = Vec::new();
    walk(&dashboard["panels"], &mut all);
    all
}

pub fn queries(dashboard: &Value) -> Vec<PanelQuery> {
    let mut queries = Vec::new();
    for panel in panels(dashboard) {
        for target in panel["targets"].as_array().into_iter().flatten() {
            queries.push(PanelQuery {
                panel: panel["title"].as_str().unwrap_or_default().to_owned(),
                expr: target["expr"].as_str().unwrap_or_default().to_owned(),
                legend: target["legendFormat"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            });
        }
    }
    queries
}

/// The labels a Grafana legend or a Prometheus annotation names: `{{route}}`,
/// `{{ $labels.route }}`.
pub fn template_labels(text: &str) -> Vec<String> {
    text.split("{{")
        .skip(1)
        .filter_map(|part| part.split_once("}}"))
        .map(|(inside, _)| inside.trim())
        .filter_map(|inside| {
            let label = inside.strip_prefix("$labels.").unwrap_or(inside);
            let plain = label.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            plain.then(|| label.to_owned())
        })
        .collect()
}

pub fn dashboard(path: &Path) -> Value {
    serde_json::from_str(&read(path.to_str().expect("a UTF-8 path")))
        .expect("the dashboard is JSON")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rule_reads_its_fields_and_its_block_expression() {
        let rules = alerts(
            "groups:\n  - name: g\n    rules:\n      - alert: First\n        expr: |\n          a\n            > 1\n        for: 5m\n        labels:\n          severity: warning\n        annotations:\n          summary: \"{{ $labels.x }} high\"\n      - alert: Second\n        expr: up == 0\n",
        );

        assert_eq!(rules.len(), 2);
        assert_eq!(rules[0].field("expr"), Some("a\n> 1"));
        assert_eq!(rules[0].field("severity"), Some("warning"));
        assert_eq!(rules[0].field("summary"), Some("{{ $labels.x }} high"));
        assert_eq!(rules[1].name, "Second");
        assert_eq!(rules[1].field("expr"), Some("up == 0"));
    }

    #[test]
    fn templates_name_their_labels() {
        assert_eq!(
            template_labels("{{route}} {{ $labels.instance }} {{ $value | humanize }}"),
            ["route", "instance"]
        );
    }
}
