//! The real `softswitch` binary and four real `sgnn-hostd` processes over loopback UDP.
//!
//! The softswitch binary belongs to another package; it is built on demand (`cargo build -p
//! softswitch`) into this test's target directory if it is not there yet.

use std::io::{BufRead, BufReader};
use std::net::UdpSocket;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use sgnn_graph::npy::{read_npy, NpyData};
use sgnn_graph::Features;
use sgnn_plan::model::PlanConfig;
use sgnn_plan::Plan;
use sgnn_transport::ipc::{self, Reply, Request};
use sgnn_transport::reference::reference_sums;
use sgnn_transport::{Direction, WorkerView};
use switch_ctl::planner::{make_plan, PlanRequest};

const WORKERS: usize = 4;
const DIM: usize = 64;
/// The debug-build softswitch forwards a few hundred thousand frames per second at most
/// and its socket keeps the kernel's default buffer: pace below that so the simulated drop
/// is what the protocol sees.
const PACING: [&str; 6] = [
    "--rate-mbps",
    "20",
    "--max-rate-mbps",
    "40",
    "--burst-bytes",
    "1024",
];

static BUILD: Mutex<()> = Mutex::new(());

fn target_dir() -> PathBuf {
    // target/debug/deps/e2e-HASH -> target/debug
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().to_path_buf()
}

fn softswitch_bin() -> PathBuf {
    let _g = BUILD.lock().unwrap();
    let bin = target_dir().join("softswitch");
    if !bin.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let root = target_dir().parent().unwrap().to_path_buf();
        let st = Command::new(cargo)
            .args(["build", "-p", "softswitch", "--bin", "softswitch"])
            .env("CARGO_TARGET_DIR", &root)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .expect("running cargo to build softswitch");
        assert!(st.success(), "cargo build -p softswitch failed");
    }
    assert!(bin.exists(), "{} missing", bin.display());
    bin
}

fn make_test_plan(dir: &Path) -> Plan {
    let g = sgnn_graph::load_graph("rmat:scale=8,edge_factor=8").unwrap();
    let req = PlanRequest {
        config: PlanConfig {
            workers: WORKERS as u32,
            partitioner: "metis".into(),
            switch_mem_bytes: 16 << 10,
            agg_bytes: 128,
            feature_dim: DIM as u32,
            order: "gamr".into(),
            seed: 1,
            max_passes: 256,
        },
        graph_source: "rmat:scale=8,edge_factor=8".into(),
        max_abs_value: 8.0,
    };
    let (plan, _) = make_plan(g.csr, g.stats, &req, &mut |_| {}).unwrap();
    assert!(plan.blocks.len() >= 2, "several blocks wanted");
    plan.save(dir).unwrap();
    plan
}

fn free_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

struct Testbed {
    switch: Child,
    switch_addr: String,
    worker_addrs: Vec<String>,
}

impl Testbed {
    fn start(plan: &Path, drop: f64, stats: &Path) -> Testbed {
        let worker_addrs: Vec<String> = (0..WORKERS)
            .map(|_| format!("127.0.0.1:{}", free_port()))
            .collect();
        let mut switch = Command::new(softswitch_bin())
            .arg("--plan")
            .arg(plan)
            .args(worker_addrs.iter().flat_map(|a| ["--worker", a.as_str()]))
            .args(["--drop-prob", &drop.to_string(), "--stats-json"])
            .arg(stats)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(switch.stdout.take().unwrap()).lines();
        let first = lines.next().unwrap().unwrap();
        let switch_addr = first
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("softswitch said {first:?}"))
            .to_string();
        // Keep draining its stdout so it never blocks.
        std::thread::spawn(move || for _ in lines {});
        Testbed {
            switch,
            switch_addr,
            worker_addrs,
        }
    }

    fn hostd(&self, plan: &Path, w: usize, extra: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_sgnn-hostd"));
        c.arg("--plan")
            .arg(plan)
            .args(["--worker-id", &w.to_string()])
            .args(["--switch", &self.switch_addr])
            .args(["--bind", &self.worker_addrs[w]])
            .args(PACING)
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        c
    }

    fn stop(mut self) {
        drop(self.switch.stdin.take());
        let _ = wait_deadline(&mut self.switch, Duration::from_secs(20));
        let _ = self.switch.kill();
    }
}

