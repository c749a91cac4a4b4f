//! `sgnn-hostd`: one SwitchGNN worker. Runs the layers of a stand-alone run over the switch
//! (or the host-based baseline), or serves a training process over a Unix socket.

use std::io::{BufReader, BufWriter};
use std::net::SocketAddr;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::{Parser, ValueEnum};
use sgnn_graph::npy::write_npy;
use sgnn_graph::Features;
use sgnn_ipc::{self as ipc, Reply, Request};
use sgnn_plan::Plan;
use sgnn_transport::datapath::{AfPacketDatapath, Datapath, UdpDatapath};
use sgnn_transport::reference::{next_layer, reference_sums};
use sgnn_transport::{
    DscpMap, EngineConfig, Layer, Mode, Pacing, RateConfig, Session, TransportError, WorkerView,
};

const ABOUT: &str = "SwitchGNN host daemon: one worker's side of in-network graph propagation.";

const LONG_ABOUT: &str = "SwitchGNN host daemon: one worker's side of in-network graph propagation.

Loads worker --worker-id's schedule from a plan directory (switch-ctl plan --out DIR), checks
that the plan fits (worker id, feature size, switch), checks the switch routes this worker
back to itself (a probe), then per layer sends its vertices block by block, collects the
switch's aggregates, recovers losses (acks, fetch, RESEND), adds local neighbours and hands
the per-vertex neighbour sums on. Protocol: docs/host.md.

Three datapaths (--datapath):
  udp        (default) kernel UDP: each datagram carries one Ethernet frame, as the
             softswitch's UDP ports expect; --switch and --bind give the addresses.
  af-packet  raw frames on --iface NAME (a veth or NIC leading to the switch); root.
  dpdk       a DPDK ethdev driven from user space by this process's one core; the EAL
             arguments follow `--`, e.g.
               -- --no-huge -m 256 --no-pci --vdev=net_memif0,role=client,socket=/run/sw0.sock
             The port is the first ethdev, or --dpdk-port N|NAME. Built with the cargo
             feature `dpdk` (default).

Two ways to run:
  stand-alone   --layers L forward rounds then L backward rounds on random (--seed) or
                --features FILE.npy features; the next layer's input is the neighbour mean.
                --verify compares every round with a single-process reference.
  --serve PATH  a training process connects to the Unix socket PATH and sends PROPAGATE
                requests (framing in docs/host.md); the daemon exits after CLOSE.

Example (4 workers, loopback; start softswitch first with the same plan):
  softswitch --plan plan --listen 127.0.0.1:9000 --worker 127.0.0.1:9100 ... --worker 127.0.0.1:9103
  sgnn-hostd --plan plan --worker-id 0 --switch 127.0.0.1:9000 --bind 127.0.0.1:9100 \\
             --layers 2 --feature-dim 64 --seed 1 --verify --stats-json w0.json
Over DPDK memif to `softswitch --dpdk -- ... --vdev=net_memif0,role=server,socket=/tmp/m0.sock`:
  sgnn-hostd --plan plan --worker-id 0 --datapath dpdk --layers 2 --verify -- \\
             --no-huge -m 256 --no-pci --no-shconf --no-telemetry \\
             --vdev=net_memif0,role=client,socket=/tmp/m0.sock,socket-abstract=no";

#[derive(Clone, Copy, Debug, ValueEnum)]
enum ModeArg {
    /// In-network aggregation by the plan's blocks.
    Switchgnn,
    /// Baseline: boundary vertices unicast host to host, summed at the receiver.
    HostBased,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum DatapathArg {
    /// Kernel UDP, one Ethernet frame per datagram (--switch, --bind).
    Udp,
    /// Raw frames on an interface through AF_PACKET (--iface; root).
    AfPacket,
    /// A DPDK ethdev (EAL arguments after `--`; --dpdk-port).
    Dpdk,
}

impl DatapathArg {
    fn name(self) -> &'static str {
        match self {
            DatapathArg::Udp => "udp",
            DatapathArg::AfPacket => "af-packet",
            DatapathArg::Dpdk => "dpdk",
        }
    }
}

