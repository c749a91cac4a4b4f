//! The real `softswitch` binary and four real `sgnn-hostd` processes over loopback UDP.
//!
//! The softswitch binary belongs to another package; it is built on demand (`cargo build -p
//! softswitch`) into this test's target directory if it is not there yet. The same cluster
//! over AF_PACKET and DPDK datapaths is in `hostd_datapaths.rs`.

use std::io::{BufRead, BufReader};
use std::net::UdpSocket;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use sgnn_graph::Features;
use sgnn_ipc::{self as ipc, Reply, Request};
use sgnn_transport::reference::reference_sums;
use sgnn_transport::{Direction, WorkerView};

mod hostd_common;
use hostd_common::*;

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

/// A port `p` such that `p .. p + n` were all free a moment ago.
fn consecutive_ports(n: u16) -> u16 {
    loop {
        let p = free_port();
        if p.checked_add(n).is_some()
            && (1..n).all(|i| UdpSocket::bind(("127.0.0.1", p + i)).is_ok())
        {
            return p;
        }
    }
}

impl Testbed {
    fn start(plan: &Path, drop: f64, stats: &Path) -> Testbed {
        let worker_addrs: Vec<String> = (0..WORKERS)
            .map(|_| format!("127.0.0.1:{}", free_port()))
            .collect();
        Testbed::start_with(plan, drop, stats, worker_addrs)
    }

    /// The software switch with the plan's workers at `worker_addrs`, in order.
    fn start_with(plan: &Path, drop: f64, stats: &Path, worker_addrs: Vec<String>) -> Testbed {
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
        let mut c = Command::new(hostd_bin());
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

/// Waits for every worker's daemon; each must exit successfully. Returns their stderr.
fn wait_all_ok(kids: &mut [Child], what: &str) -> Vec<String> {
    let mut errs = Vec::new();
    for (w, k) in kids.iter_mut().enumerate() {
        let st = wait_deadline(k, Duration::from_secs(240));
        let err = stderr_of(k);
        assert!(
            st.is_some_and(|s| s.success()),
            "worker {w} ({what}) failed: {st:?}\n{err}"
        );
        errs.push(err);
    }
    errs
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
            let mut args = vec!["--mode".to_string(), mode.to_string()];
            args.extend(verified_run_args(&out, &stats));
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            tb.hostd(&plan_dir, w, &args).spawn().unwrap()
        })
        .collect();
    for err in wait_all_ok(&mut kids, &format!("{mode}, drop {drop}")) {
        assert!(err.contains("every round matched the reference"), "{err}");
    }
    tb.stop();

    check_cluster_output(&plan, dir.path(), &out, drop);
}

/// `sgnn-hostd --cores 2`: each of the 4 workers is one process running its two cores on two
/// threads, over a plan split by columns (`switch-ctl plan --cores 2`), at 1% loss. Every
/// core verifies its rounds, writes its own statistics, and the sums, joined back by column,
/// are the unsplit job's (same features, same fixed point) bit for bit.
#[test]
fn one_worker_on_two_cores_in_one_process_is_exact() {
    let dir = tempfile::tempdir().unwrap();
    let plan = make_test_plan(&dir.path().join("unsplit"));
    let split = sgnn_planner::split::split_columns(plan.clone(), 2).unwrap();
    let plan_dir = dir.path().join("plan");
    split.save(&plan_dir).unwrap();
    let base = consecutive_ports(2 * WORKERS as u16);
    let addrs: Vec<String> = (0..2 * WORKERS as u16)
        .map(|i| format!("127.0.0.1:{}", base + i))
        .collect();
    let out = dir.path().join("out");
    let tb = Testbed::start_with(&plan_dir, 0.01, &dir.path().join("switch.json"), addrs);
    let mut kids: Vec<Child> = (0..WORKERS)
        .map(|w| {
            let stats = dir.path().join(format!("w{w}.json"));
            let mut args = vec!["--cores".to_string(), "2".to_string()];
            if w == 1 {
                // Each core serves its own metrics (port 0: each picks a free one).
                args.extend(["--metrics".to_string(), "127.0.0.1:0".to_string()]);
            }
            args.extend(verified_run_args(&out, &stats));
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let mut c = tb.hostd(&plan_dir, w, &args);
            // `hostd` binds worker w's address; core k of worker w is split worker 2w + k.
            c.args(["--bind", &tb.worker_addrs[2 * w]]);
            c.spawn().unwrap()
        })
        .collect();
    for (w, err) in wait_all_ok(&mut kids, "2 cores").into_iter().enumerate() {
        assert_eq!(
            err.matches("every round matched the reference").count(),
            2,
            "both cores verified: {err}"
        );
        if w == 1 {
            assert_eq!(err.matches("metrics on http://").count(), 2, "{err}");
        }
        for k in 0..2 {
            let f = dir.path().join(format!("w{w}.core{k}.json"));
            let stats: serde_json::Value =
                serde_json::from_slice(&std::fs::read(&f).unwrap()).unwrap();
            assert_eq!(stats["ok"], true, "{}", f.display());
            assert_eq!(stats["stats"]["rounds"].as_array().unwrap().len(), 4);
        }
    }
    tb.stop();
    // Round 0 against the unsplit job's reference, column for column.
    let n = plan.graph.num_vertices();
    let d = DIM / 2;
    let x = Features::random(n, DIM, 5).data;
    let fixed = WorkerView::new(&plan, 0, None).unwrap().fixed;
    let want = reference_sums(&plan.graph, fixed, DIM, &x);
    let mut seen = 0;
    for s in 0..2 * WORKERS {
        let verts = read_u32(&out.join(format!("w{s:03}_vertices.npy")));
        let got = read_f32(&out.join(format!("w{s:03}_r000.npy")));
        assert_eq!(got.len(), verts.len() * d);
        for (i, &sv) in verts.iter().enumerate() {
            let (k, v) = (sv as usize / n, sv as usize % n);
            assert_eq!(k, s % 2, "split worker {s} holds copy {k}");
            for j in 0..d {
                assert_eq!(
                    got[i * d + j].to_bits(),
                    want[v * DIM + k * d + j].to_bits(),
                    "vertex {v}, value {}",
                    k * d + j
                );
            }
            seen += 1;
        }
    }
    assert_eq!(
        seen,
        2 * n,
        "every copy of every vertex belongs to one core"
    );
}

