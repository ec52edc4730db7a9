//! The operations kit (docs/operations/observability.md "Operations kit") against the service it
//! watches: every metric and label the alert rules and the Grafana dashboard read is one the
//! service exports, every alert is labelled and links to the runbook's section named after it
//! (tests/docs checks that the section exists), and the
//! dashboard offers its data source and instance choices to every panel. No database or broker:
//! files only. promtool's own checks (the rules load, their unit tests pass, the dashboard's
//! queries parse) run in `.ci/promtool-check.sh`.

mod exported;
mod kit;
mod promql;

use std::collections::BTreeSet;
use std::path::Path;

use exported::{Exported, TARGET_LABELS};

const ALERTS: &str = "deploy/prometheus/alerts.yml";
const DASHBOARD: &str = "deploy/grafana/order-service.json";
/// Where each alert's `runbook_url` points: the section named after the alert.
const RUNBOOK: &str = "docs/operations/runbook.md";

/// What is wrong with one query: metrics the service does not export, labels they do not
/// carry (in matchers and grouping clauses), histogram series of a non-histogram, and labels
/// in the legend (or an alert's annotations) that the result cannot carry: where the query
/// aggregates `by (...)`, one of those labels; otherwise one its metrics carry. (An
/// approximation that errs towards passing: the exact labels need a full PromQL evaluator.)
fn problems(expr: &str, legend: &str, exported: &Exported) -> Vec<String> {
    let query = match promql::parse(expr) {
        Ok(query) => query,
        Err(error) => return vec![format!("unreadable query ({error}): {expr}")],
    };
    let mut found = Vec::new();
    let mut available: BTreeSet<String> = TARGET_LABELS.iter().map(|l| (*l).to_owned()).collect();
    for selector in &query.selectors {
        let Some((_, labels)) = exported::resolve(exported, &selector.metric) else {
            found.push(format!(
                "`{}` is not a metric the service exports",
                selector.metric
            ));
            continue;
        };
        for (label, _) in &selector.matchers {
            if !labels.contains(label) {
                found.push(format!("`{}` has no label `{label}`", selector.metric));
            }
        }
        available.extend(labels);
    }
    for label in &query.grouping {
        if !available.contains(label) {
            found.push(format!("no metric of the query has the label `{label}`"));
        }
    }
    for label in kit::template_labels(legend) {
        let kept = if query.kept.is_empty() {
            available.contains(&label)
        } else {
            query.kept.contains(&label)
        };
        if !kept {
            found.push(format!("the result has no label `{label}` to show"));
        }
    }
    found
}

fn kit_problems(exported: &Exported) -> Vec<String> {
    let mut all = Vec::new();
    for alert in kit::alerts(&kit::read(ALERTS)) {
        let expr = alert.field("expr").unwrap_or_default();
        let annotations = [alert.field("summary"), alert.field("description")];
        let templates = annotations
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(" ");
        for problem in problems(expr, &templates, exported) {
            all.push(format!("{ALERTS}, alert {}: {problem}", alert.name));
        }
    }
    let dashboard = kit::dashboard(Path::new(DASHBOARD));
    for query in kit::queries(&dashboard) {
        for problem in problems(&query.expr, &query.legend, exported) {
            all.push(format!("{DASHBOARD}, panel {:?}: {problem}", query.panel));
        }
    }
    for variable in dashboard["templating"]["list"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let query = variable["query"].as_str().unwrap_or_default();
        if let Some(arguments) = query
            .strip_prefix("label_values(")
            .and_then(|q| q.strip_suffix(')'))
        {
            let (series, label) = arguments.rsplit_once(',').unwrap_or((arguments, ""));
            let legend = format!("{{{{{}}}}}", label.trim());
            for problem in problems(series, &legend, exported) {
                all.push(format!("{DASHBOARD}, variable {query}: {problem}"));
            }
        }
    }
    all
}

