//! `sgnn testbed` end to end: the software switch and four real `sgnn-hostd` processes over
//! loopback UDP, every sum checked against the single-process reference, under loss,
//! duplication and reordering; a killed worker ends the run with FAILED, not a hang.

use std::process::Command;

fn testbed(extra: &[&str]) -> (bool, String, String) {
    let out = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_sgnn"))
        .args([
            "testbed",
            "--graph",
            "rmat:scale=9,edge_factor=8,seed=3",
            "--workers",
            "4",
            "--feature-dim",
            "48",
            "--switch-mem",
            "32KB",
            "--timeout",
            "5",
            "--out",
        ])
        .arg(out.path())
        .args(extra)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout).to_string();
    let stderr = String::from_utf8_lossy(&o.stderr).to_string();
    let last = stdout.lines().last().unwrap_or("").to_string();
    if o.status.success() {
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.path().join("report.json")).unwrap())
                .unwrap();
        assert!(report["values_checked"].as_u64().unwrap() > 0);
        assert!(
            report["blocks"].as_u64().unwrap() > 1,
            "the plan has several blocks"
        );
    }
    (o.status.success(), last, stderr)
}

#[test]
fn exact_sums_without_loss_and_with_1_and_5_percent_loss() {
    for loss in ["0", "0.01", "0.05"] {
        let (ok, last, err) = testbed(&["--layers", "1", "--loss", loss]);
        assert!(
            ok && last.starts_with("verified: 4 workers x 2 rounds exact"),
            "loss {loss}: {last}\n{err}"
        );
        assert!(last.contains("host-based"), "{last}");
    }
}

#[test]
fn exact_sums_under_duplication_and_reordering() {
    let (ok, last, err) = testbed(&[
        "--layers",
        "1",
        "--duplicate",
        "0.05",
        "--reorder",
        "0.05",
        "--no-baseline",
    ]);
    assert!(ok && last.starts_with("verified:"), "{last}\n{err}");
}

#[test]
fn a_killed_worker_fails_the_run_clearly() {
    let (ok, last, err) = testbed(&["--kill-worker", "2", "--layers", "2", "--no-baseline"]);
    assert!(!ok, "{last}\n{err}");
    assert!(last.starts_with("FAILED: switchgnn:"), "{last}");
    assert!(last.contains("worker 2 was killed"), "{last}");
    // The survivors said what went wrong instead of hanging.
    assert!(last.contains("worker 0 exited"), "{last}");
}

#[test]
fn bad_options_fail_with_what_to_fix() {
    let (ok, last, _) = testbed(&["--loss", "1.5"]);
    assert!(!ok);
    assert_eq!(last, "FAILED: --loss is a probability in [0, 1), got 1.5");
}