#[derive(Parser, Debug, Clone)]
#[command(name = "sgnn-hostd", version, about = ABOUT, long_about = LONG_ABOUT, args_override_self = true)]
struct Args {
    /// Read flags from this TOML file first (keys are flag names: `worker-id = 0`,
    /// `verify = true`, `eal = [...]`); flags on the command line override it
    /// (docs/host.md, "Running under systemd").
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Check everything a run needs and exit: the plan loads and its digests match, the
    /// flags and --config agree, the datapath opens, and the switch answers the probe with
    /// this plan's tag. Prints `check: ok ...` (exit 0) or the first problem (exit 1).
    #[arg(long)]
    check: bool,
    /// Plan directory written by `switch-ctl plan --out`.
    #[arg(long, value_name = "DIR")]
    plan: PathBuf,
    /// This worker's id (0-based; the plan's partition numbering). With --cores N, the
    /// worker of the unsplit plan: core k runs the split plan's worker W*N+k.
    #[arg(long, value_name = "W")]
    worker_id: u32,
    /// Run this worker on N cores: N threads, one engine each, on a plan split over N cores
    /// per worker (`switch-ctl plan --cores N`). Core k is the split plan's worker W*N+k
    /// with its own UDP socket, bound to --bind's port + k (the switch's `--worker` address
    /// number W*N+k). Core k's files: --stats-json F.json becomes F.coreK.json, --pcap
    /// F.pcapng becomes F.coreK.pcapng; --metrics serves core k on its port + k. The process
    /// fails as soon as one core fails. UDP only: on AF_PACKET or DPDK start one
    /// sgnn-hostd per core (--worker-id W*N+k). docs/host.md, "One worker on several cores".
    #[arg(long, default_value_t = 1, value_name = "N")]
    cores: u32,
    /// How frames leave and enter this host.
    #[arg(long, value_enum, default_value = "udp")]
    datapath: DatapathArg,
    /// UDP address of the switch (softswitch --listen); --datapath udp.
    #[arg(long, value_name = "ADDR")]
    switch: Option<SocketAddr>,
    /// UDP address to bind: must be the switch's W-th --worker address; --datapath udp.
    #[arg(long, value_name = "ADDR")]
    bind: Option<SocketAddr>,
    /// Interface leading to the switch (its W-th port); --datapath af-packet.
    #[arg(long, value_name = "NAME")]
    iface: Option<String>,
    /// DPDK port: an ethdev id or name (default: the first ethdev); --datapath dpdk.
    #[arg(long, value_name = "N|NAME")]
    dpdk_port: Option<String>,
    /// DPDK: after 100 us without frames, sleep this long between polls (0: poll without
    /// pause, one core at 100%).
    #[arg(long, default_value_t = 50, value_name = "US")]
    dpdk_idle_sleep_us: u64,
    /// DPDK: packet buffers in the pool.
    #[arg(long, default_value_t = 8191, value_name = "N")]
    dpdk_mbufs: u32,
    /// EAL arguments for --datapath dpdk (after `--`).
    #[arg(last = true, value_name = "EAL ARGS")]
    eal: Vec<String>,
    /// SwitchGNN (in-network) or the host-based baseline.
    #[arg(long, value_enum, default_value = "switchgnn")]
    mode: ModeArg,

    /// Forward layers of a stand-alone run (each followed, in reverse, by a backward round).
    #[arg(long, default_value_t = 1, value_name = "L")]
    layers: u32,
    /// Skip the backward rounds.
    #[arg(long)]
    no_backward: bool,
    /// Values per vertex; at most the plan's aggregators per vertex x 32 (default: the
    /// plan's --feature-dim).
    #[arg(long, value_name = "D")]
    feature_dim: Option<usize>,
    /// Features of all vertices, `.npy` [N, D] (float32/64 or integers); default random.
    #[arg(long, value_name = "FILE.npy")]
    features: Option<PathBuf>,
    /// Seed of the random features (uniform in [-1, 1); gradients use seed + 1). Every worker
    /// must use the same seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Compare every round's sums with a single-process reference (bit for bit); fail on
    /// any difference.
    #[arg(long)]
    verify: bool,
    /// Write each round's sums as DIR/wWWW_rRRR.npy (float32 [local vertices, D]) and the
    /// row order as DIR/wWWW_vertices.npy.
    #[arg(long, value_name = "DIR")]
    output_dir: Option<PathBuf>,
    /// Serve a training process on this Unix socket instead of a stand-alone run.
    #[arg(long, value_name = "PATH")]
    serve: Option<PathBuf>,
    /// Write counters (per class packets/bytes, retransmissions, fetches, ECN marks, rate over
    /// time, per-round times) as JSON here at exit.
    #[arg(long, value_name = "FILE")]
    stats_json: Option<PathBuf>,

    /// Aggregator memory the switch really has, in bytes; a plan needing more is refused
    /// (default: trust the plan's --switch-mem).
    #[arg(long, value_name = "BYTES")]
    switch_mem: Option<u64>,
    /// Skip the start-up probe through the switch.
    #[arg(long)]
    no_probe: bool,
    /// The job value the switch must have been loaded with (`switch-ctl load --job`,
    /// `softswitch --job`; both print it). Default: adopt the one the switch tells in its
    /// answer to the start-up probe. Every frame carries it, and frames of another job are
    /// dropped (docs/host.md, "Threat model"). With --no-probe, the job to use (default 0).
    #[arg(long, value_name = "N")]
    job: Option<u16>,

    /// Starting send rate, Mbit/s on the wire.
    #[arg(long, default_value_t = 1000.0, value_name = "MBPS")]
    rate_mbps: f64,
    /// Lowest rate after ECN halvings, Mbit/s.
    #[arg(long, default_value_t = 10.0, value_name = "MBPS")]
    min_rate_mbps: f64,
    /// Highest rate (line rate), Mbit/s.
    #[arg(long, default_value_t = 10_000.0, value_name = "MBPS")]
    max_rate_mbps: f64,
    /// Additive increase per interval without ECN marks, Mbit/s.
    #[arg(long, default_value_t = 50.0, value_name = "MBPS")]
    rate_increase_mbps: f64,
    /// Additive-increase interval, microseconds.
    #[arg(long, default_value_t = 1000, value_name = "US")]
    rate_increase_interval_us: u64,
    /// At most one halving per this many microseconds.
    #[arg(long, default_value_t = 200, value_name = "US")]
    rate_decrease_interval_us: u64,
    /// Token-bucket depth: bytes that may leave back to back.
    #[arg(long, default_value_t = 16384, value_name = "BYTES")]
    burst_bytes: u64,
    /// DCQCN fast recovery: after a halving, this many increase intervals each close half the
    /// gap to the rate before it, before additive increase resumes (0: additive only).
    #[arg(long, default_value_t = 0, value_name = "N")]
    rate_fast_recovery: u32,
    /// Planned pacing (SwitchGNN mode): `planned` sends each block's Data at the share of
    /// --max-rate-mbps the plan gives this worker (its sends of the block spread over the
    /// block's busiest link, so the plan's own traffic queues nowhere and every ECN mark is
    /// congestion the plan did not cause); `off` sends at the controlled rate alone.
    /// docs/host.md, "Planned pacing".
    #[arg(long, default_value_t = Pacing::Planned, value_name = "planned|off")]
    pace: Pacing,

