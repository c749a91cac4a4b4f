//! `sgnn-sim`: a packet-level discrete-event simulator of SwitchGNN and its baselines
//! (issue 5), driven by the real plans of `switch-ctl`.
//!
//! - [`net`]: the event core (event queue, channels, output-queued switch ports with finite
//!   buffers, ECN marking, strict DSCP priorities, host NICs with pacing);
//! - [`topology`]: hosts, switches, links and routing (star now, leaf-spine later);
//! - [`strategies`]: host and switch logic of each strategy;
//! - [`report`]: the text summary and the CSV of runs;
//! - [`cc`]: DCQCN-like host rate control; [`host`]: host options and counters (loss
//!   recovery); [`background`]: background flows around any strategy.
//!
//! `tools/sim/README.md` describes the model, what it abstracts, and its validation tests.

pub mod background;
pub mod cc;
pub mod host;
pub mod net;
pub mod report;
pub mod strategies;
pub mod topology;

use std::time::Instant;

use background::{BackgroundReport, WithBackground};
pub use host::{HostCounters, HostOptions};
pub use net::{tx_time, App, NetConfig, NetStats, Pkt, Progress, Time};
use net::{ChannelStats, Net};
use sgnn_plan::Plan;
use strategies::{HostBased, SwitchCounters, SwitchGnn};
pub use topology::Topology;

/// Strategies the simulator runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// BNS-GCN with p = 1 (host-to-host all-to-all).
    HostBased,
    /// The plan's blocks with in-network aggregation and block sync, hosts with rate control.
    SwitchGnn,
    /// `SwitchGnn` without host rate control (the paper's "SwitchGNN w/o CC").
    SwitchGnnNoCc,
}

impl Strategy {
    /// All strategies, in output order.
    pub const ALL: [Strategy; 3] = [
        Strategy::HostBased,
        Strategy::SwitchGnn,
        Strategy::SwitchGnnNoCc,
    ];

    /// Name as in the traffic model (`host_based`, `switchgnn`).
    pub fn name(self) -> &'static str {
        match self {
            Strategy::HostBased => "host_based",
            Strategy::SwitchGnn => "switchgnn",
            Strategy::SwitchGnnNoCc => "switchgnn_no_cc",
        }
    }

    /// Name of the strategy whose bytes `sgnn_plan::traffic` models for it (rate control
    /// changes when frames leave, not which).
    pub fn model_name(self) -> &'static str {
        match self {
            Strategy::SwitchGnnNoCc => "switchgnn",
            s => s.name(),
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
    /// completed (with recovery off, `HostOptions::timeout == None`, it cannot if frames were
    /// dropped).
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
    /// Host logic counters: loss recovery (fetches, resends) and rate control.
    pub hosts: HostCounters,
    /// Per host, its sending rate over time: `(time, bit/s)` at the start and at every change
    /// (empty for hosts without rate control).
    pub rates: Vec<Vec<(Time, u64)>>,
    /// Background flows, if any ran.
    pub background: Option<BackgroundReport>,
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
        hosts: HostCounters::default(),
        rates: Vec::new(),
        background: None,
    }
}

/// Link rate of every host (its one link), bit/s.
fn host_link_bps(topo: &Topology) -> Vec<u64> {
    (0..topo.hosts)
        .map(|h| {
            topo.links
                .iter()
                .find(|l| l.a == h || l.b == h)
                .map_or(0, |l| l.bps)
        })
        .collect()
}

/// Runs `app` with background flows per `opts` (none at load 0).
fn run_wrapped<A: App>(
    app: A,
    topo: Topology,
    cfg: NetConfig,
    opts: &HostOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<(Net, f64, A, Option<BackgroundReport>), String> {
    let bps = host_link_bps(&topo);
    let link = bps.iter().copied().min().unwrap_or(0);
    if opts.background.load > 0.0 && bps.iter().any(|&b| b != link) {
        return Err("background traffic needs every host link at the same rate".into());
    }
    let mut w = WithBackground::new(app, topo.hosts, link, opts.background);
    let (net, wall) = run_app(&mut w, topo, cfg, progress)?;
    let bg = (opts.background.load > 0.0).then(|| w.report());
    Ok((net, wall, w.inner, bg))
}

/// Simulates one layer of `strategy` under `plan` on a star of `plan.workers()` hosts, with
/// the default host options ([`HostOptions::default`]: rate control for `switchgnn`,
/// recovery, no background).
pub fn run_strategy(
    plan: &Plan,
    strategy: Strategy,
    topo: Topology,
    cfg: SimConfig,
    progress: &mut dyn FnMut(Progress),
) -> Result<RunReport, String> {
    run_strategy_with(plan, strategy, topo, cfg, &HostOptions::default(), progress)
}

/// [`run_strategy`] with host options: rate control, recovery timeout, background traffic.
pub fn run_strategy_with(
    plan: &Plan,
    strategy: Strategy,
    topo: Topology,
    cfg: SimConfig,
    opts: &HostOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<RunReport, String> {
    opts.cc.validate()?;
    if !(opts.background.load >= 0.0 && opts.background.load.is_finite()) {
        return Err(format!(
            "background load must be a fraction >= 0, got {}",
            opts.background.load
        ));
    }
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
    let link_bps = host_link_bps(&topo);
    match strategy {
        Strategy::HostBased => {
            let app = HostBased::new(plan).with_timeout(opts.timeout);
            let (net, wall, app, bg) = run_wrapped(app, topo, cfg.net, opts, progress)?;
            let mut r = report(&net, strategy.name(), app.finish, None, wall);
            r.hosts = app.host_counters.clone();
            r.background = bg;
            Ok(r)
        }
        Strategy::SwitchGnn | Strategy::SwitchGnnNoCc => {
            let cc = (strategy == Strategy::SwitchGnn).then_some(opts.cc);
            let app = SwitchGnn::new(plan, switch_node, cfg.recirc_bps).with_host_logic(
                cc,
                &link_bps,
                opts.timeout,
            );
            let (net, wall, app, bg) = run_wrapped(app, topo, cfg.net, opts, progress)?;
            let counters = app.counters.clone();
            let mut r = report(&net, strategy.name(), app.finish, Some(counters), wall);
            r.hosts = app.host_counters();
            r.rates = app.rate_samples();
            r.background = bg;
            Ok(r)
        }
    }
}