#[test]
fn every_metric_and_label_the_kit_reads_is_one_the_service_exports() {
    let exported = exported::readable(&kit::repository().join("src"));

    let problems = kit_problems(&exported);

    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_check_refuses_a_misspelt_metric_or_label() {
    let exported = exported::readable(&kit::repository().join("src"));
    let cases = [
        ("rate(http_request_total[5m])", ""),
        ("amqp_messages_total{outcom=\"applied\"}", ""),
        ("sum by (rout) (rate(http_requests_total[5m]))", ""),
        (
            "sum by (route) (rate(http_requests_total[5m]))",
            "{{status}}",
        ),
        (
            "histogram_quantile(0.5, rate(outbox_backlog_bucket[5m]))",
            "",
        ),
        ("rate(outbox_publish_latency_seconds_total[5m])", ""),
    ];

    for (expr, legend) in cases {
        assert!(
            !problems(expr, legend, &exported).is_empty(),
            "{expr} {legend} passed"
        );
    }
    let fine = "histogram_quantile(0.99, sum by (le, type) (rate(amqp_message_age_seconds_bucket{job=\"j\"}[5m])))";
    assert_eq!(problems(fine, "{{type}}", &exported), Vec::<String>::new());
}

#[test]
fn every_alert_has_a_severity_a_summary_and_a_runbook_section() {
    let alerts = kit::alerts(&kit::read(ALERTS));
    assert!(alerts.len() >= 8, "{alerts:?}");

    for alert in &alerts {
        let name = &alert.name;
        assert!(
            matches!(alert.field("severity"), Some("critical" | "warning")),
            "{name}: severity"
        );
        for key in ["summary", "description", "for"] {
            assert!(
                alert.field(key).is_some_and(|v| !v.is_empty()),
                "{name}: {key}"
            );
        }
        let url = alert.field("runbook_url").unwrap_or_default();
        assert_eq!(
            url,
            format!("{RUNBOOK}#{}", name.to_lowercase()),
            "{name}: runbook_url"
        );
        // That the section exists is tests/docs' check, for every link of the repository.
        let selectors = promql::parse(alert.field("expr").unwrap_or_default())
            .expect("a readable expression")
            .selectors;
        for selector in selectors {
            assert!(
                selector
                    .matchers
                    .contains(&("job".into(), "order-service".into())),
                "{name}: {} must read the job order-service",
                selector.metric
            );
        }
    }
}

#[test]
fn the_dashboard_offers_a_data_source_and_instances_to_every_panel() {
    let dashboard = kit::dashboard(Path::new(DASHBOARD));
    assert!(dashboard["schemaVersion"].as_u64() >= Some(36));
    let variables = dashboard["templating"]["list"]
        .as_array()
        .expect("variables");
    let variable = |name: &str| variables.iter().find(|v| v["name"] == name);
    let datasource = variable("datasource").expect("a datasource variable");
    assert_eq!(datasource["type"], "datasource");
    assert_eq!(datasource["query"], "prometheus");
    for name in ["job", "instance"] {
        let chosen = variable(name).unwrap_or_else(|| panic!("a {name} variable"));
        assert_eq!(chosen["datasource"]["uid"], "${datasource}");
    }

    let panels = kit::panels(&dashboard);
    let ids: BTreeSet<_> = panels.iter().map(|p| p["id"].as_u64()).collect();
    assert_eq!(ids.len(), panels.len(), "panel ids are unique");
    let rows: Vec<_> = panels.iter().filter(|p| p["type"] == "row").collect();
    let titles: Vec<_> = rows.iter().filter_map(|r| r["title"].as_str()).collect();
    assert_eq!(
        titles,
        [
            "Traffic & errors",
            "Consumer",
            "Outbox",
            "Domain",
            "Dead letters",
            "Readiness"
        ]
    );
    for panel in panels.iter().filter(|p| p["type"] != "row") {
        let title = &panel["title"];
        assert_eq!(panel["datasource"]["uid"], "${datasource}", "{title}");
        let targets = panel["targets"].as_array().expect("targets");
        assert!(!targets.is_empty(), "{title}");
        for target in targets {
            assert_eq!(target["datasource"]["uid"], "${datasource}", "{title}");
            let expr = target["expr"].as_str().expect("an expr");
            for selector in promql::parse(expr).expect("a readable query").selectors {
                for (label, value) in [("job", "$job"), ("instance", "$instance")] {
                    assert!(
                        selector.matchers.contains(&(label.into(), value.into())),
                        "{title}: {} must follow ${label}",
                        selector.metric
                    );
                }
            }
        }
    }
}