    /// Fetch missing contributions after this long without progress on a block, ms.
    #[arg(long, default_value_t = 20, value_name = "MS")]
    fetch_timeout_ms: u64,
    /// Send the tail probe again (ask the switch which of this worker's Data frames it
    /// misses) when it has not answered for this long, ms.
    #[arg(long, default_value_t = 10, value_name = "MS")]
    resend_timeout_ms: u64,
    /// Send BlockDone again after this long without BlockAdvance, ms.
    #[arg(long, default_value_t = 20, value_name = "MS")]
    advance_timeout_ms: u64,
    /// Most fetch requests (or resent frames) one timeout sends; the rest follow at the next
    /// timeout. Keeps a slow peer on a loaded machine from being flooded with duplicates.
    #[arg(long, default_value_t = 256, value_name = "FRAMES")]
    recovery_window: usize,
    /// Give up with an error after this long without progress (a dead peer or switch), s.
    #[arg(long, default_value_t = 30.0, value_name = "SECS")]
    timeout: f64,

    /// DSCP of Data (first transmissions).
    #[arg(long, default_value_t = 10)]
    dscp_data: u8,
    /// DSCP of Results and Acks.
    #[arg(long, default_value_t = 34)]
    dscp_result: u8,
    /// DSCP of BlockDone / BlockAdvance and the probe.
    #[arg(long, default_value_t = 46)]
    dscp_control: u8,
    /// DSCP of FetchReq, Bypass and resent Data.
    #[arg(long, default_value_t = 26)]
    dscp_recovery: u8,
    /// DSCP of background traffic.
    #[arg(long, default_value_t = 8)]
    dscp_background: u8,
    /// UDP socket buffer size, bytes (capped by the kernel unless run as root).
    #[arg(long, default_value_t = 8 << 20, value_name = "BYTES")]
    socket_buffer: usize,

    /// Capture every frame this worker sends and receives, with its timestamp, in this
    /// pcapng file (one interface; direction in each frame's flags). Frames are written as
    /// Ethernet frames on every datapath (on UDP: the datagram's payload). Wireshark decodes
    /// them with tools/wireshark/sgnn.lua.
    #[arg(long, value_name = "FILE")]
    pcap: Option<PathBuf>,
    /// Stop capturing once the --pcap file has this many bytes (says so once on stderr).
    #[arg(long, value_name = "N", default_value_t = capture::DEFAULT_MAX_BYTES)]
    pcap_max_bytes: u64,
    /// Serve the counters in the Prometheus text format on http://ADDR/metrics (port 0
    /// picks a free port; `metrics on http://ADDR/metrics` is printed on stderr). Values are
    /// published by the session after the probe, after each round and every 100 ms while
    /// serving idle. Metric names: docs/host.md, "Metrics".
    #[arg(long, value_name = "ADDR")]
    metrics: Option<SocketAddr>,
}

fn main() {
    let args: Args = sgnn_netdev::cli_config::parse("sgnn-hostd");
    init_logs();
    if args.datapath == DatapathArg::Dpdk && !cfg!(feature = "dpdk") {
        eprintln!(
            "error: {}",
            sgnn_netdev::dpdk_args::not_built_with_dpdk("sgnn-hostd", "--datapath dpdk")
        );
        std::process::exit(2);
    }
    let result = if args.cores > 1 {
        run_cores(&args)
    } else {
        run(&args)
    };
    if let Err(e) = result {
        eprintln!("error: worker {}: {e:#}", args.worker_id);
        std::process::exit(1);
    }
}

/// What `--datapath udp` without its two addresses is told (one core or several).
const UDP_NEEDS_ADDRS: &str = "--datapath udp needs --switch ADDR and --bind ADDR";

/// `--cores N`: the N split workers of worker `a.worker_id`, each [`run`] on a thread of its
/// own with its own socket and files; returns when all have finished, or with the first
/// failure (the caller then exits, ending the other cores).
fn run_cores(a: &Args) -> Result<()> {
    let n = a.cores;
    if a.datapath != DatapathArg::Udp {
        bail!(
            "--cores {n} runs over --datapath udp (one socket per core); on {} start one sgnn-hostd per core, with --worker-id {}*{n}+k and its own interface or port",
            a.datapath.name(),
            a.worker_id
        );
    }
    let m = Plan::load_manifest(&a.plan)
        .with_context(|| format!("loading plan {}", a.plan.display()))?;
    let split = match m.split {
        Some(c) if c.cores == n => c,
        Some(c) => bail!(
            "--cores {n}: the plan {} is split over {} cores per worker; pass --cores {}",
            a.plan.display(),
            c.cores,
            c.cores
        ),
        None => bail!(
            "--cores {n} needs a plan split over {n} cores per worker; make it with `switch-ctl plan --cores {n}` (the plan {} is not split)",
            a.plan.display()
        ),
    };
    if a.worker_id >= split.workers {
        bail!(
            "--worker-id {}: the plan has {} workers (each split over {n} cores)",
            a.worker_id,
            split.workers
        );
    }
    let Some(bind) = a.bind else {
        bail!(UDP_NEEDS_ADDRS);
    };
    if bind.port() == 0 || bind.port() as u32 + n - 1 > u16::MAX as u32 {
        bail!(
            "--cores {n} binds --bind's port and the {} after it; give a fixed port with room for them",
            n - 1
        );
    }
    let (tx, rx) = std::sync::mpsc::channel();
    for k in 0..n {
        let mut c = a.clone();
        c.cores = 1;
        c.worker_id = a.worker_id * n + k;
        c.bind = Some(SocketAddr::new(bind.ip(), bind.port() + k as u16));
        c.stats_json = a.stats_json.as_deref().map(|p| per_core(p, k));
        c.pcap = a.pcap.as_deref().map(|p| per_core(p, k));
        c.metrics = a.metrics.map(|m| {
            SocketAddr::new(
                m.ip(),
                if m.port() == 0 {
                    0
                } else {
                    m.port().saturating_add(k as u16)
                },
            )
        });
        let tx = tx.clone();
        std::thread::Builder::new()
            .name(format!("core{k}"))
            .spawn(move || {
                let r = run(&c);
                let _ = tx.send((k, c.worker_id, r));
            })
            .context("starting a core's thread")?;
    }
    drop(tx);
    for (k, x, r) in rx {
        r.with_context(|| format!("core {k} (split worker {x})"))?;
    }
    Ok(())
}

