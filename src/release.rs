//! Which release this process is (docs/operations/upgrading.md "Which release is running"): the
//! package's version and the source revision it was built from, as `--version`, `/health/live`,
//! the `build_info` metric and the start-up log line report it.

/// The package version (`Cargo.toml`), as the CHANGELOG names releases.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The commit the binary was built from (12 hex digits), or `unknown` (`build.rs`).
pub const REVISION: &str = env!("ORDER_SERVICE_REVISION");

/// `VERSION (REVISION)`: what `order-service --version` prints after the name.
pub const DESCRIPTION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("ORDER_SERVICE_REVISION"),
    ")"
);

/// Sets the `build_info{version, revision}` gauge to 1: a dashboard or an alert joins on it to
/// say which release each instance runs.
pub fn export_build_info() {
    metrics::gauge!("build_info", "version" => VERSION, "revision" => REVISION).set(1.0);
}
