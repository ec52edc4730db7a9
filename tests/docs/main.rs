//! The docs cannot rot: every relative link of the Markdown documents (the README,
//! `bench/README.md` and everything under `docs/`) reaches a file, and its anchor a heading of
//! that file; every alert's `runbook_url` reaches a section of the runbook; every document and
//! section the code, the migrations and the configuration files cite exists; the file map of
//! docs/architecture.md names every file under `src/` and nothing else; and the README stays a
//! landing page. Files only: no database, no broker.

mod citations;
mod file_map;
mod markdown;

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use markdown::{Document, slug};

/// The README is a landing page; the manual lives under `docs/`.
const README_MAX_LINES: usize = 200;

/// Where the checked text lives. `assets/asyncapi/` (a vendored bundle), `vendor/` (patched
/// crates, as upstream wrote them) and generated or installed folders are left out.
const CITING: &[&str] = &[
    "src",
    "tests",
    "testkit",
    "bench/src",
    "bench/tests",
    "bench/examples",
    "bench/Cargo.toml",
    "bench/results/.gitignore",
    "deploy",
    "migrations",
    "openapi",
    "assets/events",
    ".ci",
    "Cargo.toml",
    ".cargo/config.toml",
    "Dockerfile",
    "docker-compose.yml",
];

/// This test's own folder: its unit tests hold made-up citations.
const OWN: &str = "tests/docs";

/// The applied migrations cannot change (sqlx keeps their checksums), so theirs may still name a
/// section the README used to hold, if `docs/README.md` says where it went.
const FROZEN: &str = "migrations";

