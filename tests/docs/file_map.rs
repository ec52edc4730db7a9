//! The file map of docs/architecture.md ("File map") against the tree: every file under `src/` is
//! named once, by its path under `src/`, one line each, sorted by path (so that two branches that
//! add files merge line by line); a named file that does not exist, or a file the map does not
//! name, fails the test with the line to add or remove.

use std::collections::BTreeMap;

/// The heading of the map in docs/architecture.md.
pub const HEADING: &str = "## File map";

/// The paths the map names, in its order: the first code span of each list item (`- `) under
/// [`HEADING`], up to the next section of the same level.
pub fn named(architecture: &str) -> Vec<String> {
    let Some((_, after)) = architecture.split_once(&format!("\n{HEADING}\n")) else {
        return vec![];
    };
    after
        .lines()
        .take_while(|line| !line.starts_with("## "))
        .filter_map(|line| line.strip_prefix("- `"))
        .filter_map(|rest| rest.split_once('`'))
        .map(|(path, _)| path.to_owned())
        .collect()
}

/// What is wrong with a map naming `named` (in its order) for a tree holding `files` (paths under
/// `src/`): one line per problem, empty when the two agree.
pub fn problems(named: &[String], files: &[String]) -> Vec<String> {
    let mut problems = Vec::new();
    let mut times: BTreeMap<&str, usize> = BTreeMap::new();
    for path in named {
        *times.entry(path.as_str()).or_default() += 1;
    }
    for (path, count) in &times {
        if *count > 1 {
            problems.push(format!("`{path}` is named {count} times"));
        }
        if !files.iter().any(|file| file == path) {
            problems.push(format!(
                "`{path}` is named but src/{path} does not exist: remove or rename its line"
            ));
        }
    }
    for file in files {
        if !times.contains_key(file.as_str()) {
            problems.push(format!(
                "src/{file} is not in the map: add a line \"- `{file}`: what it holds\""
            ));
        }
    }
    for pair in named.windows(2) {
        if pair[0] > pair[1] {
            problems.push(format!(
                "`{}` comes after `{}`: keep the lines sorted by path",
                pair[1], pair[0]
            ));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    const ARCHITECTURE: &str = "# Architecture\n\n## File map\n\nIntro with `app/x.rs` in it.\n\n\
        - `app/runner.rs`: the runner\n- `store/mod.rs`: all SQL, see `store/orders.rs`\n\n\
        ### Not a new section\n\n- `store/orders.rs`: orders\n\n## Next\n\n- `http/mod.rs`: later\n";

    #[test]
    fn the_map_is_the_first_code_span_of_each_item_of_its_section() {
        assert_eq!(
            named(ARCHITECTURE),
            strings(&["app/runner.rs", "store/mod.rs", "store/orders.rs"])
        );
        assert!(named("# Architecture\n\n## Layers\n\n- `app/mod.rs`: app\n").is_empty());
    }

    #[test]
    fn a_map_that_names_every_file_once_in_order_has_no_problems() {
        let files = strings(&["app/runner.rs", "store/mod.rs", "store/orders.rs"]);
        assert!(problems(&named(ARCHITECTURE), &files).is_empty());
    }

    #[test]
    fn a_missing_file_a_vanished_one_a_repeated_one_and_disorder_are_each_named() {
        let files = strings(&["app/new.rs", "app/runner.rs", "store/orders.rs"]);
        let map = strings(&[
            "app/runner.rs",
            "store/orders.rs",
            "store/gone.rs",
            "store/orders.rs",
        ]);
        let found = problems(&map, &files);
        for expected in [
            "src/app/new.rs is not in the map",
            "`store/gone.rs` is named but src/store/gone.rs does not exist",
            "`store/orders.rs` is named 2 times",
            "`store/gone.rs` comes after `store/orders.rs`",
        ] {
            assert!(
                found.iter().any(|problem| problem.starts_with(expected)),
                "{expected} not in {found:#?}"
            );
        }
        assert_eq!(found.len(), 4, "{found:#?}");
    }
}
