//! The Python package (`python/switchgnn`) against real daemons started by `sgnn serve`: the
//! numpy client's exchanges are exact within the fixed-point bound (gradients of 1e-6
//! included) through the shared buffer (worker 0) and through the socket (worker 1), and the
//! PyTorch autograd Function's forward and backward are the neighbour sums. Needs python3 with
//! numpy (CI installs it); the PyTorch tests also need torch (and the loss-curve test cora from
//! ../shared/datasets). The rest of the Python tests (PyG layers, `switchgnn launch`, parity
//! with single-process PyG) are pytest's: `python3 -m pytest python/tests` (.ci/run runs it).

use std::path::Path;
use std::process::Command;

fn python_has(module: &str) -> bool {
    Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

fn run_script(name: &str) -> (bool, String) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let o = Command::new("python3")
        .arg(root.join("python/tests").join(name))
        .env("SGNN_BIN", env!("CARGO_BIN_EXE_sgnn"))
        .current_dir(&root)
        .output()
        .unwrap();
    (
        o.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
    )
}

#[test]
fn the_numpy_client_exchanges_exactly_through_sgnn_serve() {
    if !python_has("numpy") {
        sgnn_testkit::skipped(
            "the Python client test",
            "python3 with numpy is not available",
            "python3 -m pip install numpy",
        );
        return;
    }
    let (ok, out) = run_script("test_client.py");
    assert!(ok && out.contains("ok: "), "{out}");
}

#[test]
fn the_pytorch_function_is_the_exchange_forward_and_backward() {
    if !python_has("numpy") || !python_has("torch") {
        sgnn_testkit::skipped(
            "the PyTorch test",
            "python3 with numpy and torch is not available",
            "python3 -m pip install numpy torch",
        );
        return;
    }
    let (ok, out) = run_script("test_torch.py");
    assert!(ok && out.contains("ok: "), "{out}");
}

/// The plain-PyTorch GCN of `python/examples/gcn.py`, two processes through `sgnn serve`,
/// started from the Rust trainer's initial weights (`sgnn train --save-init`), follows the
/// Rust single-process loss within 1e-4 relative at every epoch (dropout off).
#[test]
fn the_pytorch_example_follows_the_rust_trainers_loss_curve() {
    use std::io::{BufRead, BufReader};
    if !python_has("numpy") || !python_has("torch") {
        sgnn_testkit::skipped(
            "the PyTorch loss-curve test",
            "python3 with numpy and torch is not available",
            "python3 -m pip install numpy torch",
        );
        return;
    }
    let Some(cora) = sgnn_testkit::dataset("cora", "the PyTorch loss-curve test") else {
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = tempfile::tempdir().unwrap();
    let (init, rs, so) = (
        dir.path().join("init"),
        dir.path().join("rs"),
        dir.path().join("so"),
    );
    let epochs = "30";
    let o = Command::new(env!("CARGO_BIN_EXE_sgnn"))
        .args([
            "train",
            "--mode",
            "single",
            "--dropout",
            "0",
            "--epochs",
            epochs,
        ])
        .arg("--graph")
        .arg(&cora)
        .arg("--save-init")
        .arg(&init)
        .arg("--out")
        .arg(&rs)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut serve = Command::new(env!("CARGO_BIN_EXE_sgnn"))
        .args([
            "serve",
            "--workers",
            "2",
            "--feature-dim",
            "16",
            "--max-seconds",
            "600",
        ])
        .arg("--graph")
        .arg(cora.join("edges.txt.gz"))
        .arg("--out")
        .arg(&so)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(serve.stdout.take().unwrap()).lines();
    for l in lines.by_ref() {
        let l = l.unwrap();
        assert!(!l.starts_with("FAILED"), "{l}");
        if l.starts_with("ready:") {
            break;
        }
    }
    let losses = dir.path().join("py.json");
    let o = Command::new("python3")
        .args(["-m", "torch.distributed.run", "--nproc-per-node", "2"])
        .arg(root.join("python/examples/gcn.py"))
        .arg(&so)
        .arg(&cora)
        .args(["--epochs", epochs, "--dropout", "0", "--init"])
        .arg(&init)
        .arg("--losses")
        .arg(&losses)
        .output()
        .unwrap();
    let served = lines.map(|l| l.unwrap()).last().unwrap_or_default();
    let _ = serve.wait();
    assert!(
        o.status.success(),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(served.starts_with("served:"), "{served}");
    let py: Vec<f64> = serde_json::from_str(&std::fs::read_to_string(&losses).unwrap()).unwrap();
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(rs.join("train.json")).unwrap()).unwrap();
    let rust: Vec<f64> = j["loss"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    assert_eq!(py.len(), rust.len());
    for (e, (p, r)) in py.iter().zip(&rust).enumerate() {
        assert!(
            (p - r).abs() <= 1e-4 * r.abs(),
            "epoch {}: PyTorch {p}, Rust {r}",
            e + 1
        );
    }
}
