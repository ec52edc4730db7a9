//! The migration rule (docs/operations/upgrading.md "Migrations both releases survive"), checked
//! on every migration file from the first that declares its compatibility on: nothing the
//! previous release reads or writes is dropped, renamed or retyped; a new column is nullable or
//! defaulted; a constraint is added `NOT VALID` and validated in a later migration; an index on an
//! existing table is built `CONCURRENTLY`, alone in a `-- no-transaction` file; and each migration
//! is declared in `schema_compatibility` (in its own file, or for a `-- no-transaction` one in the
//! next), with its release, as compatible with the previous release's newest migration unless the
//! file says `-- incompatible: <why>`. A statement is read as text, not parsed: the rule errs
//! towards refusing, and a refused migration that is safe says why in a `-- contract:` line (a drop
//! of what no release since the one it names reads, once that release is the previous one or
//! older).

use std::path::Path;

/// The first migration that declares its compatibility: the rule holds from here on.
const FIRST_DECLARED: i64 = 20261126000001;
/// The first that declares its release too (the column came with it).
const RELEASE_DECLARED_FROM: i64 = 20261126000002;

#[test]
fn every_migration_keeps_the_previous_release_working() {
    let release = order_service_testkit::previous_release::recorded();
    let previous = Previous {
        version: release.version.clone(),
        newest_migration: order_service_testkit::previous_release::newest_migration(&release),
    };
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations");
    let mut files: Vec<(i64, String, String)> = vec![];
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
        if version >= FIRST_DECLARED {
            let sql = std::fs::read_to_string(&path).expect("read a migration");
            files.push((version, name, sql));
        }
    }
    files.sort();
    assert!(!files.is_empty(), "no migration from {FIRST_DECLARED} on");
    let sources: Vec<(i64, &str)> = files.iter().map(|(v, _, sql)| (*v, sql.as_str())).collect();
    let found = problems(&sources, &previous);
    assert!(found.is_empty(), "{found:#?}");
}

#[test]
fn the_rule_refuses_a_drop_a_rename_a_retype_and_a_blocking_change() {
    let refused = [
        "ALTER TABLE orders DROP COLUMN customer_id;",
        "DROP TABLE outbox_set_aside;",
        "ALTER TABLE orders RENAME COLUMN customer_id TO customer;",
        "ALTER TABLE orders RENAME TO purchases;",
        "ALTER TABLE orders ALTER COLUMN amount_minor TYPE numeric;",
        "ALTER TABLE orders ALTER COLUMN customer_id SET NOT NULL;",
        "ALTER TABLE orders ADD COLUMN channel text NOT NULL;",
        "ALTER TABLE orders ADD CONSTRAINT positive CHECK (amount_minor > 0);",
        "ALTER TABLE orders ADD CONSTRAINT positive CHECK (amount_minor > 0) NOT VALID;\n\
         ALTER TABLE orders VALIDATE CONSTRAINT positive;",
        "CREATE INDEX orders_currency_idx ON orders (currency);",
        "-- contract: unused since 0.3.0\nALTER TABLE orders DROP COLUMN customer_id;",
    ];
    for change in refused {
        let sql = format!("{change}\n{}", declaration(NEWER, PREVIOUS_NEWEST));
        assert!(!one(&sql).is_empty(), "accepted: {change}");
    }
    // Undeclared; declared without its release; declared for a release newer than the previous.
    assert!(!one("ALTER TABLE orders ADD COLUMN channel text;").is_empty());
    let without_release = format!(
        "ALTER TABLE orders ADD COLUMN channel text;\n\
         INSERT INTO schema_compatibility (migration, oldest_compatible) VALUES ({NEWER}, {PREVIOUS_NEWEST});"
    );
    assert!(!one(&without_release).is_empty());
    let too_new = format!(
        "ALTER TABLE orders ADD COLUMN channel text;\n{}",
        declaration(NEWER, PREVIOUS_NEWEST + 1)
    );
    assert!(!one(&too_new).is_empty());
    // CONCURRENTLY in a transaction; a `-- no-transaction` file of two statements (Postgres runs
    // them as one implicit transaction); its declaration missing from the next file.
    let in_a_transaction = format!(
        "CREATE INDEX CONCURRENTLY orders_currency_idx ON orders (currency);\n{}",
        declaration(NEWER, PREVIOUS_NEWEST)
    );
    assert!(!one(&in_a_transaction).is_empty());
    let two_statements = format!(
        "-- no-transaction\nCREATE INDEX CONCURRENTLY orders_currency_idx ON orders (currency);\n{}",
        declaration(NEWER, PREVIOUS_NEWEST)
    );
    assert!(!one(&two_statements).is_empty());
    let index =
        "-- no-transaction\nCREATE INDEX CONCURRENTLY orders_currency_idx ON orders (currency);";
    let undeclared_next = format!(
        "ALTER TABLE orders ADD COLUMN channel text;\n{}",
        declaration(NEWER + 1, PREVIOUS_NEWEST)
    );
    assert!(
        !problems(
            &[(NEWER, index), (NEWER + 1, &undeclared_next)],
            &previous()
        )
        .is_empty()
    );
}

