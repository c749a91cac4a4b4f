//! The Python package (`python/switchgnn`) against real daemons started by `sgnn serve`: the
//! numpy client's exchanges are exact within the fixed-point bound (gradients of 1e-6
//! included), and the PyTorch autograd Function's forward and backward are the neighbour sums.
//! Needs python3 with numpy (CI installs it); the PyTorch test also needs torch.

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
