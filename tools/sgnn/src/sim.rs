//! `sgnn sim`: plan a graph with `switch-ctl`'s planner and simulate one layer of each
//! strategy on a packet-level network model (`sgnn-sim`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use sgnn_plan::model::PlanConfig;
use sgnn_plan::traffic;
use sgnn_planner::planner::{make_plan, PlanRequest};
use sgnn_planner::units::parse_bytes;
use sgnn_sim::background::BackgroundConfig;
use sgnn_sim::cc::CcConfig;
use sgnn_sim::net::PS_PER_US;
use sgnn_sim::plot::{plot_runs, Formats, PlotOptions};
use sgnn_sim::{
    report, run_strategy_with, HostOptions, NetConfig, SimConfig, SimError, Strategy, Topology,
    AUTO_MAX_SAMPLES, AUTO_SAMPLE_EVERY,
};

const GBPS: f64 = 1e9;
/// Bound of a fixed-interval series (`--sample-us X`): past it, samples merge in pairs.
const FIXED_MAX_SAMPLES: usize = 1 << 20;

#[derive(Args)]
pub struct SimArgs {
    /// Graph source: edge list file, .npy edge array or rmat:scale=S,... spec.
    #[arg(long)]
    graph: String,
    /// Workers (hosts), one graph partition each.
    #[arg(long, default_value_t = 8)]
    workers: u32,
    /// Topology: star (every worker on one switch) or leaf-spine (--leaves leaf switches of
    /// workers/leaves hosts each, every leaf linked to each of --spines spine switches; ECMP
    /// over the spines; switchgnn aggregates in two levels, leaf then spine).
    #[arg(long, default_value = "star")]
    topology: String,
    /// Leaf switches of --topology leaf-spine; must divide --workers (hosts per leaf =
    /// workers / leaves; the paper: 8 leaves of 16 hosts).
    #[arg(long, default_value_t = 8)]
    leaves: u32,
    /// Spine switches of --topology leaf-spine (the paper: 8).
    #[arg(long, default_value_t = 8)]
    spines: u32,
    /// Bandwidth of every leaf-spine link, each direction, in Gbit/s (default: --link-gbps;
    /// host links always run at --link-gbps).
    #[arg(long)]
    fabric_gbps: Option<f64>,
    /// The switch: `default`, `tofino1`, `tofino2` (aggregator memory measured with the
    /// Tofino compiler, docs/tofino.md) or a profile file (JSON, docs/formats.md "Switch
    /// profile"). Its memory, link rate, recirculation rate and delay become the defaults of
    /// --switch-mem, --link-gbps, --recirc-gbps and --delay-us; those flags still override.
    #[arg(long, value_name = "NAME|FILE")]
    switch: Option<String>,
    /// Switch memory for aggregators (B, KB, MB, GB = x1000; KiB, MiB, GiB = x1024).
    /// Default: the --switch profile's, else 100MB.
    #[arg(long)]
    switch_mem: Option<String>,
    /// Feature vector length (values) of the layer.
    #[arg(long, default_value_t = 128)]
    feature_dim: u32,
    /// Comma-separated strategies: host_based, switchgnn, g3 (on a --partitioner g3 plan),
    /// strawman, unlimited, switchgnn_no_gamr (on an --order random plan), supergcn, hermod,
    /// switchgnn_no_cc (switchgnn without host rate control), and the APPROXIMATE emma, grappa, dgs (their own formulas, labelled in every output).
    /// Strategies needing other planner options get a plan of their own (planned once per
    /// distinct set of options).
    #[arg(long, default_value = "host_based,switchgnn")]
    strategies: String,
    /// Output directory: summary.txt, runs.csv, links.csv, series.csv and the plots
    /// (queue, aggregators, throughput, traffic, time; .svg and/or .png, see --plots).
    #[arg(long)]
    out: PathBuf,
    /// Time series interval in simulated microseconds (series.csv and the plots over
    /// time), or `auto`: start at 0.1 us and double the interval whenever a run reaches
    /// 2000 samples, so every run longer than 100 us ends with 1000 to 2000 samples. A
    /// fixed interval is kept unless a run would exceed 1,048,576 samples.
    #[arg(long, default_value = "auto", value_name = "US|auto")]
    sample_us: String,
    /// Plots to write into --out: svg, png, both or none. PNG text needs a TrueType font:
    /// $SGNN_PLOT_FONT, else DejaVu Sans (Debian: fonts-dejavu-core) or Liberation Sans;
    /// without one only the SVG files are written, with a warning.
    #[arg(long, default_value = "both", value_name = "svg|png|both|none")]
    plots: Formats,
    /// Bandwidth of every host link (and, unless --fabric-gbps, every leaf-spine link), each
    /// direction, in Gbit/s. Default: the --switch profile's, else 100.
    #[arg(long)]
    link_gbps: Option<f64>,
    /// Propagation delay of every link (host and fabric), in microseconds. Default: the
    /// --switch profile's, else 2.
    #[arg(long)]
    delay_us: Option<f64>,
    /// Buffer of each switch egress port (all priority queues together), bytes with unit.
    #[arg(long, default_value = "32MB")]
    buffer: String,
    /// Queue length at or above which the switch ECN-marks a packet, bytes with unit.
    #[arg(long, default_value = "100KB")]
    ecn_threshold: String,
    /// Bandwidth of each switch's recirculation path in Gbit/s (default: the --switch
    /// profile's, else --link-gbps).
    #[arg(long)]
    recirc_gbps: Option<f64>,
    /// Host pacing rate in Gbit/s (default: the link rate).
    #[arg(long)]
    pace_gbps: Option<f64>,
    /// Partitioner: metis, random, chunk or g3.
    #[arg(long, default_value = "metis")]
    partitioner: sgnn_plan::Partitioner,
    /// Send order inside a block: gamr, random or id.
    #[arg(long, default_value = "gamr")]
    order: sgnn_plan::SendOrder,
    /// Seed of the planner.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Delivery strategies (switchgnn_auto, partials, multicast) recycle aggregators by live
    /// range, as `switch-ctl plan --recycle` does: fewer blocks in the same memory.
    #[arg(long)]
    recycle: bool,
    /// With --recycle: vectors of margin before an aggregator is reused
    /// (`switch-ctl plan --recycle-slack`).
    #[arg(long, value_name = "VECTORS", default_value_t = sgnn_plan::recycle::DEFAULT_SLACK, requires = "recycle")]
    recycle_slack: u64,
    /// Loss-recovery timeout in microseconds: the daemons' fetch and BlockDone timeouts (their
    /// RESEND timeout is 4x this), with their exponential backoff; default: the daemon's 20 ms.
    /// 0 = no recovery (a lost frame leaves the layer incomplete).
    #[arg(long, default_value_t = 20_000.0)]
    timeout_us: f64,
    /// Loss: the switch's drop simulator drops each SwitchGNN frame a worker sends with this
    /// probability (0 to 1), as `sgnn testbed --loss` does; the daemons' recovery brings the
    /// layer back. The strategies the real code runs (host_based, switchgnn and its variants,
    /// multicast, partials, switchgnn_auto on a star).
    #[arg(long, default_value_t = 0.0, value_name = "P")]
    loss: f64,
    /// Check every worker's sums against the single-process reference at the end of each run
    /// of the real code (exact, bit for bit; one pass over the edges per feature).
    #[arg(long)]
    verify: bool,
    /// Background traffic per host, fraction of its link capacity (Hadoop flow sizes, Poisson
    /// arrivals, random destinations).
    #[arg(long, default_value_t = 0.0)]
    background_load: f64,
    /// Seed of the background traffic.
    #[arg(long, default_value_t = 1)]
    background_seed: u64,
    /// Rate control (switchgnn): starting rate in Gbit/s (default: the link rate).
    #[arg(long)]
    cc_initial_gbps: Option<f64>,
    /// Rate control: floor in Gbit/s (the daemon's default, 10 Mbit/s).
    #[arg(long, default_value_t = 0.01)]
    cc_min_gbps: f64,
    /// Rate control: ceiling in Gbit/s (default: the link rate).
    #[arg(long)]
    cc_max_gbps: Option<f64>,
    /// Rate control: additive increase per interval without ECN marks, Gbit/s (daemon: 50 Mbit/s).
    /// It does not scale with the link: for DCQCN's R_AI (40 Mbit/s at 40 Gbit/s) on a
    /// 100 Gbit/s link pass 0.1.
    #[arg(long, default_value_t = 0.05)]
    cc_increase_gbps: f64,
    /// Rate control: additive-increase interval, microseconds (daemon: 1000; DCQCN's rate-increase
    /// timer: 55).
    #[arg(long, default_value_t = 1000.0)]
    cc_increase_interval_us: f64,
    /// Rate control: at most one halving per this many microseconds (daemon: 200).
    #[arg(long, default_value_t = 200.0)]
    cc_decrease_interval_us: f64,
    /// GNN layers of an epoch. One layer exchange is simulated; the epoch's communication is
    /// that time times the exchanges (every layer forward, and backward every layer but the
    /// first: 2 x layers - 1), all at --feature-dim (the paper's section 6: a 4-layer GCN).
    #[arg(long, default_value_t = 4)]
    layers: u32,
    /// Count only the forward exchanges of an epoch (layers instead of 2 x layers - 1).
    #[arg(long)]
    forward_only: bool,
    /// Computation per epoch in milliseconds, added to the epoch's communication (the paper
    /// adds the training computation it measured on its GPU testbed; 0 = communication only).
    #[arg(long, default_value_t = 0.0)]
    compute_ms: f64,
    /// Rate control: DCQCN fast recovery, number of increase intervals after a cut that each
    /// halve the distance to the rate before the cut (then additive increase raises that
    /// target and the rate follows halfway). 0 (default, the daemon's law) = additive increase
    /// only; DCQCN uses 5.
    #[arg(long, default_value_t = 0)]
    cc_fast_recovery: u32,
    /// Rate control of the background flows: on = each host paces all its background flows
    /// with one controller of the --cc-* parameters, and a receiver answers an ECN-marked
    /// background frame with a CNP (64-byte frame, at most one per flow per 50 us) that makes
    /// the source halve; off (default) = open-loop background flows.
    #[arg(long, value_enum, default_value_t = OnOff::Off)]
    background_cc: OnOff,
    /// Queue of the background frames at every switch port: low = their own strict priority
    /// below every strategy's frames (DSCP CS1, the default), so they only share the host NIC
    /// and the buffer; data = the queue of the strategies' data frames (host-based exchange
    /// and partials crossing a fabric: a queued background frame delays a data frame behind
    /// it); results = the queue of the switch's Results (SwitchGNN's traffic out of the
    /// switch), as if every class shared one FIFO. Control frames stay above all.
    #[arg(long, value_enum, default_value_t = BackgroundPrio::Low)]
    background_prio: BackgroundPrio,
    /// On --topology leaf-spine, plan as if on a star: partitions are not placed on leaves
    /// (worker w is still host w on leaf w / (workers / leaves), but the partition numbering
    /// ignores it), to measure what placement saves. By default a leaf-spine plan is made with
    /// `switch-ctl plan --leaves` = --leaves: of the flat partition, its parts regrouped onto
    /// leaves, and a split into one part per leaf then among the leaf's workers, the one with
    /// the fewest edges crossing leaves is used, so neighbours share a leaf (docs/planner.md).
    /// The random partitioner is never placed (it is the locality-blind baseline).
    #[arg(long)]
    no_leaf_placement: bool,
}

