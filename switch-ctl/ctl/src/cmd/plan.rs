//! `switch-ctl plan`: plans a graph for M workers and a switch, writes the plan directory and
//! `report.json`, and prints the traffic model and every delivery's predicted time; with
//! `--verify DIR`, re-checks an existing plan instead.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;
use sgnn_plan::model::{PlanConfig, DEFAULT_MAX_PASSES};
use sgnn_plan::AggregateMode;
use sgnn_plan::{Partitioner, Plan, SendOrder};
use sgnn_planner::planner::{plan_and_deliver, Event, PlanRequest};
use sgnn_planner::units::{fmt_bytes, parse_bytes};

use super::progress::{load_graph, Progress};
use super::show::leaves_line;

#[derive(Args)]
pub struct PlanArgs {
    /// Re-check every invariant of the plan in DIR and exit non-zero with a precise message if
    /// one fails (coverage of every cross edge exactly once, counts, capacity, index ranges).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["graph", "out"])]
    verify: Option<PathBuf>,

    /// The graph: a SNAP edge list (plain or .gz), a .npy edge array of shape [E, 2], or a
    /// generator spec `rmat:scale=S,edge_factor=F[,a=0.57,b=0.19,c=0.19,d=0.05,seed=1]`.
    #[arg(long, value_name = "G", required_unless_present = "verify")]
    graph: Option<String>,

    /// Number of workers (graph partitions), at least 2.
    #[arg(long, short = 'm', value_name = "M", default_value_t = 4)]
    workers: u32,

    /// Switch memory for aggregators, e.g. 10MB (x1000) or 16MiB (x1024). Default: the
    /// --switch profile's (10 MB for `default`; for tofino1/tofino2 what the compiled TNA
    /// program holds, docs/tofino.md).
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
    switch_mem: Option<u64>,

    /// Partitioner: metis (min edge cut), random, chunk (contiguous id ranges) or g3
    /// (METIS + G3's remote-vertex balancing).
    #[arg(long, value_name = "NAME", default_value = "metis")]
    partitioner: Partitioner,

    /// Values per vertex feature vector; vectors longer than one aggregator are split into
    /// segments of agg-bytes/4 values, each its own aggregator.
    #[arg(long, value_name = "D", default_value_t = 128)]
    feature_dim: u32,

    /// Bytes per aggregator (the paper's 128 B = 32 int32 lanes; the wire format carries 32).
    #[arg(long, value_name = "BYTES", default_value = "128", value_parser = parse_bytes)]
    agg_bytes: u64,

    /// Send order inside a block: gamr (priority BFS, highest degree first), random or id.
    #[arg(long, value_name = "ORDER", default_value = "gamr")]
    order: SendOrder,

    /// Most aggregators one source may feed in one block (one recirculation pass each, 1-256).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_PASSES)]
    max_passes: u32,

    /// Largest absolute feature value; sets the fixed-point scale hosts use.
    #[arg(long, value_name = "X", default_value_t = 8.0)]
    max_abs: f32,

    /// Seed for every randomised step (R-MAT excluded: it has its own seed=).
    #[arg(long, default_value_t = 1)]
    seed: u64,

    /// Leaf switches (racks) the workers are spread over; must divide --workers. Worker w is
    /// on leaf w / (workers / leaves): workers 0..M/L-1 under leaf 0, the next M/L under
    /// leaf 1, and so on, so give it the real rack layout, or the same value as `sgnn sim
    /// --topology leaf-spine --leaves`, which numbers hosts this way. With L > 1 the graph
    /// is first split into L parts, one per leaf, and each into the leaf's workers, so
    /// neighbours share a leaf and less traffic crosses the leaf-spine links (metis, g3 and
    /// chunk; random is rejected). 1 = one switch or no placement.
    #[arg(long, value_name = "L", default_value_t = 1)]
    leaves: u32,

