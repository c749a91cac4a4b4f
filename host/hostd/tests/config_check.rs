//! `sgnn-hostd --config` values that do not fit their flag, and what `--check --no-probe`
//! says it checked (issue 31, item 5), through the real binary. No switch is started.

use std::net::UdpSocket;
use std::path::Path;
use std::process::{Command, Output};

mod common;
use common::*;

fn hostd(args: &[&str], config: Option<&Path>) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_sgnn-hostd"));
    if let Some(f) = config {
        c.arg("--config").arg(f);
    }
    c.args(args).output().unwrap()
}

/// A switch flag given a string and a u32 flag given a negative number: the error names the
/// file, the key and what the key takes, not clap's "unexpected argument" or "use '-- -3'".
#[test]
fn a_bad_value_in_the_config_file_names_the_file_and_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("w0.toml");
    for (text, key, wants) in [
        (
            "plan = \"/srv/plan\"\nworker-id = 0\nverify = \"yes\"\n",
            "`verify = \"yes\"`",
            "takes true or false",
        ),
        (
            "plan = \"/srv/plan\"\nworker-id = -3\n",
            "`worker-id = -3`",
            "takes a W",
        ),
        (
            "plan = \"/srv/plan\"\nworker_id = 0\ndatapath = \"udpp\"\n",
            "`datapath = \"udpp\"`",
            "one of \"udp\"",
        ),
        (
            "plan = \"/srv/plan\"\nworker_id = true\n",
            "`worker_id = true`",
            "not an on/off switch",
        ),
    ] {
        std::fs::write(&cfg, text).unwrap();
        let o = hostd(&["--check"], Some(&cfg));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{text}: {err}");
        assert!(
            err.contains("w0.toml") && err.contains(key) && err.contains(wants),
            "{text}: {err}"
        );
        assert!(
            !err.contains("unexpected argument") && !err.contains("-- -3"),
            "{text}: {err}"
        );
    }
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