/// `F.json` -> `F.coreK.json` (`F` -> `F.coreK` without an extension).
fn per_core(p: &std::path::Path, k: u32) -> PathBuf {
    let stem = p.file_stem().unwrap_or_default().to_string_lossy();
    let name = match p.extension() {
        Some(e) => format!("{stem}.core{k}.{}", e.to_string_lossy()),
        None => format!("{stem}.core{k}"),
    };
    p.with_file_name(name)
}

/// Logs on stderr through `tracing`: `RUST_LOG` filters them (default `info`: one line per
/// round and per block transition; `debug` adds every fetch and retransmission). The lines
/// carry no time, level or target, so they read as before; the stall and error messages are
/// written as they always were.
fn init_logs() {
    use std::io::IsTerminal;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .without_time()
        .with_level(false)
        .with_target(false)
        .try_init();
}

fn engine_config(a: &Args) -> Result<EngineConfig> {
    let rate = RateConfig {
        initial_mbps: a.rate_mbps,
        min_mbps: a.min_rate_mbps,
        max_mbps: a.max_rate_mbps,
        increase_mbps: a.rate_increase_mbps,
        increase_interval_ns: a.rate_increase_interval_us * 1000,
        decrease_interval_ns: a.rate_decrease_interval_us * 1000,
        burst_bytes: a.burst_bytes,
        fast_recovery_steps: a.rate_fast_recovery,
    };
    rate.validate().map_err(anyhow::Error::msg)?;
    let dscp = DscpMap {
        control: a.dscp_control,
        result: a.dscp_result,
        recovery: a.dscp_recovery,
        data: a.dscp_data,
        background: a.dscp_background,
    };
    dscp.validate().map_err(anyhow::Error::msg)?;
    if !(a.timeout.is_finite() && a.timeout > 0.0) {
        bail!("--timeout must be a positive number of seconds");
    }
    if a.fetch_timeout_ms == 0 || a.resend_timeout_ms == 0 || a.advance_timeout_ms == 0 {
        bail!(
            "--fetch-timeout-ms, --resend-timeout-ms and --advance-timeout-ms must be at least 1"
        );
    }
    Ok(EngineConfig {
        mode: match a.mode {
            ModeArg::Switchgnn => Mode::SwitchGnn,
            ModeArg::HostBased => Mode::HostBased,
        },
        dscp,
        rate,
        fetch_timeout_ns: a.fetch_timeout_ms * 1_000_000,
        resend_timeout_ns: a.resend_timeout_ms * 1_000_000,
        advance_timeout_ns: a.advance_timeout_ms * 1_000_000,
        recovery_window: a.recovery_window.max(1),
        stall_timeout_ns: (a.timeout * 1e9) as u64,
        probe: !a.no_probe,
        job: a.job,
        pacing: a.pace,
        ..EngineConfig::default()
    })
}

/// Refuses a plan the switch cannot hold or the wire cannot carry.
fn check_switch(plan: &Plan, a: &Args) -> Result<()> {
    let agg = plan.manifest.config.agg_bytes;
    if agg as usize != sgnn_wire::PAYLOAD_LEN {
        bail!(
            "the plan was made for {agg}-byte aggregators but a SwitchGNN packet carries {} bytes of lanes; re-plan with --agg-bytes {}",
            sgnn_wire::PAYLOAD_LEN,
            sgnn_wire::PAYLOAD_LEN
        );
    }
    let segs = plan.manifest.segments as u64;
    let needed = plan
        .blocks
        .iter()
        .flat_map(|b| b.aggregators.iter().map(|s| s.base as u64 + segs))
        .max()
        .unwrap_or(0)
        * agg as u64;
    if let Some(mem) = a.switch_mem {
        if needed > mem {
            bail!(
                "the plan needs {needed} bytes of switch aggregator memory but --switch-mem says the switch has {mem}; re-plan with `switch-ctl plan --switch-mem {mem}`"
            );
        }
    }
    Ok(())
}