    /// How the cross-partition sums are delivered, per ordered pair of workers (q sends, p
    /// receives; docs/planner.md, "Capacity-aware delivery"):
    ///  - `paper`: the paper's per-edge aggregation through recirculation, multi-level blocks
    ///    (the plans of earlier versions, bit for bit);
    ///  - `partials`: q pre-aggregates its neighbours of each vertex of p and sends one partial
    ///    per (vertex, q), summed in the switch in one pass (no recirculation);
    ///  - `multicast`: each boundary vertex is sent once and the switch replicates it to every
    ///    worker that needs it (its packet replication engine; the receivers sum);
    ///  - `auto` (the default): per pair the fastest mix of those (and per-edge sums or vertex
    ///    covers) under the --profile, by the cost model printed below.
    ///
    /// The plan records the choice; the switch (software or P4) and the daemons run it.
    #[arg(long, value_name = "MODE", default_value = "auto")]
    aggregate: AggregateMode,

    /// Recycle aggregators by live range (delivery plans: auto, partials, multicast). Without
    /// it a block holds one aggregator row per destination for the whole block; with it a
    /// destination's aggregators are reused once its last contribution is past, so a block
    /// holds as many destinations as are not all live at once: fewer blocks and barriers. The
    /// switch keeps a generation per aggregator and sends a contribution that arrives after
    /// its row was reused to the host raw, so sums stay exact (docs/planner.md, "Recycling by
    /// live range"). Not with --aggregate paper, whose blocks keep most rows live to the end.
    #[arg(long)]
    recycle: bool,

    /// With --recycle: feature vectors of a sender's list that must pass after a row's last
    /// contribution (in the planner's schedule, every worker sending at the same rate) before
    /// its aggregators are reused. Larger is safer against senders that drift apart (a late
    /// contribution costs a fetch), smaller packs more destinations per block.
    #[arg(long, value_name = "VECTORS", default_value_t = sgnn_delivery::recycle::DEFAULT_SLACK, requires = "recycle")]
    recycle_slack: u64,

    /// Cores per worker: split the plan by feature columns so that each worker runs one
    /// `sgnn-hostd` per core, core k with the k-th 1/N of every vertex's values (docs/host.md,
    /// "One worker on several cores"). The switch then sees workers x N workers (core k of
    /// worker w is worker w*N+k, each with its own port or UDP address); the links carry the
    /// same Data and Result frames, and each core its own block synchronisation. N must divide
    /// the aggregators per vertex (--feature-dim / 32). 1: no split.
    #[arg(long, value_name = "N", default_value_t = 1)]
    cores: u32,

    /// The switch: a capacity profile for the cost model and the default --switch-mem.
    /// `default` (100 Gbit/s links, one recirculation port at link rate, 10 MB), `tofino1`
    /// or `tofino2` (aggregator memory measured with the Tofino compiler, docs/tofino.md;
    /// link and recirculation rates from public figures), or a profile file (JSON,
    /// docs/formats.md "Switch profile"). The flags below override its values.
    #[arg(
        long,
        alias = "profile",
        value_name = "NAME|FILE",
        default_value = "default"
    )]
    switch: String,

    /// Host link rate, Gbit/s (overrides the profile's).
    #[arg(long, value_name = "GBPS")]
    link_gbps: Option<f64>,

    /// Recirculation bandwidth, Gbit/s, or `free` (overrides the profile's; one data frame
    /// time per pass).
    #[arg(long, value_name = "GBPS|free", value_parser = sgnn_plan::profile::parse_recirc_gbps)]
    recirc_gbps: Option<f64>,

    /// One-way host link delay, microseconds (overrides the profile's; sets the cost of a
    /// block barrier).
    #[arg(long, value_name = "US")]
    delay_us: Option<f64>,

    /// Output directory for the plan (created; existing plan files are replaced).
    #[arg(long, value_name = "DIR", required_unless_present = "verify")]
    out: Option<PathBuf>,

    /// Don't draw progress bars (stage lines are still printed to stderr).
    #[arg(long)]
    quiet: bool,
}

