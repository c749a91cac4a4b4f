//! `softswitch --config FILE` and `--check`: flags from TOML (repeatable ones add up with the
//! command line's), a check that opens the ports and loads the plan and exits, and a key the
//! switch does not have refused naming the file.

use std::process::Command;

mod common;
use common::{one_block_plan, WORKERS};

fn softswitch(args: &[&str]) -> (Option<i32>, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_softswitch"))
        .args(args)
        .output()
        .unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn config_file_and_check() {
    let dir = tempfile::tempdir().unwrap();
    let plan_dir = dir.path().join("plan");
    one_block_plan("rmat:scale=8,edge_factor=4,seed=3")
        .save(&plan_dir)
        .unwrap();
    let cfg = dir.path().join("switch.toml");
    // Two of the three workers' ports in the file, the third on the command line.
    std::fs::write(
        &cfg,
        format!(
            "plan = {:?}\nworker = [\"127.0.0.1:0\", \"127.0.0.1:0\"]\negress_loss = 0.0\n",
            plan_dir.display().to_string()
        ),
    )
    .unwrap();
    let c = cfg.to_str().unwrap();
    let (code, out, err) = softswitch(&["--config", c, "--worker", "127.0.0.1:0", "--check"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.contains(&format!("check: ok: {WORKERS} ports open, plan")),
        "{out}"
    );
    // Without the third port the plan does not fit: the check fails.
    let (code, _, err) = softswitch(&["--config", c, "--check"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("the plan has 3 workers but 2 ports"), "{err}");
    std::fs::write(&cfg, "wrker = [\"127.0.0.1:0\"]\n").unwrap();
    let (code, _, err) = softswitch(&["--config", c, "--check"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("switch.toml") && err.contains("softswitch has no --wrker flag"),
        "{err}"
    );
}

/// 300 worker ports where the P4 program's worker tables hold 256 (`MAX_WORKERS`): `--check`
/// refuses them with the program's limit (issue 31; it used to say `check: ok: 300 ports`),
/// and 256 are accepted.
#[test]
fn check_refuses_more_workers_than_the_program_holds() {
    let ports = |n: usize| -> Vec<&str> {
        std::iter::repeat_n(["--worker", "127.0.0.1:9"], n)
            .flatten()
            .collect()
    };
    let mut args = ports(300);
    args.push("--check");
    let (code, out, err) = softswitch(&args);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(
        err.contains("300 worker ports") && err.contains("at most 256 workers (MAX_WORKERS"),
        "{err}"
    );
    let mut args = ports(256);
    args.push("--check");
    let (code, out, err) = softswitch(&args);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("check: ok: 256 ports open"), "{out}");
}
