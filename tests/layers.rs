//! The shape of `src/` as docs/architecture.md draws it, read from the source: no module imports
//! a sibling that imports it back (directly, at any level: `amqp::inbox` and `amqp::headers`,
//! `app` and `store`), `domain` imports nothing else of the crate, and the components of `amqp/`
//! (the inbox, the parking, the relay) never import one another. The bench (`bench/src/`) has
//! no import circle of any length. Only `crate::`, `super::` and `self::` paths (and the first
//! level of a `crate::{a, b}` group) outside `#[cfg(test)]` code count: a unit test may reach
//! anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Module = Vec<String>;

/// The service's crate root.
const SERVICE: &str = "src";

/// Every module of the crate whose root is in `root` (`src`, `bench/src`): its path from the crate
/// root, and its source without tests.
fn modules(root: &str) -> BTreeMap<Module, String> {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(root);
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut modules = BTreeMap::new();
    for file in files {
        let relative = file.strip_prefix(&src).expect("under the root");
        let mut path: Module = relative
            .with_extension("")
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if path.last().is_some_and(|last| last == "mod") {
            path.pop();
        }
        if path == ["lib"] || path == ["main"] {
            continue;
        }
        let text = std::fs::read_to_string(&file).expect("readable");
        let code = text
            .split("#[cfg(test)]")
            .next()
            .unwrap_or_default()
            .to_owned();
        modules.insert(path, code);
    }
    modules
}

fn rust_files(folder: &Path, into: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(folder).expect("a folder") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            rust_files(&path, into);
        } else if path.extension().is_some_and(|e| e == "rs") {
            into.push(path);
        }
    }
}

/// The paths `code` names from the crate (`crate::a::b`, `super::c`, `self::d`), as written; a
/// group (`crate::{a, b::c}`) names one path per item, read to its first nested group.
fn named_paths(code: &str) -> Vec<Vec<&str>> {
    let mut paths = Vec::new();
    for (start, _) in code.match_indices(['c', 's']) {
        let rest = &code[start..];
        let before = code[..start].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        if !["crate::", "super::", "self::"]
            .iter()
            .any(|p| rest.starts_with(p))
        {
            continue;
        }
        let written = path_text(rest);
        let path = parts(written);
        match rest[written.len()..].strip_prefix('{') {
            Some(group) if written.ends_with("::") => {
                for item in group_items(group) {
                    paths.push([path.clone(), parts(path_text(item.trim_start()))].concat());
                }
            }
            _ => paths.push(path),
        }
    }
    paths
}

/// The path at the start of `text`: names and `::`.
fn path_text(text: &str) -> &str {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
        .next()
        .unwrap_or_default()
}

fn parts(path: &str) -> Vec<&str> {
    path.split("::").filter(|part| !part.is_empty()).collect()
}

/// The items of a group whose `{` is just before `group`, split at its own commas.
fn group_items(group: &str) -> Vec<&str> {
    let (mut items, mut depth, mut from) = (Vec::new(), 0, 0);
    for (at, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                items.push(&group[from..at]);
                return items;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&group[from..at]);
                from = at + 1;
            }
            _ => {}
        }
    }
    items
}

/// The module `path`, named from `module`, is (or is inside): the longest known prefix.
fn target(module: &Module, path: &[&str], known: &BTreeMap<Module, String>) -> Option<Module> {
    let (mut resolved, rest): (Module, &[&str]) = match path.first() {
        Some(&"crate") => (Vec::new(), &path[1..]),
        Some(&"self") => (module.clone(), &path[1..]),
        Some(&"super") => {
            let mut base = module.clone();
            let mut rest = path;
            while rest.first() == Some(&"super") {
                base.pop();
                rest = &rest[1..];
            }
            (base, rest)
        }
        _ => return None,
    };
    resolved.extend(
        rest.iter()
            .filter(|part| part.chars().next().is_some_and(|c| c.is_lowercase()))
            .map(|part| (*part).to_owned()),
    );
    while !resolved.is_empty() && !known.contains_key(&resolved) {
        resolved.pop();
    }
    (!resolved.is_empty()).then_some(resolved)
}

