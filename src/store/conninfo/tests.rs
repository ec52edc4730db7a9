//! What the table of `tests/database_url/` cannot ask libpq: the environment variables, the
//! password file, the server options and what reaches sqlx's options.

use std::collections::HashMap;

use super::*;

fn with_env(text: &str, env: &[(&str, &str)]) -> Result<Conninfo, ConninfoError> {
    let env: HashMap<String, String> = env
        .iter()
        .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
        .collect();
    Conninfo::parse_with_env(text, &|name| env.get(name).cloned())
}

fn read(text: &str, env: &[(&str, &str)]) -> Conninfo {
    with_env(text, env).unwrap_or_else(|e| panic!("{text}: {e}"))
}

#[test]
fn the_environment_completes_what_the_text_leaves_out_as_libpq_reads_it() {
    let env = [
        ("PGHOST", "e1,e2"),
        ("PGPORT", "6001,6002"),
        ("PGUSER", "envuser"),
        ("PGDATABASE", "envdb"),
        ("PGCONNECT_TIMEOUT", "9"),
        ("PGTARGETSESSIONATTRS", "primary"),
    ];
    let from_env = read("", &env);
    let hosts: Vec<_> = from_env
        .hosts()
        .iter()
        .map(|host| (host.get_host().to_owned(), host.get_port()))
        .collect();
    assert_eq!(hosts, [("e1".into(), 6001), ("e2".into(), 6002)]);
    assert_eq!(from_env.hosts()[0].get_username(), "envuser");
    assert_eq!(from_env.hosts()[0].get_database(), Some("envdb"));
    assert_eq!(from_env.connect_timeout(), Some(Duration::from_secs(9)));
    assert_eq!(from_env.attrs(), Some(SessionAttrs::Primary));

    let text_wins = read("postgres://t:1/tdb?user=tuser", &env);
    assert_eq!(text_wins.hosts().len(), 1);
    assert_eq!(text_wins.hosts()[0].get_host(), "t");
    assert_eq!(text_wins.hosts()[0].get_username(), "tuser");
    assert_eq!(text_wins.hosts()[0].get_database(), Some("tdb"));
}

#[test]
fn an_environment_variable_of_a_refused_keyword_is_refused_naming_the_variable() {
    let error = with_env("host=h", &[("PGSERVICE", "prod")]).expect_err("refused");
    assert!(error.to_string().contains("PGSERVICE"), "{error}");
    let error = with_env("host=h", &[("PGPORT", "0")]).expect_err("refused");
    assert!(error.to_string().contains("port of host 1"), "{error}");
    let error = with_env("host=h options=-cx=1", &[("PGOPTIONS", "-c y=2")]).expect_err("refused");
    assert_eq!(error, ConninfoError::OptionsTwice);
}

#[test]
fn a_password_given_reaches_every_host_and_one_missing_is_looked_up_in_the_password_file() {
    let given = read("host=a,b password='p w'", &[]);
    assert_eq!(
        (given.password(0), given.password(1)),
        (Some("p w"), Some("p w"))
    );
    assert!(format!("{:?}", given.hosts()[1]).contains("password: Some(\"p w\")"));
    assert!(!format!("{given:?}").contains("p w"));

    let dir = std::env::temp_dir().join(format!("conninfo-pgpass-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a directory");
    let file = dir.join("pgpass");
    std::fs::write(
        &file,
        "# comment\n\
         a:5432:db:app:first\\:one\n\
         *:6000:*:app:any-host\n\
         localhost:*:db:app:on-the-socket\n",
    )
    .expect("the file");
    let set_mode = |mode| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).expect("mode");
    };
    set_mode(0o600);
    let path = file.to_string_lossy().into_owned();
    let looked_up = read(
        "host=a,b,,c port=5432,6000,7,5432 dbname=db user=app",
        &[("PGPASSFILE", &path)],
    );
    let passwords: Vec<_> = (0..4).map(|i| looked_up.password(i)).collect();
    assert_eq!(
        passwords,
        [
            Some("first:one"),
            Some("any-host"),
            Some("on-the-socket"),
            None
        ]
    );
    set_mode(0o644);
    let insecure = read("host=a dbname=db user=app", &[("PGPASSFILE", &path)]);
    assert_eq!(insecure.password(0), None);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn options_reach_sqlx_as_server_settings_and_other_switches_are_refused() {
    let read = read(
        // Quoted key/value text takes one backslash for itself: `\\ ` reaches the server as `\ `.
        "host=h options='-c search_path=a\\\\ b --statement-timeout=5s -cgeqo=off'",
        &[("PGTZ", "UTC")],
    );
    assert_eq!(
        read.hosts()[0].get_options(),
        Some("-c search_path=a\\ b -c statement_timeout=5s -c geqo=off -c timezone=UTC")
    );
    let error = with_env("host=h options='-B 100'", &[]).expect_err("refused");
    assert!(error.to_string().contains("`-B`"), "{error}");
}

#[test]
fn the_other_keywords_reach_sqlx() {
    let read = read(
        "host=h sslmode=verify-full sslrootcert=/ca.pem fallback_application_name=fb",
        &[],
    );
    let host = &read.hosts()[0];
    assert!(matches!(
        host.get_ssl_mode(),
        sqlx::postgres::PgSslMode::VerifyFull
    ));
    assert_eq!(host.get_application_name(), Some("fb"));
    assert!(format!("{host:?}").contains("/ca.pem"));
    let named = super::tests::read(
        "host=h application_name=app fallback_application_name=fb",
        &[],
    );
    assert_eq!(named.hosts()[0].get_application_name(), Some("app"));
}

#[test]
fn an_item_after_a_password_is_described_never_quoted() {
    for text in [
        "host=h password=Qz7q secret",
        "host=h password=Qz7q secret=x",
        "postgres://h/db?password=Qz7q&secret",
        "postgres://h/db?password=Qz7q&secret=x",
    ] {
        let error = with_env(text, &[]).expect_err("refused").to_string();
        assert!(error.contains("after `password`"), "{text}: {error}");
        assert!(
            !error.contains("secret") && !error.contains("Qz7q"),
            "{error}"
        );
    }
}
