//! `sgnn sim` through the real binary: files written, rows per strategy, bytes equal to the
//! planner's traffic model, bad options rejected with a message.

use std::process::Command;

fn sgnn() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_sgnn"));
    c.current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    c
}

#[test]
fn sim_writes_summary_and_one_csv_row_per_strategy() {
    let dir = tempfile::tempdir().unwrap();
    let o = sgnn()
        .args([
            "sim",
            "--graph",
            "rmat:scale=9,edge_factor=8",
            "--workers",
            "4",
            "--switch-mem",
            "64KB",
            "--feature-dim",
            "64",
            "--strategies",
            "host_based,switchgnn",
            "--link-gbps",
            "25",
            "--delay-us",
            "1",
            "--out",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(stdout.contains("25 Gbit/s links, 1 us delay"), "{stdout}");
    assert_eq!(stdout.matches(" equal").count(), 2, "{stdout}");
    let csv = std::fs::read_to_string(dir.path().join("runs.csv")).unwrap();
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows.len(), 3, "{csv}");
    assert!(rows[1].starts_with("host_based,true,"));
    assert!(rows[2].starts_with("switchgnn,true,"));
    let summary = std::fs::read_to_string(dir.path().join("summary.txt")).unwrap();
    assert!(summary.contains("h0->s0"), "per-link detail: {summary}");
    let links = std::fs::read_to_string(dir.path().join("links.csv")).unwrap();
    assert_eq!(links.lines().count(), 1 + 2 * 8, "{links}");
}

#[test]
fn sim_rejects_unknown_strategies_and_topologies() {
    let dir = tempfile::tempdir().unwrap();
    for (flag, value, msg) in [
        ("--strategies", "host_based,g9", "unknown strategy \"g9\""),
        ("--topology", "ring", "use star or leaf-spine"),
        // The default 8 leaves cannot share 2 workers.
        ("--topology", "leaf-spine", "a leaf needs a host"),
        ("--link-gbps", "0", "--link-gbps must be a positive"),
    ] {
        let o = sgnn()
            .args([
                "sim",
                "--graph",
                "rmat:scale=6",
                "--workers",
                "2",
                flag,
                value,
                "--out",
            ])
            .arg(dir.path())
            .output()
            .unwrap();
        assert!(!o.status.success());
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(msg), "{flag} {value}: {err}");
    }
}