/// Queue of the background frames (`--background-prio`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BackgroundPrio {
    /// Their own priority, below every strategy's frames.
    Low,
    /// The strategies' data queue.
    Data,
    /// The queue of the switch's Results.
    Results,
}

/// A switch of the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OnOff {
    /// Enabled.
    On,
    /// Disabled.
    Off,
}

pub fn main(a: SimArgs) -> ExitCode {
    match run(a) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn bps(gbps: f64, name: &str) -> Result<u64> {
    if !(gbps.is_finite() && gbps > 0.0) {
        bail!("{name} must be a positive number of Gbit/s, got {gbps}");
    }
    Ok((gbps * GBPS).round() as u64)
}

/// Checks a leaf-spine shape: at least one leaf and spine, no more leaves than workers, the
/// leaves dividing the workers, and not absurdly many switches.
fn leaf_spine_shape(workers: u32, leaves: u32, spines: u32) -> Result<()> {
    if leaves == 0 || spines == 0 {
        bail!("--leaves and --spines must be at least 1 (got {leaves} x {spines})");
    }
    if leaves > workers {
        bail!("--leaves {leaves} is more than --workers {workers}: a leaf needs a host");
    }
    if !workers.is_multiple_of(leaves) {
        bail!(
            "--workers {workers} is not a multiple of --leaves {leaves}: every leaf must hold \
             the same number of hosts (workers / leaves = {:.2}); try --leaves {}",
            workers as f64 / leaves as f64,
            (1..=leaves)
                .rev()
                .find(|l| workers.is_multiple_of(*l))
                .unwrap_or(1)
        );
    }
    if spines > 1024 || leaves as u64 * spines as u64 > 65_536 {
        bail!("--leaves {leaves} x --spines {spines}: more than 1024 spines or 65536 leaf-spine links is not a fabric this simulator is meant for");
    }
    Ok(())
}

fn run(mut a: SimArgs) -> Result<()> {
    // The --switch profile fills in what the flags leave open.
    let profile = a
        .switch
        .as_deref()
        .map(sgnn_plan::profile::SwitchProfile::load)
        .transpose()?;
    let link_gbps = a
        .link_gbps
        .or(profile.as_ref().map(|p| p.link_gbps))
        .unwrap_or(100.0);
    let delay_us = a
        .delay_us
        .or(profile.as_ref().map(|p| p.delay_us))
        .unwrap_or(2.0);
    a.recirc_gbps = a.recirc_gbps.or(profile.as_ref().map(|p| p.recirc_gbps));
    let switch_mem_bytes = match (&a.switch_mem, &profile) {
        (Some(m), _) => parse_bytes(m).map_err(|e| anyhow!("--switch-mem: {e}"))?,
        (None, Some(p)) => p.agg_mem_bytes,
        (None, None) => 100_000_000,
    };
    let strategies: Vec<Strategy> = a
        .strategies
        .split(',')
        .map(|s| {
            s.trim()
                .parse()
                .map_err(|e: SimError| anyhow!("--strategies: {e}"))
        })
        .collect::<Result<_>>()?;
    let link_bps = bps(link_gbps, "--link-gbps")?;
    let fabric_bps = a
        .fabric_gbps
        .map(|g| bps(g, "--fabric-gbps"))
        .transpose()?
        .unwrap_or(link_bps);
    let topo_desc = match a.topology.as_str() {
        "star" => "star".to_string(),
        "leaf-spine" => {
            leaf_spine_shape(a.workers, a.leaves, a.spines)?;
            format!(
                "leaf-spine {} leaves x {} spines, {} hosts per leaf, fabric {} Gbit/s",
                a.leaves,
                a.spines,
                a.workers / a.leaves,
                fabric_bps as f64 / GBPS
            )
        }
        t => bail!("--topology {t}: use star or leaf-spine"),
    };
    if !(delay_us.is_finite() && delay_us >= 0.0) {
        bail!("--delay-us must be a non-negative number, got {delay_us}");
    }
    let delay = (delay_us * PS_PER_US as f64).round() as u64;
    let us = |v: f64, name: &str| -> Result<u64> {
        if !(v.is_finite() && v >= 0.0) {
            bail!("{name} must be a non-negative number of microseconds, got {v}");
        }
        Ok((v * PS_PER_US as f64).round() as u64)
    };
    let timeout = us(a.timeout_us, "--timeout-us")?;
    if !(a.background_load.is_finite() && (0.0..=1.0).contains(&a.background_load)) {
        bail!(
            "--background-load must be a fraction of the link in [0, 1], got {}",
            a.background_load
        );
    }
    if !(a.loss.is_finite() && (0.0..1.0).contains(&a.loss)) {
        bail!("--loss is a probability in [0, 1), got {}", a.loss);
    }
    let mut opts = HostOptions {
        cc: CcConfig {
            initial_bps: a
                .cc_initial_gbps
                .map(|g| bps(g, "--cc-initial-gbps"))
                .transpose()?,
            min_bps: bps(a.cc_min_gbps, "--cc-min-gbps")?,
            max_bps: a.cc_max_gbps.map(|g| bps(g, "--cc-max-gbps")).transpose()?,
            increase_bps: if a.cc_increase_gbps == 0.0 {
                0
            } else {
                bps(a.cc_increase_gbps, "--cc-increase-gbps")?
            },
            increase_interval: us(a.cc_increase_interval_us, "--cc-increase-interval-us")?,
            decrease_interval: us(a.cc_decrease_interval_us, "--cc-decrease-interval-us")?,
            fast_recovery_steps: a.cc_fast_recovery,
        },
        timeout: (timeout > 0).then_some(timeout),
        loss: a.loss,
        verify: a.verify,
        background: BackgroundConfig {
            load: a.background_load,
            seed: a.background_seed,
            until: None,
            cc: None,
            prio: match a.background_prio {
                BackgroundPrio::Low => sgnn_sim::background::PRIO_BACKGROUND,
                BackgroundPrio::Data => sgnn_sim::strategies::PRIO_DATA,
                BackgroundPrio::Results => sgnn_sim::strategies::PRIO_RESULT,
            },
        },
    };
    // Background flows use the same law as switchgnn's hosts.
    opts.background.cc = (a.background_cc == OnOff::On).then_some(opts.cc);
    opts.cc.validate().map_err(|e| anyhow!("--cc-*: {e}"))?;
    if a.layers == 0 {
        bail!("--layers must be at least 1");
    }
    let epoch = report::Epoch {
        layers: a.layers,
        backward: !a.forward_only,
        compute: us(a.compute_ms * 1000.0, "--compute-ms (in us)")?,
    };
    let (sample_every, max_samples) = if a.sample_us == "auto" {
        (AUTO_SAMPLE_EVERY, AUTO_MAX_SAMPLES)
    } else {
        let us: f64 = a.sample_us.parse().map_err(|_| {
            anyhow!(
                "--sample-us: expected a number of microseconds or auto, got {:?}",
                a.sample_us
            )
        })?;
        let ps = (us * PS_PER_US as f64).round();
        if !(ps.is_finite() && ps >= 1.0) {
            bail!(
                "--sample-us must be positive (at least 1 ps), got {}",
                a.sample_us
            );
        }
        (ps as u64, FIXED_MAX_SAMPLES)
    };
    let cfg = SimConfig {
        net: NetConfig {
            buffer_bytes: parse_bytes(&a.buffer).map_err(|e| anyhow!("--buffer: {e}"))?,
            ecn_threshold_bytes: parse_bytes(&a.ecn_threshold)
                .map_err(|e| anyhow!("--ecn-threshold: {e}"))?,
            pace_bps: a.pace_gbps.map(|g| bps(g, "--pace-gbps")).transpose()?,
            sample_every: Some(sample_every),
            max_samples: Some(max_samples),
        },
        recirc_bps: a
            .recirc_gbps
            .map(|g| bps(g, "--recirc-gbps"))
            .transpose()?
            .unwrap_or(link_bps),
    };
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;

    let spinner = ProgressBar::new_spinner();
    spinner.set_style(ProgressStyle::with_template("{spinner} plan: {msg}").unwrap());
    spinner.enable_steady_tick(Duration::from_millis(100));
    spinner.set_message(format!("loading {}", a.graph));
    let t0 = Instant::now();
    let g = sgnn_graph::load_graph(&a.graph).with_context(|| format!("loading {}", a.graph))?;
    let base = PlanConfig {
        workers: a.workers,
        partitioner: a.partitioner,
        switch_mem_bytes,
        agg_bytes: 128,
        feature_dim: a.feature_dim,
        order: a.order,
        seed: a.seed,
        max_passes: 256,
        leaves: 1,
        aggregate: sgnn_plan::delivery::AggregateMode::Paper,
        recycle_slack: a.recycle.then_some(a.recycle_slack),
    };
    // Placement of partitions on leaves (what `switch-ctl plan --leaves` does), by default on
    // a leaf-spine; the strategies' plan variants keep it.
    let (base, placement) = match (a.topology.as_str(), a.no_leaf_placement) {
        ("leaf-spine", false) if a.partitioner == sgnn_plan::Partitioner::Random => (
            base,
            "placement: none (the random partitioner is locality-blind; metis, g3 and chunk \
             are placed on leaves)"
                .to_string(),
        ),
        ("leaf-spine", false) if a.leaves > 1 => (
            PlanConfig {
                leaves: a.leaves,
                aggregate: sgnn_plan::delivery::AggregateMode::Paper,
                ..base
            },
            format!(
                "placement: partitions on {} leaves (whichever of the flat partition, its parts \
                 regrouped, or a split per leaf then per worker crosses fewest leaves; \
                 workers l*{per}..l*{per}+{} on leaf l; --no-leaf-placement to compare)",
                a.leaves,
                a.workers / a.leaves - 1,
                per = a.workers / a.leaves
            ),
        ),
        ("leaf-spine", true) => (
            base,
            "placement: none (--no-leaf-placement: planned as on a star, partition numbering \
             ignores the leaves)"
                .to_string(),
        ),
        ("leaf-spine", false) => (base, "placement: none (one leaf)".to_string()),
        _ => (base, "placement: none (one switch)".to_string()),
    };
    // One plan per distinct set of planner options the strategies need (the user's options
    // with each strategy's `plan_variant` applied), in order of first use.
    let mut configs: Vec<PlanConfig> = Vec::new();
    let mut plan_of = Vec::with_capacity(strategies.len());
    for s in &strategies {
        let c = s.plan_variant().apply(&base);
        let i = configs.iter().position(|x| *x == c).unwrap_or_else(|| {
            configs.push(c);
            configs.len() - 1
        });
        plan_of.push(i);
    }
    let mut plans = Vec::with_capacity(configs.len());
    let mut plan_secs = Vec::with_capacity(configs.len());
    let mut graph = Some(g);
    for (i, config) in configs.iter().enumerate() {
        let t = Instant::now();
        // The planner takes the graph by value: clone it for all but the last plan.
        let g = if i + 1 == configs.len() {
            graph.take().expect("taken once, by the last plan")
        } else {
            graph.clone().expect("present until the last plan")
        };
        let req = PlanRequest {
            config: config.clone(),
            graph_source: a.graph.clone(),
            max_abs_value: 1.0,
        };
        let (plan, _report) = make_plan(g.csr, g.stats, &req, &mut |e| {
            if let sgnn_planner::planner::Event::Start { stage, .. } = e {
                spinner.set_message(format!(
                    "{stage} (partitioner {}, order {})",
                    config.partitioner, config.order
                ));
            }
        })?;
        plan_secs.push(t.elapsed().as_secs_f64());
        plans.push(plan);
    }
    spinner.finish_and_clear();
    let load_secs = t0.elapsed().as_secs_f64() - plan_secs.iter().sum::<f64>();
    let plan = &plans[0];
    let mut header = format!(
        "sgnn sim: {} ({} vertices, {} edges), {} workers, {}, {} Gbit/s links, {} us delay, \
         buffer {} B/port, ECN at {} B, recirculation {} Gbit/s (graph loaded in {:.1} s)",
        a.graph,
        plan.graph.num_vertices(),
        plan.graph.num_edges(),
        plan.workers(),
        topo_desc,
        link_gbps,
        delay_us,
        cfg.net.buffer_bytes,
        cfg.net.ecn_threshold_bytes,
        cfg.recirc_bps as f64 / GBPS,
        load_secs
    );
    if let Some(p) = &profile {
        header.push_str(&format!(
            "\nswitch profile {}: {} of aggregator memory, {} lanes per pass",
            p.name,
            fmt_mem(p.agg_mem_bytes),
            p.lanes_per_pass
        ));
    }
    header.push_str(&format!(
        "\nhosts: recovery timeout {}, background load {}{}",
        if timeout > 0 {
            format!("{} us", a.timeout_us)
        } else {
            "none".into()
        },
        a.background_load,
        match a.background_prio {
            BackgroundPrio::Low => "",
            BackgroundPrio::Data => " in the strategies' data queue",
            BackgroundPrio::Results => " in the Results' queue",
        }
    ));
    header.push_str(&format!(
        "\nrate control (switchgnn{}): +{} Gbit/s per {} us, fast recovery {} steps, at most one \
         halving per {} us, floor {} Gbit/s",
        if opts.background.cc.is_some() {
            " and background flows"
        } else {
            "; background flows open loop"
        },
        a.cc_increase_gbps,
        a.cc_increase_interval_us,
        a.cc_fast_recovery,
        a.cc_decrease_interval_us,
        a.cc_min_gbps
    ));
    header.push('\n');
    header.push_str(&placement);
    for (i, p) in plans.iter().enumerate() {
        let users: Vec<&str> = strategies
            .iter()
            .zip(&plan_of)
            .filter(|(_, &k)| k == i)
            .map(|(s, _)| s.name())
            .collect();
        header.push_str(&format!(
            "\nplan {} (partitioner {}, order {}; for {}): switch memory {} B, {} segments per \
             vertex, {} blocks in {} levels (planned in {:.1} s)",
            i,
            p.manifest.config.partitioner,
            p.manifest.config.order,
            users.join(", "),
            p.manifest.config.switch_mem_bytes,
            p.manifest.segments,
            p.blocks.len(),
            p.levels(),
            plan_secs[i]
        ));
    }
    eprintln!(
        "planned {} plan(s) in {:.1} s; simulating",
        plans.len(),
        plan_secs.iter().sum::<f64>()
    );

    let mut runs = Vec::new();
    for (&s, &pi) in strategies.iter().zip(&plan_of) {
        let plan = &plans[pi];
        let bar = ProgressBar::new(1);
        bar.set_style(
            ProgressStyle::with_template(
                "{prefix:>11} [{bar:30}] {percent:>3}% frames {msg} {elapsed}",
            )
            .unwrap()
            .progress_chars("=> "),
        );
        bar.set_prefix(s.name());
        let topo = if a.topology == "star" {
            Topology::star(plan.workers(), link_bps, delay)
        } else {
            Topology::leaf_spine(
                a.leaves,
                a.spines,
                a.workers / a.leaves,
                link_bps,
                fabric_bps,
                delay,
            )
        };
        let r = run_strategy_with(plan, s, topo, cfg, &opts, &mut |p| {
            bar.set_length(p.total.max(1));
            bar.set_position(p.done);
            bar.set_message(format!(
                "t={:.1} us, {} events",
                p.now as f64 / PS_PER_US as f64,
                p.events
            ));
        })?;
        bar.finish_and_clear();
        runs.push(r);
    }

    // The planner's traffic model (on each strategy's own plan) beside the simulated bytes.
    // The model counts host links (a star's every link); a fabric adds leaf-spine bytes.
    let models: Vec<_> = plans.iter().map(traffic::model).collect();
    let mut check =
        String::from("\ntraffic model (sgnn-plan) vs simulated wire bytes on the host links:\n");
    for ((r, s), &pi) in runs.iter().zip(&strategies).zip(&plan_of) {
        let Some(name) = s.traffic_model() else {
            check.push_str(&format!(
                "  {:<18} APPROXIMATE: no planner model (its own formula is in its module doc); \
                 simulated {:>14}\n",
                r.strategy,
                r.total_bytes()
            ));
            continue;
        };
        let m = match &r.model_traffic {
            Some(t) => t.total,
            None => models[pi][name].total,
        };
        let host = r.host_uplink.iter().sum::<u64>() + r.host_downlink.iter().sum::<u64>();
        // The daemons' acks are beyond the model: compare what is left.
        let acks = r.overhead.as_ref().map_or(0, |o| o.total());
        check.push_str(&format!(
            "  {:<18} model {:<13} (plan {}) {:>14}  simulated {:>14}  {}",
            r.strategy,
            name,
            pi,
            m,
            host,
            if m == host {
                "equal".to_string()
            } else if m + acks == host {
                format!("equal with the daemons' {acks} B of acks")
            } else if r.hosts.recovery_frames() > 0 || r.background.is_some() {
                "different (recovery or background traffic)".to_string()
            } else {
                "DIFFERENT".to_string()
            }
        ));
        if r.total_bytes() != host {
            check.push_str(&format!(
                "  (+ {} B on leaf-spine links)",
                r.total_bytes() - host
            ));
        }
        check.push('\n');
    }

    let short = report::summary(&header, &runs, &epoch, false) + &check;
    let long = report::summary(&header, &runs, &epoch, true) + &check;
    let mut csv = String::from(report::CSV_HEADER);
    csv.push('\n');
    for r in &runs {
        csv.push_str(&report::csv_row(r, &epoch));
        csv.push('\n');
    }
    let write = |name: &str, text: &str| {
        let p = a.out.join(name);
        std::fs::write(&p, text).with_context(|| format!("writing {}", p.display()))
    };
    write("summary.txt", &long)?;
    write("runs.csv", &csv)?;
    write("links.csv", &report::links_csv(&runs))?;
    write("rates.csv", &report::rates_csv(&runs))?;
    write("series.csv", &report::series_csv(&runs))?;
    print!("{short}");
    for r in &runs {
        if a.sample_us != "auto" && r.sample_interval != Some(sample_every) {
            eprintln!(
                "note: {} ran long enough for more than {FIXED_MAX_SAMPLES} samples: its series \
                 is sampled every {:.3} us instead of {} us",
                r.strategy,
                r.sample_interval.unwrap_or(0) as f64 / PS_PER_US as f64,
                a.sample_us
            );
        }
    }
    let plotted = plot_runs(
        &runs,
        &a.out,
        &PlotOptions {
            formats: a.plots,
            aggregator_bytes: plan.manifest.config.agg_bytes as u64,
            aggregators: Some(plan.manifest.aggregators),
        },
    )?;
    if let Some(why) = &plotted.png_skipped {
        eprintln!("warning: PNG plots not written, SVG only: {why}");
    }
    let mut names = vec![
        "summary.txt",
        "runs.csv",
        "links.csv",
        "rates.csv",
        "series.csv",
    ];
    let plots: Vec<String> = plotted
        .files
        .iter()
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    names.extend(plots.iter().map(String::as_str));
    println!("wrote {}/{}", a.out.display(), names.join(", "));
    if runs.iter().any(|r| r.time.is_none()) {
        eprintln!(
            "warning: a run did not complete (frames were dropped{}); raise --buffer{}",
            if timeout > 0 {
                ""
            } else {
                " and --timeout-us 0 turned recovery off"
            },
            if timeout > 0 {
                ""
            } else {
                " or set --timeout-us"
            }
        );
    }
    Ok(())
}

/// Bytes as the flags take them (10 MB, 12.5 MB).
fn fmt_mem(b: u64) -> String {
    if b.is_multiple_of(1_000_000) {
        format!("{} MB", b / 1_000_000)
    } else {
        format!("{:.2} MB", b as f64 / 1e6)
    }
}