fn repository() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A path from the repository's root, for messages.
fn shown(path: &Path) -> String {
    path.strip_prefix(repository())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// `base` joined with a relative `target`, `..` and `.` resolved without touching the disk.
fn resolve(base: &Path, target: &str) -> PathBuf {
    let mut path = base.to_path_buf();
    for component in Path::new(target).components() {
        match component {
            Component::ParentDir => {
                path.pop();
            }
            Component::CurDir => {}
            other => path.push(other),
        }
    }
    path
}

fn files_under(path: &Path, extension: Option<&str>, into: &mut Vec<PathBuf>) {
    if path.is_file() {
        if extension.is_none_or(|e| path.extension().is_some_and(|x| x == e)) {
            into.push(path.to_path_buf());
        }
        return;
    }
    let Ok(entries) = std::fs::read_dir(path) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for entry in entries {
        let name = entry.file_name().unwrap_or_default();
        if name == "node_modules" || name == "target" {
            continue;
        }
        files_under(&entry, extension, into);
    }
}

/// The Markdown documents: the README, the bench's, and every one under `docs/`.
fn documents() -> Vec<PathBuf> {
    let root = repository();
    let mut files = vec![root.join("README.md"), root.join("bench/README.md")];
    files_under(&root.join("docs"), Some("md"), &mut files);
    files
}

/// Parsed Markdown files, each read once.
#[derive(Default)]
struct Library(BTreeMap<PathBuf, Document>);

impl Library {
    fn get(&mut self, path: &Path) -> &Document {
        self.0
            .entry(path.to_path_buf())
            .or_insert_with(|| Document::parse(&read(path)))
    }

    /// What is wrong with a reference to `target` (a path, maybe with `#anchor`) resolved
    /// against `base`, a directory; `current` is the file a bare `#anchor` is in.
    fn problem(&mut self, base: &Path, current: &Path, target: &str) -> Option<String> {
        let (path, anchor) = match target.split_once('#') {
            Some((path, anchor)) => (path, Some(anchor)),
            None => (target, None),
        };
        let file = if path.is_empty() {
            current.to_path_buf()
        } else {
            resolve(base, path)
        };
        if !file.exists() {
            return Some(format!("{} does not exist", shown(&file)));
        }
        let anchor = anchor.filter(|a| !a.is_empty())?;
        if file.extension().is_none_or(|e| e != "md") {
            return Some(format!("#{anchor}: {} is not Markdown", shown(&file)));
        }
        if self.get(&file).anchors.contains(anchor) {
            None
        } else {
            Some(format!("{} has no heading #{anchor}", shown(&file)))
        }
    }
}

fn is_external(target: &str) -> bool {
    target.contains("://") || target.starts_with("mailto:")
}

#[test]
fn every_relative_link_in_the_docs_reaches_a_file_and_its_anchor_a_heading() {
    let mut library = Library::default();
    let mut problems = Vec::new();
    let mut checked = 0;
    for file in documents() {
        let links: Vec<(usize, String)> = library
            .get(&file)
            .links
            .iter()
            .map(|link| (link.line, link.target.clone()))
            .collect();
        let base = file.parent().expect("a file has a folder").to_path_buf();
        for (line, target) in links {
            if is_external(&target) {
                continue;
            }
            checked += 1;
            if let Some(problem) = library.problem(&base, &file, &target) {
                problems.push(format!("{}:{line}: ({target}) {problem}", shown(&file)));
            }
        }
    }
    assert!(
        checked > 100,
        "only {checked} links found: is the reader broken?"
    );
    assert!(
        problems.is_empty(),
        "broken links:\n{}",
        problems.join("\n")
    );
}

#[test]
fn every_runbook_url_reaches_a_section_of_a_document() {
    let root = repository();
    let mut library = Library::default();
    let mut problems = Vec::new();
    let mut checked = 0;
    for rules in [
        "deploy/prometheus/alerts.yml",
        "deploy/prometheus/alerts.test.yml",
    ] {
        let path = root.join(rules);
        for (index, line) in read(&path).lines().enumerate() {
            let Some((_, url)) = line.split_once("runbook_url:") else {
                continue;
            };
            let url = url.trim().trim_matches(['"', '\'']);
            checked += 1;
            if !url.contains('#') {
                problems.push(format!("{rules}:{}: {url} names no section", index + 1));
            } else if let Some(problem) = library.problem(&root, &path, url) {
                problems.push(format!("{rules}:{}: {url}: {problem}", index + 1));
            }
        }
    }
    assert!(checked >= 8, "only {checked} runbook_url lines found");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The README sections `docs/README.md` says where they went, by name.
fn former_readme_sections() -> Vec<String> {
    let index = read(&repository().join("docs/README.md"));
    let table = index
        .split_once("## Where the README's sections went")
        .map(|(_, rest)| rest)
        .unwrap_or_default();
    table
        .lines()
        .filter_map(|line| line.strip_prefix("| "))
        .filter_map(|row| row.split(" | ").next())
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_document_and_section_the_code_cites_exists() {
    let root = repository();
    let mut files = Vec::new();
    for place in CITING {
        files_under(&root.join(place), None, &mut files);
    }
    let former = former_readme_sections();
    assert!(
        !former.is_empty(),
        "docs/README.md lists no former README sections"
    );

    let mut library = Library::default();
    let mut problems = Vec::new();
    let mut checked = 0;
    for file in files {
        if file.starts_with(root.join(OWN)) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue; // not text
        };
        let frozen = file.starts_with(root.join(FROZEN));
        for citation in citations::citations(&text) {
            checked += 1;
            let target = resolve(&root, &citation.path);
            let problem = if !target.exists() {
                Some(format!("{} does not exist", citation.path))
            } else if let Some(anchor) = &citation.anchor {
                library.problem(&root, &target, &format!("#{anchor}"))
            } else if let Some(section) = &citation.section {
                let headed = library.get(&target).anchors.contains(&slug(section));
                let moved = frozen
                    && citation.path == "README.md"
                    && former.iter().any(|row| row.contains(section.as_str()));
                (!headed && !moved)
                    .then(|| format!("{} has no section \"{section}\"", citation.path))
            } else {
                None
            };
            if let Some(problem) = problem {
                problems.push(format!("{}: {problem}", shown(&file)));
            }
        }
    }
    assert!(
        checked > 100,
        "only {checked} citations found: is the reader broken?"
    );
    assert!(
        problems.is_empty(),
        "citations that do not resolve:\n{}",
        problems.join("\n")
    );
}

/// The folders a file the docs name may be under: the repository's, and the service's modules
/// (`amqp/inbox/`, named from `src/`).
const NAMED_FROM: &[&str] = &["", "src"];

/// Code spans that look like paths under a folder of ours but are not: OTLP protocol names.
const NOT_PATHS: &[&str] = &["http/protobuf", "http/json"];

/// Folders a build or CI makes, which a fresh clone does not have yet.
const MADE_BY_BUILDS: &[&str] = &["target", "node_modules"];

/// A code span that names a file or folder of the repository: a path with a `/`, nothing that
/// is a pattern, a command or a URL, and a first part that is a folder here (as written or under
/// `src/`). Its `:line` or `#anchor` suffix is dropped.
fn named_path(span: &str) -> Option<&str> {
    let path = span.split([':', '#']).next()?;
    let plain = path
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "_-./".contains(c));
    if !plain
        || !path.contains('/')
        || path.starts_with('/')
        || path.contains("//")
        || NOT_PATHS.contains(&path)
    {
        return None;
    }
    let first = path.split('/').next()?;
    if MADE_BY_BUILDS.contains(&first) {
        return None;
    }
    let root = repository();
    NAMED_FROM
        .iter()
        .any(|base| !first.is_empty() && root.join(base).join(first).is_dir())
        .then_some(path)
}

#[test]
fn every_file_and_folder_the_docs_name_exists() {
    let root = repository();
    let mut library = Library::default();
    let mut problems = Vec::new();
    let mut checked = 0;
    for file in documents() {
        let spans: Vec<(usize, String)> = library
            .get(&file)
            .code_spans
            .iter()
            .map(|span| (span.line, span.target.clone()))
            .collect();
        for (line, span) in spans {
            let Some(path) = named_path(&span) else {
                continue;
            };
            checked += 1;
            let found = NAMED_FROM
                .iter()
                .any(|base| root.join(base).join(path).exists());
            if !found {
                problems.push(format!("{}:{line}: `{span}` names nothing", shown(&file)));
            }
        }
    }
    assert!(
        checked > 50,
        "only {checked} paths found: is the reader broken?"
    );
    assert!(
        problems.is_empty(),
        "paths the docs name that do not exist:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_file_map_names_every_file_under_src_once_and_nothing_else() {
    let root = repository();
    let src = root.join("src");
    let mut paths = Vec::new();
    files_under(&src, None, &mut paths);
    let files: Vec<String> = paths
        .iter()
        .filter_map(|path| path.strip_prefix(&src).ok())
        .map(|path| path.to_string_lossy().replace('\\', "/"))
        .collect();
    let named = file_map::named(&read(&root.join("docs/architecture.md")));
    assert!(
        named.len() > 100,
        "only {} files in docs/architecture.md \"{}\": is the reader broken?",
        named.len(),
        &file_map::HEADING[3..]
    );
    let problems = file_map::problems(&named, &files);
    assert!(
        problems.is_empty(),
        "docs/architecture.md \"File map\" and src/ disagree:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_readme_is_a_landing_page_of_at_most_200_lines() {
    let lines = read(&repository().join("README.md")).lines().count();
    assert!(
        lines <= README_MAX_LINES,
        "README.md has {lines} lines: move what is not a first step into docs/"
    );
}