/// `--cores` on a plan that is not split that way, or off UDP, says what to do instead.
#[test]
fn cores_refuse_a_plan_not_split_that_way() {
    let dir = tempfile::tempdir().unwrap();
    let plan = make_test_plan(&dir.path().join("unsplit"));
    let split_dir = dir.path().join("split");
    sgnn_planner::split::split_columns(plan.clone(), 2)
        .unwrap()
        .save(&split_dir)
        .unwrap();
    let run = |plan: &Path, extra: &[&str]| {
        let o = Command::new(hostd_bin())
            .arg("--plan")
            .arg(plan)
            .args([
                "--worker-id",
                "0",
                "--switch",
                "127.0.0.1:9",
                "--bind",
                "127.0.0.1:0",
            ])
            .args(extra)
            .output()
            .unwrap();
        assert!(!o.status.success());
        String::from_utf8_lossy(&o.stderr).to_string()
    };
    let e = run(&dir.path().join("unsplit"), &["--cores", "2"]);
    assert!(
        e.contains("make it with `switch-ctl plan --cores 2`"),
        "{e}"
    );
    let e = run(&split_dir, &["--cores", "4"]);
    assert!(
        e.contains("split over 2 cores per worker; pass --cores 2"),
        "{e}"
    );
    let e = run(&split_dir, &["--cores", "2"]);
    assert!(e.contains("give a fixed port"), "{e}");
    let e = run(&split_dir, &["--cores", "2", "--datapath", "af-packet"]);
    assert!(e.contains("start one sgnn-hostd per core"), "{e}");
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

/// A second job on the same software switch without reloading it (issue 14: it hung until
/// `--timeout` with thousands of `drop_stale`): after a first job of 2 layers, four new
/// daemons with the same plan stop at the start-up probe, each saying where the switch is and
/// to reload it, with no Data frame of theirs reaching the switch.
#[test]
fn a_second_job_on_a_switch_that_was_not_reloaded_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let plan_dir = dir.path().join("plan");
    make_test_plan(&plan_dir);
    let tb = Testbed::start(&plan_dir, 0.0, &dir.path().join("switch.json"));
    let run = |args: &[&str]| -> Vec<Child> {
        (0..WORKERS)
            .map(|w| tb.hostd(&plan_dir, w, args).spawn().unwrap())
            .collect()
    };
    for (w, k) in run(&["--layers", "2"]).iter_mut().enumerate() {
        let st = wait_deadline(k, Duration::from_secs(120));
        let err = stderr_of(k);
        assert!(
            st.is_some_and(|s| s.success()),
            "first job, worker {w}:
{err}"
        );
    }
    // The same plan again, with a stall timeout far above what the refusal takes.
    for (w, k) in run(&["--layers", "2", "--timeout", "600"])
        .iter_mut()
        .enumerate()
    {
        let st = wait_deadline(k, Duration::from_secs(120));
        let err = stderr_of(k);
        let st = st.unwrap_or_else(|| panic!("second job, worker {w} hung:\n{err}"));
        assert!(!st.success(), "second job, worker {w} should fail:\n{err}");
        assert!(
            err.contains("the switch is at round") && err.contains("switch-ctl load"),
            "worker {w} should say the switch holds an earlier run and to reload it:\n{err}"
        );
    }
    tb.stop();
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
        let out = Command::new(hostd_bin())
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
    // The same graph planned with another order: a different plan the switch does not hold.
    // The daemon learns the switch's plan tag from its start-up probe and refuses.
    let other_dir = dir.path().join("other");
    let mut other = sgnn_plan::Plan::load(&plan_dir).unwrap();
    other.blocks.reverse();
    other.save(&other_dir).unwrap();
    let mine = sgnn_plan::Plan::load(&plan_dir).unwrap().tag();
    let out = tb
        .hostd(&other_dir, 0, &["--timeout", "10"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains(&format!("the switch holds the plan with tag {mine:08x}"))
            && err.contains(&format!("{:08x}", other.tag())),
        "{err}"
    );
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

/// `--config FILE` carries every flag (the command line overriding it), and `--check`
/// verifies plan, flags, datapath and the switch's answer, then exits: `check: ok` against
/// the switch that holds the plan, the plan-tag error against one that holds another, and a
/// key the daemon does not have is refused naming the file.
#[test]
fn config_file_and_check() {
    let dir = tempfile::tempdir().unwrap();
    let plan_dir = dir.path().join("plan");
    make_test_plan(&plan_dir);
    let tb = Testbed::start(&plan_dir, 0.0, &dir.path().join("switch.json"));
    let cfg = dir.path().join("w1.toml");
    std::fs::write(
        &cfg,
        format!(
            "plan = {:?}\nworker_id = 1\nswitch = {:?}\nbind = {:?}\ntimeout = 10\n",
            plan_dir.display().to_string(),
            tb.switch_addr,
            tb.worker_addrs[1]
        ),
    )
    .unwrap();
    let run = |extra: &[&str]| {
        Command::new(hostd_bin())
            .arg("--config")
            .arg(&cfg)
            .args(extra)
            .output()
            .unwrap()
    };
    let o = run(&["--check"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success() && out.starts_with("check: ok: worker 1 of plan"),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // The command line overrides the file: another plan, which the switch does not hold.
    let other_dir = dir.path().join("other");
    let mut other = sgnn_plan::Plan::load(&plan_dir).unwrap();
    other.blocks.reverse();
    other.save(&other_dir).unwrap();
    let o = run(&["--check", "--plan", other_dir.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("the switch holds the plan with tag"),
        "{err}"
    );
    std::fs::write(&cfg, "plann = \"x\"\n").unwrap();
    let o = run(&["--check"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("w1.toml") && err.contains("unknown key `plann`"),
        "{err}"
    );
    tb.stop();
}

/// Logs go through `tracing` with `RUST_LOG`: by default one line per round and per block
/// transition; `debug` adds every fetch and retransmission (here forced by 5% drops at the
/// switch); `warn` silences both while errors still print.
#[test]
fn rust_log_filters_the_daemons_log_lines() {
    let dir = tempfile::tempdir().unwrap();
    let plan_dir = dir.path().join("plan");
    make_test_plan(&plan_dir);
    let tb = Testbed::start(&plan_dir, 0.05, &dir.path().join("switch.json"));
    let levels = ["debug", "info", "warn", "info"];
    let mut kids: Vec<Child> = (0..WORKERS)
        .map(|w| {
            let mut c = tb.hostd(&plan_dir, w, &["--layers", "1", "--timeout", "30"]);
            c.env("RUST_LOG", levels[w]);
            c.spawn().unwrap()
        })
        .collect();
    let mut logs = Vec::new();
    for (w, k) in kids.iter_mut().enumerate() {
        let st = wait_deadline(k, Duration::from_secs(240));
        let err = stderr_of(k);
        assert!(st.is_some_and(|s| s.success()), "worker {w}: {err}");
        logs.push(err);
    }
    tb.stop();
    let has = |w: usize, s: &str| logs[w].contains(s);
    assert!(
        has(0, "advanced by the switch") && has(0, ": round 0 "),
        "{}",
        logs[0]
    );
    assert!(
        has(0, "fetch vertex") || has(0, "resend vertex"),
        "debug shows recovery events at 5% drop: {}",
        logs[0]
    );
    assert!(
        has(1, "advanced by the switch") && has(1, ": round 0 "),
        "{}",
        logs[1]
    );
    assert!(
        !has(1, "fetch vertex") && !has(1, "resend vertex"),
        "info has no per-event lines: {}",
        logs[1]
    );
    assert!(
        !has(2, "advanced by the switch") && !has(2, ": round 0 "),
        "warn: {}",
        logs[2]
    );
}