/// Sibling edges of the crate in `root`: `a → b` when something in `a` (or below it) names
/// something in its sibling `b` (or below it), at the level where their paths part.
fn sibling_edges(root: &str) -> BTreeSet<(Module, Module)> {
    let known = modules(root);
    let mut edges = BTreeSet::new();
    for (module, code) in &known {
        for path in named_paths(code) {
            let Some(to) = target(module, &path, &known) else {
                continue;
            };
            let common = module.iter().zip(&to).take_while(|(a, b)| a == b).count();
            if common < module.len() && common < to.len() {
                edges.insert((module[..=common].to_vec(), to[..=common].to_vec()));
            }
        }
    }
    edges
}

fn shown(module: &Module) -> String {
    module.join("::")
}

#[test]
fn no_module_imports_a_sibling_that_imports_it_back() {
    let edges = sibling_edges(SERVICE);
    assert!(
        edges.len() > 50,
        "only {} edges: is the reader broken?",
        edges.len()
    );
    let circles: Vec<String> = edges
        .iter()
        .filter(|(a, b)| a < b && edges.contains(&(b.clone(), a.clone())))
        .map(|(a, b)| format!("{} <-> {}", shown(a), shown(b)))
        .collect();
    assert!(
        circles.is_empty(),
        "import circles:\n{}",
        circles.join("\n")
    );
}

#[test]
fn the_domain_imports_nothing_else_of_the_crate() {
    let outward: Vec<String> = sibling_edges(SERVICE)
        .into_iter()
        .filter(|(from, _)| from == &["domain"])
        .map(|(_, to)| shown(&to))
        .collect();
    assert!(outward.is_empty(), "domain imports {outward:?}");
}

#[test]
fn the_amqp_components_never_import_one_another() {
    let components = ["inbox", "parking", "relay"].map(|c| vec!["amqp".to_owned(), c.to_owned()]);
    let crossing: Vec<String> = sibling_edges(SERVICE)
        .into_iter()
        .filter(|(from, to)| components.contains(from) && components.contains(to))
        .map(|(from, to)| format!("{} -> {}", shown(&from), shown(&to)))
        .collect();
    assert!(crossing.is_empty(), "{crossing:?}");
}

/// In the bench, what formats a report must never lead back to what measures it. Modules that
/// import nothing left, or that nothing left imports, are taken away until none is: what stays
/// is on a circle, or between two.
#[test]
fn the_bench_has_no_import_circle() {
    let edges = sibling_edges("bench/src");
    assert!(
        edges.len() > 50,
        "only {} edges: is the reader broken?",
        edges.len()
    );
    let mut left: BTreeSet<&Module> = edges.iter().flat_map(|(a, b)| [a, b]).collect();
    while let Some(free) = left
        .iter()
        .find(|m| {
            let imports = edges.iter().any(|(a, b)| a == **m && left.contains(b));
            let imported = edges.iter().any(|(a, b)| b == **m && left.contains(a));
            !imports || !imported
        })
        .copied()
    {
        left.remove(free);
    }
    let circled: Vec<String> = left.into_iter().map(shown).collect();
    assert!(
        circled.is_empty(),
        "bench modules on or between import circles: {circled:?}"
    );
}

#[test]
fn the_reader_resolves_crate_super_and_self_paths() {
    let known: BTreeMap<Module, String> = [
        (vec!["a".to_owned()], "use crate::b::X;".to_owned()),
        (vec!["b".to_owned()], "use super::a::{self, Y};".to_owned()),
    ]
    .into_iter()
    .collect();
    let a = vec!["a".to_owned()];
    let b = vec!["b".to_owned()];
    let from_a = named_paths(&known[&a]);
    let from_b = named_paths(&known[&b]);
    assert_eq!(target(&a, &from_a[0], &known), Some(b.clone()));
    assert_eq!(target(&b, &from_b[0], &known), Some(a));
    assert!(named_paths("let success::x = abcrate::y;").is_empty());
    assert_eq!(
        named_paths("use crate::{a::{self, X}, b, C};"),
        [vec!["crate", "a"], vec!["crate", "b"], vec!["crate", "C"]]
    );
}