fn run(a: &Args) -> Result<()> {
    let cfg = engine_config(a)?;
    let plan = Plan::load(&a.plan).with_context(|| format!("loading plan {}", a.plan.display()))?;
    let schedule = if a.worker_id < plan.workers() {
        Some(
            Plan::load_worker_schedule(&a.plan, a.worker_id)
                .with_context(|| format!("loading worker {}'s schedule", a.worker_id))?,
        )
    } else {
        None
    };
    let view = Arc::new(WorkerView::new(&plan, a.worker_id, schedule.as_ref())?);
    eprintln!(
        "worker {}: plan {} (tag {:08x})",
        a.worker_id,
        a.plan.display(),
        view.plan_tag
    );
    check_switch(&plan, a)?;
    if let (Some(c), Some(_)) = (plan.manifest.split, &a.serve) {
        bail!(
            "--serve with a plan split over {} cores (switch-ctl plan --cores) is not supported: a training process sends whole rows of its worker; serve a plan made without --cores",
            c.cores
        );
    }
    let dim = a
        .feature_dim
        .unwrap_or(plan.manifest.config.feature_dim as usize);
    view.segments_for(dim)?;
    if a.datapath != DatapathArg::Dpdk && !a.eal.is_empty() {
        bail!("EAL arguments after `--` are for --datapath dpdk");
    }
    match a.datapath {
        DatapathArg::Udp => {
            let (Some(bind), Some(switch)) = (a.bind, a.switch) else {
                bail!(UDP_NEEDS_ADDRS);
            };
            let dp = UdpDatapath::bind(bind, switch, a.socket_buffer)
                .with_context(|| format!("binding {bind} (talking to the switch at {switch})"))?;
            let dp = capture::Tapped::new(dp, a, &format!("UDP {bind} to the switch at {switch}"))?;
            drive(Session::new(view, cfg, dp), &plan, a, dim)
        }
        DatapathArg::AfPacket => {
            let Some(iface) = &a.iface else {
                bail!(
                    "--datapath af-packet needs --iface NAME (the interface leading to the switch)"
                );
            };
            let dp = AfPacketDatapath::open(iface)?;
            let dp = capture::Tapped::new(dp, a, &format!("interface {iface}"))?;
            drive(Session::new(view, cfg, dp), &plan, a, dim)
        }
        DatapathArg::Dpdk => dpdk(view, cfg, &plan, a, dim),
    }
}

#[cfg(feature = "dpdk")]
fn dpdk(view: Arc<WorkerView>, cfg: EngineConfig, plan: &Plan, a: &Args, dim: usize) -> Result<()> {
    use sgnn_transport::datapath::{DpdkConfig, DpdkDatapath};
    let dcfg = DpdkConfig {
        port: a.dpdk_port.clone(),
        mbufs: a.dpdk_mbufs,
        link_timeout: std::time::Duration::from_secs_f64(a.timeout),
        idle_sleep: std::time::Duration::from_micros(a.dpdk_idle_sleep_us),
        ..DpdkConfig::default()
    };
    let dp = DpdkDatapath::open(&a.eal, &dcfg)?;
    eprintln!(
        "worker {}: DPDK port {} ({}, MAC {})",
        a.worker_id,
        dp.port().name(),
        dp.port().driver(),
        sgnn_dpdk_mac(&dp)
    );
    let what = format!("DPDK port {}", dp.port().name());
    let dp = capture::Tapped::new(dp, a, &what)?;
    drive(Session::new(view, cfg, dp), plan, a, dim)
}

#[cfg(feature = "dpdk")]
fn sgnn_dpdk_mac(dp: &sgnn_transport::datapath::DpdkDatapath) -> String {
    dp.port()
        .mac()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

#[cfg(not(feature = "dpdk"))]
fn dpdk(_: Arc<WorkerView>, _: EngineConfig, _: &Plan, _: &Args, _: usize) -> Result<()> {
    // `main` refuses `--datapath dpdk` before getting here; this keeps the library path honest.
    bail!(sgnn_netdev::dpdk_args::not_built_with_dpdk(
        "sgnn-hostd",
        "--datapath dpdk"
    ))
}

/// Runs the session (stand-alone or serving) and writes the statistics.
fn drive<D: Datapath>(mut session: Session<D>, plan: &Plan, a: &Args, dim: usize) -> Result<()> {
    let started = Instant::now();
    let mut pm = match a.metrics {
        Some(addr) => Some(metrics::Publisher::start(
            addr,
            vec![
                ("worker".into(), a.worker_id.to_string()),
                ("mode".into(), mode_name(a).into()),
                ("datapath".into(), a.datapath.name().into()),
            ],
        )?),
        None => None,
    };
    // CPU seconds inside the rounds (`Session::propagate`), for frames per CPU-second.
    let mut exchange_cpu = 0.0f64;
    let result = (|| -> Result<()> {
        session.connect().context("checking the switch")?;
        metrics::publish(&mut pm, &session);
        if a.check {
            // Without the probe nothing was sent to the switch: say what that leaves unchecked.
            let switch = if a.no_probe {
                "the switch was not contacted (--no-probe), so whether it is reachable and holds this plan was not checked"
            } else {
                "the switch answered with the same plan tag"
            };
            let job = if a.no_probe {
                String::new()
            } else {
                format!(", job {}", session.engine().job())
            };
            println!(
                "check: ok: worker {} of plan {} (tag {:08x}, {} local vertices), {} datapath open, {switch}{job}",
                a.worker_id,
                a.plan.display(),
                session.view().plan_tag,
                session.view().num_local(),
                a.datapath.name()
            );
            return Ok(());
        }
        match &a.serve {
            Some(path) => serve(&mut session, path, &mut pm),
            None => standalone(&mut session, plan, a, dim, &mut pm, &mut exchange_cpu),
        }
    })();
    metrics::publish(&mut pm, &session);
    if let Some(path) = &a.stats_json {
        write_stats(
            &session,
            path,
            a,
            started.elapsed().as_secs_f64(),
            exchange_cpu,
            result.is_ok(),
        )?;
    }
    result
}

fn write_stats<D: Datapath>(
    s: &Session<D>,
    path: &Path,
    a: &Args,
    seconds: f64,
    exchange_cpu: f64,
    ok: bool,
) -> Result<()> {
    let stats = s.stats();
    let mut dp = serde_json::Map::new();
    dp.insert("kind".into(), a.datapath.name().into());
    for (k, v) in s.datapath().counters() {
        dp.insert(k.into(), v.into());
    }
    let v = serde_json::json!({
        "worker": a.worker_id,
        "mode": mode_name(a),
        "ok": ok,
        "seconds": seconds,
        "cpu_seconds": sgnn_netdev::cpu::process_cpu_seconds(),
        "exchange_cpu_seconds": exchange_cpu,
        "datapath": dp,
        "sent_total": stats.sent.total(),
        "received_total": stats.received.total(),
        "stats": stats,
    });
    std::fs::write(path, serde_json::to_string_pretty(&v)? + "\n")
        .with_context(|| format!("writing {}", path.display()))
}

fn mode_name(a: &Args) -> &'static str {
    match a.mode {
        ModeArg::Switchgnn => "switchgnn",
        ModeArg::HostBased => "host-based",
    }
}

