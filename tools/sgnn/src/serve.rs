//! `sgnn serve`: a cluster whose daemons serve training processes of your own (PyTorch through
//! `python/switchgnn`, or any client of the Unix-socket interface in `docs/host.md`). Plans the
//! graph, starts the switch and loads it, starts one `sgnn-hostd --serve OUT/wW.sock` per
//! worker, prints where each listens, and waits until every client has closed its session.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::testbed::cluster::{link_bytes, Cluster, ClusterSpec};
use crate::testbed::procs::{install_interrupt_handler, Supervisor, INTERRUPTED};
use crate::testbed::{plan_graph, Net, PlanOptions, SwitchKind};

/// Options of `sgnn serve`.
#[derive(clap::Args, Debug, Clone)]
pub struct ServeArgs {
    /// Graph: SNAP edge list (.txt/.gz), .npy [E,2] edges, a dataset name, or
    /// rmat:scale=S,edge_factor=F[,seed=..]. Its vertex ids are the rows clients send.
    #[arg(long, default_value = "rmat:scale=10,edge_factor=8,seed=1")]
    pub graph: String,
    /// Workers (one daemon, one client each).
    #[arg(long, default_value_t = 2)]
    pub workers: u32,
    /// Most values per vertex a client may send in one exchange.
    #[arg(long, default_value_t = 64)]
    pub feature_dim: u32,
    /// switchgnn (through the switch) or host-based (the baseline).
    #[arg(long, default_value = "switchgnn")]
    pub mode: String,
    /// Switch aggregator memory, e.g. 256KB, 4MB.
    #[arg(long, default_value = "4MB")]
    pub switch_mem: String,
    /// How the plan delivers the sums in switchgnn mode: paper, partials, multicast or auto
    /// (as `switch-ctl plan --aggregate`).
    #[arg(long, value_name = "MODE", default_value = "paper", value_parser = crate::testbed::parse_aggregate)]
    pub aggregate: sgnn_plan::AggregateMode,
    /// Graph partitioner: metis, random, chunk or g3.
    #[arg(long, default_value = "metis")]
    pub partitioner: sgnn_plan::Partitioner,
    /// Seed of the plan.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Network, as `sgnn testbed --net`.
    #[arg(long, value_enum, default_value = "udp")]
    pub net: Net,
    /// The switch, as `sgnn testbed --switch`.
    #[arg(long, value_enum, default_value = "softswitch")]
    pub switch: SwitchKind,
    /// A daemon gives up after this long without progress inside an exchange, seconds.
    #[arg(long, default_value_t = 20.0)]
    pub timeout: f64,
    /// Give up if the clients have not all finished after this many seconds (0: never).
    #[arg(long, default_value_t = 0.0)]
    pub max_seconds: f64,
    /// Drop each frame with this probability, each way between a host and the switch (as
    /// `sgnn testbed --loss`; the daemons recover every sum, so clients see no difference).
    #[arg(long, default_value_t = 0.0)]
    pub loss: f64,
    /// Pad the graph with isolated vertices up to this many (the rows of a feature matrix
    /// whose last vertices have no edges; every vertex is served by some worker). The graph's
    /// ids must be dense (not renumbered, docs/formats.md).
    #[arg(long, value_name = "N")]
    pub num_vertices: Option<usize>,
    /// Output directory: the plan (OUT/plan), the sockets (OUT/wW.sock), logs and counters.
    #[arg(long, default_value = "serve-out")]
    pub out: PathBuf,
}

