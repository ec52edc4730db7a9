//! What the docs test needs of a Markdown file, as pulldown-cmark (a CommonMark parser) reads it:
//! its headings and the anchors GitHub gives them (and explicit `<a id="…">` ones), its links and
//! images, and its code spans. Code blocks hold neither headings nor links, as CommonMark says.

use std::collections::{BTreeMap, BTreeSet};

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

/// One link, or one code span: the line it starts on (from 1) and its target or text as written.
#[derive(Debug, PartialEq, Eq)]
pub struct Link {
    pub line: usize,
    pub target: String,
}

#[derive(Debug, Default)]
pub struct Document {
    pub anchors: BTreeSet<String>,
    /// Links and images, inline or by reference, with their destination.
    pub links: Vec<Link>,
    /// Inline code spans, with their line: where the docs name files.
    pub code_spans: Vec<Link>,
}

/// What GitHub renders beyond CommonMark that can hold a link or a code span.
const GITHUB: Options = Options::ENABLE_TABLES
    .union(Options::ENABLE_STRIKETHROUGH)
    .union(Options::ENABLE_TASKLISTS)
    .union(Options::ENABLE_FOOTNOTES);

impl Document {
    pub fn parse(markdown: &str) -> Self {
        let line_of = |offset: usize| markdown[..offset].matches('\n').count() + 1;
        let mut document = Self::default();
        let mut seen: BTreeMap<String, usize> = BTreeMap::new();
        // The text of the heading being read, if one is.
        let mut heading: Option<String> = None;
        for (event, range) in Parser::new_ext(markdown, GITHUB).into_offset_iter() {
            match event {
                Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
                Event::End(TagEnd::Heading(_)) => {
                    let slug = slug(&heading.take().unwrap_or_default());
                    let count = seen.entry(slug.clone()).or_insert(0);
                    document.anchors.insert(if *count == 0 {
                        slug
                    } else {
                        format!("{slug}-{count}")
                    });
                    *count += 1;
                }
                Event::Text(text) => {
                    if let Some(heading) = &mut heading {
                        heading.push_str(&text);
                    }
                }
                Event::Code(code) => {
                    if let Some(heading) = &mut heading {
                        heading.push_str(&code);
                    }
                    document.code_spans.push(Link {
                        line: line_of(range.start),
                        target: code.into_string(),
                    });
                }
                Event::Html(html) | Event::InlineHtml(html) => {
                    document.anchors.extend(html_anchors(&html));
                }
                Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => {
                    document.links.push(Link {
                        line: line_of(range.start),
                        target: dest_url.into_string(),
                    });
                }
                _ => {}
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

/// `<a id="…">` and `<a name="…">` anchors in a piece of HTML.
fn html_anchors(html: &str) -> Vec<String> {
    let mut anchors = Vec::new();
    for attribute in ["id=\"", "name=\""] {
        for (at, _) in html.match_indices(&format!("<a {attribute}")) {
            let value = &html[at + 3 + attribute.len()..];
            if let Some((anchor, _)) = value.split_once('"') {
                anchors.push(anchor.to_owned());
            }
        }
    }
    anchors
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_become_github_anchors_and_a_repeated_one_is_numbered() {
        let document = Document::parse(
            "# Title\n## Upgrading: the dead-letter queue's delivery limit\n### `ready` and *Co.*\n\
             ## Notes\n## Notes\n#NoSpace\n<a id=\"payments\"></a>\n\nSetext [heading](x.md)\n---\n",
        );

        let anchors: Vec<&str> = document.anchors.iter().map(String::as_str).collect();
        assert_eq!(
            anchors,
            [
                "notes",
                "notes-1",
                "payments",
                "ready-and-co",
                "setext-heading",
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
             ~~~\n```\n[e](still-in-block.md)\n~~~\n[f](<spaced.md>)\n\n    [g](indented.md)\n",
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
        let spans: Vec<&str> = document
            .code_spans
            .iter()
            .map(|s| s.target.as_str())
            .collect();
        assert_eq!(spans, ["[b](in-span.md)", "[d](x.md)"]);
    }

    #[test]
    fn reference_links_images_and_links_in_tables_are_read() {
        let document = Document::parse(
            "| a | b |\n|---|---|\n| [t](table.md) | `src/x.rs` |\n\n\
             ![chart](chart.svg) and [ref][r]\n\n[r]: reference.md#part\n",
        );
        let targets: Vec<(usize, &str)> = document
            .links
            .iter()
            .map(|l| (l.line, l.target.as_str()))
            .collect();
        assert_eq!(
            targets,
            [(3, "table.md"), (5, "chart.svg"), (5, "reference.md#part")]
        );
        assert_eq!(document.code_spans[0].line, 3);
    }
}
