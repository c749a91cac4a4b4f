//! `sgnn testbed`: a whole SwitchGNN cluster on this machine.
//!
//! Plans the graph, starts the software switch and one `sgnn-hostd` per worker (over UDP on
//! loopback), runs L layers forward and backward with real feature values, checks every
//! worker's sums against a single-process reference, runs the host-based baseline the same
//! way, and reports both side by side. Children are killed on any failure and on Ctrl-C. The
//! last line printed starts with `verified:` or `FAILED:`, and the exit code agrees.

pub mod cluster;
pub mod procs;
mod veth;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{json, Value};
use sgnn_graph::npy::read_npy;
use sgnn_graph::Features;
use sgnn_plan::delivery::AggregateMode;
use sgnn_plan::model::PlanConfig;
use sgnn_plan::Plan;
use sgnn_planner::planner::{make_plan, PlanRequest};
use sgnn_wire::codec::FixedPoint;

use cluster::{Cluster, ClusterSpec};
use procs::{binary, install_interrupt_handler, Supervisor, INTERRUPTED};

/// Options of `sgnn testbed`.
#[derive(clap::Args, Debug, Clone)]
pub struct TestbedArgs {
    /// Graph: SNAP edge list (.txt/.gz), .npy [E,2] edges, a dataset name, or
    /// rmat:scale=S,edge_factor=F[,seed=..].
    #[arg(long, default_value = "rmat:scale=12,edge_factor=8,seed=1")]
    pub graph: String,
    /// Workers (one sgnn-hostd each).
    #[arg(long, default_value_t = 4)]
    pub workers: u32,
    /// Values per vertex (feature and gradient width).
    #[arg(long, default_value_t = 64)]
    pub feature_dim: u32,
    /// Layers: L forward rounds, then L backward rounds.
    #[arg(long, default_value_t = 2)]
    pub layers: u32,
    /// Rounds instead of layers (even: N/2 forward, then N/2 backward), e.g. `--rounds 1000
    /// --loss 0.01` for a soak run; the report adds every process's memory over the run and
    /// the switch's aggregators left in use.
    #[arg(long, value_name = "N", conflicts_with = "layers")]
    pub rounds: Option<u32>,
    /// Switch aggregator memory, e.g. 256KB, 10MB.
    #[arg(long, default_value = "4MB")]
    pub switch_mem: String,
    /// Graph partitioner: metis, random, chunk or g3.
    #[arg(long, default_value = "metis")]
    pub partitioner: sgnn_plan::Partitioner,
    /// Seed of the plan and the features.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Loss probability of every frame, each way between a host and the switch.
    #[arg(long, default_value_t = 0.0)]
    pub loss: f64,
    /// Probability a frame from the switch is held back behind the next one (reordering).
    #[arg(long, default_value_t = 0.0)]
    pub reorder: f64,
    /// Probability a frame from the switch is sent twice.
    #[arg(long, default_value_t = 0.0)]
    pub duplicate: f64,
    /// Kill this worker (SIGKILL) mid-run, --kill-after-ms after the workers start; the run
    /// must then fail with a clear error from the others (not hang).
    #[arg(long, value_name = "W")]
    pub kill_worker: Option<u32>,
    /// When --kill-worker strikes, in milliseconds after the workers start.
    #[arg(long, default_value_t = 30, value_name = "MS")]
    pub kill_after_ms: u64,
    /// Restart the switch mid-run, MS milliseconds after the workers of each SwitchGNN run
    /// start: its tables and registers are wiped as a restart loses them (`switch-ctl clear`
    /// over P4Runtime), then the plan is loaded again as a control plane does after a
    /// restart. The partial sums the switch held are gone: the workers notice through the
    /// probes they send while a block makes no progress and the run fails with their
    /// message (never a hang). The host-based baseline is not restarted.
    #[arg(long, value_name = "MS")]
    pub restart_switch_after: Option<u64>,
    /// Skip the host-based baseline.
    #[arg(long)]
    pub no_baseline: bool,
    /// Starting send rate of each worker, Mbit/s (ECN and losses adjust it).
    #[arg(long, default_value_t = 400.0)]
    pub rate_mbps: f64,
    /// A worker gives up after this long without progress, seconds.
    #[arg(long, default_value_t = 20.0)]
    pub timeout: f64,
    /// Network: `udp` (loopback, no privileges; faults injected by the switch), `veth` (a
    /// namespace per worker and one for the switch, veth links, AF_PACKET, faults by `tc netem`
    /// where the kernel has it; root) or `memif` (DPDK to DPDK: the switch has one net_memif
    /// server port per worker, each daemon a memif client; no hugepages, no kernel in the path)
    /// or `veth-dpdk` (as `veth`, the daemons on DPDK net_af_packet).
    #[arg(long, value_enum, default_value = "udp")]
    pub net: Net,
    /// The switch: the software switch, or bmv2 (`simple_switch_grpc`, compiled from `p4/`
    /// with `p4c`; found on PATH or through SIMPLE_SWITCH_GRPC / P4C; implies --net veth).
    #[arg(long, value_enum, default_value = "softswitch")]
    pub switch: SwitchKind,
    /// How the plan delivers the sums, one run each, side by side (comma-separated): `paper`
    /// (the paper's per-edge blocks; its run is named `switchgnn`), `partials` (senders
    /// pre-aggregate, one pass per partial), `multicast` (raw vertices replicated by the
    /// switch, summed by the receivers) and `auto` (the planner's per-pair mix under the
    /// default switch profile); the others' runs are named `switchgnn-MODE`, and the
    /// host-based baseline runs on the first one's partition. See `switch-ctl plan --help`.
    #[arg(long, value_name = "MODE[,MODE]", default_value = "paper,auto", value_delimiter = ',', value_parser = parse_aggregate)]
    pub aggregate: Vec<AggregateMode>,
    /// Delivery plans (every --aggregate but paper) recycle aggregators by live range
    /// (`switch-ctl plan --recycle`): several destinations share an aggregator in turn, the
    /// switch tells them apart by a generation. With a small --switch-mem this cuts blocks.
    #[arg(long)]
    pub recycle: bool,
    /// With --recycle: vectors of margin before an aggregator is reused
    /// (`switch-ctl plan --recycle-slack`).
    #[arg(long, value_name = "VECTORS", default_value_t = sgnn_plan::recycle::DEFAULT_SLACK, requires = "recycle")]
    pub recycle_slack: u64,
    /// Output directory: plan, logs, sums, stats and report.json.
    #[arg(long, default_value = "testbed-out")]
    pub out: PathBuf,
    /// Capture every frame in pcapng files under this directory: DIR/MODE/switch.pcapng from
    /// the software switch (one interface per port) and DIR/MODE/wW.pcapng from each daemon
    /// (MODE: switchgnn, host-based). With --switch bmv2 only the daemons capture. Wireshark
    /// decodes them with tools/wireshark/sgnn.lua.
    #[arg(long, value_name = "DIR")]
    pub pcap: Option<PathBuf>,
    /// Serve live Prometheus metrics from every process while it runs: the software switch
    /// on HOST:PORT, worker w's daemon on HOST:PORT+1+w (`GET /metrics`; names in
    /// docs/host.md). Each run (switchgnn, host-based) reuses the ports. Only with --net udp
    /// or memif, where every process shares this host's loopback.
    #[arg(long, value_name = "HOST:PORT")]
    pub metrics: Option<std::net::SocketAddr>,
}

