//! Shared by the daemon's end-to-end tests (`hostd_*.rs`; they were host/hostd's, here because
//! they plan with the planner and start the software switch): the test plan, the `sgnn-hostd`
//! and `softswitch` binaries, process helpers and the independent check of a cluster's output.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use sgnn_graph::npy::{read_npy, NpyData};
use sgnn_graph::Features;
use sgnn_plan::model::PlanConfig;
use sgnn_plan::Plan;
use sgnn_planner::planner::{make_plan, PlanRequest};
use sgnn_transport::reference::reference_sums;
use sgnn_transport::WorkerView;

/// Workers of the test plan.
pub const WORKERS: usize = 4;
/// Values per vertex.
pub const DIM: usize = 64;
/// The debug-build softswitch forwards a few hundred thousand frames per second at most
/// and its socket keeps the kernel's default buffer: pace below that so the simulated drop
/// is what the protocol sees.
pub const PACING: [&str; 6] = [
    "--rate-mbps",
    "20",
    "--max-rate-mbps",
    "40",
    "--burst-bytes",
    "1024",
];

/// The flags of a verified two-layer run writing its sums into `out` and its statistics into
/// `stats` (short recovery timeouts, so lost frames are recovered quickly).
pub fn verified_run_args(out: &Path, stats: &Path) -> Vec<String> {
    let mut a: Vec<String> = [
        "--layers",
        "2",
        "--seed",
        "5",
        "--verify",
        "--timeout",
        "60",
        "--fetch-timeout-ms",
        "10",
        "--advance-timeout-ms",
        "10",
        "--output-dir",
    ]
    .map(String::from)
    .into();
    a.push(out.to_str().unwrap().to_string());
    a.push("--stats-json".into());
    a.push(stats.to_str().unwrap().to_string());
    a
}

pub static BUILD: Mutex<()> = Mutex::new(());

fn target_dir() -> PathBuf {
    // target/debug/deps/e2e-HASH -> target/debug
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().to_path_buf()
}

/// `cargo build -p <package> --bin <package>` into this target directory (with DPDK if this
/// package has its `dpdk` feature); returns the binary.
fn cargo_build(package: &str) -> PathBuf {
    let _g = BUILD.lock().unwrap();
    let bin = target_dir().join(package);
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let root = target_dir().parent().unwrap().to_path_buf();
    let features: &[&str] = if cfg!(feature = "dpdk") {
        &["--features", "dpdk"]
    } else {
        &[]
    };
    let st = Command::new(cargo)
        .args(["build", "-p", package, "--bin", package])
        .args(features)
        .env("CARGO_TARGET_DIR", &root)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .unwrap_or_else(|e| panic!("running cargo to build {package}: {e}"));
    assert!(st.success(), "cargo build -p {package} failed");
    assert!(bin.exists(), "{} missing", bin.display());
    bin
}

/// The softswitch binary of this target directory, built on demand if it is not there yet.
pub fn softswitch_bin() -> PathBuf {
    let bin = target_dir().join("softswitch");
    if bin.exists() {
        return bin;
    }
    cargo_build("softswitch")
}

/// The sgnn-hostd binary of this target directory, built once per test process (a no-op when
/// fresh), so it is as fresh as the test (its own package's tests could name it with
/// `CARGO_BIN_EXE_sgnn-hostd`; these cannot).
pub fn hostd_bin() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT.get_or_init(|| cargo_build("sgnn-hostd")).clone()
}

