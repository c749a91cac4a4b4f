//! Test support shared by the workspace's tests.
//!
//! A test that needs something a fresh machine lacks (root for network namespaces, the datasets
//! in `../shared/datasets`, a TrueType font, DPDK, `p4c` and bmv2) does not fail: it prints one
//! line on the real standard error (libtest captures `eprintln!` and shows it only for failures,
//! but a skip must be seen in CI logs)
//!
//! ```text
//! SKIPPED <what> (<why>, <how to enable>)
//! ```
//!
//! and returns. The probes below print that line themselves and say whether to go on.

use std::fmt::Display;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// How to enable the tests that need network namespaces and veth pairs.
pub const HOW_ROOT: &str =
    "run the tests as root on Linux with iproute2 and procps installed (Debian packages iproute2 procps)";
/// How to enable the tests that read the real datasets.
pub const HOW_DATASETS: &str =
    "put the datasets at ../shared/datasets beside the checkout (edges.txt.gz, meta.json, *.npy)";
/// How to enable the PNG plot tests.
pub const HOW_FONT: &str =
    "apt-get install fonts-dejavu-core (any TrueType font in /usr/share/fonts)";
/// How to enable the DPDK tests.
pub const HOW_DPDK: &str = "apt-get install libdpdk-dev pkg-config libclang-dev, then cargo test --workspace --all-features";
/// How to enable the bmv2 tests.
pub const HOW_BMV2: &str =
    "build p4c and simple_switch_grpc outside the repository and put them on PATH or in P4C / SIMPLE_SWITCH_GRPC (bmv2-tests/README.md)";

/// How to enable the Tofino compile tests.
pub const HOW_TOFINO: &str =
    "build p4lang/p4c with ENABLE_TOFINO=ON outside the repository and put bf-p4c on PATH or in BF_P4C (docs/tofino.md)";

/// Prints `SKIPPED <what> (<why>, <how>)` on the real standard error.
pub fn skipped(what: &str, why: impl Display, how: &str) {
    let why = why.to_string();
    let why = why.trim().trim_end_matches('.');
    let _ = writeln!(std::io::stderr(), "SKIPPED {what} ({why}, {how})");
}

/// The value of a probe (`sgnn_netdev::can_create_namespaces()`, a font loader, a tool
/// finder), or `None` after printing the SKIPPED line for `what` with the probe's error as the
/// reason and `how` as the way to enable it.
pub fn require<T, E: Display>(what: &str, probe: Result<T, E>, how: &str) -> Option<T> {
    match probe {
        Ok(t) => Some(t),
        Err(e) => {
            skipped(what, e, how);
            None
        }
    }
}

/// The datasets directory, `../shared/datasets` beside the workspace root (`SGNN_DATASETS`
/// overrides it).
pub fn datasets_dir() -> PathBuf {
    if let Some(p) = std::env::var_os("SGNN_DATASETS") {
        return PathBuf::from(p);
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/datasets")
}

/// The directory of dataset `name` if it holds an edge list; prints the SKIPPED line for `what`
/// and returns `None` when it does not.
pub fn dataset(name: &str, what: &str) -> Option<PathBuf> {
    let dir = datasets_dir().join(name);
    if dir.join("edges.txt.gz").is_file() {
        Some(dir)
    } else {
        skipped(
            what,
            format_args!("dataset {name} not found at {}", dir.display()),
            HOW_DATASETS,
        );
        None
    }
}

/// A binary of another workspace package, for a test whose crate cannot name it with
/// `CARGO_BIN_EXE_*` (cargo sets those only for the package's own binaries): `$env` if set,
/// else `cargo build -p package` with the test's own profile (cargo puts every workspace binary
/// in the directory above the test's `deps/`), so `cargo test -p one-crate` finds a binary as
/// fresh as the test. Panics with the reason when the build fails: a test that needs the binary
/// cannot go on without it.
pub fn workspace_binary(package: &str, env: &str) -> PathBuf {
    if let Some(p) = std::env::var_os(env) {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().expect("the test's own path");
    // target/<profile>/deps/<test> -> target/<profile>
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("a test binary lives in target/<profile>/deps");
    let profile = dir
        .file_name()
        .and_then(|p| p.to_str())
        .unwrap_or("debug")
        .to_string();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut c = std::process::Command::new(cargo);
    c.args(["build", "--quiet", "-p", package]);
    match profile.as_str() {
        "debug" => {}
        "release" => {
            c.arg("--release");
        }
        p => {
            c.args(["--profile", p]);
        }
    }
    if let Some(target_dir) = dir.parent() {
        c.arg("--target-dir").arg(target_dir);
    }
    let status = c
        .status()
        .unwrap_or_else(|e| panic!("running cargo to build {package}: {e}"));
    let bin = dir.join(package);
    assert!(
        status.success() && bin.is_file(),
        "building {package} failed ({status}); build it (`cargo build -p {package}`) or set {env} to it"
    );
    bin
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    #[test]
    fn the_datasets_dir_is_beside_the_workspace() {
        let d = super::datasets_dir();
        if std::env::var_os("SGNN_DATASETS").is_none() {
            assert!(d.ends_with("shared/datasets"), "{}", d.display());
            // platform/testkit/../../.. is the checkout's parent.
            let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
            assert!(root.join("Cargo.toml").is_file());
        }
    }
}