/// The network of the testbed.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Net {
    /// Loopback UDP.
    Udp,
    /// Namespaces and veths.
    Veth,
    /// DPDK net_memif between the switch and each daemon.
    Memif,
    /// Namespaces and veths as `veth`, the daemons on DPDK net_af_packet (the switch on
    /// AF_PACKET).
    VethDpdk,
}

/// The switch of the testbed.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum SwitchKind {
    /// `softswitch`.
    Softswitch,
    /// bmv2 `simple_switch_grpc` running `p4/v1model/switchgnn.p4`.
    Bmv2,
}

/// What one mode's run measured.
#[derive(Debug, Clone)]
struct ModeRun {
    mode: String,
    seconds: f64,
    /// Resident memory per process (switch, w0, w1, ...): first, last and largest sample, KiB.
    rss: Vec<(String, u64, u64, u64)>,
    round_seconds: Vec<f64>,
    switch: Value,
    workers: Vec<Value>,
}

impl ModeRun {
    fn worker_sum(&self, key: &str) -> u64 {
        self.workers
            .iter()
            .map(|w| w["stats"][key].as_u64().unwrap_or(0))
            .sum()
    }

    fn link_bytes(&self, dir: &str) -> Vec<u64> {
        cluster::link_bytes(&self.switch, dir, self.workers.len())
    }
}

