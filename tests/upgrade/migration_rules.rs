//! The migration rule (docs/operations/upgrading.md "Migrations both releases survive"), checked
//! on every migration file from the first that declares its compatibility on: nothing the
//! previous release reads or writes is dropped, renamed or retyped; a new column is nullable or
//! defaulted; a constraint is added `NOT VALID`; an index on an existing table is built
//! `CONCURRENTLY` (in a `-- no-transaction` file); and the file declares itself in
//! `schema_compatibility`. A statement is read as text, not parsed: the rule errs towards
//! refusing, and a refused migration that is safe says why in a `-- contract:` line (a drop of
//! what no release since the one it names reads, once that release is the previous one or older).

use std::path::Path;

/// The first migration that declares its compatibility: the rule holds from here on.
const FIRST_DECLARED: i64 = 20261126000001;

#[test]
fn every_migration_keeps_the_previous_release_working() {
    let previous = previous_release_version();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations");
    let mut checked = 0;
    let mut found = vec![];
    for entry in std::fs::read_dir(&dir).expect("migrations/") {
        let path = entry.expect("a migration").path();
        let name = path
            .file_name()
            .expect("a name")
            .to_string_lossy()
            .into_owned();
        let version: i64 = name
            .split('_')
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{name}: no version"));
        if version < FIRST_DECLARED {
            continue;
        }
        checked += 1;
        let sql = std::fs::read_to_string(&path).expect("read a migration");
        found.extend(
            problems(version, &sql, &previous)
                .into_iter()
                .map(|problem| format!("{name}: {problem}")),
        );
    }
    assert!(checked > 0, "no migration from {FIRST_DECLARED} on");
    assert!(found.is_empty(), "{found:#?}");
}

#[test]
fn the_rule_refuses_a_drop_a_rename_a_retype_and_a_blocking_change() {
    let previous = "0.2.0".to_owned();
    let refused = [
        "ALTER TABLE orders DROP COLUMN customer_id;",
        "DROP TABLE outbox_set_aside;",
        "ALTER TABLE orders RENAME COLUMN customer_id TO customer;",
        "ALTER TABLE orders RENAME TO purchases;",
        "ALTER TABLE orders ALTER COLUMN amount_minor TYPE numeric;",
        "ALTER TABLE orders ALTER COLUMN customer_id SET NOT NULL;",
        "ALTER TABLE orders ADD COLUMN channel text NOT NULL;",
        "ALTER TABLE orders ADD CONSTRAINT positive CHECK (amount_minor > 0);",
        "CREATE INDEX orders_currency_idx ON orders (currency);",
        "-- contract: unused since 0.3.0\nALTER TABLE orders DROP COLUMN customer_id;",
    ];
    for change in refused {
        let sql = format!("{change}\n{}", declaration(20991231000000));
        assert!(
            !problems(20991231000000, &sql, &previous).is_empty(),
            "accepted: {change}"
        );
    }
    let undeclared = "ALTER TABLE orders ADD COLUMN channel text;";
    assert!(!problems(20991231000000, undeclared, &previous).is_empty());
    let concurrently_in_a_transaction =
        "CREATE INDEX CONCURRENTLY orders_currency_idx ON orders (currency);";
    let sql = format!(
        "{concurrently_in_a_transaction}\n{}",
        declaration(20991231000000)
    );
    assert!(!problems(20991231000000, &sql, &previous).is_empty());
}

#[test]
fn the_rule_accepts_expand_steps_and_a_contract_step_past_the_previous_release() {
    let previous = "0.2.0".to_owned();
    let accepted = [
        "ALTER TABLE orders ADD COLUMN channel text;",
        "ALTER TABLE orders ADD COLUMN channel text NOT NULL DEFAULT 'web';",
        "ALTER TABLE orders ADD CONSTRAINT positive CHECK (amount_minor > 0) NOT VALID;",
        "ALTER TABLE orders VALIDATE CONSTRAINT positive;",
        "CREATE TABLE notes (id bigint PRIMARY KEY, body text);\nCREATE INDEX notes_body_idx ON notes (body);",
        "-- contract: unused since 0.2.0\nALTER TABLE orders DROP COLUMN legacy;",
    ];
    for change in accepted {
        let sql = format!("{change}\n{}", declaration(20991231000000));
        assert_eq!(
            problems(20991231000000, &sql, &previous),
            Vec::<String>::new(),
            "{change}"
        );
    }
    let concurrently = format!(
        "-- no-transaction\nCREATE INDEX CONCURRENTLY orders_currency_idx ON orders (currency);\n{}",
        declaration(20991231000000)
    );
    assert_eq!(
        problems(20991231000000, &concurrently, &previous),
        Vec::<String>::new()
    );
}

fn declaration(version: i64) -> String {
    format!(
        "INSERT INTO schema_compatibility (migration, oldest_compatible) VALUES ({version}, 20261126000001);"
    )
}

