//! `sgnn sim`: plan a graph with `switch-ctl`'s planner and simulate one layer of each
//! strategy on a packet-level network model (`sgnn-sim`).

//!
//! The command runs in stages, one module each: [`settings`] checks the flags and builds the
//! simulator's configuration, [`plan`] loads the graph and plans once per distinct set of
//! planner options the strategies need, [`simulate`] runs each strategy on its plan, and
//! [`output`] writes the header, the traffic-model check, the files and the plots.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use sgnn_sim::net::PS_PER_US;
use sgnn_sim::plot::Formats;
use sgnn_sim::{run_strategy_with, RunReport, Topology};

mod output;
mod plan;
mod settings;

use plan::Planned;
use settings::Settings;

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
    /// workers/leaves hosts each, every leaf linked to each of --spines spine switches; every
    /// leaf and spine a software switch; switchgnn and the delivery strategies aggregate in
    /// two levels, leaf then spine; a leaf sends traffic for worker w through spine w mod
    /// --spines).
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
    /// Comma-separated strategies: host_based (the daemons' host-based exchange with their
    /// rate control, receivers echoing ECN marks to the senders), host_based_no_cc (the same
    /// at line rate, no rate control), switchgnn (the paper's plan), switchgnn_auto,
    /// multicast, partials (the capacity-aware deliveries), g3 (on a --partitioner g3 plan),
    /// strawman, unlimited, switchgnn_no_gamr (on an --order random plan), supergcn, hermod,
    /// switchgnn_no_cc (switchgnn without host rate control), and the APPROXIMATE emma,
    /// grappa, dgs (their own formulas, labelled in every output).
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
    #[arg(long, value_name = "VECTORS", default_value_t = sgnn_delivery::recycle::DEFAULT_SLACK, requires = "recycle")]
    recycle_slack: u64,
    /// Loss-recovery timeout in microseconds: the daemons' fetch and BlockDone timeouts (their
    /// RESEND timeout is 4x this), with their exponential backoff; default: the daemon's 20 ms.
    /// 0 = no recovery (a lost frame leaves the layer incomplete).
    #[arg(long, default_value_t = 20_000.0)]
    timeout_us: f64,
    /// Loss: the switch's drop simulator drops each SwitchGNN frame a worker sends with this
    /// probability (0 to 1), as `sgnn testbed --loss` does; the daemons' recovery brings the
    /// layer back. The strategies the real code runs (host_based, switchgnn and its variants,
    /// multicast, partials, switchgnn_auto). On a leaf-spine, each leaf drops this share of
    /// its workers' frames, as a star's switch does; see --fabric-loss for the frames between
    /// switches.
    #[arg(long, default_value_t = 0.0, value_name = "P")]
    loss: f64,
    /// Leaf-spine only: every leaf and spine drops each SwitchGNN frame another switch sends
    /// it with this probability (0 to 1): partials, spine Results, a leaf's BlockDone, the
    /// root's advance, frames between workers of different leaves. A lost partial or spine
    /// Result costs its receiver the timeout and the cell's raw sources (docs/evaluation.md,
    /// "Loss on the leaf-spine").
    #[arg(long, default_value_t = 0.0, value_name = "P")]
    fabric_loss: f64,
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
    /// Planned pacing of the SwitchGNN workers (the daemon's --pace): `planned` (default)
    /// spreads each worker's sends of a block over the block's busiest link, so the plan's own
    /// fan-in builds no queue for the switch to mark and the rate control reacts only to
    /// congestion the plan did not cause; `off` sends at the controlled rate (the plan's
    /// synchronized deliveries then queue past the ECN threshold and the senders halve). The
    /// cost model's prediction assumes `planned`. docs/host.md, "Planned pacing".
    #[arg(long, default_value_t = sgnn_transport::Pacing::Planned, value_name = "planned|off")]
    pace: sgnn_transport::Pacing,
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
    let st = settings::settings(&mut a)?;
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    let planned = plan::plan_all(&a, &st)?;
    let header = output::header(&a, &st, &planned);
    eprintln!(
        "planned {} plan(s) in {:.1} s; simulating",
        planned.plans.len(),
        planned.plan_secs.iter().sum::<f64>()
    );
    let runs = simulate(&a, &st, &planned)?;
    let check = output::model_check(&runs, &st.strategies, &planned);
    output::write(&a, &st, &planned, &header, &runs, &check)
}

/// Runs every strategy on its plan, with a progress bar each.
fn simulate(a: &SimArgs, st: &Settings, planned: &Planned) -> Result<Vec<RunReport>> {
    let &Settings {
        ref strategies,
        link_bps,
        fabric_bps,
        delay,
        cfg,
        ref opts,
        ..
    } = st;
    let (plans, plan_of) = (&planned.plans, &planned.plan_of);
    let mut runs = Vec::new();
    for (&s, &pi) in strategies.iter().zip(plan_of) {
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
        let r = run_strategy_with(plan, s, topo, cfg, opts, &mut |p| {
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
    Ok(runs)
}

/// Bytes as the flags take them (10 MB, 12.5 MB).
fn fmt_mem(b: u64) -> String {
    if b.is_multiple_of(1_000_000) {
        format!("{} MB", b / 1_000_000)
    } else {
        format!("{:.2} MB", b as f64 / 1e6)
    }
}
