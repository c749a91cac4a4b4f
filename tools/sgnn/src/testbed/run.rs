//! One run (one delivery's SwitchGNN, or the host-based baseline): the switch started and
//! loaded ([`Cluster::start`]), one `sgnn-hostd` per worker started on it, supervised until
//! every one has finished (progress bar, `--kill-worker`, `--restart-switch-after`, Ctrl-C,
//! the overall time limit, every process's memory), then what they measured collected: the
//! switch's counters and each worker's stats JSON.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::Value;

use super::cluster::{self, Cluster, ClusterSpec};
use super::procs::{self, Supervisor, INTERRUPTED};
use super::TestbedArgs;

/// A process's resident memory over a run: its name (`switch`, `w0`, ...), then the first,
/// last and largest sample, KiB.
pub(super) type Memory = (String, u64, u64, u64);

/// What one mode's run measured.
#[derive(Debug, Clone)]
pub(super) struct ModeRun {
    pub mode: String,
    pub seconds: f64,
    /// Resident memory per process (switch, w0, w1, ...): first, last and largest sample, KiB.
    pub rss: Vec<Memory>,
    pub round_seconds: Vec<f64>,
    pub switch: Value,
    pub workers: Vec<Value>,
}

impl ModeRun {
    /// `stats.KEY` summed over the workers.
    pub fn worker_sum(&self, key: &str) -> u64 {
        self.workers
            .iter()
            .map(|w| w["stats"][key].as_u64().unwrap_or(0))
            .sum()
    }

    /// Bytes on each worker's link in direction `dir` (`port_rx`: up, `port_tx`: down).
    pub fn link_bytes(&self, dir: &str) -> Vec<u64> {
        cluster::link_bytes(&self.switch, dir, self.workers.len())
    }

    /// Bytes on every link, both ways.
    pub fn link_total(&self) -> u64 {
        self.link_bytes(sgnn_switch::counters::PORT_RX.name)
            .iter()
            .sum::<u64>()
            + self
                .link_bytes(sgnn_switch::counters::PORT_TX.name)
                .iter()
                .sum::<u64>()
    }

    /// CPU seconds of the exchange and frames (received plus sent) of every process that
    /// reported them on exit: the switch first (`exchange_cpu_seconds` of its counters: since
    /// its first frame; bmv2 reports none), then each worker (`exchange_cpu_seconds` of its
    /// stats JSON: inside its rounds). Start-up and plan loading are not included.
    pub fn cpu(&self) -> Vec<(String, f64, u64)> {
        let mut out = Vec::new();
        if let Some(c) = self.switch["exchange_cpu_seconds"].as_f64() {
            let frames = [
                sgnn_switch::counters::PORT_RX.name,
                sgnn_switch::counters::PORT_TX.name,
            ]
            .iter()
            .flat_map(|dir| cluster::port_counts(&self.switch, dir, "packets", self.workers.len()))
            .sum();
            out.push(("switch".to_string(), c, frames));
        }
        for (w, j) in self.workers.iter().enumerate() {
            if let Some(c) = j["exchange_cpu_seconds"].as_f64() {
                let frames = j["sent_total"]["packets"].as_u64().unwrap_or(0)
                    + j["received_total"]["packets"].as_u64().unwrap_or(0);
                out.push((format!("w{w}"), c, frames));
            }
        }
        out
    }

    /// Mean time of a round (the slowest worker's), in milliseconds.
    pub fn ms_per_layer(&self) -> f64 {
        self.round_seconds.iter().sum::<f64>() / self.round_seconds.len() as f64 * 1e3
    }
}

/// Runs the daemons in `mode` (`switchgnn` or `host-based`) on the plan in `plan_dir`, named
/// `label`, writing into `out`; fails with every failed worker's last words.
pub(super) fn run_mode(
    a: &TestbedArgs,
    sup: &Supervisor,
    plan_dir: &Path,
    mode: &'static str,
    label: &str,
    out: &Path,
) -> Result<ModeRun> {
    std::fs::create_dir_all(out.join("sums"))?;
    let workers = a.workers as usize;
    let rounds = 2 * a.layer_count() as usize;
    let spec = a.cluster_spec();
    let mut cluster = Cluster::start(&spec, sup, plan_dir, label, out)?;
    say_metrics(&spec, label);
    let ws = start_workers(a, sup, &cluster, plan_dir, mode, out)?;
    let (seconds, rss) = supervise(a, sup, &mut cluster, plan_dir, mode, label, &ws)?;
    let switch = cluster.stop(sup)?;
    let (workers_json, round_seconds) = collect(out, workers, rounds)?;
    Ok(ModeRun {
        mode: label.to_string(),
        seconds,
        rss,
        round_seconds,
        switch,
        workers: workers_json,
    })
}