#[test]
fn the_rule_accepts_expand_steps_and_a_contract_step_past_the_previous_release() {
    let accepted = [
        "ALTER TABLE orders ADD COLUMN channel text;",
        "ALTER TABLE orders ADD COLUMN channel text NOT NULL DEFAULT 'web';",
        "ALTER TABLE orders ADD CONSTRAINT positive CHECK (amount_minor > 0) NOT VALID;",
        "ALTER TABLE orders VALIDATE CONSTRAINT positive;",
        "CREATE TABLE notes (id bigint PRIMARY KEY, body text);\nCREATE INDEX notes_body_idx ON notes (body);",
        "-- contract: unused since 0.2.0\nALTER TABLE orders DROP COLUMN legacy;",
        "-- incompatible: the contract step of orders.legacy, which 0.2.0 reads\n\
         ALTER TABLE orders DROP COLUMN legacy_two;",
    ];
    for change in accepted {
        let oldest = if change.contains("-- incompatible:") {
            NEWER - 1
        } else {
            PREVIOUS_NEWEST
        };
        let sql = format!("{change}\n{}", declaration(NEWER, oldest));
        if change.contains("legacy_two") {
            // An incompatible one still may not drop without a contract line.
            assert!(!one(&sql).is_empty(), "{change}");
            continue;
        }
        assert_eq!(one(&sql), Vec::<String>::new(), "{change}");
    }
    // An index built concurrently, alone in its file, declared by the next migration.
    let index =
        "-- no-transaction\nCREATE INDEX CONCURRENTLY orders_currency_idx ON orders (currency);";
    let next = format!(
        "ALTER TABLE orders ADD COLUMN channel text;\n\
         INSERT INTO schema_compatibility (migration, oldest_compatible, release) VALUES \
         ({NEWER}, {PREVIOUS_NEWEST}, '0.9.0'), ({}, {PREVIOUS_NEWEST}, '0.9.0');",
        NEWER + 1
    );
    assert_eq!(
        problems(&[(NEWER, index), (NEWER + 1, &next)], &previous()),
        Vec::<String>::new()
    );
}

/// A migration of a release that does not exist yet, and the previous release's newest.
const NEWER: i64 = 20991231000000;
const PREVIOUS_NEWEST: i64 = 20261126000001;

fn previous() -> Previous {
    Previous {
        version: "0.2.0".to_owned(),
        newest_migration: PREVIOUS_NEWEST,
    }
}

/// What the rule finds in migration [`NEWER`] alone.
fn one(sql: &str) -> Vec<String> {
    problems(&[(NEWER, sql)], &previous())
}

fn declaration(version: i64, oldest: i64) -> String {
    format!(
        "INSERT INTO schema_compatibility (migration, oldest_compatible, release) \
         VALUES ({version}, {oldest}, '0.9.0');"
    )
}

/// The previous release: its version, and its newest migration.
struct Previous {
    version: String,
    newest_migration: i64,
}