fn standalone<D: Datapath>(
    s: &mut Session<D>,
    plan: &Plan,
    a: &Args,
    dim: usize,
    pm: &mut Option<metrics::Publisher>,
    exchange_cpu: &mut f64,
) -> Result<()> {
    let n = plan.graph.num_vertices();
    // A plan split over cores (`switch-ctl plan --cores`) runs the original job's features:
    // its vertex `k * V + v` takes the k-th share of vertex `v`'s columns, so every core of a
    // worker sums exactly the columns the unsplit worker would.
    let split = plan.manifest.split;
    let (rows, cols) = plan.job_shape(dim);
    let forward = match &a.features {
        Some(p) => {
            let f = Features::load(p).with_context(|| format!("reading {}", p.display()))?;
            if f.num_vertices != rows {
                bail!(
                    "{} has {} rows but the plan's graph has {rows} vertices; pass the features of this graph",
                    p.display(),
                    f.num_vertices
                );
            }
            if f.dim != cols {
                bail!(
                    "{} has {} values per vertex but the job has {cols} (--feature-dim {dim}{}); pass features of {cols} values, or --feature-dim {}",
                    p.display(),
                    f.dim,
                    split.map_or(String::new(), |c| format!(" on each of {} cores", c.cores)),
                    f.dim / split.map_or(1, |c| c.cores as usize)
                );
            }
            plan.job_rows(f.data)
        }
        None => plan.job_rows(Features::random(rows, cols, a.seed).data),
    };
    let view = s.view().clone();
    let degrees: Vec<u32> = view.degree.clone();
    let all_degrees: Vec<u32> = (0..n as u32).map(|v| plan.graph.degree(v) as u32).collect();
    if let Some(d) = &a.output_dir {
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
        let p = d.join(format!("w{:03}_vertices.npy", a.worker_id));
        write_npy(&p, &[view.local_vertices.len()], &view.local_vertices)
            .with_context(|| format!("writing {}", p.display()))?;
    }
    let mut passes: Vec<(Vec<f32>, Vec<Layer>)> =
        vec![(forward, (0..a.layers).map(Layer::forward).collect())];
    if !a.no_backward {
        let grads = plan.job_rows(Features::random(rows, cols, a.seed.wrapping_add(1)).data);
        passes.push((grads, (0..a.layers).rev().map(Layer::backward).collect()));
    }
    for (mut global_ref, layers) in passes {
        let mut x = view.local_rows(&global_ref, dim);
        for layer in layers {
            let t = Instant::now();
            let before = s.stats().sent.total().wire_bytes;
            let round = s.engine().round();
            let cpu = sgnn_netdev::cpu::thread_cpu_seconds();
            let sums = s.propagate(layer, dim, &x)?;
            *exchange_cpu += sgnn_netdev::cpu::thread_cpu_seconds() - cpu;
            metrics::publish(pm, s);
            let ms = t.elapsed().as_secs_f64() * 1e3;
            let sent = s.stats().sent.total().wire_bytes - before;
            tracing::info!(
                "worker {}: round {round} ({:?} layer {}): {ms:.1} ms, {sent} bytes sent",
                a.worker_id,
                layer.direction,
                layer.index
            );
            if let Some(d) = &a.output_dir {
                let p = d.join(format!("w{:03}_r{round:03}.npy", a.worker_id));
                write_npy(&p, &[view.num_local(), dim], &sums)
                    .with_context(|| format!("writing {}", p.display()))?;
            }
            if a.verify {
                let want = reference_sums(&plan.graph, view.fixed, dim, &global_ref);
                let want_local = view.local_rows(&want, dim);
                if let Some(i) =
                    (0..sums.len()).find(|&i| sums[i].to_bits() != want_local[i].to_bits())
                {
                    bail!(
                        "round {round}: vertex {} value {}: got {}, the reference says {}",
                        view.local_vertices[i / dim],
                        i % dim,
                        sums[i],
                        want_local[i]
                    );
                }
                global_ref = next_layer(&want, &all_degrees, dim);
            }
            x = next_layer(&sums, &degrees, dim);
        }
    }
    s.finish()?;
    if a.verify {
        eprintln!("worker {}: every round matched the reference", a.worker_id);
    }
    Ok(())
}

