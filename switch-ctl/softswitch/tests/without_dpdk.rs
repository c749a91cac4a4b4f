//! A software switch built without its `dpdk` feature, asked for `--dpdk`, says in one line what
//! to rebuild and which packages that needs, and exits 2 (no panic, no backtrace).
#![cfg(not(feature = "dpdk"))]

use std::process::Command;

#[test]
fn dpdk_ports_without_the_feature_say_what_to_rebuild() {
    let o = Command::new(env!("CARGO_BIN_EXE_softswitch"))
        .args(["--dpdk", "--dpdk-ports", "2", "--", "--no-huge"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    for needle in ["--dpdk", "--features dpdk", "libdpdk-dev"] {
        assert!(err.contains(needle), "{needle}: {err}");
    }
    assert!(!err.contains("panicked"), "{err}");
}
