//! The previous release as a binary, for the tests of a rolling upgrade and a rollback
//! (docs/operations/upgrading.md "The previous release"): `deploy/previous-release` names its
//! version and commit; [`binary`] builds that commit's `order-service` once, from the repository's
//! history (`git archive`), into `target/previous-release/`, and reuses it after.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The file naming the previous release, at the root of the workspace.
const RECORD: &str = "deploy/previous-release";

/// The previous release as `deploy/previous-release` records it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub version: String,
    pub commit: String,
}

/// The workspace's root: the parent of this kit.
fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the kit lives in the workspace")
        .to_path_buf()
}

/// Reads `deploy/previous-release` (`version = …` and `commit = …` lines; `#` starts a comment).
pub fn recorded() -> Recorded {
    let text = std::fs::read_to_string(workspace().join(RECORD)).expect("deploy/previous-release");
    let value = |key: &str| {
        text.lines()
            .filter(|line| !line.trim_start().starts_with('#'))
            .filter_map(|line| line.split_once('='))
            .find(|(k, _)| k.trim() == key)
            .map(|(_, v)| v.trim().to_owned())
            .unwrap_or_else(|| panic!("{RECORD} names no {key}"))
    };
    let recorded = Recorded {
        version: value("version"),
        commit: value("commit"),
    };
    assert!(
        recorded.commit.len() == 40 && recorded.commit.chars().all(|c| c.is_ascii_hexdigit()),
        "{RECORD}: the commit is 40 hex digits"
    );
    recorded
}

/// The newest migration of the previous release: the newest file under `migrations/` at its
/// commit, from the repository's history.
pub fn newest_migration(release: &Recorded) -> i64 {
    let listed = Command::new("git")
        .args(["ls-tree", "--name-only", &release.commit, "migrations/"])
        .current_dir(workspace())
        .output()
        .expect("run git ls-tree");
    assert!(
        listed.status.success(),
        "{RECORD} names commit {}, which this clone does not have: the upgrade tests need the \
         repository's history (a full clone, not a shallow one)",
        release.commit
    );
    String::from_utf8_lossy(&listed.stdout)
        .lines()
        .filter_map(|path| {
            path.trim_start_matches("migrations/")
                .split('_')
                .next()?
                .parse()
                .ok()
        })
        .max()
        .expect("the previous release has migrations")
}

/// The previous release's `order-service`, built from its commit if it is not built yet;
/// `target` is the build directory of the running suite (its binaries' grandparent).
pub fn binary(target: &Path) -> PathBuf {
    let release = recorded();
    let dir = target.join("previous-release");
    let binary = dir.join(format!("order-service-{}", release.version));
    let stamp = dir.join(format!("order-service-{}.commit", release.version));
    if binary.exists() && std::fs::read_to_string(&stamp).ok().as_deref() == Some(&release.commit) {
        return binary;
    }
    let source = dir.join(format!("source-{}", release.commit));
    let _ = std::fs::remove_dir_all(&source);
    std::fs::create_dir_all(&source).expect("a directory for the previous release's source");
    extract(&release.commit, &source);
    let built = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()))
        .args([
            "build",
            "--locked",
            "--package",
            "order-service",
            "--bin",
            "order-service",
        ])
        .current_dir(&source)
        .env("CARGO_TARGET_DIR", dir.join("target"))
        // No debug info: the build takes a third less time, and nobody debugs this binary.
        .env("CARGO_PROFILE_DEV_DEBUG", "0")
        // The archive has no `.git`: say which commit it is, or `build.rs` would ask the
        // repository around it.
        .env("ORDER_SERVICE_REVISION", &release.commit[..12])
        .status()
        .expect("run cargo build for the previous release");
    assert!(built.success(), "building the previous release failed");
    std::fs::copy(dir.join("target/debug/order-service"), &binary).expect("keep the binary");
    std::fs::write(&stamp, &release.commit).expect("stamp the binary");
    let _ = std::fs::remove_dir_all(&source);
    binary
}

/// `git archive <commit>` of the workspace's repository, unpacked into `into`.
fn extract(commit: &str, into: &Path) {
    let mut archive = Command::new("git")
        .args(["archive", "--format=tar", commit])
        .current_dir(workspace())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run git archive");
    let unpacked = Command::new("tar")
        .args(["-x", "-C"])
        .arg(into)
        .stdin(archive.stdout.take().expect("git archive's output"))
        .status()
        .expect("run tar");
    let archived = archive.wait().expect("git archive");
    assert!(
        archived.success() && unpacked.success(),
        "{RECORD} names commit {commit}, which this clone cannot archive: the upgrade tests need \
         the repository's history (a full clone, not a shallow one)"
    );
}