fn serve<D: Datapath>(
    s: &mut Session<D>,
    path: &Path,
    pm: &mut Option<metrics::Publisher>,
) -> Result<()> {
    if path.exists() {
        std::fs::remove_file(path)
            .with_context(|| format!("removing the stale socket {}", path.display()))?;
    }
    let listener =
        UnixListener::bind(path).with_context(|| format!("listening on {}", path.display()))?;
    eprintln!("serving on {}", path.display());
    // Until the training process connects, keep driving the session: peers whose clients came
    // first are already exchanging start hellos and need this daemon's answers (a process that
    // takes half a minute to import PyTorch would otherwise stall them into their timeout).
    listener
        .set_nonblocking(true)
        .context("making the listening socket non-blocking")?;
    let stream = loop {
        match listener.accept() {
            Ok((stream, _)) => break stream,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                s.idle(std::time::Duration::from_millis(2))?;
                if let Some(p) = pm {
                    p.tick(s);
                }
            }
            Err(e) => return Err(e).context("accepting the training process"),
        }
    };
    stream
        .set_nonblocking(false)
        .context("making the training process's socket blocking")?;
    let mut r = BufReader::new(stream.try_clone()?);
    let mut w = BufWriter::new(stream);
    // The client's shared buffer, once it sent ATTACH: values and sums then skip the socket.
    let mut shared: Option<ipc::SharedBuffer> = None;
    // Requests arrive on a reader thread, so that between them the session keeps receiving
    // and answering peers (`Session::idle`).
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || loop {
        let m = ipc::read_request(&mut r);
        let end = !matches!(m, Ok(Some(_)));
        if tx.send(m).is_err() || end {
            return;
        }
    });
    loop {
        let req = match rx.try_recv() {
            Ok(m) => m,
            Err(std::sync::mpsc::TryRecvError::Empty) => {
                s.idle(std::time::Duration::from_millis(2))?;
                if let Some(p) = pm {
                    p.tick(s);
                }
                continue;
            }
            Err(std::sync::mpsc::TryRecvError::Disconnected) => {
                bail!("the request reader stopped")
            }
        };
        let Some(req) = req.context("reading a request")? else {
            bail!("the training process closed the socket without CLOSE");
        };
        match req {
            Request::Hello => {
                let v = s.view();
                ipc::write_reply(
                    &mut w,
                    &Reply::Info {
                        worker: v.worker as u32,
                        workers: v.workers as u32,
                        max_dim: v.segments as u32 * sgnn_wire::LANES as u32,
                        frac_bits: v.fixed.frac_bits as u32,
                        vertices: v.local_vertices.clone(),
                    },
                )?;
            }
            Request::Propagate {
                layer,
                direction,
                rows,
                dim,
                values,
            } => {
                let n = s.view().num_local();
                if rows as usize != n {
                    ipc::write_reply(
                        &mut w,
                        &Reply::Error(format!(
                            "PROPAGATE has {rows} rows but worker {} has {n} vertices",
                            s.view().worker
                        )),
                    )?;
                    continue;
                }
                let round = s.engine().round() as u32;
                let l = Layer {
                    index: layer,
                    direction,
                };
                let r = s.propagate(l, dim as usize, &values);
                metrics::publish(pm, s);
                match r {
                    Ok(sums) => ipc::write_reply(
                        &mut w,
                        &Reply::Sums {
                            round,
                            rows,
                            dim,
                            values: sums,
                        },
                    )?,
                    Err(e @ TransportError::BadInput(_)) => {
                        ipc::write_reply(&mut w, &Reply::Error(e.to_string()))?
                    }
                    Err(e) => {
                        let _ = ipc::write_reply(&mut w, &Reply::Error(e.to_string()));
                        return Err(e.into());
                    }
                }
            }
            Request::Attach { capacity, path } => match ipc::SharedBuffer::open(&path, capacity) {
                Ok(b) => {
                    eprintln!(
                            "worker {}: values and sums through the shared buffer {} ({capacity} bytes)",
                            s.view().worker,
                            path.display()
                        );
                    shared = Some(b);
                    ipc::write_reply(&mut w, &Reply::Attached)?;
                }
                Err(e) => ipc::write_reply(&mut w, &Reply::Error(e.to_string()))?,
            },
            Request::PropagateShared {
                layer,
                direction,
                rows,
                dim,
            } => {
                let n = s.view().num_local();
                let Some(buf) = shared.as_mut() else {
                    ipc::write_reply(
                        &mut w,
                        &Reply::Error(
                            "PROPAGATE_SHARED before ATTACH: attach a shared buffer first, or send PROPAGATE".into(),
                        ),
                    )?;
                    continue;
                };
                if rows as usize != n {
                    ipc::write_reply(
                        &mut w,
                        &Reply::Error(format!(
                            "PROPAGATE_SHARED has {rows} rows but worker {} has {n} vertices",
                            s.view().worker
                        )),
                    )?;
                    continue;
                }
                // In place: the engine reads the client's values straight from the mapping.
                let values = match buf.values(rows as usize * dim as usize) {
                    Ok(v) => v,
                    Err(e) => {
                        ipc::write_reply(&mut w, &Reply::Error(e.to_string()))?;
                        continue;
                    }
                };
                let round = s.engine().round() as u32;
                let l = Layer {
                    index: layer,
                    direction,
                };
                let r = s.propagate(l, dim as usize, &values);
                drop(values);
                metrics::publish(pm, s);
                match r {
                    Ok(sums) => {
                        buf.write_f32(&sums)?;
                        ipc::write_reply(&mut w, &Reply::SumsShared { round, rows, dim })?
                    }
                    Err(e @ TransportError::BadInput(_)) => {
                        ipc::write_reply(&mut w, &Reply::Error(e.to_string()))?
                    }
                    Err(e) => {
                        let _ = ipc::write_reply(&mut w, &Reply::Error(e.to_string()));
                        return Err(e.into());
                    }
                }
            }
            Request::Close => {
                s.finish()?;
                ipc::write_reply(&mut w, &Reply::Bye)?;
                let _ = std::fs::remove_file(path);
                return Ok(());
            }
        }
    }
}

mod metrics;

