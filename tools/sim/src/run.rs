//! One run: a strategy on a topology with a plan, through the event loop, into a report.

use std::time::Instant;

use crate::background::{BackgroundReport, WithBackground};
use crate::daemons::{DaemonCounters, DaemonOptions};
use crate::net::{self, App, ChannelStats, Net, NetConfig, NetStats, Progress, Sample, Time};
use crate::strategies::{self, OneShot, RealConfig, RealTraffic, ScheduledTraffic, SwitchCounters};
use crate::strategy::Strategy;
use crate::topology::Topology;
use crate::SimError;
use sgnn_delivery::{self as delivery, PairIndex, Prediction, Sizes};
use sgnn_plan::profile::SwitchProfile;
use sgnn_plan::traffic::StrategyTraffic;
use sgnn_plan::AggregateMode;
use sgnn_plan::Plan;
use sgnn_transport::engine::Mode;
use sgnn_wire::{wire_bytes, DATA_FRAME_LEN};

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
    /// Extra recirculation passes per aggregate the switch completes
    /// (`SwitchProfile::harvest_passes`): 0 for the v1model semantics, 1 for the TNA program,
    /// whose lane pairs emit the even lanes' sums in a harvest pass (one more when the
    /// completing pass goes on to a next pass).
    pub harvest_passes: u32,
}

/// Frames a run put on the host links beyond what the planner's traffic model counts: the
/// daemons' Acks (per block, every worker's tail probe, the switch's answer and its all-sent
/// notice to every worker; under loss also the switch's NACKs; docs/host.md,
/// "Loss recovery"). Lossless runs of the real code carry exactly the model's bytes plus
/// these.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overhead {
    /// Wire bytes each host sent of them.
    pub uplink: Vec<u64>,
    /// Wire bytes each host received of them.
    pub downlink: Vec<u64>,
    /// Frames on host links: each sent (a tail probe) and each received (an answer, a
    /// NACK, the all-sent notice) counts once.
    pub frames: u64,
}

impl Overhead {
    /// Wire bytes on all host links (each frame counts on its sender's uplink and its
    /// receiver's downlink).
    pub fn total(&self) -> u64 {
        self.uplink.iter().sum::<u64>() + self.downlink.iter().sum::<u64>()
    }
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
    /// An approximate method ([`Strategy::approximate`]): label it in every output.
    pub approximate: bool,
    /// Communication time of one layer (last delivery / last BlockAdvance), if the layer
    /// completed (with recovery off, `DaemonOptions::timeout == None`, it cannot if frames were
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
    pub hosts: DaemonCounters,
    /// Per host, its sending rate over time: `(time, bit/s)` at the start and at every change
    /// (empty for hosts without rate control).
    pub rates: Vec<Vec<(Time, u64)>>,
    /// Background flows, if any ran.
    pub background: Option<BackgroundReport>,
    /// Time series (empty unless [`NetConfig::sample_every`] is set).
    pub series: Vec<Sample>,
    /// The planner's cost model of this strategy for the run's link rate, delay and
    /// recirculation (`sgnn_delivery`), where it has one (on a star).
    pub predicted: Option<Prediction>,
    /// The bytes the planner's model says this strategy puts on every host link, for the
    /// strategies modelled by `sgnn_delivery` (the others: `sgnn_delivery::traffic::model`).
    pub model_traffic: Option<StrategyTraffic>,
    /// Sampling interval of `series` at the end of the run (the configured one, doubled by
    /// every merge of [`NetConfig::max_samples`]).
    pub sample_interval: Option<Time>,
    /// Frames beyond the traffic model (the real code's acks), if the strategy sends any.
    pub overhead: Option<Overhead>,
    /// Why the layer did not complete, when a worker stopped with an error (the real code).
    pub failure: Option<String>,
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
) -> Result<(Net, f64), SimError> {
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
        approximate: false,
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
        hosts: DaemonCounters::default(),
        rates: Vec::new(),
        background: None,
        series: net.series().to_vec(),
        sample_interval: net.sample_interval(),
        predicted: None,
        model_traffic: None,
        overhead: None,
        failure: None,
    }
}