/// Waits for `c` for at most `d`; kills it and returns None on timeout.
fn wait_deadline(c: &mut Child, d: Duration) -> Option<ExitStatus> {
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

fn stderr_of(c: &mut Child) -> String {
    let mut s = String::new();
    use std::io::Read;
    c.stderr.take().unwrap().read_to_string(&mut s).unwrap();
    s
}

fn read_f32(p: &Path) -> Vec<f32> {
    match read_npy(p).unwrap().data {
        NpyData::F32(v) => v,
        other => panic!("{}: {}", p.display(), other.dtype_name()),
    }
}

fn read_u32(p: &Path) -> Vec<u32> {
    match read_npy(p).unwrap().data {
        NpyData::U32(v) => v,
        other => panic!("{}: {}", p.display(), other.dtype_name()),
    }
}

/// Runs 4 workers for 2 layers (4 rounds) with `--verify`, then checks round 0's files
/// against an independent reference.
fn run_cluster(drop: f64, mode: &str) {
    let dir = tempfile::tempdir().unwrap();
    let plan_dir = dir.path().join("plan");
    let plan = make_test_plan(&plan_dir);
    let out = dir.path().join("out");
    let tb = Testbed::start(&plan_dir, drop, &dir.path().join("switch.json"));
    let mut kids: Vec<Child> = (0..WORKERS)
        .map(|w| {
            let stats = dir.path().join(format!("w{w}.json"));
            tb.hostd(
                &plan_dir,
                w,
                &[
                    "--mode",
                    mode,
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
                    out.to_str().unwrap(),
                    "--stats-json",
                    stats.to_str().unwrap(),
                ],
            )
            .spawn()
            .unwrap()
        })
        .collect();
    for (w, k) in kids.iter_mut().enumerate() {
        let st = wait_deadline(k, Duration::from_secs(240));
        let err = stderr_of(k);
        assert!(
            st.is_some_and(|s| s.success()),
            "worker {w} ({mode}, drop {drop}) failed: {st:?}\n{err}"
        );
        assert!(err.contains("every round matched the reference"), "{err}");
    }
    tb.stop();

    // Independent check of round 0: f64 sums of the real features within the codec bound,
    // and bit-equality with the fixed-point reference.
    let n = plan.graph.num_vertices();
    let x = Features::random(n, DIM, 5).data;
    let fixed = WorkerView::new(&plan, 0, None).unwrap().fixed;
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
            serde_json::from_slice(&std::fs::read(dir.path().join(format!("w{w}.json"))).unwrap())
                .unwrap();
        assert_eq!(stats["ok"], true);
        assert_eq!(stats["stats"]["rounds"].as_array().unwrap().len(), 4);
    }
    assert_eq!(seen, n, "every vertex belongs to exactly one worker");
    if drop > 0.0 {
        let sw: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.path().join("switch.json")).unwrap())
                .unwrap();
        assert!(sw["drop_simulated"].as_u64().unwrap() > 0);
    }
}

#[test]
fn four_workers_exact_without_drops() {
    run_cluster(0.0, "switchgnn");
}

#[test]
fn four_workers_exact_at_one_percent_drop() {
    run_cluster(0.01, "switchgnn");
}

#[test]
fn four_workers_exact_at_five_percent_drop() {
    run_cluster(0.05, "switchgnn");
}

#[test]
fn host_based_baseline_exact_at_one_percent_drop() {
    run_cluster(0.01, "host-based");
}

