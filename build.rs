//! Names the build's source revision for `order_service::release` (docs/operations/upgrading.md
//! "Which release is running"): `ORDER_SERVICE_REVISION` when the builder sets it (an image
//! built without the repository's `.git`), else the commit git reports, else `unknown`.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=ORDER_SERVICE_REVISION");
    let revision = std::env::var("ORDER_SERVICE_REVISION")
        .ok()
        .filter(|given| !given.is_empty())
        .or_else(|| git(&["rev-parse", "--short=12", "HEAD"]))
        .unwrap_or_else(|| "unknown".to_owned());
    // A new commit moves the branch's ref (or HEAD itself, when detached), loose or packed: build
    // again then. Only files that exist are named: cargo rebuilds every time for a missing one.
    let watched = [
        Some("HEAD".to_owned()),
        git(&["symbolic-ref", "-q", "HEAD"]),
        Some("packed-refs".to_owned()),
    ];
    for name in watched.into_iter().flatten() {
        if let Some(path) = git(&["rev-parse", "--git-path", &name])
            && std::path::Path::new(&path).exists()
        {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    println!("cargo:rustc-env=ORDER_SERVICE_REVISION={revision}");
}

/// What `git args…` prints on its first line, if git runs and succeeds.
fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git").args(args).output().ok()?;
    if !output.status.success() {
        return None;
    }
    let line = String::from_utf8(output.stdout)
        .ok()?
        .lines()
        .next()?
        .trim()
        .to_owned();
    (!line.is_empty()).then_some(line)
}