/// An R-MAT scale-8 plan for 4 workers and a 16 KB switch (several blocks), saved in `dir`.
pub fn make_test_plan(dir: &Path) -> Plan {
    let g = sgnn_graph::load_graph("rmat:scale=8,edge_factor=8").unwrap();
    let req = PlanRequest {
        config: PlanConfig {
            workers: WORKERS as u32,
            partitioner: sgnn_plan::Partitioner::Metis,
            switch_mem_bytes: 16 << 10,
            agg_bytes: 128,
            feature_dim: DIM as u32,
            order: sgnn_plan::SendOrder::Gamr,
            seed: 1,
            max_passes: 256,
            leaves: 1,
            aggregate: sgnn_plan::AggregateMode::Paper,
            recycle_slack: None,
        },
        graph_source: "rmat:scale=8,edge_factor=8".into(),
        max_abs_value: 8.0,
    };
    let (plan, _) = make_plan(g.csr, g.stats, &req, &mut |_| {}).unwrap();
    assert!(plan.blocks.len() >= 2, "several blocks wanted");
    plan.save(dir).unwrap();
    plan
}

/// Waits for `c` for at most `d`; kills it and returns None on timeout.
pub fn wait_deadline(c: &mut Child, d: Duration) -> Option<ExitStatus> {
    let t = Instant::now();
    loop {
        if let Some(s) = c.try_wait().unwrap() {
            return Some(s);
        }
        if t.elapsed() > d {
            let _ = c.kill();
            let _ = c.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// All of `c`'s standard error (after it exited).
pub fn stderr_of(c: &mut Child) -> String {
    let mut s = String::new();
    use std::io::Read;
    c.stderr.take().unwrap().read_to_string(&mut s).unwrap();
    s
}

/// A float32 `.npy` file's values.
pub fn read_f32(p: &Path) -> Vec<f32> {
    match read_npy(p).unwrap().data {
        NpyData::F32(v) => v,
        other => panic!("{}: {}", p.display(), other.dtype_name()),
    }
}

/// A uint32 `.npy` file's values.
pub fn read_u32(p: &Path) -> Vec<u32> {
    match read_npy(p).unwrap().data {
        NpyData::U32(v) => v,
        other => panic!("{}: {}", p.display(), other.dtype_name()),
    }
}

/// Checks a 4-worker, 2-layer `--verify --seed 5 --output-dir out` run: round 0's sums
/// against f64 sums of the real features (within the codec bound) and bit for bit against
/// the fixed-point reference, every vertex owned once, 4 rounds in every worker's
/// `dir/wW.json`, and simulated drops in `dir/switch.json` when `drop > 0`.
pub fn check_cluster_output(plan: &Plan, dir: &Path, out: &Path, drop: f64) {
    // Independent check of round 0: f64 sums of the real features within the codec bound,
    // and bit-equality with the fixed-point reference.
    let n = plan.graph.num_vertices();
    let x = Features::random(n, DIM, 5).data;
    let fixed = WorkerView::new(plan, 0, None).unwrap().fixed;
    let want = reference_sums(&plan.graph, fixed, DIM, &x);
    let mut seen = 0;
    for w in 0..WORKERS {
        let verts = read_u32(&out.join(format!("w{w:03}_vertices.npy")));
        let got = read_f32(&out.join(format!("w{w:03}_r000.npy")));
        assert_eq!(got.len(), verts.len() * DIM);
        for (i, &v) in verts.iter().enumerate() {
            let nb = plan.graph.neighbors(v);
            let bound = fixed.error_bound(nb.len() as u32) as f64;
            for k in 0..DIM {
                let exact: f64 = nb.iter().map(|&u| x[u as usize * DIM + k] as f64).sum();
                let g = got[i * DIM + k];
                assert!((g as f64 - exact).abs() <= bound, "vertex {v} lane {k}");
                assert_eq!(g.to_bits(), want[v as usize * DIM + k].to_bits());
            }
            seen += 1;
        }
        assert!(out.join(format!("w{w:03}_r003.npy")).exists());
        let stats: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join(format!("w{w}.json"))).unwrap())
                .unwrap();
        assert_eq!(stats["ok"], true);
        assert_eq!(stats["stats"]["rounds"].as_array().unwrap().len(), 4);
    }
    assert_eq!(seen, n, "every vertex belongs to exactly one worker");
    if drop > 0.0 {
        let sw: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("switch.json")).unwrap()).unwrap();
        assert!(sw["drop_simulated"].as_u64().unwrap() > 0);
    }
}