/// With `--metrics`: where each process of this run serves them.
fn say_metrics(spec: &ClusterSpec, label: &str) {
    if let Some(m) = spec.metrics {
        let workers: Vec<String> = (0..spec.workers)
            .filter_map(|w| spec.worker_metrics(w))
            .map(|a| format!("http://{a}/metrics"))
            .collect();
        eprintln!(
            "{label}: metrics on http://{m}/metrics (switch) and {} (workers 0..{})",
            workers.join(", "),
            workers.len()
        );
    }
}

/// The daemons of a run.
struct Workers {
    /// When the first was started.
    started: Instant,
    /// Worker `w`'s supervisor index and log.
    procs: Vec<(usize, PathBuf)>,
}

/// Starts worker `w`'s daemon for every worker, each running the layers stand-alone and
/// writing its sums into `out/sums`.
fn start_workers(
    a: &TestbedArgs,
    sup: &Supervisor,
    cluster: &Cluster,
    plan_dir: &Path,
    mode: &str,
    out: &Path,
) -> Result<Workers> {
    let started = Instant::now();
    let mut ws: Vec<(usize, PathBuf)> = Vec::new();
    for w in 0..a.workers as usize {
        let extra: Vec<String> = vec![
            "--layers".into(),
            a.layer_count().to_string(),
            "--feature-dim".into(),
            a.feature_dim.to_string(),
            "--seed".into(),
            a.seed.to_string(),
            "--output-dir".into(),
            out.join("sums").display().to_string(),
        ];
        let c = cluster.daemon(w, mode, plan_dir, &extra);
        let log = out.join(format!("w{w}.log"));
        let (i, _) = sup.spawn(&format!("worker {w}"), c, &log, false)?;
        ws.push((i, log));
    }
    Ok(Workers { started, procs: ws })
}