/// What in migration `version` (its text `sql`) could break the previous release (`previous`,
/// its version) while both run, or after a rollback to it.
fn problems(version: i64, sql: &str, previous: &str) -> Vec<String> {
    let mut found = vec![];
    let no_transaction = sql.trim_start().starts_with("-- no-transaction");
    let contract_since = sql
        .lines()
        .filter_map(|line| line.trim().strip_prefix("-- contract: unused since "))
        .map(|since| since.trim().to_owned())
        .next();
    let statements = statements(sql);
    let created: Vec<String> = statements
        .iter()
        .filter_map(|s| s.strip_prefix("CREATE TABLE "))
        .map(|rest| table_name(rest.trim_start_matches("IF NOT EXISTS ")))
        .collect();
    for statement in &statements {
        let has = |words: &str| statement.contains(words);
        if statement.starts_with("DROP ") || has(" DROP COLUMN ") || has(" DROP CONSTRAINT ") {
            match &contract_since {
                Some(since) if version_le(since, previous) => {}
                Some(since) => found.push(format!(
                    "drops what release {since} may read, and the previous release is \
                     {previous}: `{statement}`"
                )),
                None => found.push(format!(
                    "drops what the previous release may read (a contract step says \
                     `-- contract: unused since <release>`): `{statement}`"
                )),
            }
        }
        if has(" RENAME ") {
            found.push(format!(
                "renames what the previous release reads (add the new, copy, drop the old \
                 later): `{statement}`"
            ));
        }
        if has(" TYPE ") && has("ALTER COLUMN ") {
            found.push(format!("changes a column's type: `{statement}`"));
        }
        if has(" SET NOT NULL") {
            found.push(format!(
                "makes a column required that the previous release may leave empty: `{statement}`"
            ));
        }
        if has(" ADD COLUMN ") && has(" NOT NULL") && !has(" DEFAULT ") {
            found.push(format!(
                "adds a required column without a default, which the previous release's \
                 inserts do not fill: `{statement}`"
            ));
        }
        if (has(" ADD CONSTRAINT ") || has(" ADD CHECK ") || has(" ADD FOREIGN KEY "))
            && !has(" NOT VALID")
            && !has(" USING INDEX ")
        {
            found.push(format!(
                "adds a constraint that scans and locks the table: add it NOT VALID, then \
                 VALIDATE CONSTRAINT: `{statement}`"
            ));
        }
        if let Some(table) = index_table(statement) {
            let concurrently = has(" INDEX CONCURRENTLY ");
            if !concurrently && !created.contains(&table) {
                found.push(format!(
                    "builds an index on the existing table {table} under a lock that stops \
                     writes: use CREATE INDEX CONCURRENTLY: `{statement}`"
                ));
            }
            if concurrently && !no_transaction {
                found.push(format!(
                    "CREATE INDEX CONCURRENTLY cannot run in a transaction: start the file with \
                     `-- no-transaction`: `{statement}`"
                ));
            }
        }
    }
    let declares_itself = statements.iter().any(|s| {
        s.starts_with("INSERT INTO SCHEMA_COMPATIBILITY") && s.contains(&version.to_string())
    });
    if !declares_itself {
        found.push(format!(
            "does not declare itself in schema_compatibility (INSERT INTO schema_compatibility \
             (migration, oldest_compatible) VALUES ({version}, <the oldest migration a release \
             must know>))"
        ));
    }
    found
}

/// The statements of `sql`, comments removed, upper-cased, whitespace collapsed (a `$$` body
/// kept whole).
fn statements(sql: &str) -> Vec<String> {
    let without_comments: String = sql
        .lines()
        .map(|line| line.split("--").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join(" ");
    let mut statements = vec![];
    let mut current = String::new();
    let mut in_body = false;
    let mut rest = without_comments.as_str();
    while let Some(c) = rest.chars().next() {
        if rest.starts_with("$$") {
            in_body = !in_body;
            current.push_str("$$");
            rest = &rest[2..];
            continue;
        }
        if c == ';' && !in_body {
            statements.push(std::mem::take(&mut current));
        } else {
            current.push(c);
        }
        rest = &rest[c.len_utf8()..];
    }
    statements.push(current);
    statements
        .into_iter()
        .map(|s| {
            s.split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .to_uppercase()
        })
        .filter(|s| !s.is_empty())
        .collect()
}

/// The table a `CREATE [UNIQUE] INDEX` statement indexes.
fn index_table(statement: &str) -> Option<String> {
    let rest = statement
        .strip_prefix("CREATE UNIQUE INDEX ")
        .or_else(|| statement.strip_prefix("CREATE INDEX "))?;
    let (_, on) = rest.split_once(" ON ")?;
    Some(table_name(on.trim_start_matches("ONLY ")))
}

fn table_name(text: &str) -> String {
    text.split(|c: char| c.is_whitespace() || c == '(')
        .next()
        .unwrap_or("")
        .to_owned()
}

/// `a <= b` for versions `x.y.z`.
fn version_le(a: &str, b: &str) -> bool {
    let parts = |v: &str| -> Vec<u64> { v.split('.').filter_map(|p| p.parse().ok()).collect() };
    parts(a) <= parts(b)
}

/// The version of the release `deploy/previous-release` names.
fn previous_release_version() -> String {
    order_service_testkit::previous_release::recorded().version
}