/// Runs the testbed; prints the report and the final `verified:`/`FAILED:` line.
pub fn main(args: TestbedArgs) -> ExitCode {
    if matches!(args.net, Net::Memif | Net::VethDpdk) && !cfg!(feature = "dpdk") {
        let net = if args.net == Net::Memif {
            "memif"
        } else {
            "veth-dpdk"
        };
        println!(
            "FAILED: this sgnn was built without DPDK, which --net {net} needs: run it as \
             `cargo run --release -p sgnn --features dpdk -- testbed --net {net}` (the cargo \
             feature `dpdk` builds the daemons and the switch with DPDK too; needs the Debian \
             packages {})",
            sgnn_netdev::dpdk_args::DPDK_PACKAGES
        );
        return ExitCode::from(2);
    }
    install_interrupt_handler();
    let sup = Supervisor::default();
    let result = run(&args, &sup);
    sup.kill_all();
    if let Some(dir) = args.pcap.as_ref().filter(|d| d.is_dir()) {
        let modes = if args.no_baseline {
            "switchgnn/"
        } else {
            "switchgnn/ and host-based/"
        };
        let switch = if args.switch == SwitchKind::Bmv2 {
            ""
        } else {
            "switch.pcapng, "
        };
        eprintln!(
            "captures in {}: {modes} hold {switch}w0..w{}.pcapng; open one with \
             `wireshark -X lua_script:tools/wireshark/sgnn.lua FILE`",
            dir.display(),
            args.workers.saturating_sub(1)
        );
    }
    match result {
        Ok(summary) => {
            println!("verified: {summary}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            let msg = format!("{e:#}").replace('\n', " | ");
            println!("FAILED: {msg}");
            ExitCode::FAILURE
        }
    }
}

pub(crate) fn parse_aggregate(s: &str) -> Result<AggregateMode, String> {
    AggregateMode::parse(s).map_err(|e| e.to_string())
}

/// The run name of a delivery: `switchgnn` for the paper's, `switchgnn-NAME` otherwise.
fn run_name(aggregate: AggregateMode) -> String {
    match aggregate {
        AggregateMode::Paper => "switchgnn".into(),
        m => format!("switchgnn-{}", m.name()),
    }
}

fn check_args(a: &TestbedArgs) -> Result<()> {
    for (name, p) in [
        ("--loss", a.loss),
        ("--reorder", a.reorder),
        ("--duplicate", a.duplicate),
    ] {
        if !(0.0..1.0).contains(&p) {
            bail!("{name} is a probability in [0, 1), got {p}");
        }
    }
    if a.workers < 2 {
        bail!("--workers must be at least 2");
    }
    if let Some(w) = a.kill_worker {
        if w >= a.workers {
            bail!("--kill-worker {w}: there are only {} workers", a.workers);
        }
    }
    if a.layers == 0 {
        bail!("--layers must be at least 1");
    }
    if a.metrics.is_some() && !matches!(a.net, Net::Udp | Net::Memif) {
        bail!("--metrics needs --net udp or --net memif: with veths the switch and the daemons run in their own network namespaces, whose addresses this host cannot reach");
    }
    if a.metrics.is_some() && a.switch == SwitchKind::Bmv2 {
        bail!("--metrics needs the software switch (bmv2 serves no metrics); drop --switch bmv2");
    }
    if let Some(m) = a.metrics {
        if m.port() == 0 || m.port() as u32 + a.workers > u16::MAX as u32 {
            bail!("--metrics {m}: give a fixed port with room for {} more above it (the workers' ports)", a.workers);
        }
    }
    if let Some(r) = a.rounds {
        if r == 0 || r % 2 == 1 {
            bail!("--rounds {r}: must be a positive even number (N/2 forward rounds, then N/2 backward)");
        }
    }
    if a.aggregate.is_empty() {
        bail!("--aggregate needs at least one of paper, partials, multicast, auto");
    }
    for (i, m) in a.aggregate.iter().enumerate() {
        if a.aggregate[..i].contains(m) {
            bail!("--aggregate lists {} twice", m.name());
        }
    }
    Ok(())
}

fn make_the_plan(a: &TestbedArgs, aggregate: AggregateMode, dir: &Path) -> Result<Plan> {
    let g = sgnn_graph::load_graph(&a.graph).with_context(|| format!("loading {}", a.graph))?;
    plan_graph(
        g.csr,
        g.stats,
        &a.graph,
        &PlanOptions {
            workers: a.workers,
            partitioner: a.partitioner,
            switch_mem: &a.switch_mem,
            feature_dim: a.feature_dim,
            seed: a.seed,
            aggregate,
            recycle_slack: (a.recycle && aggregate != AggregateMode::Paper)
                .then_some(a.recycle_slack),
        },
        dir,
    )
}

/// What the cluster commands (`testbed`, `train`, `serve`) let a user choose of a plan; the
/// rest is fixed: 128-byte aggregators (the wire's), the `gamr` order, 256 passes, one leaf.
pub(crate) struct PlanOptions<'a> {
    pub workers: u32,
    pub partitioner: sgnn_plan::Partitioner,
    /// Switch memory as the user wrote it (`4MB`).
    pub switch_mem: &'a str,
    pub feature_dim: u32,
    pub seed: u64,
    /// How the sums are delivered (`switch-ctl plan --aggregate`), chosen under the default
    /// switch profile.
    pub aggregate: AggregateMode,
    /// Recycling by live range (`switch-ctl plan --recycle-slack`), delivery plans only.
    pub recycle_slack: Option<u64>,
}

/// Plans `graph` (from `source`) with `opts`, with a spinner naming each stage, and writes
/// the plan to `dir`.
pub(crate) fn plan_graph(
    graph: sgnn_graph::Csr,
    stats: sgnn_graph::BuildStats,
    source: &str,
    opts: &PlanOptions,
    dir: &Path,
) -> Result<Plan> {
    let config = PlanConfig {
        workers: opts.workers,
        partitioner: opts.partitioner,
        switch_mem_bytes: sgnn_planner::units::parse_bytes(opts.switch_mem)
            .map_err(|e| anyhow!("--switch-mem: {e}"))?,
        agg_bytes: sgnn_wire::PAYLOAD_LEN as u32,
        feature_dim: opts.feature_dim,
        order: sgnn_plan::SendOrder::Gamr,
        seed: opts.seed,
        max_passes: 256,
        leaves: 1,
        aggregate: sgnn_plan::delivery::AggregateMode::Paper,
        recycle_slack: opts.recycle_slack,
    };
    let spinner = ProgressBar::new_spinner();
    spinner.set_style(ProgressStyle::with_template("{spinner} plan: {msg}").unwrap());
    spinner.enable_steady_tick(Duration::from_millis(100));
    let req = PlanRequest {
        config,
        graph_source: source.to_string(),
        max_abs_value: 1.0,
    };
    let (plan, mut report) = make_plan(graph, stats, &req, &mut |e| {
        if let sgnn_planner::planner::Event::Start { stage, .. } = e {
            spinner.set_message(stage.to_string());
        }
    })?;
    spinner.set_message(format!("delivery ({})", opts.aggregate.name()));
    let profile = sgnn_plan::profile::SwitchProfile::named("default")?;
    let plan = sgnn_planner::planner::apply_delivery(plan, &mut report, opts.aggregate, &profile)?;
    plan.save(dir)
        .with_context(|| format!("writing the plan to {}", dir.display()))?;
    spinner.finish_and_clear();
    eprintln!(
        "plan ({}): {} vertices, {} workers, {} blocks, {} segments per vertex -> {}",
        plan.manifest.config.aggregate,
        plan.graph.num_vertices(),
        plan.workers(),
        plan.blocks.len(),
        plan.manifest.segments,
        dir.display()
    );
    Ok(plan)
}

fn count_rounds(log: &Path) -> usize {
    std::fs::read_to_string(log)
        .map(|t| t.lines().filter(|l| l.contains(": round ")).count())
        .unwrap_or(0)
}

impl TestbedArgs {
    /// Layers run: `--layers`, or half of `--rounds`.
    pub fn layer_count(&self) -> u32 {
        self.rounds.map_or(self.layers, |r| r / 2)
    }

    /// Where and how the cluster runs.
    pub fn cluster_spec(&self) -> ClusterSpec {
        ClusterSpec {
            workers: self.workers as usize,
            net: self.net,
            switch: self.switch,
            loss: self.loss,
            reorder: self.reorder,
            duplicate: self.duplicate,
            seed: self.seed,
            rate_mbps: self.rate_mbps,
            timeout: self.timeout,
            pcap: self.pcap.clone(),
            metrics: self.metrics,
        }
    }
}

fn run_mode(
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
    let cluster = Cluster::start(&spec, sup, plan_dir, label, out)?;
    if let Some(m) = spec.metrics {
        let workers: Vec<String> = (0..workers)
            .filter_map(|w| spec.worker_metrics(w))
            .map(|a| format!("http://{a}/metrics"))
            .collect();
        eprintln!(
            "{label}: metrics on http://{m}/metrics (switch) and {} (workers 0..{})",
            workers.join(", "),
            workers.len()
        );
    }
    let started = Instant::now();
    let mut ws: Vec<(usize, PathBuf)> = Vec::new();
    for w in 0..workers {
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

    let bar = ProgressBar::new((workers * rounds) as u64);
    bar.set_style(
        ProgressStyle::with_template("{msg:>12} [{bar:30}] {pos}/{len} worker-rounds {elapsed}")
            .unwrap()
            .progress_chars("=> "),
    );
    bar.set_message(label.to_string());
    let mut killed = false;
    let mut restarted = false;
    let restart_after = a
        .restart_switch_after
        .filter(|_| mode != "host-based")
        .map(Duration::from_millis);
    let mut cluster = cluster;
    let limit = Duration::from_secs_f64(a.timeout * (rounds as f64 + 2.0) + 30.0);
    let mut failures = Vec::new();
    // Memory of every process, sampled every half second: (first, last, max) KiB.
    let mut watched: Vec<(String, u32)> =
        vec![("switch".into(), sup.pid(cluster.switch_process()))];
    watched.extend(
        ws.iter()
            .enumerate()
            .map(|(w, (i, _))| (format!("w{w}"), sup.pid(*i))),
    );
    let mut rss: Vec<Option<(u64, u64, u64)>> = vec![None; watched.len()];
    let mut next_sample = Instant::now();
    let mut warm_seen = vec![false; watched.len()];
    loop {
        if Instant::now() >= next_sample {
            next_sample += Duration::from_millis(500);
            // The first sample that counts is the first after a second of running (the
            // processes have loaded the plan and started exchanging by then), unless the run
            // is shorter.
            let warm = started.elapsed() >= Duration::from_secs(1);
            for (k, (_, pid)) in watched.iter().enumerate() {
                if let Some(kib) = procs::rss_kib(*pid) {
                    let e = rss[k].get_or_insert((kib, kib, kib));
                    if warm && !warm_seen[k] {
                        warm_seen[k] = true;
                        *e = (kib, kib, kib);
                    }
                    e.1 = kib;
                    e.2 = e.2.max(kib);
                }
            }
        }
        if INTERRUPTED.load(Ordering::SeqCst) {
            bar.abandon();
            bail!("interrupted (Ctrl-C); every process was stopped");
        }
        let done: usize = ws.iter().map(|(_, l)| count_rounds(l).min(rounds)).sum();
        bar.set_position(done as u64);
        if let Some(k) = a.kill_worker {
            let (i, log) = &ws[k as usize];
            let _ = log;
            if !killed && started.elapsed() >= Duration::from_millis(a.kill_after_ms) {
                sup.kill(*i);
                killed = true;
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
                Some(s) => failures.push((w, s, sup.log_tail(*i, 3))),
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
    if !failures.is_empty() {
        let msgs: Vec<String> = failures
            .iter()
            .map(|(w, s, tail)| {
                let last = tail.lines().last().unwrap_or("").trim().to_string();
                if killed && Some(*w as u32) == a.kill_worker {
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
    let switch = cluster.stop(sup)?;
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
    let rss = watched
        .iter()
        .zip(rss)
        .filter_map(|((name, _), r)| r.map(|(f, l, m)| (name.clone(), f, l, m)))
        .collect();
    Ok(ModeRun {
        mode: label.to_string(),
        seconds,
        rss,
        round_seconds,
        switch,
        workers: workers_json,
    })
}

/// Installs the plan into the switch over P4Runtime, as `switch-ctl load` does (pushing the
/// compiled P4 program first on bmv2).
pub(crate) fn load_switch(
    plan_dir: &Path,
    addr: &str,
    bmv2: bool,
    drop_prob: f64,
    out: &Path,
) -> Result<switch_ctl::target::P4RuntimeTarget> {
    let plan = Plan::load(plan_dir)?;
    let expected = sgnn_p4rt::schema::switchgnn_p4info();
    let mut target = if bmv2 {
        let (p4info, json) = veth::compile_p4(out)?;
        switch_ctl::target::P4RuntimeTarget::connect_and_install(
            addr,
            0,
            1,
            Default::default(),
            &p4info,
            json,
        )?
    } else {
        switch_ctl::target::P4RuntimeTarget::connect(addr, 0, 1, &expected).map_err(|e| {
            let differs = matches!(e, switch_ctl::target::TargetError::Mismatch { .. });
            let hint = if differs {
                let bin = binary("softswitch", "SGNN_SOFTSWITCH")
                    .map(|p| p.display().to_string())
                    .unwrap_or_else(|_| "softswitch".into());
                format!(
                    " (the software switch {bin} runs another version of the program than this sgnn: if you updated the sources, rebuild every binary with `cargo build --release --workspace`)"
                )
            } else {
                String::new()
            };
            anyhow::anyhow!("{e}{hint}")
        })?
    };
    install_plan(&mut target, &plan, addr, drop_prob)?;
    Ok(target)
}

/// Installs `plan`'s tables, groups and settings into a connected switch (`switch-ctl load`).
pub(crate) fn install_plan(
    target: &mut switch_ctl::target::P4RuntimeTarget,
    plan: &Plan,
    addr: &str,
    drop_prob: f64,
) -> Result<()> {
    use switch_ctl::install::{install, sizes_of};
    use switch_ctl::program::{program_for, Deployment};
    let mut dep = Deployment::standard(plan.workers());
    dep.drop_probability = drop_prob;
    let sizes = sizes_of(target)?;
    let prog = program_for(plan, &dep, &sizes)?;
    let r = install(target, &prog, 1000, &mut |_, _| {})?;
    eprintln!(
        "switch-ctl load: {} operations in {:.2} s ({:.0}/s) into {addr}",
        r.entries,
        r.seconds,
        r.rate()
    );
    Ok(())
}

/// Checks every worker's sums of every round against a single-process reference computed
/// here from the same features. Returns the number of values checked.
fn verify(plan: &Plan, a: &TestbedArgs, out: &Path) -> Result<u64> {
    use sgnn_transport::reference::{next_layer, reference_sums};
    let n = plan.graph.num_vertices();
    let dim = a.feature_dim as usize;
    let max_degree = (0..n as u32)
        .map(|v| plan.graph.degree(v) as u32)
        .max()
        .unwrap_or(1)
        .max(1);
    let fixed = FixedPoint::new(plan.manifest.frac_bits, max_degree);
    let degrees: Vec<u32> = (0..n as u32).map(|v| plan.graph.degree(v) as u32).collect();
    let mut checked = 0u64;
    let mut round = 0usize;
    for (seed, _) in [(a.seed, "forward"), (a.seed.wrapping_add(1), "backward")] {
        let mut x = Features::random(n, dim, seed).data;
        for _ in 0..a.layer_count() {
            let want = reference_sums(&plan.graph, fixed, dim, &x);
            for w in 0..a.workers {
                let vp = out.join(format!("sums/w{w:03}_vertices.npy"));
                let sp = out.join(format!("sums/w{w:03}_r{round:03}.npy"));
                let vertices: Vec<u32> = match read_npy(&vp)
                    .with_context(|| format!("reading {}", vp.display()))?
                    .data
                {
                    sgnn_graph::npy::NpyData::U32(v) => v,
                    d => bail!("{} holds {}, not uint32", vp.display(), d.dtype_name()),
                };
                let sums: Vec<f32> = match read_npy(&sp)
                    .with_context(|| format!("reading {}", sp.display()))?
                    .data
                {
                    sgnn_graph::npy::NpyData::F32(v) => v,
                    d => bail!("{} holds {}, not float32", sp.display(), d.dtype_name()),
                };
                if sums.len() != vertices.len() * dim {
                    bail!(
                        "{}: {} values for {} vertices",
                        sp.display(),
                        sums.len(),
                        vertices.len()
                    );
                }
                for (k, &v) in vertices.iter().enumerate() {
                    for j in 0..dim {
                        let got = sums[k * dim + j];
                        let exp = want[v as usize * dim + j];
                        if got.to_bits() != exp.to_bits() {
                            bail!("worker {w}, round {round}: vertex {v} value {j} is {got}, the single-process reference says {exp}");
                        }
                        checked += 1;
                    }
                }
            }
            x = next_layer(&want, &degrees, dim);
            round += 1;
        }
    }
    Ok(checked)
}

fn mb(b: u64) -> String {
    format!("{:.2} MB", b as f64 / 1e6)
}

fn run(a: &TestbedArgs, sup: &Supervisor) -> Result<String> {
    check_args(a)?;
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    // One plan per delivery (the first in `plan/`, the others in `plan-NAME/`); the baseline
    // runs on the first.
    let mut plans = Vec::new();
    for (i, &m) in a.aggregate.iter().enumerate() {
        let dir = if i == 0 {
            a.out.join("plan")
        } else {
            a.out.join(format!("plan-{}", m.name()))
        };
        let plan = make_the_plan(a, m, &dir)?;
        plans.push((run_name(m), "switchgnn", dir, plan));
    }
    if !a.no_baseline {
        let (_, _, dir, plan) = &plans[0];
        let (dir, plan) = (dir.clone(), plan.clone());
        plans.push(("host-based".to_string(), "host-based", dir, plan));
    }
    let plan = plans[0].3.clone();
    let mut runs = Vec::new();
    let mut checked = 0;
    for (label, mode, plan_dir, plan) in &plans {
        let out = a.out.join(label);
        let _ = std::fs::remove_dir_all(&out);
        let r = run_mode(a, sup, plan_dir, mode, label, &out)?;
        checked += verify(plan, a, &out).with_context(|| format!("{label} sums"))?;
        runs.push(r);
    }
    // Report.
    let mut rows = Vec::new();
    let mut table = String::new();
    table += &format!(
        "{:<18} {:>9} {:>12} {:>12} {:>10} {:>8} {:>8} {:>8}\n",
        "mode", "time", "ms/layer", "link bytes", "switch rx", "retx", "fetches", "ecn"
    );
    for (r, p) in runs.iter().zip(&plans) {
        let blocks = p.3.blocks.len();
        let up: u64 = r
            .link_bytes(sgnn_switch::counters::PORT_RX.name)
            .iter()
            .sum();
        let down: u64 = r
            .link_bytes(sgnn_switch::counters::PORT_TX.name)
            .iter()
            .sum();
        let per_layer = r.round_seconds.iter().sum::<f64>() / r.round_seconds.len() as f64 * 1e3;
        table += &format!(
            "{:<18} {:>8.2}s {:>12.1} {:>12} {:>10} {:>8} {:>8} {:>8}\n",
            r.mode,
            r.seconds,
            per_layer,
            mb(up + down),
            r.switch["rx"].as_u64().unwrap_or(0),
            r.worker_sum("retransmissions"),
            r.worker_sum("fetches_sent"),
            r.worker_sum("ecn_marks"),
        );
        rows.push(json!({
            "mode": r.mode,
            "blocks": blocks,
            "seconds": r.seconds,
            "round_seconds": r.round_seconds,
            "ms_per_layer": per_layer,
            "link_bytes_up": r.link_bytes(sgnn_switch::counters::PORT_RX.name),
            "link_bytes_down": r.link_bytes(sgnn_switch::counters::PORT_TX.name),
            "retransmissions": r.worker_sum("retransmissions"),
            "fetches": r.worker_sum("fetches_sent"),
            "ecn_marks": r.worker_sum("ecn_marks"),
            "switch": r.switch,
            "rss_kib": r.rss.iter().map(|(n, f, l, m)| json!({"process": n, "first": f, "last": l, "max": m})).collect::<Vec<_>>(),
        }));
    }
    eprintln!("\n{table}");
    for r in &runs {
        let up = r.link_bytes(sgnn_switch::counters::PORT_RX.name);
        let down = r.link_bytes(sgnn_switch::counters::PORT_TX.name);
        let links: Vec<String> = (0..up.len())
            .map(|w| format!("w{w} up {} down {}", mb(up[w]), mb(down[w])))
            .collect();
        eprintln!("{} links: {}", r.mode, links.join(", "));
    }
    for r in &runs {
        let mem: Vec<String> = r
            .rss
            .iter()
            .map(|(n, f, l, m)| {
                format!(
                    "{n} {:.1}->{:.1} (max {:.1})",
                    *f as f64 / 1024.0,
                    *l as f64 / 1024.0,
                    *m as f64 / 1024.0
                )
            })
            .collect();
        let aggs = match (
            r.switch["busy_aggregators"].as_u64(),
            r.switch["stale_aggregators"].as_u64(),
        ) {
            (Some(b), Some(s)) => format!("; aggregators left busy {b}, stale {s}"),
            _ => String::new(),
        };
        eprintln!(
            "{} memory MiB (after 1 s -> at the end): {}{aggs}",
            r.mode,
            mem.join(", ")
        );
    }
    let report = json!({
        "graph": a.graph,
        "workers": a.workers,
        "feature_dim": a.feature_dim,
        "layers": a.layer_count(),
        "blocks": plan.blocks.len(),
        "loss": a.loss, "reorder": a.reorder, "duplicate": a.duplicate,
        "values_checked": checked,
        "runs": rows,
    });
    let rp = a.out.join("report.json");
    std::fs::write(&rp, serde_json::to_string_pretty(&report)? + "\n")?;
    eprintln!("report: {}", rp.display());
    let per_layer =
        |r: &ModeRun| r.round_seconds.iter().sum::<f64>() / r.round_seconds.len() as f64 * 1e3;
    let bytes = |r: &ModeRun| {
        mb(r.link_bytes(sgnn_switch::counters::PORT_RX.name)
            .iter()
            .sum::<u64>()
            + r.link_bytes(sgnn_switch::counters::PORT_TX.name)
                .iter()
                .sum::<u64>())
    };
    let sg = &runs[0];
    let mut summary = format!(
        "{} workers x {} rounds exact ({} values); {} {:.1} ms/layer, {} on links",
        a.workers,
        2 * a.layer_count(),
        checked,
        sg.mode,
        per_layer(sg),
        bytes(sg)
    );
    for r in &runs[1..] {
        summary += &format!("; {} {:.1} ms/layer, {}", r.mode, per_layer(r), bytes(r));
    }
    Ok(summary)
}