mod capture;

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::time::Duration;

    use sgnn_netdev::capture::{block_bytes, Direction, PcapNg, DEFAULT_MAX_BYTES};
    use sgnn_transport::datapath::Datapath;
    use sgnn_wire::sgnn::Repr;
    use sgnn_wire::{ethernet, ipv4, FrameRepr, PacketType};

    use super::capture::Tapped;

    /// A datapath in memory: receives what is queued, keeps what is sent.
    #[derive(Default)]
    struct Memory {
        incoming: VecDeque<Vec<u8>>,
        sent: Vec<Vec<u8>>,
    }

    impl Datapath for Memory {
        fn send_burst(&mut self, frames: &[Vec<u8>]) -> std::io::Result<usize> {
            self.sent.extend(frames.iter().cloned());
            Ok(frames.len())
        }
        fn recv_burst(
            &mut self,
            _timeout: Duration,
            deliver: &mut dyn FnMut(&[u8]),
        ) -> std::io::Result<usize> {
            let n = self.incoming.len();
            for f in self.incoming.drain(..) {
                deliver(&f);
            }
            Ok(n)
        }
    }

    fn frame(t: PacketType, src: u32) -> Vec<u8> {
        let mut s = Repr::new(t);
        s.src_id = src;
        s.frac_bits = 16;
        let r = FrameRepr {
            eth: ethernet::Repr {
                dst: [2, 0, 0, 0, 0xff, 0xfe],
                src: [2, 0, 0, 0, 0, 1],
                ethertype: 0x0800,
            },
            ip: ipv4::Repr {
                src: [10, 1, 0, 1],
                dst: [10, 0, 0, 254],
                ttl: 64,
                ..Default::default()
            },
            sgnn: s,
        };
        let mut buf = vec![0u8; r.frame_len()];
        let lanes = t.has_lanes().then_some([src as i32; sgnn_wire::LANES]);
        r.emit(lanes.as_ref(), &mut buf).unwrap();
        buf
    }

    fn read(path: &std::path::Path) -> Vec<(Direction, Vec<u8>)> {
        let c = sgnn_netdev::capture::read(path).unwrap();
        assert_eq!(c.interfaces, ["worker0"]);
        c.frames
            .into_iter()
            .map(|f| {
                assert_eq!(f.interface, 0);
                (f.direction.unwrap(), f.data)
            })
            .collect()
    }

    fn create(path: &std::path::Path, max_bytes: u64) -> PcapNg {
        PcapNg::create(path, max_bytes, &[("worker0", "test")], "test").unwrap()
    }

    /// Exchanges frames through a tapped datapath; returns what the session side saw.
    fn exchange(dp: &mut Tapped<Memory>, out: &[Vec<u8>]) -> Vec<Vec<u8>> {
        dp.send_burst(out).unwrap();
        let mut got = Vec::new();
        dp.recv_burst(Duration::ZERO, &mut |f| got.push(f.to_vec()))
            .unwrap();
        got
    }

    #[test]
    fn the_capture_holds_every_frame_in_and_out_with_its_direction() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w0.pcapng");
        let pcap = create(&path, DEFAULT_MAX_BYTES);
        let incoming = vec![
            frame(PacketType::Result, 5),
            frame(PacketType::BlockAdvance, 0),
        ];
        let mut dp = Tapped::with(
            Memory {
                incoming: incoming.clone().into(),
                ..Default::default()
            },
            Some(pcap),
        );
        let out = vec![frame(PacketType::Data, 3), frame(PacketType::BlockDone, 0)];
        assert_eq!(
            exchange(&mut dp, &out),
            incoming,
            "frames reach the session"
        );
        let counters = dp.counters();
        assert!(counters.contains(&("pcap_frames", 4)), "{counters:?}");
        assert!(counters.contains(&("pcap_missed", 0)), "{counters:?}");
        drop(dp);
        let got = read(&path);
        let want: Vec<(Direction, Vec<u8>)> = out
            .iter()
            .map(|f| (Direction::Outbound, f.clone()))
            .chain(incoming.iter().map(|f| (Direction::Inbound, f.clone())))
            .collect();
        assert_eq!(got, want);
        for (_, f) in &got {
            FrameRepr::parse(f).expect("captured frames parse as the wire crate's");
        }
    }

    #[test]
    fn the_capture_stops_at_its_bound() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w0.pcapng");
        let headers = create(&path, u64::MAX).bytes();
        // Room for two data frames.
        let max = headers + 2 * block_bytes(frame(PacketType::Data, 0).len());
        let pcap = create(&path, max);
        let mut dp = Tapped::with(Memory::default(), Some(pcap));
        let out: Vec<Vec<u8>> = (0..5).map(|i| frame(PacketType::Data, i)).collect();
        exchange(&mut dp, &out);
        let counters = dp.counters();
        assert!(counters.contains(&("pcap_frames", 2)), "{counters:?}");
        assert!(counters.contains(&("pcap_missed", 3)), "{counters:?}");
        assert_eq!(dp.inner().sent, out, "every frame is still sent");
        drop(dp);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), max);
        let got = read(&path);
        assert_eq!(
            got,
            vec![
                (Direction::Outbound, out[0].clone()),
                (Direction::Outbound, out[1].clone())
            ]
        );
    }

    #[test]
    fn without_a_capture_frames_pass_through() {
        let incoming = vec![frame(PacketType::Result, 1)];
        let mut dp = Tapped::with(
            Memory {
                incoming: incoming.clone().into(),
                ..Default::default()
            },
            None,
        );
        let out = vec![frame(PacketType::Data, 2)];
        assert_eq!(exchange(&mut dp, &out), incoming);
        assert_eq!(dp.inner().sent, out);
        assert!(dp.counters().is_empty());
    }
}
