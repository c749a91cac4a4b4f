//! The command line of `sgnn testbed`: its flags ([`TestbedArgs`]), the network and switch it
//! runs on ([`Net`], [`SwitchKind`]), the checks of their values before anything starts, and
//! what they say about the cluster ([`TestbedArgs::cluster_spec`]).

use std::path::PathBuf;

use anyhow::{bail, Result};
use sgnn_plan::AggregateMode;

use super::cluster::ClusterSpec;

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
    /// Cores per worker: every plan is split by feature columns (`switch-ctl plan --cores`)
    /// and each worker runs one daemon per core, core k summing the k-th 1/N of the columns
    /// (docs/host.md, "One worker on several cores"). The sums are checked against the
    /// unsplit job's. N must divide --feature-dim / 32.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub cores: u32,
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
    /// must then fail with a clear error from the others (not hang). With --cores N, W
    /// numbers the daemons: core k of worker w is W = w*N+k.
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
    /// Skip the host-based baseline (and the `tcp-all-to-all` reference row: a plain
    /// loopback TCP all-to-all of host-based's bytes between the same workers, no switch).
    #[arg(long)]
    pub no_baseline: bool,
    /// Starting send rate of each worker, Mbit/s (ECN and losses adjust it).
    #[arg(long, default_value_t = 400.0)]
    pub rate_mbps: f64,
    /// A worker gives up after this long without progress, seconds.
    #[arg(long, default_value_t = 20.0)]
    pub timeout: f64,
    /// Planned pacing of the SwitchGNN daemons (`sgnn-hostd --pace`): `planned` (default)
    /// spreads each worker's sends of a block over the block's busiest link, `off` sends at
    /// the controlled rate. docs/host.md, "Planned pacing".
    #[arg(long, default_value_t = sgnn_transport::Pacing::Planned, value_name = "planned|off")]
    pub pace: sgnn_transport::Pacing,
    /// Give the software switch's ports this rate, Mbit/s of bytes on the wire, so that its
    /// egress queues build as a switch's do (`softswitch --port-rate-mbps`); the daemons'
    /// line rate (`--max-rate-mbps`) is set to it. Default: frames leave the switch at once.
    #[arg(long, value_name = "MBPS")]
    pub port_rate: Option<f64>,
    /// With --port-rate: the software switch marks ECN CE on every frame that finds this many
    /// bytes queued at its port (`softswitch --ecn-threshold-bytes`), and the daemons echo
    /// the marks to the senders (docs/host.md, "Rate control").
    #[arg(long, value_name = "BYTES", requires = "port_rate")]
    pub ecn_threshold: Option<u64>,
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
    #[arg(long, value_name = "VECTORS", default_value_t = sgnn_delivery::recycle::DEFAULT_SLACK, requires = "recycle")]
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

/// `--aggregate`'s parser (also `sgnn train`'s and `sgnn serve`'s).
pub(crate) fn parse_aggregate(s: &str) -> Result<AggregateMode, String> {
    AggregateMode::parse(s).map_err(|e| e.to_string())
}

impl TestbedArgs {
    /// Layers run: `--layers`, or half of `--rounds`.
    pub fn layer_count(&self) -> u32 {
        self.rounds.map_or(self.layers, |r| r / 2)
    }

    /// The flags the daemons of a run split over `--cores` see: a worker per core, each with
    /// its share of the columns (the same flags without `--cores`).
    pub fn per_core(&self) -> TestbedArgs {
        let mut a = self.clone();
        a.workers = self.workers * self.cores;
        a.feature_dim = self.feature_dim / self.cores.max(1);
        a
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
            pace: self.pace,
            port_rate_mbps: self.port_rate,
            ecn_threshold_bytes: self.ecn_threshold,
            timeout: self.timeout,
            pcap: self.pcap.clone(),
            metrics: self.metrics,
        }
    }
}

/// Refuses flags that cannot run, with what to fix, before anything is planned or started.
pub(super) fn check_args(a: &TestbedArgs) -> Result<()> {
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
    if a.cores == 0 {
        bail!("--cores must be at least 1 (1: one daemon per worker)");
    }
    if a.port_rate.is_some_and(|r| !(r.is_finite() && r > 0.0)) {
        bail!("--port-rate is a positive number of Mbit/s");
    }
    if a.port_rate.is_some() && a.switch == SwitchKind::Bmv2 {
        bail!("--port-rate shapes the software switch's ports; bmv2 has no such option here (drop --switch bmv2)");
    }
    if let Some(w) = a.kill_worker {
        let daemons = a.workers.saturating_mul(a.cores.max(1));
        if w >= daemons {
            bail!(
                "--kill-worker {w}: there are only {daemons} {}",
                if a.cores > 1 {
                    format!("daemons ({} workers x {} cores)", a.workers, a.cores)
                } else {
                    "workers".to_string()
                }
            );
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