pub fn main(a: ServeArgs) -> ExitCode {
    install_interrupt_handler();
    let sup = Supervisor::default();
    let r = run(&a, &sup);
    sup.kill_all();
    match r {
        Ok(s) => {
            println!("served: {s}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("FAILED: {}", format!("{e:#}").replace('\n', " | "));
            ExitCode::FAILURE
        }
    }
}

fn run(a: &ServeArgs, sup: &Supervisor) -> Result<String> {
    if !matches!(a.mode.as_str(), "switchgnn" | "host-based") {
        bail!("--mode {}: use switchgnn or host-based", a.mode);
    }
    if a.workers < 2 {
        bail!("--workers must be at least 2");
    }
    if !(0.0..1.0).contains(&a.loss) {
        bail!("--loss {} must be in [0, 1)", a.loss);
    }
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    let out = a.out.canonicalize()?;
    let plan_dir = out.join("plan");
    let mut g = sgnn_graph::load_graph(&a.graph).with_context(|| format!("loading {}", a.graph))?;
    if let Some(n) = a.num_vertices {
        if g.original_ids.is_some() {
            bail!(
                "--num-vertices {n}: the ids of {} are sparse and were renumbered, so rows and vertices would not match; give an edge list with ids 0..{n}",
                a.graph
            );
        }
        if g.csr.num_vertices() > n {
            bail!(
                "--num-vertices {n}, but {} has vertex ids up to {}: give at least {}",
                a.graph,
                g.csr.num_vertices() - 1,
                g.csr.num_vertices()
            );
        }
        let edges: Vec<_> = g.csr.edges().collect();
        g.csr = sgnn_graph::Csr::from_edges(n, &edges).0;
    }
    let plan = plan_graph(
        g.csr,
        g.stats,
        &a.graph,
        &PlanOptions {
            workers: a.workers,
            partitioner: a.partitioner,
            switch_mem: &a.switch_mem,
            feature_dim: a.feature_dim,
            seed: a.seed,
            aggregate: a.aggregate,
            recycle_slack: None,
            cores: 1,
        },
        &plan_dir,
    )?;
    let workers = plan.workers() as usize;
    let spec = ClusterSpec {
        workers,
        net: a.net,
        switch: a.switch,
        loss: a.loss,
        reorder: 0.0,
        duplicate: 0.0,
        seed: a.seed,
        rate_mbps: 400.0,
        pace: sgnn_transport::Pacing::Planned,
        port_rate_mbps: None,
        ecn_threshold_bytes: None,
        timeout: a.timeout,
        pcap: None,
        metrics: None,
    };
    let run_dir = out.join(&a.mode);
    let _ = std::fs::remove_dir_all(&run_dir);
    std::fs::create_dir_all(&run_dir)?;
    let cluster = Cluster::start(&spec, sup, &plan_dir, &a.mode, &run_dir)?;
    let mut daemons = Vec::new();
    for w in 0..workers {
        let sock = out.join(format!("w{w}.sock"));
        let _ = std::fs::remove_file(&sock);
        let c = cluster.daemon(
            w,
            &a.mode,
            &plan_dir,
            &["--serve".into(), sock.display().to_string()],
        );
        let log = run_dir.join(format!("w{w}.log"));
        let (i, _) = sup.spawn(&format!("daemon {w}"), c, &log, false)?;
        daemons.push((i, sock));
    }
    // Wait for every socket, then say where they are (stdout: scripts read it).
    let t = Instant::now();
    for (w, (i, sock)) in daemons.iter().enumerate() {
        while !sock.exists() {
            if let Some(s) = sup.try_wait(*i) {
                bail!("daemon {w} exited with {s}: {}", sup.log_tail(*i, 1).trim());
            }
            if t.elapsed() > Duration::from_secs_f64(a.timeout + 30.0) {
                bail!("daemon {w} did not open {} in time", sock.display());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        println!("worker {w}: {}", sock.display());
    }
    println!(
        "ready: {workers} daemons ({}) on plan {}; each client sends HELLO, PROPAGATE..., CLOSE",
        a.mode,
        plan_dir.display()
    );
    let started = Instant::now();
    loop {
        if INTERRUPTED.load(Ordering::SeqCst) {
            bail!("interrupted (Ctrl-C); every process was stopped");
        }
        let mut running = 0;
        for (w, (i, _)) in daemons.iter().enumerate() {
            match sup.try_wait(*i) {
                None => running += 1,
                Some(s) if s.success() => {}
                Some(s) => bail!("daemon {w} exited with {s}: {}", sup.log_tail(*i, 1).trim()),
            }
        }
        if running == 0 {
            break;
        }
        if a.max_seconds > 0.0 && started.elapsed().as_secs_f64() > a.max_seconds {
            bail!(
                "{running} daemons still serving after --max-seconds {}",
                a.max_seconds
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let switch = cluster.stop(sup)?;
    let bytes: u64 = link_bytes(&switch, sgnn_switch::counters::PORT_RX.name, workers)
        .iter()
        .sum::<u64>()
        + link_bytes(&switch, sgnn_switch::counters::PORT_TX.name, workers)
            .iter()
            .sum::<u64>();
    Ok(format!(
        "{workers} clients closed their sessions after {:.2} s; {:.2} MB on links ({})",
        started.elapsed().as_secs_f64(),
        bytes as f64 / 1e6,
        a.mode
    ))
}
