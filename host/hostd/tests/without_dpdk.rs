//! A daemon built without its `dpdk` feature, asked for `--datapath dpdk`, says in one line what
//! to rebuild and which packages that needs, and exits 2 (no panic, no backtrace).
#![cfg(not(feature = "dpdk"))]

use std::process::Command;

#[test]
fn datapath_dpdk_without_the_feature_says_what_to_rebuild() {
    let o = Command::new(env!("CARGO_BIN_EXE_sgnn-hostd"))
        .args([
            "--plan",
            "no-such-plan",
            "--worker-id",
            "0",
            "--datapath",
            "dpdk",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    for needle in ["--datapath dpdk", "--features dpdk", "libdpdk-dev"] {
        assert!(err.contains(needle), "{needle}: {err}");
    }
    assert!(!err.contains("panicked"), "{err}");
}
