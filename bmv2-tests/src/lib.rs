//! Test support for running the SwitchGNN P4 program on bmv2 and comparing it with the
//! software switch: finding and running the P4 tools, and the switch processes under test.
//!
//! The tests themselves are in `tests/`. When `p4c` or `simple_switch_grpc` is missing, or the
//! process may not create network namespaces, they print `SKIPPED <what> (<why>, <how to enable>)` and return.

pub mod device;
pub mod net;
pub mod recording;
pub mod runner;
pub mod scenario;
pub mod tools;

pub use tools::{Compiled, Tools};

/// The repository root (this crate lives in `bmv2-tests/`).
pub fn repo_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("bmv2-tests has a parent")
        .to_path_buf()
}

/// The v1model program's top-level file.
pub fn p4_main() -> std::path::PathBuf {
    repo_root().join("p4/v1model/switchgnn.p4")
}
