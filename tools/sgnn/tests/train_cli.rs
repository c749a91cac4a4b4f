//! `sgnn train` through the real binary: the generated default graph trains and reports, bad
//! flags fail with a `FAILED:` line saying what to change.

use std::process::Command;

fn sgnn_train(args: &[&str]) -> (bool, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_sgnn"))
        .arg("train")
        .args(args)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let last = out.lines().last().unwrap_or("").to_string();
    (
        o.status.success(),
        last,
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn the_default_graph_trains_and_writes_its_report() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t");
    let (ok, last, err) = sgnn_train(&["--epochs", "60", "--out", out.to_str().unwrap()]);
    assert!(
        ok && last.starts_with("trained: single gcn on sbm:"),
        "{last}\n{err}"
    );
    assert!(err.contains("epoch   60/60"), "progress per epoch: {err}");
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("train.json")).unwrap()).unwrap();
    for key in [
        "test_accuracy",
        "val_accuracy",
        "reference_test_accuracy",
        "epochs",
        "loss",
        "epoch_ms",
        "compute_ms",
        "exchange_ms",
        "weight_sync_ms",
        "bytes_on_links",
        "throughput_vertices_per_s",
    ] {
        assert!(!j[key].is_null(), "train.json lacks {key}: {j}");
    }
    assert_eq!(j["epochs"], 60);
    assert_eq!(j["loss"].as_array().unwrap().len(), 60);
    // Five classes: chance is 20%.
    assert!(j["test_accuracy"].as_f64().unwrap() > 0.6, "{j}");
    let csv = std::fs::read_to_string(out.join("epochs.csv")).unwrap();
    assert_eq!(csv.lines().count(), 61);
    assert!(out.join("train.png").exists() || out.join("train.svg").exists());
}

#[test]
fn bad_flags_fail_with_what_to_fix() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap().to_string();
    for (args, want) in [
        (vec!["--model", "gat"], "--model gat: use gcn or sage"),
        (
            vec!["--mode", "ring"],
            "--mode ring: use single, switchgnn or host-based",
        ),
        (
            vec!["--mode", "switchgnn"],
            "--mode switchgnn is not built yet",
        ),
        (vec!["--dropout", "1.5"], "--dropout is a probability"),
        (vec!["--graph", "sbm:n=10,classes=9"], "needs classes >= 2"),
    ] {
        let mut a = args.clone();
        a.extend(["--epochs", "2", "--out", &out]);
        let (ok, last, _) = sgnn_train(&a);
        assert!(!ok, "{args:?}");
        assert!(
            last.starts_with("FAILED: ") && last.contains(want),
            "{args:?}: {last}"
        );
    }
}