/// `plan`, or `plan --verify DIR`.
pub fn run(a: &PlanArgs) -> Result<()> {
    match &a.verify {
        Some(dir) => verify(dir),
        None => plan(a),
    }
}

/// The switch profile of `plan`'s flags: the named profile with the overrides applied, and the
/// switch memory of `--switch-mem`.
fn profile_of(a: &PlanArgs) -> Result<sgnn_plan::profile::SwitchProfile> {
    let mut p = sgnn_plan::profile::SwitchProfile::load(&a.switch)?;
    let mut custom = false;
    if let Some(v) = a.link_gbps {
        p.link_gbps = v;
        custom = true;
    }
    if let Some(v) = a.recirc_gbps {
        p.recirc_gbps = v;
        custom = true;
    }
    if let Some(v) = a.delay_us {
        p.delay_us = v;
        custom = true;
    }
    if let Some(m) = a.switch_mem {
        p.agg_mem_bytes = m;
    }
    if custom {
        p.name = format!("{}+flags", p.name);
    }
    p.validate()?;
    Ok(p)
}

/// Plans, writes the plan directory and `report.json`, and prints the summary, the traffic
/// model and the predicted times.
fn plan(a: &PlanArgs) -> Result<()> {
    let spec = a.graph.as_deref().unwrap();
    let out = a.out.as_deref().unwrap();
    let agg_bytes = u32::try_from(a.agg_bytes).context("--agg-bytes is too large")?;
    let profile = profile_of(a)?;
    let switch_mem = profile.agg_mem_bytes;
    let config = PlanConfig {
        workers: a.workers,
        partitioner: a.partitioner,
        switch_mem_bytes: switch_mem,
        agg_bytes,
        feature_dim: a.feature_dim,
        order: a.order,
        seed: a.seed,
        max_passes: a.max_passes,
        leaves: a.leaves,
        aggregate: AggregateMode::Paper,
        recycle_slack: a.recycle.then_some(a.recycle_slack),
    };
    config.validate()?;
    if a.recycle && a.aggregate == AggregateMode::Paper {
        anyhow::bail!("--recycle works on delivery plans (--aggregate auto, partials or multicast); the paper's per-edge blocks keep most destinations live until the block's end (docs/planner.md, \"Recycling by live range\"), so drop --recycle or choose another --aggregate");
    }
    if agg_bytes as usize != sgnn_wire::PAYLOAD_LEN {
        eprintln!(
            "note: --agg-bytes {agg_bytes} differs from the wire format's {} B payload; this plan is for modelling only",
            sgnn_wire::PAYLOAD_LEN
        );
    }
    let mut progress = Progress::new(a.quiet);
    eprintln!(
        "planning {spec} for {} workers{}, {} of switch memory ({})",
        a.workers,
        if a.leaves > 1 {
            format!(" on {} leaves", a.leaves)
        } else {
            String::new()
        },
        fmt_bytes(switch_mem),
        if a.switch_mem.is_some() {
            "--switch-mem".to_string()
        } else {
            format!("switch {}", profile.name)
        }
    );
    let loaded = load_graph(spec, &mut progress)?;
    let req = PlanRequest {
        config,
        graph_source: spec.to_string(),
        max_abs_value: a.max_abs,
    };
    let (plan, mut report) = plan_and_deliver(
        loaded.csr,
        loaded.stats,
        &req,
        a.aggregate,
        &profile,
        &mut |e| progress.on(e),
    )?;
    let plan = sgnn_planner::split::split_columns(plan, a.cores)?;
    if let Some(c) = plan.manifest.split {
        // The report's tables stay the unsplit plan's: its blocks, traffic and predictions.
        report.notes.push(format!(
            "split over {} cores per worker by columns (--cores): the plan directory holds {} workers of {} values each; this report describes the unsplit plan of {} workers and {} values, whose Data and Result frames the split carries unchanged",
            c.cores,
            plan.workers(),
            plan.manifest.config.feature_dim,
            c.workers,
            c.feature_dim
        ));
    }
    progress.on(Event::Start {
        stage: "write",
        total: None,
    });
    let t = Instant::now();
    plan.save(out)?;
    let write_s = t.elapsed().as_secs_f64();
    report.planning_seconds.insert("write".into(), write_s);
    let report_path = out.join("report.json");
    std::fs::write(&report_path, serde_json::to_string_pretty(&report)? + "\n")
        .with_context(|| format!("writing {}", report_path.display()))?;
    progress.on(Event::Done {
        stage: "write",
        seconds: write_s,
        summary: format!("{}", out.display()),
    });
    for n in &report.notes {
        eprintln!("note: {n}");
    }
    println!(
        "delivery: {} (switch-ctl plan --aggregate; docs/planner.md)",
        report.aggregate
    );
    if let Some(slack) = plan.manifest.config.recycle_slack {
        let rows: u64 = plan.blocks.iter().map(|b| b.aggregators.len() as u64).sum();
        let recycled = plan
            .blocks
            .iter()
            .filter(|b| b.aggregators.iter().any(|s| s.generation > 0))
            .count();
        println!(
            "recycling by live range (slack {slack} vectors): {} blocks ({recycled} of them reuse aggregators) where one aggregator row per destination would take {}",
            plan.blocks.len(),
            sgnn_delivery::Sizes::of(&plan).blocks(rows).max(1)
        );
    }
    println!(
        "plan: {} blocks in {} levels, peak {} of {} aggregators, {} boundary vertices, {} cross edges",
        report.blocks.count,
        report.blocks.levels,
        report.blocks.peak_aggregators,
        report.blocks.switch_aggregators,
        report.partition.boundary_vertices,
        report.partition.cross_edges
    );
    println!(
        "traffic per layer ({} workers, {} values per vertex):",
        report.workers, report.feature_dim
    );
    print!("{}", report.traffic_table());
    if let Some(prof) = &report.profile {
        println!(
            "predicted time of one layer's exchange (profile {}: {} Gbit/s links, {} recirculation, {} us delay; docs/planner.md):",
            prof.name,
            prof.link_gbps,
            if prof.recirc_gbps >= sgnn_plan::profile::FREE_RECIRC_GBPS {
                "free".to_string()
            } else {
                format!("{} Gbit/s", prof.recirc_gbps)
            },
            prof.delay_us
        );
        print!("{}", report.predicted_table());
    }
    if plan.manifest.config.leaves > 1 {
        println!("{}", leaves_line(&plan));
    }
    if let Some(c) = plan.manifest.split {
        println!(
            "split over {} cores per worker by columns: {} workers for the switch (core k of worker w is worker w*{}+k), {} values per core; the tables above are the unsplit plan's (the same Data and Result frames; block synchronisation once per core)",
            c.cores,
            plan.workers(),
            c.cores,
            plan.manifest.config.feature_dim
        );
    }
    println!(
        "plan tag {:08x} (switch-ctl load installs it; sgnn-hostd checks the switch holds it)",
        plan.tag()
    );
    println!("wrote {}", out.display());
    Ok(())
}

/// Re-checks every invariant of the plan in `dir`, and that its worker schedules on disk are
/// the ones its blocks imply.
fn verify(dir: &Path) -> Result<()> {
    let plan = Plan::load(dir).with_context(|| format!("loading plan {}", dir.display()))?;
    let s =
        sgnn_plan::verify(&plan).with_context(|| format!("verifying plan {}", dir.display()))?;
    // The on-disk worker schedules must be exactly what the blocks imply.
    for w in 0..plan.workers() {
        let disk = Plan::load_worker_schedule(dir, w)?;
        if disk != plan.worker_schedule(w) {
            bail!(
                "verifying plan {}: worker {w}'s schedule files do not match the blocks (re-run `switch-ctl plan`)",
                dir.display()
            );
        }
    }
    println!(
        "verified: {} blocks, {} cross-partition contributions each served exactly once, peak {} of {} aggregators",
        s.blocks, s.contributions, s.peak_aggregators, plan.manifest.aggregators
    );
    Ok(())
}
