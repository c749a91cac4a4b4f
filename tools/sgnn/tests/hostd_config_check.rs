//! What `sgnn-hostd --check --no-probe` says it checked (issue 31, item 5), through the real
//! binary, on a plan made by the planner (so here, above switch-ctl, not in host/hostd). No
//! switch is started.

use std::net::UdpSocket;
use std::path::Path;
use std::process::{Command, Output};

mod hostd_common;
use hostd_common::*;

fn hostd(args: &[&str], config: Option<&Path>) -> Output {
    let mut c = Command::new(hostd_bin());
    if let Some(f) = config {
        c.arg("--config").arg(f);
    }
    c.args(args).output().unwrap()
}

/// `--check --no-probe` with nothing listening at --switch: still `check: ok` (the probe is
/// what reaches the switch), but it says the switch was not checked instead of claiming it
/// answered with the plan's tag.
#[test]
fn check_without_the_probe_says_the_switch_was_not_checked() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan");
    make_test_plan(&plan);
    // A port nobody listens on: bound, its address taken, then closed.
    let silent = UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .to_string();
    let o = hostd(
        &[
            "--check",
            "--no-probe",
            "--plan",
            plan.to_str().unwrap(),
            "--worker-id",
            "1",
            "--switch",
            &silent,
            "--bind",
            "127.0.0.1:0",
            "--timeout",
            "2",
        ],
        None,
    );
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success() && out.starts_with("check: ok: worker 1 of plan"),
        "{out}{err}"
    );
    assert!(!out.contains("the switch answered"), "{out}");
    assert!(
        out.contains("the switch was not contacted (--no-probe)") && out.contains("not checked"),
        "{out}"
    );
}
