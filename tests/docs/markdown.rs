//! What the docs test needs of a Markdown file: its headings, the anchors GitHub gives them (and
//! explicit `<a id="…">` ones), and its inline links `[text](target)`. Fenced code blocks and
//! code spans hold neither headings nor links.

use std::collections::{BTreeMap, BTreeSet};

/// One inline link: the line it is on (from 1) and its target as written.
#[derive(Debug, PartialEq, Eq)]
pub struct Link {
    pub line: usize,
    pub target: String,
}

#[derive(Debug, Default)]
pub struct Document {
    pub anchors: BTreeSet<String>,
    pub links: Vec<Link>,
    /// Inline code spans outside fenced blocks, with their line: where the docs name files.
    pub code_spans: Vec<Link>,
}

impl Document {
    pub fn parse(markdown: &str) -> Self {
        let mut document = Self::default();
        let mut seen: BTreeMap<String, usize> = BTreeMap::new();
        let mut fence: Option<String> = None;
        for (index, line) in markdown.lines().enumerate() {
            if let Some(marker) = fence_marker(line) {
                match &fence {
                    None => fence = Some(marker),
                    Some(open) if marker.starts_with(open.as_str()) => fence = None,
                    Some(_) => {}
                }
                continue;
            }
            if fence.is_some() {
                continue;
            }
            if let Some(text) = heading(line) {
                let slug = slug(text);
                let count = seen.entry(slug.clone()).or_insert(0);
                let anchor = if *count == 0 {
                    slug
                } else {
                    format!("{slug}-{count}")
                };
                *count += 1;
                document.anchors.insert(anchor);
            }
            document.anchors.extend(html_anchors(line));
            for target in link_targets(line) {
                document.links.push(Link {
                    line: index + 1,
                    target,
                });
            }
            for span in code_spans(line) {
                document.code_spans.push(Link {
                    line: index + 1,
                    target: span,
                });
            }
        }
        document
    }
}

/// The anchor GitHub gives a heading: lower case, every character that is not a letter, a digit,
/// a space, a hyphen or an underscore dropped, then each space a hyphen.
pub fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The text of an ATX heading (`## Text ##`), if the line is one.
fn heading(line: &str) -> Option<&str> {
    let line = indented_at_most_three(line)?;
    let hashes = line.chars().take_while(|&c| c == '#').count();
    if !(1..=6).contains(&hashes) {
        return None;
    }
    let rest = &line[hashes..];
    if !rest.is_empty() && !rest.starts_with([' ', '\t']) {
        return None;
    }
    Some(rest.trim().trim_end_matches('#').trim_end())
}

/// The opening of a fenced code block (three or more backticks or tildes), if the line is one.
fn fence_marker(line: &str) -> Option<String> {
    let line = indented_at_most_three(line)?;
    let first = line.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let run: String = line.chars().take_while(|&c| c == first).collect();
    (run.len() >= 3).then_some(run)
}

fn indented_at_most_three(line: &str) -> Option<&str> {
    let trimmed = line.trim_start_matches(' ');
    (line.len() - trimmed.len() <= 3).then_some(trimmed)
}

/// `<a id="…">` and `<a name="…">` anchors.
fn html_anchors(line: &str) -> Vec<String> {
    let mut anchors = Vec::new();
    for attribute in ["id=\"", "name=\""] {
        for (at, _) in line.match_indices(&format!("<a {attribute}")) {
            let value = &line[at + 3 + attribute.len()..];
            if let Some((anchor, _)) = value.split_once('"') {
                anchors.push(anchor.to_owned());
            }
        }
    }
    anchors
}

/// The targets of the inline links on a line, outside code spans: what follows `](` up to the
/// closing parenthesis, without a title.
/// The text of each single-backtick code span of `line`.
fn code_spans(line: &str) -> Vec<String> {
    line.split('`')
        .skip(1)
        .step_by(2)
        .filter(|span| !span.is_empty())
        .map(str::to_owned)
        .collect()
}

fn link_targets(line: &str) -> Vec<String> {
    let bytes = line.as_bytes();
    let mut targets = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] == b'`' {
            // A code span ends at the next run of as many backticks.
            let run = bytes[at..].iter().take_while(|&&b| b == b'`').count();
            let closing = "`".repeat(run);
            at = match line[at + run..].find(&closing) {
                Some(end) => at + run + end + run,
                None => at + run,
            };
            continue;
        }
        if bytes[at..].starts_with(b"](") {
            let rest = &line[at + 2..];
            if let Some(end) = rest.find(')') {
                let inside = rest[..end].trim();
                let target = inside.split_whitespace().next().unwrap_or_default();
                let target = target.trim_start_matches('<').trim_end_matches('>');
                targets.push(target.to_owned());
                at += 2 + end + 1;
                continue;
            }
        }
        at += 1;
    }
    targets
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_become_github_anchors_and_a_repeated_one_is_numbered() {
        let document = Document::parse(
            "# Title\n## Upgrading: the dead-letter queue's delivery limit\n### `ready` and *Co.*\n\
             ## Notes\n## Notes\n#NoSpace\n<a id=\"payments\"></a>\n",
        );

        let anchors: Vec<&str> = document.anchors.iter().map(String::as_str).collect();
        assert_eq!(
            anchors,
            [
                "notes",
                "notes-1",
                "payments",
                "ready-and-co",
                "title",
                "upgrading-the-dead-letter-queues-delivery-limit"
            ]
        );
    }

    #[test]
    fn code_blocks_and_code_spans_hold_no_headings_and_no_links() {
        let document = Document::parse(
            "```yaml\n# /etc/grafana/x.yml\n[a](in-block.md)\n```\n\
             see `[b](in-span.md)` and [c](real.md#part \"title\") and ``[d](x.md)``\n\
             ~~~\n```\n[e](still-in-block.md)\n~~~\n[f](<spaced.md>)\n",
        );

        assert!(document.anchors.is_empty(), "{:?}", document.anchors);
        assert_eq!(
            document.links,
            [
                Link {
                    line: 5,
                    target: "real.md#part".into()
                },
                Link {
                    line: 10,
                    target: "spaced.md".into()
                }
            ]
        );
    }
}
