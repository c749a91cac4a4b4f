//! A distributed run of `sgnn train`: the cluster, the daemons, the shards, one training
//! process per worker and the coordinator, watched until every worker ends or one fails.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use sgnn_plan::Plan;
use sgnn_train::data::LabelledGraph;
use sgnn_train::distributed::coordinate;
use sgnn_train::train::{EpochStat, Recipe};

use super::worker::{WorkerOutcome, WorkerSpec};
use super::{print_epoch, ModeResult, TrainArgs};
use crate::testbed::cluster::{link_bytes, Cluster, ClusterSpec};
use crate::testbed::procs::{Supervisor, INTERRUPTED};

/// Trains with one process per worker through the daemons of a cluster started for `mode`.
pub(super) fn train_distributed(
    a: &TrainArgs,
    g: &LabelledGraph,
    recipe: &Recipe,
    mode: &str,
    plan: &Plan,
    plan_dir: &Path,
    sup: &Supervisor,
) -> Result<ModeResult> {
    let out = a.out.join(mode);
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let out = out.canonicalize()?;
    let workers = plan.workers() as usize;
    let spec = ClusterSpec {
        workers,
        net: a.net,
        switch: a.switch,
        loss: a.loss,
        reorder: 0.0,
        duplicate: 0.0,
        seed: a.seed,
        rate_mbps: a.rate_mbps,
        pace: a.pace,
        port_rate_mbps: None,
        ecn_threshold_bytes: None,
        timeout: a.timeout,
        pcap: None,
        metrics: None,
    };
    let cluster = Cluster::start(&spec, sup, plan_dir, mode, &out)?;
    let mut daemons = Vec::new();
    for w in 0..workers {
        let sock = out.join(format!("w{w}.sock"));
        let c = cluster.daemon(
            w,
            mode,
            plan_dir,
            &["--serve".into(), sock.display().to_string()],
        );
        let (i, _) = sup.spawn(
            &format!("daemon {w}"),
            c,
            &out.join(format!("w{w}.log")),
            false,
        )?;
        daemons.push(i);
    }
    // The coordinator: weight-gradient sums, scale maxima, progress, dead-worker detection.
    let listener = TcpListener::bind("127.0.0.1:0").context("binding the coordinator")?;
    let coord_addr = listener.local_addr()?.to_string();
    let stop = Arc::new(AtomicBool::new(false));
    let (etx, erx) = mpsc::channel::<String>();
    let join_timeout = Duration::from_secs_f64(a.timeout + 60.0);
    let coord = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            coordinate(listener, workers, join_timeout, &stop, &mut |j| {
                let _ = etx.send(j.to_string());
            })
        })
    };
    let max_degree = (0..g.num_vertices() as u32)
        .map(|v| g.csr.degree(v) as u32)
        .max()
        .unwrap_or(1);
    let exe = this_executable()?;
    let mut trainers = Vec::new();
    for w in 0..workers {
        let vertices: Vec<u32> = (0..g.num_vertices() as u32)
            .filter(|&v| plan.partition[v as usize] == w as u32)
            .collect();
        let dir = out.join(format!("workers/w{w}"));
        g.shard(vertices).write(&dir)?;
        let ws = WorkerSpec {
            worker: w as u32,
            coordinator: coord_addr.clone(),
            daemon_socket: out.join(format!("w{w}.sock")),
            shard: dir.clone(),
            recipe: recipe.clone(),
            max_degree,
            outcome: dir.join("outcome.json"),
            connect_timeout_s: a.timeout + 30.0,
        };
        let sp = dir.join("spec.json");
        std::fs::write(&sp, serde_json::to_string_pretty(&ws)? + "\n")?;
        let mut c = Command::new(&exe);
        c.arg("train-worker").arg("--spec").arg(&sp);
        // Several workers share the cores: one compute thread each.
        c.env("MATMUL_NUM_THREADS", "1")
            .env("RAYON_NUM_THREADS", "1");
        let (i, _) = sup.spawn(
            &format!("trainer {w}"),
            c,
            &out.join(format!("trainer{w}.log")),
            false,
        )?;
        trainers.push(i);
    }
    let started = Instant::now();
    let mut last_progress = Instant::now();
    // A last resort: the daemons detect a stalled exchange themselves (--timeout) and their
    // workers then exit, which stops every other. An epoch may legitimately last minutes on a
    // loaded machine, so the limit grows with the longest epoch seen.
    let mut stall = Duration::from_secs_f64(10.0 * a.timeout + 60.0);
    let mut killed: Option<Instant> = None;
    let mut first_failure: Option<Instant> = None;
    loop {
        if INTERRUPTED.load(Ordering::SeqCst) {
            stop.store(true, Ordering::SeqCst);
            bail!("interrupted (Ctrl-C); every process was stopped");
        }
        while let Ok(j) = erx.try_recv() {
            if let Ok(e) = serde_json::from_str::<EpochStat>(&j) {
                print_epoch(mode, &e, recipe.epochs);
                stall = stall.max(Duration::from_secs_f64(5.0 * e.epoch_ms / 1e3));
            }
            last_progress = Instant::now();
        }
        if let Some(k) = a.kill_worker {
            if killed.is_none() && started.elapsed() >= Duration::from_millis(a.kill_after_ms) {
                sup.kill(trainers[k as usize]);
                killed = Some(Instant::now());
                eprintln!(
                    "killed worker {k}'s training process {} ms after the start",
                    started.elapsed().as_millis()
                );
            }
        }
        let mut running = 0;
        for &i in trainers.iter().chain(&daemons) {
            match sup.try_wait(i) {
                None => running += usize::from(trainers.contains(&i)),
                Some(s) if !s.success() && first_failure.is_none() => {
                    first_failure = Some(Instant::now())
                }
                Some(_) => {}
            }
        }
        if running == 0 {
            break;
        }
        if let Some(t) = first_failure {
            if t.elapsed() > Duration::from_secs(15) {
                stop.store(true, Ordering::SeqCst);
                bail!("{running} workers still running 15 s after a process failed; stopped them");
            }
        }
        if last_progress.elapsed() > stall {
            stop.store(true, Ordering::SeqCst);
            bail!(
                "no epoch ended for {:.0} s; stopped every process",
                stall.as_secs_f64()
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let coord_result = coord
        .join()
        .map_err(|_| anyhow!("the coordinator panicked"))?;
    let mut failures = Vec::new();
    for (w, &i) in trainers.iter().enumerate() {
        match sup.try_wait(i) {
            Some(s) if s.success() => {}
            Some(s) => {
                let tail = sup.log_tail(i, 1);
                if killed.is_some() && a.kill_worker == Some(w as u32) {
                    failures.push(format!("worker {w} was killed by --kill-worker"));
                } else {
                    failures.push(format!("worker {w} exited with {s}: {}", tail.trim()));
                }
            }
            None => {}
        }
    }
    if let Err(e) = coord_result {
        let after = killed
            .map(|t| {
                format!(
                    " (every worker stopped {} ms after the kill)",
                    t.elapsed().as_millis()
                )
            })
            .unwrap_or_default();
        bail!("{e}{after}; {}", failures.join("; "));
    }
    if !failures.is_empty() {
        bail!("{}", failures.join("; "));
    }
    // The daemons exit after the final barrier that CLOSE starts.
    let t = Instant::now();
    while daemons.iter().any(|&i| sup.try_wait(i).is_none())
        && t.elapsed() < Duration::from_secs(15)
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    for (w, &i) in daemons.iter().enumerate() {
        match sup.try_wait(i) {
            Some(s) if s.success() => {}
            Some(s) => bail!("daemon {w} exited with {s}: {}", sup.log_tail(i, 1).trim()),
            None => bail!("daemon {w} did not exit after CLOSE"),
        }
    }
    let switch = cluster.stop(sup)?;
    let bytes: u64 = link_bytes(&switch, sgnn_switch::counters::PORT_RX.name, workers)
        .iter()
        .sum::<u64>()
        + link_bytes(&switch, sgnn_switch::counters::PORT_TX.name, workers)
            .iter()
            .sum::<u64>();
    let p = out.join("workers/w0/outcome.json");
    let wo: WorkerOutcome = serde_json::from_str(
        &std::fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))?,
    )
    .with_context(|| format!("parsing {}", p.display()))?;
    Ok(ModeResult {
        mode: mode.to_string(),
        outcome: wo.outcome,
        bytes_on_links: bytes,
        scale_range: Some(wo.scale_range),
    })
}

/// This `sgnn`, to start the worker processes. When the binary was rebuilt while this one
/// runs, Linux names the running image `PATH (deleted)`; the new binary at PATH is used then.
fn this_executable() -> Result<PathBuf> {
    let exe = std::env::current_exe().context("finding this sgnn")?;
    if exe.exists() {
        return Ok(exe);
    }
    let s = exe.to_string_lossy();
    if let Some(p) = s.strip_suffix(" (deleted)") {
        if Path::new(p).exists() {
            return Ok(PathBuf::from(p));
        }
    }
    bail!(
        "this sgnn ({}) is no longer on disk, so its worker processes cannot start; run it again",
        exe.display()
    )
}
