//! The `sgnn` CLI through the real binary.

use std::process::Command;

fn sgnn() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_sgnn"));
    c.current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    c
}

#[test]
fn generate_then_info_round_trips_edge_counts() {
    let dir = tempfile::tempdir().unwrap();
    for ext in ["txt.gz", "npy", "txt"] {
        let out = dir.path().join(format!("g.{ext}"));
        let o = sgnn()
            .args([
                "dataset",
                "generate",
                "--graph",
                "rmat:scale=10,edge_factor=8,seed=4",
                "--out",
            ])
            .arg(&out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let wrote = String::from_utf8_lossy(&o.stderr).into_owned();
        let edges: String = wrote.split(", ").nth(1).unwrap().to_string();
        let o = sgnn()
            .args(["dataset", "info", "--graph"])
            .arg(&out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let info = String::from_utf8_lossy(&o.stdout);
        let n_edges = edges.split_whitespace().next().unwrap();
        assert!(
            info.contains(&format!("edges      {n_edges} undirected")),
            "{ext}: {info} vs {wrote}"
        );
    }
}

#[test]
fn dataset_names_resolve() {
    if sgnn_testkit::dataset("cora", "sgnn dataset names").is_none() {
        return;
    }
    let o = sgnn()
        .args(["dataset", "info", "--graph", "cora"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(s.contains("vertices   2708"), "{s}");
    assert!(s.contains("edges      5278 undirected"), "{s}");
    let o = sgnn().args(["dataset", "list"]).output().unwrap();
    assert!(String::from_utf8_lossy(&o.stdout).contains("cora"));
}

/// A file with sparse ids (issue 14, "Graph ids") is compacted, and `dataset info` says so.
#[test]
fn dataset_info_reports_renumbered_sparse_ids() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("sparse.txt");
    std::fs::write(&p, "0 1\n1 4294967294\n").unwrap();
    let o = sgnn()
        .args(["dataset", "info", "--graph"])
        .arg(&p)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let info = String::from_utf8_lossy(&o.stdout);
    assert!(info.contains("vertices   3 "), "{info}");
    assert!(
        info.contains("renumbered to 0..3 (largest id 4294967294)"),
        "{info}"
    );
}