/// Waits for the workers to finish, showing their rounds on a progress bar, sampling every
/// process's memory, and striking as `--kill-worker` and `--restart-switch-after` say.
/// Returns the seconds the run took and the memory ([`MemoryWatch::finish`]); fails on
/// Ctrl-C, when the time limit passes, or with every worker that exited with an error.
fn supervise(
    a: &TestbedArgs,
    sup: &Supervisor,
    cluster: &mut Cluster,
    plan_dir: &Path,
    mode: &str,
    label: &str,
    workers: &Workers,
) -> Result<(f64, Vec<Memory>)> {
    let (started, ws) = (workers.started, &workers.procs[..]);
    let rounds = 2 * a.layer_count() as usize;
    let bar = ProgressBar::new((ws.len() * rounds) as u64);
    bar.set_style(
        ProgressStyle::with_template("{msg:>12} [{bar:30}] {pos}/{len} worker-rounds {elapsed}")
            .unwrap()
            .progress_chars("=> "),
    );
    bar.set_message(label.to_string());
    // When --kill-worker struck, and when the first survivor stopped (naming it).
    let mut killed_at: Option<Instant> = None;
    let mut detected = false;
    let mut restarted = false;
    let restart_after = a
        .restart_switch_after
        .filter(|_| mode != "host-based")
        .map(Duration::from_millis);
    let limit = Duration::from_secs_f64(a.timeout * (rounds as f64 + 2.0) + 30.0);
    let mut failures = Vec::new();
    // Memory of every process, sampled every 50 ms: (first, last, max) KiB.
    let mut memory = MemoryWatch::new(sup, cluster.switch_process(), ws);
    loop {
        memory.sample(started);
        if INTERRUPTED.load(Ordering::SeqCst) {
            bar.abandon();
            bail!("interrupted (Ctrl-C); every process was stopped");
        }
        let done: usize = ws.iter().map(|(_, l)| count_rounds(l).min(rounds)).sum();
        bar.set_position(done as u64);
        if let Some(k) = a.kill_worker {
            let (i, _) = &ws[k as usize];
            if killed_at.is_none() && started.elapsed() >= Duration::from_millis(a.kill_after_ms) {
                sup.kill(*i);
                killed_at = Some(Instant::now());
                eprintln!(
                    "killed worker {k} {} ms after the start",
                    started.elapsed().as_millis()
                );
            }
        }
        if let Some(after) = restart_after {
            if !restarted && started.elapsed() >= after {
                restarted = true;
                cluster.restart_switch(plan_dir)?;
                eprintln!(
                    "restarted the switch {} ms after the start (tables and registers wiped, plan loaded again)",
                    started.elapsed().as_millis()
                );
            }
        }
        let mut running = 0;
        failures.clear();
        for (w, (i, _)) in ws.iter().enumerate() {
            match sup.try_wait(*i) {
                None => running += 1,
                Some(s) if s.success() => {}
                Some(s) => {
                    if let (Some(k), false) = (killed_at, detected) {
                        if Some(w as u32) != a.kill_worker {
                            detected = true;
                            eprintln!(
                                "detected: worker {w} stopped {} ms after worker {} was killed",
                                k.elapsed().as_millis(),
                                a.kill_worker.unwrap_or(0)
                            );
                        }
                    }
                    failures.push((w, s, sup.log_tail(*i, 3)))
                }
            }
        }
        if running == 0 {
            break;
        }
        if started.elapsed() > limit {
            bar.abandon();
            bail!(
                "{label}: {running} workers still running after {:.0} s",
                limit.as_secs_f64()
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    bar.finish_and_clear();
    let seconds = started.elapsed().as_secs_f64();
    if let (Some(after), false) = (restart_after, restarted) {
        eprintln!(
            "warning: {label}: the switch was not restarted: the run finished {:.0} ms after the start, before --restart-switch-after {} ms",
            seconds * 1e3,
            after.as_millis()
        );
    }
    if !failures.is_empty() {
        let msgs: Vec<String> = failures
            .iter()
            .map(|(w, s, tail)| {
                let last = tail.lines().last().unwrap_or("").trim().to_string();
                if killed_at.is_some() && Some(*w as u32) == a.kill_worker {
                    format!("worker {w} was killed by --kill-worker")
                } else {
                    format!("worker {w} exited with {s}: {last}")
                }
            })
            .collect();
        let cause = if restarted {
            "the switch was restarted by --restart-switch-after; "
        } else {
            ""
        };
        bail!("{label}: {cause}{}", msgs.join("; "));
    }
    Ok((seconds, memory.finish()))
}

/// Rounds a daemon has logged as done so far.
fn count_rounds(log: &Path) -> usize {
    std::fs::read_to_string(log)
        .map(|t| t.lines().filter(|l| l.contains(": round ")).count())
        .unwrap_or(0)
}

/// Every worker's stats (`out/wW.json`) and each round's time, the slowest worker's.
fn collect(out: &Path, workers: usize, rounds: usize) -> Result<(Vec<Value>, Vec<f64>)> {
    let read_json = |p: PathBuf| -> Result<Value> {
        let t = std::fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))?;
        Ok(serde_json::from_str(&t)?)
    };
    let workers_json: Vec<Value> = (0..workers)
        .map(|w| read_json(out.join(format!("w{w}.json"))))
        .collect::<Result<_>>()?;
    let mut round_seconds = vec![0f64; rounds];
    for w in &workers_json {
        for (r, st) in w["stats"]["rounds"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            if r < rounds {
                round_seconds[r] = round_seconds[r].max(st["seconds"].as_f64().unwrap_or(0.0));
            }
        }
    }
    Ok((workers_json, round_seconds))
}

/// The resident memory of the switch and every worker, sampled every 50 ms while the
/// run lasts: first, last and largest sample of each, in KiB.
struct MemoryWatch {
    /// Name (`switch`, `w0`, ...) and process id.
    watched: Vec<(String, u32)>,
    rss: Vec<Option<(u64, u64, u64)>>,
    next_sample: Instant,
    warm_seen: Vec<bool>,
}

impl MemoryWatch {
    /// Watches the switch (supervisor index `switch`) and the workers `ws`.
    fn new(sup: &Supervisor, switch: usize, ws: &[(usize, PathBuf)]) -> MemoryWatch {
        let mut watched: Vec<(String, u32)> = vec![("switch".into(), sup.pid(switch))];
        watched.extend(
            ws.iter()
                .enumerate()
                .map(|(w, (i, _))| (format!("w{w}"), sup.pid(*i))),
        );
        let n = watched.len();
        MemoryWatch {
            watched,
            rss: vec![None; n],
            next_sample: Instant::now() + Duration::from_millis(50),
            warm_seen: vec![false; n],
        }
    }

    /// Samples every process if 50 ms have passed since the last sample (a run of the main
    /// command takes a few hundred ms now: half a second saw only each process's start).
    fn sample(&mut self, started: Instant) {
        if Instant::now() < self.next_sample {
            return;
        }
        self.next_sample += Duration::from_millis(50);
        // The first sample that counts is the first after a second of running (the
        // processes have loaded the plan and started exchanging by then), unless the run
        // is shorter.
        let warm = started.elapsed() >= Duration::from_secs(1);
        for (k, (_, pid)) in self.watched.iter().enumerate() {
            if let Some(kib) = procs::rss_kib(*pid) {
                let e = self.rss[k].get_or_insert((kib, kib, kib));
                if warm && !self.warm_seen[k] {
                    self.warm_seen[k] = true;
                    *e = (kib, kib, kib);
                }
                e.1 = kib;
                e.2 = e.2.max(kib);
            }
        }
    }

    /// (name, first, last, max) of every process sampled at least once.
    fn finish(self) -> Vec<Memory> {
        self.watched
            .iter()
            .zip(self.rss)
            .filter_map(|((name, _), r)| r.map(|(f, l, m)| (name.clone(), f, l, m)))
            .collect()
    }
}
