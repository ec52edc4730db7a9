//! The documents a comment (or a configuration file, or a string the service prints) cites:
//! `(docs/messaging.md "Batched consumer commits")`, a path from the repository's root and a
//! section of that file; `docs/contract.md#invariant-5`, a path and an anchor; or a path alone.
//! A citation may run over several comment lines, so the text is read with each line's comment
//! marker dropped and the lines joined.

/// One citation: the file, and the section (a heading's text) or the anchor it names, if any.
#[derive(Debug, PartialEq, Eq)]
pub struct Citation {
    pub path: String,
    pub section: Option<String>,
    pub anchor: Option<String>,
}

/// Every citation in a source file's text. A bare `README "…"` (the form used before the
/// README became a landing page) is read as a citation of `README.md`.
pub fn citations(text: &str) -> Vec<Citation> {
    let text = joined(text);
    let mut found = Vec::new();
    for (at, _) in text.match_indices(".md") {
        let start = text[..at]
            .rfind(|c: char| !is_path_char(c))
            .map_or(0, |i| i + 1);
        let path = &text[start..at + 3];
        let after = &text[at + 3..];
        if after.starts_with(|c: char| is_path_char(c)) || !is_repository_path(path) {
            continue;
        }
        let anchor = after.strip_prefix('#').map(|rest| {
            rest.chars()
                .take_while(|&c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
                .collect::<String>()
        });
        found.push(Citation {
            path: path.to_owned(),
            section: quoted_after(after),
            anchor: anchor.filter(|a| !a.is_empty()),
        });
    }
    for (at, _) in text.match_indices("README") {
        let before = text[..at].chars().next_back();
        if before.is_some_and(is_path_char) {
            continue;
        }
        let after = &text[at + "README".len()..];
        let after = after.strip_prefix("'s").unwrap_or(after);
        if let Some(section) = quoted_after(after) {
            found.push(Citation {
                path: "README.md".into(),
                section: Some(section),
                anchor: None,
            });
        }
    }
    found
}

fn is_path_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/')
}

/// A path from the repository's root: `README.md`, or one with a folder. A file name alone
/// (`latest.md`, which the bench writes) or an absolute path is not one.
fn is_repository_path(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or_default();
    name.len() > ".md".len()
        && !path.starts_with(['/', '.'])
        && (path == "README.md" || path.contains('/'))
}

/// The quoted text after a citation's path: ` "Section"`, one or more spaces first.
fn quoted_after(after: &str) -> Option<String> {
    let rest = after.trim_start_matches(' ');
    if rest.len() == after.len() {
        return None;
    }
    let rest = rest.strip_prefix('"')?;
    let (section, _) = rest.split_once('"')?;
    Some(section.trim().to_owned())
}

/// The text with each line's comment marker (`//!`, `///`, `//`, `#`, `--`, `*`) dropped, string
/// escapes a citation may hold inside a string (`\"`, `\n`, a trailing `\`) undone, and the lines
/// joined by single spaces.
fn joined(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let mut line = line.trim();
        for marker in ["//!", "///", "//", "#", "--", "*"] {
            if let Some(rest) = line.strip_prefix(marker) {
                line = rest.trim_start();
                break;
            }
        }
        let line = line.strip_suffix('\\').unwrap_or(line);
        out.push_str(&line.replace("\\\"", "\"").replace("\\n", " "));
        out.push(' ');
    }
    let mut collapsed = String::with_capacity(out.len());
    for word in out.split_whitespace() {
        if !collapsed.is_empty() {
            collapsed.push(' ');
        }
        collapsed.push_str(word);
    }
    collapsed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cited(path: &str, section: Option<&str>, anchor: Option<&str>) -> Citation {
        Citation {
            path: path.into(),
            section: section.map(Into::into),
            anchor: anchor.map(Into::into),
        }
    }

    #[test]
    fn a_citation_over_several_comment_lines_is_read_whole() {
        let rust = "//! Several requests in one transaction (docs/messaging.md \"Batched\n//! consumer commits\"): see docs/contract.md#invariant-5 and (docs/hostile-input.md).\n";

        assert_eq!(
            citations(rust),
            [
                cited("docs/messaging.md", Some("Batched consumer commits"), None),
                cited("docs/contract.md", None, Some("invariant-5")),
                cited("docs/hostile-input.md", None, None),
            ]
        );
    }

    #[test]
    fn citations_inside_strings_sql_and_yaml_comments_are_read() {
        let text = "    \"set aside (docs/messaging.md \\\"Rows the relay sets aside\\\")\",\n\
                    -- (README \"Round trips per\n-- command\")\n\
                    # Alert rules (docs/operations/observability.md \"Operations kit\").\n";

        assert_eq!(
            citations(text),
            [
                cited("docs/messaging.md", Some("Rows the relay sets aside"), None),
                cited(
                    "docs/operations/observability.md",
                    Some("Operations kit"),
                    None
                ),
                cited("README.md", Some("Round trips per command"), None),
            ]
        );
    }

    #[test]
    fn file_names_urls_and_code_are_not_citations() {
        let text = "copies them as `latest.md`; https://example.com/docs/x.md; \
                    read(\"README.md\"); format!(\"docs/operations/runbook.md#{anchor}\")";

        assert_eq!(
            citations(text),
            [
                cited("README.md", None, None),
                cited("docs/operations/runbook.md", None, None)
            ]
        );
    }
}