/// What in `files` (each migration's version and text, oldest first) could break the previous
/// release while both run, or after a rollback to it.
fn problems(files: &[(i64, &str)], previous: &Previous) -> Vec<String> {
    let mut found = vec![];
    for (i, &(version, sql)) in files.iter().enumerate() {
        found.extend(
            statement_problems(version, sql, &previous.version)
                .into_iter()
                .map(|problem| format!("{version}: {problem}")),
        );
        // A `-- no-transaction` file holds its one statement: the next file declares it.
        let declaring = if no_transaction(sql) {
            files.get(i + 1)
        } else {
            Some(&files[i])
        };
        let declared =
            declaring.and_then(|&(_, by)| declarations(by).into_iter().find(|d| d.0 == version));
        match declared {
            None => found.push(format!(
                "{version}: not declared in schema_compatibility (INSERT INTO schema_compatibility \
                 (migration, oldest_compatible, release) VALUES ({version}, <the oldest migration \
                 a release must know>, '<its release>'), in its file, or in the next one for a \
                 `-- no-transaction` file)"
            )),
            Some((_, _, None)) if version >= RELEASE_DECLARED_FROM => {
                found.push(format!(
                    "{version}: declared without the release it ships in"
                ));
            }
            Some((_, oldest, _)) => {
                let incompatible = sql
                    .lines()
                    .any(|l| l.trim().starts_with("-- incompatible:"));
                if oldest > previous.newest_migration && !incompatible {
                    found.push(format!(
                        "{version}: declared compatible only from migration {oldest}, so release \
                         {} (newest migration {}) cannot run with it; keep it compatible, or say \
                         why not on a line `-- incompatible: <why>`",
                        previous.version, previous.newest_migration
                    ));
                }
            }
        }
    }
    found
}

fn no_transaction(sql: &str) -> bool {
    sql.trim_start().starts_with("-- no-transaction")
}

/// The rows `sql` inserts into `schema_compatibility`: (migration, oldest_compatible, release).
fn declarations(sql: &str) -> Vec<(i64, i64, Option<String>)> {
    let mut rows = vec![];
    for statement in statements(sql) {
        if !statement.starts_with("INSERT INTO SCHEMA_COMPATIBILITY") {
            continue;
        }
        let Some((_, values)) = statement.split_once(" VALUES ") else {
            continue;
        };
        for tuple in values.split("),") {
            let fields: Vec<&str> = tuple
                .trim_matches(|c: char| c == '(' || c == ')' || c.is_whitespace())
                .split(',')
                .map(str::trim)
                .collect();
            let number = |i: usize| fields.get(i).and_then(|f| f.parse::<i64>().ok());
            if let (Some(migration), Some(oldest)) = (number(0), number(1)) {
                let release = fields.get(2).map(|r| r.trim_matches('\'').to_lowercase());
                rows.push((migration, oldest, release));
            }
        }
    }
    rows
}

/// What the statements of migration `version` (its text `sql`) could break of the previous
/// release (`previous`, its version).
fn statement_problems(version: i64, sql: &str, previous: &str) -> Vec<String> {
    let mut found = vec![];
    let no_transaction = no_transaction(sql);
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
    if no_transaction && statements.len() != 1 {
        found.push(format!(
            "a `-- no-transaction` file holds one statement: Postgres runs several sent together \
             as one transaction (declare migration {version} in the next file)"
        ));
    }
    let added: Vec<&str> = statements
        .iter()
        .filter_map(|s| s.split_once(" ADD CONSTRAINT "))
        .filter_map(|(_, rest)| rest.split_whitespace().next())
        .collect();
    for statement in &statements {
        if let Some((_, rest)) = statement.split_once(" VALIDATE CONSTRAINT ")
            && let Some(name) = rest.split_whitespace().next()
            && added.contains(&name.trim_end_matches(';'))
        {
            found.push(format!(
                "validates {name} in the transaction that added it, under the lock that stops \
                 every read and write: validate it in a later migration"
            ));
        }
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