#[test]
fn a_killed_worker_makes_the_others_fail_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let plan_dir = dir.path().join("plan");
    make_test_plan(&plan_dir);
    let tb = Testbed::start(&plan_dir, 0.0, &dir.path().join("switch.json"));
    let mut kids: Vec<Child> = (0..WORKERS)
        .map(|w| {
            tb.hostd(&plan_dir, w, &["--layers", "1000", "--timeout", "2"])
                .spawn()
                .unwrap()
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    kids[3].kill().unwrap();
    kids[3].wait().unwrap();
    for (w, k) in kids.iter_mut().enumerate().take(3) {
        let st = wait_deadline(k, Duration::from_secs(60));
        let err = stderr_of(k);
        let st = st.unwrap_or_else(|| panic!("worker {w} hung:\n{err}"));
        assert!(!st.success(), "worker {w} should fail:\n{err}");
        assert!(err.contains("error: worker"), "{err}");
        assert!(
            err.contains("may have died") || err.contains("worker 3"),
            "the error should point at the dead worker:\n{err}"
        );
    }
    tb.stop();
}

#[test]
fn refuses_a_plan_that_does_not_fit() {
    let dir = tempfile::tempdir().unwrap();
    let plan_dir = dir.path().join("plan");
    make_test_plan(&plan_dir);
    let tb = Testbed::start(&plan_dir, 0.0, &dir.path().join("switch.json"));
    for (id, args, want) in [
        ("7", vec![], "worker id 7 is not in this plan"),
        ("0", vec!["--feature-dim", "100"], "re-plan"),
        ("0", vec!["--switch-mem", "1024"], "--switch-mem 1024"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_sgnn-hostd"))
            .arg("--plan")
            .arg(&plan_dir)
            .args(["--worker-id", id])
            .args(["--switch", &tb.switch_addr])
            .args(["--bind", &tb.worker_addrs[0]])
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success());
        assert!(err.contains(want), "{args:?}: {err}");
    }
    tb.stop();
}

#[test]
fn serves_a_training_process_over_a_unix_socket() {
    let dir = tempfile::tempdir().unwrap();
    let plan_dir = dir.path().join("plan");
    let plan = make_test_plan(&plan_dir);
    let tb = Testbed::start(&plan_dir, 0.01, &dir.path().join("switch.json"));
    let socks: Vec<PathBuf> = (0..WORKERS)
        .map(|w| dir.path().join(format!("w{w}.sock")))
        .collect();
    let mut kids: Vec<Child> = (0..WORKERS)
        .map(|w| {
            tb.hostd(
                &plan_dir,
                w,
                &["--serve", socks[w].to_str().unwrap(), "--timeout", "60"],
            )
            .spawn()
            .unwrap()
        })
        .collect();
    let n = plan.graph.num_vertices();
    let dim = 40;
    let x = Features::random(n, dim, 11).data;
    let fixed = WorkerView::new(&plan, 0, None).unwrap().fixed;
    let want = reference_sums(&plan.graph, fixed, dim, &x);
    let clients: Vec<_> = socks
        .iter()
        .cloned()
        .map(|sock| {
            let x = x.clone();
            std::thread::spawn(move || {
                let t = Instant::now();
                let s = loop {
                    match UnixStream::connect(&sock) {
                        Ok(s) => break s,
                        Err(_) if t.elapsed() < Duration::from_secs(30) => {
                            std::thread::sleep(Duration::from_millis(20))
                        }
                        Err(e) => panic!("{}: {e}", sock.display()),
                    }
                };
                let mut r = BufReader::new(s.try_clone().unwrap());
                let mut w = s;
                ipc::write_request(&mut w, &Request::Hello).unwrap();
                let Some(Reply::Info {
                    vertices, max_dim, ..
                }) = ipc::read_reply(&mut r).unwrap()
                else {
                    panic!("expected INFO")
                };
                assert_eq!(max_dim, 64);
                let values: Vec<f32> = vertices
                    .iter()
                    .flat_map(|&v| x[v as usize * dim..(v as usize + 1) * dim].to_vec())
                    .collect();
                ipc::write_request(
                    &mut w,
                    &Request::Propagate {
                        layer: 0,
                        direction: Direction::Forward,
                        rows: vertices.len() as u32,
                        dim: dim as u32,
                        values,
                    },
                )
                .unwrap();
                let Some(Reply::Sums { values, round, .. }) = ipc::read_reply(&mut r).unwrap()
                else {
                    panic!("expected SUMS")
                };
                assert_eq!(round, 0);
                ipc::write_request(&mut w, &Request::Close).unwrap();
                assert_eq!(ipc::read_reply(&mut r).unwrap(), Some(Reply::Bye));
                (vertices, values)
            })
        })
        .collect();
    for c in clients {
        let (verts, sums) = c.join().unwrap();
        for (i, &v) in verts.iter().enumerate() {
            for k in 0..dim {
                assert_eq!(
                    sums[i * dim + k].to_bits(),
                    want[v as usize * dim + k].to_bits()
                );
            }
        }
    }
    for (w, k) in kids.iter_mut().enumerate() {
        let st = wait_deadline(k, Duration::from_secs(60));
        let err = stderr_of(k);
        assert!(st.is_some_and(|s| s.success()), "worker {w}: {err}");
    }
    tb.stop();
}