/// The switch profile of a star run: its host link rate and delay, the run's recirculation
/// rate and the plan's switch memory (for the planner's cost model).
pub fn star_profile(topo: &Topology, cfg: &SimConfig, plan: &Plan) -> Option<SwitchProfile> {
    if topo.switches != 1 {
        return None;
    }
    link_profile(topo, cfg, plan)
}

/// The switch profile of the first link's rate and delay (a host's, on a star or a
/// `Topology::leaf_spine`), the run's recirculation rate and the plan's switch memory.
fn link_profile(topo: &Topology, cfg: &SimConfig, plan: &Plan) -> Option<SwitchProfile> {
    let link = topo.links.first()?;
    let mut p = SwitchProfile::named("default").expect("a known profile");
    p.name = "sim".into();
    p.link_gbps = link.bps as f64 / 1e9;
    p.delay_us = link.delay as f64 / net::PS_PER_US as f64;
    p.recirc_gbps = cfg.recirc_bps as f64 / 1e9;
    p.agg_mem_bytes = plan.manifest.config.switch_mem_bytes;
    Some(p)
}

/// The per-pair delivery a delivery strategy runs, chosen for `prof`, and the plan the switch
/// and the daemons run for it (lowered as `switch-ctl plan --aggregate` lowers it: when
/// `auto`'s per-edge sums do not fit one block, the best choice without them).
fn delivery_of(
    plan: &Plan,
    strategy: Strategy,
    prof: &SwitchProfile,
) -> Result<(delivery::Planned, Plan), SimError> {
    let mode = match strategy {
        Strategy::Multicast => AggregateMode::Multicast,
        Strategy::Partials => AggregateMode::Partials,
        _ => AggregateMode::Auto,
    };
    let idx = PairIndex::new(plan);
    let planned = delivery::plan_delivery(plan, &idx, mode, prof);
    match sgnn_delivery::lower::lower(plan, &planned.tables, mode) {
        Ok(lowered) => Ok((planned, lowered)),
        Err(_) if mode == AggregateMode::Auto && !planned.tables.r_rows.is_empty() => {
            let planned = delivery::plan_delivery_with(plan, &idx, mode, prof, false);
            let lowered = sgnn_delivery::lower::lower(plan, &planned.tables, mode)?;
            Ok((planned, lowered))
        }
        Err(e) => Err(e.into()),
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

/// Runs `app` with background flows per `opts` (none at load 0); `link_bps` is
/// [`host_link_bps`] of `topo`.
fn run_wrapped<A: App>(
    app: A,
    topo: Topology,
    link_bps: &[u64],
    cfg: NetConfig,
    opts: &DaemonOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<(Net, f64, A, Option<BackgroundReport>), SimError> {
    let link = link_bps.iter().copied().min().unwrap_or(0);
    if opts.background.load > 0.0 && link_bps.iter().any(|&b| b != link) {
        return Err(SimError::BackgroundLinkRates);
    }
    let mut w = WithBackground::new(app, topo.hosts, link, opts.background);
    let (net, wall) = run_app(&mut w, topo, cfg, progress)?;
    let bg = (opts.background.load > 0.0).then(|| w.report());
    Ok((net, wall, w.inner, bg))
}

/// Simulates one layer of `strategy` under `plan` on `topo` (a star or a leaf-spine fabric
/// of `plan.workers()` hosts; strawman and unlimited on a star only), with the default host
/// options ([`DaemonOptions::default`]: rate control for `switchgnn`,
/// recovery, no background).
pub fn run_strategy(
    plan: &Plan,
    strategy: Strategy,
    topo: Topology,
    cfg: SimConfig,
    progress: &mut dyn FnMut(Progress),
) -> Result<RunReport, SimError> {
    run_strategy_with(
        plan,
        strategy,
        topo,
        cfg,
        &DaemonOptions::default(),
        progress,
    )
}

/// [`run_strategy`] with host options: rate control, recovery timeout, background traffic.
pub fn run_strategy_with(
    plan: &Plan,
    strategy: Strategy,
    topo: Topology,
    cfg: SimConfig,
    opts: &DaemonOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<RunReport, SimError> {
    opts.cc.validate()?;
    if let Some(cc) = &opts.background.cc {
        cc.validate()
            .map_err(|e| SimError::BackgroundRateControl(Box::new(e)))?;
    }
    if !(opts.background.load >= 0.0 && opts.background.load.is_finite()) {
        return Err(SimError::BackgroundLoad {
            load: opts.background.load,
        });
    }
    if topo.hosts != plan.workers() {
        return Err(SimError::HostCount {
            hosts: topo.hosts,
            workers: plan.workers(),
        });
    }
    // The real code runs a star, or a leaf-spine fabric laid out as `Topology::leaf_spine`
    // does (every leaf and spine a software switch, two-level aggregation as
    // `sgnn_switch::fabric` lowers it), with or without loss.
    let fabric = topo.fabric();
    if topo.switches != 1 && matches!(strategy, Strategy::Strawman | Strategy::Unlimited) {
        return Err(SimError::StarOnly {
            strategy: strategy.name(),
            switches: topo.switches,
        });
    }
    // The real code needs a switch per node it can lower the plan onto (the delivery
    // strategies included).
    let real_code = matches!(
        strategy,
        Strategy::HostBased
            | Strategy::HostBasedNoCc
            | Strategy::SwitchGnn
            | Strategy::SwitchGnnNoGamr
            | Strategy::SwitchGnnNoCc
            | Strategy::Multicast
            | Strategy::Partials
            | Strategy::SwitchGnnAuto
    );
    if real_code && topo.switches != 1 && fabric.is_none() {
        return Err(SimError::NotStarOrFabric {
            strategy: strategy.name(),
            topology: topo.name.clone(),
        });
    }
    if !strategy.plan_variant().matches(&plan.manifest.config) {
        return Err(SimError::PlanMismatch {
            strategy: strategy.name(),
            needs: strategy.plan_variant(),
            partitioner: plan.manifest.config.partitioner.to_string(),
            order: plan.manifest.config.order.to_string(),
        });
    }
    let switch_node = topo.hosts;
    // A delivery strategy's choices are made with the one-switch cost model, on a fabric too
    // (where its prediction is not reported: the model knows no second level).
    let star = topo.switches == 1;
    let profile = star_profile(&topo, &cfg, plan)
        .or_else(|| fabric.and_then(|_| link_profile(&topo, &cfg, plan)));
    let link_bps = host_link_bps(&topo);
    // The slowest host's sending rate (Hermod plans its rounds with it).
    let host_bps = {
        let link = link_bps.iter().copied().min().unwrap_or(1);
        cfg.net.pace_bps.map_or(link, |p| p.min(link))
    };
    let name = strategy.name();
    let exchange = |mut app: ScheduledTraffic, topo, progress: &mut dyn FnMut(Progress)| {
        let (net, wall) = run_app(&mut app, topo, cfg.net, progress)?;
        Ok::<_, SimError>(report(&net, name, app.finish, None, wall))
    };
    let one_shot = |mut app: OneShot, topo, progress: &mut dyn FnMut(Progress)| {
        let (net, wall) = run_app(&mut app, topo, cfg.net, progress)?;
        let counters = Some(app.counters().clone());
        Ok::<_, SimError>(report(&net, name, app.finish, counters, wall))
    };
    // The strategies the real code runs (above): the daemons' engines and the software
    // switch's pipelines (`strategies::real`).
    let real = |plan: &Plan, mode: Mode, rate: bool, progress: &mut dyn FnMut(Progress)| {
        let link = link_bps.iter().copied().min().unwrap_or(1);
        // Without rate control the daemons pace at the same rate and never halve it (the
        // floor is the ceiling), so runs with and without differ only by the control.
        let mut rc = opts.cc.rate_config(link, wire_bytes(DATA_FRAME_LEN));
        if !rate {
            rc.min_mbps = rc.max_mbps;
            rc.initial_mbps = rc.max_mbps;
        }
        let rcfg = RealConfig {
            mode,
            rate: Some(rc),
            timeout: opts.timeout,
            recirc_bps: cfg.recirc_bps,
            harvest_passes: cfg.harvest_passes,
            loss: opts.loss,
            seed: plan.manifest.config.seed,
            all_blocks: false,
            fabric,
            fabric_loss: opts.fabric_loss,
            pacing: opts.pacing,
        };
        let app = RealTraffic::new(plan, rcfg)?;
        let (net, wall, mut app, bg) =
            run_wrapped(app, topo.clone(), &link_bps, cfg.net, opts, progress)?;
        // A worker that stopped (its engine's error: a stall without recovery, a switch that
        // lost its tables) leaves the layer incomplete; the report says why.
        let failure = app
            .error
            .take()
            .map(|(worker, message)| SimError::Engine { worker, message }.to_string());
        if opts.verify && app.finish.is_some() && failure.is_none() {
            app.verify()?;
        }
        let counters = (mode == Mode::SwitchGnn).then(|| app.switch_counters());
        let finish = if failure.is_some() { None } else { app.finish };
        let mut r = report(&net, name, finish, counters, wall);
        r.failure = failure;
        r.hosts = app.host_counters();
        r.rates = if rate { app.rate_samples() } else { Vec::new() };
        r.background = bg;
        r.overhead = Some(app.acks.clone());
        Ok::<_, SimError>(r)
    };
    let mut r = match strategy {
        Strategy::HostBased => real(plan, Mode::HostBased, true, progress)?,
        Strategy::HostBasedNoCc => real(plan, Mode::HostBased, false, progress)?,
        Strategy::SwitchGnn | Strategy::SwitchGnnNoGamr | Strategy::SwitchGnnNoCc => real(
            plan,
            Mode::SwitchGnn,
            strategy != Strategy::SwitchGnnNoCc,
            progress,
        )?,
        Strategy::Strawman => one_shot(
            OneShot::strawman(plan, plan.manifest.config.seed, switch_node, cfg.recirc_bps),
            topo,
            progress,
        )?,
        Strategy::Unlimited => one_shot(
            OneShot::unlimited(plan, switch_node, cfg.recirc_bps),
            topo,
            progress,
        )?,
        Strategy::G3 => exchange(
            ScheduledTraffic::new(strategies::g3::schedule(plan), true),
            topo,
            progress,
        )?,
        Strategy::SuperGcn => exchange(
            ScheduledTraffic::new(strategies::supergcn::schedule(plan), true),
            topo,
            progress,
        )?,
        Strategy::Hermod => exchange(
            ScheduledTraffic::new(strategies::hermod::schedule(plan, host_bps), true),
            topo,
            progress,
        )?,
        Strategy::Emma => exchange(
            ScheduledTraffic::new(strategies::emma::schedule(plan), true),
            topo,
            progress,
        )?,
        Strategy::Grappa => exchange(
            ScheduledTraffic::new(strategies::grappa::schedule(plan), false),
            topo,
            progress,
        )?,
        Strategy::Dgs => exchange(
            ScheduledTraffic::new(strategies::dgs::schedule(plan), false),
            topo,
            progress,
        )?,
        Strategy::Multicast | Strategy::Partials | Strategy::SwitchGnnAuto => {
            let prof = profile
                .as_ref()
                .expect("a star or a fabric (checked above)");
            let (planned, lowered) = delivery_of(plan, strategy, prof)?;
            let mut r = real(&lowered, Mode::SwitchGnn, true, progress)?;
            r.predicted = star.then_some(planned.prediction);
            r.model_traffic = Some(planned.traffic);
            r
        }
    };
    if r.predicted.is_none() {
        // The cost model is a star's: no prediction on a fabric.
        if let Some(prof) = profile.as_ref().filter(|_| star) {
            r.predicted = match strategy {
                Strategy::HostBased | Strategy::HostBasedNoCc => Some(
                    delivery::predict_host_based(
                        &PairIndex::new(plan),
                        &plan.partition,
                        prof,
                        Sizes::for_switch(plan, prof),
                    )
                    .prediction,
                ),
                Strategy::SwitchGnn | Strategy::SwitchGnnNoCc | Strategy::SwitchGnnNoGamr => {
                    Some(delivery::predict_paper(plan, prof))
                }
                _ => None,
            };
        }
    }
    r.approximate = strategy.approximate();
    Ok(r)
}
