//! `sgnn-sim`: a packet-level discrete-event simulator of SwitchGNN and its baselines
//! (issue 5), driven by the real plans of `switch-ctl`.
//!
//! - [`net`]: the event core (event queue, channels, output-queued switch ports with finite
//!   buffers, ECN marking, strict DSCP priorities, host NICs with pacing);
//! - [`topology`]: hosts, switches, links and routing (star now, leaf-spine later);
//! - [`strategies`]: host and switch logic of each strategy;
//! - [`report`]: the text summary and the CSVs of runs, links and time series;
//! - [`plot`]: SVG/PNG plots of runs and generic line and bar charts.
//!
//! `tools/sim/README.md` describes the model, what it abstracts, and its validation tests.

pub mod net;
pub mod plot;
pub mod report;
pub mod strategies;
pub mod topology;

use std::time::Instant;

pub use net::{tx_time, App, Gauges, NetConfig, NetStats, Pkt, Progress, Sample, Time};
use net::{ChannelStats, Net};
use sgnn_plan::Plan;
use strategies::{HostBased, SwitchCounters, SwitchGnn};
pub use topology::Topology;

/// Strategies the simulator runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// BNS-GCN with p = 1 (host-to-host all-to-all).
    HostBased,
    /// The plan's blocks with in-network aggregation and block sync.
    SwitchGnn,
}

impl Strategy {
    /// All strategies, in output order.
    pub const ALL: [Strategy; 2] = [Strategy::HostBased, Strategy::SwitchGnn];

    /// Name as in the traffic model (`host_based`, `switchgnn`).
    pub fn name(self) -> &'static str {
        match self {
            Strategy::HostBased => "host_based",
            Strategy::SwitchGnn => "switchgnn",
        }
    }
}

impl std::str::FromStr for Strategy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Strategy::ALL
            .into_iter()
            .find(|x| x.name() == s)
            .ok_or_else(|| {
                format!(
                    "unknown strategy {s:?}: the simulator has {} (issue 5 adds the others)",
                    Strategy::ALL.map(|x| x.name()).join(", ")
                )
            })
    }
}

/// First sampling interval of the automatic time series (`sgnn sim --sample-us auto`): 100 ns.
pub const AUTO_SAMPLE_EVERY: Time = 100 * net::PS_PER_NS;
/// Series length at which the automatic time series merges pairs of samples and doubles its
/// interval: a run longer than `AUTO_MAX_SAMPLES / 2` intervals of 100 ns ends with between
/// 1000 and 2000 samples.
pub const AUTO_MAX_SAMPLES: usize = 2000;

/// Everything a run needs besides the plan and the topology.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SimConfig {
    /// Buffers, ECN and pacing.
    pub net: NetConfig,
    /// Bandwidth of the switch's recirculation path, bit/s.
    pub recirc_bps: u64,
}

/// Counters of one channel (one direction of a link), with its ends named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkReport {
    /// Sending node (`h3`, `s0`).
    pub from: String,
    /// Receiving node.
    pub to: String,
    /// Counters.
    pub stats: ChannelStats,
}

/// The outcome of one strategy on one topology.
#[derive(Debug, Clone)]
pub struct RunReport {
    /// Strategy name.
    pub strategy: String,
    /// Communication time of one layer (last delivery / last BlockAdvance), if the layer
    /// completed (it cannot if frames were dropped: this slice has no retransmission).
    pub time: Option<Time>,
    /// Totals.
    pub net: NetStats,
    /// Every channel.
    pub links: Vec<LinkReport>,
    /// Wire bytes each host sent on its uplink.
    pub host_uplink: Vec<u64>,
    /// Wire bytes each host received on its downlink.
    pub host_downlink: Vec<u64>,
    /// Switch logic counters (in-network strategies).
    pub switch: Option<SwitchCounters>,
    /// Wall-clock seconds of the event loop.
    pub wall_seconds: f64,
    /// Time series (empty unless [`NetConfig::sample_every`] is set).
    pub series: Vec<Sample>,
    /// Sampling interval of `series` at the end of the run (the configured one, doubled by
    /// every merge of [`NetConfig::max_samples`]).
    pub sample_interval: Option<Time>,
}

impl RunReport {
    /// Wire bytes on all channels.
    pub fn total_bytes(&self) -> u64 {
        self.links.iter().map(|l| l.stats.bytes).sum()
    }

    /// Frames dropped anywhere.
    pub fn dropped_frames(&self) -> u64 {
        self.net.dropped_frames
    }

    /// Frames ECN-marked anywhere.
    pub fn ecn_marked(&self) -> u64 {
        self.links.iter().map(|l| l.stats.ecn_marked).sum()
    }

    /// Events per wall-clock second.
    pub fn events_per_second(&self) -> f64 {
        self.net.events as f64 / self.wall_seconds.max(1e-9)
    }
}

/// Runs any [`App`] on `topo` and collects the channel counters.
pub fn run_app<A: App>(
    app: &mut A,
    topo: Topology,
    cfg: NetConfig,
    progress: &mut dyn FnMut(Progress),
) -> Result<(Net, f64), String> {
    let mut net = Net::new(topo, cfg)?;
    let t = Instant::now();
    net.run(app, progress);
    Ok((net, t.elapsed().as_secs_f64()))
}

fn report(
    net: &Net,
    strategy: &str,
    time: Option<Time>,
    switch: Option<SwitchCounters>,
    wall: f64,
) -> RunReport {
    let topo = net.topology();
    let routes = topo.routes().expect("checked by Net::new");
    let links = net
        .channels
        .iter()
        .map(|c| LinkReport {
            from: topo.node_name(c.from),
            to: topo.node_name(c.to),
            stats: c.stats.clone(),
        })
        .collect();
    RunReport {
        strategy: strategy.to_string(),
        time,
        net: net.stats.clone(),
        links,
        host_uplink: routes
            .uplink
            .iter()
            .map(|&c| net.channels[c as usize].stats.bytes)
            .collect(),
        host_downlink: routes
            .uplink
            .iter()
            .map(|&c| net.channels[(c ^ 1) as usize].stats.bytes)
            .collect(),
        switch,
        wall_seconds: wall,
        series: net.series().to_vec(),
        sample_interval: net.sample_interval(),
    }
}

/// Simulates one layer of `strategy` under `plan` on a star of `plan.workers()` hosts.
pub fn run_strategy(
    plan: &Plan,
    strategy: Strategy,
    topo: Topology,
    cfg: SimConfig,
    progress: &mut dyn FnMut(Progress),
) -> Result<RunReport, String> {
    if topo.hosts != plan.workers() {
        return Err(format!(
            "the topology has {} hosts but the plan {} workers",
            topo.hosts,
            plan.workers()
        ));
    }
    if topo.switches != 1 {
        return Err(format!(
            "{} strategies need exactly one switch for now (got {}: leaf-spine is not simulated yet)",
            strategy.name(),
            topo.switches
        ));
    }
    let switch_node = topo.hosts;
    match strategy {
        Strategy::HostBased => {
            let mut app = HostBased::new(plan);
            let (net, wall) = run_app(&mut app, topo, cfg.net, progress)?;
            Ok(report(&net, strategy.name(), app.finish, None, wall))
        }
        Strategy::SwitchGnn => {
            let mut app = SwitchGnn::new(plan, switch_node, cfg.recirc_bps);
            let (net, wall) = run_app(&mut app, topo, cfg.net, progress)?;
            let counters = app.counters.clone();
            Ok(report(
                &net,
                strategy.name(),
                app.finish,
                Some(counters),
                wall,
            ))
        }
    }
}
