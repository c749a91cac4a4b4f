//! `switch-ctl`: plan a SwitchGNN deployment (and, later, install it into a switch).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use sgnn_graph::GraphSource;
use sgnn_plan::model::{PlanConfig, DEFAULT_MAX_PASSES};
use sgnn_plan::Plan;
use sgnn_planner::planner::{make_plan, Event, PlanRequest};
use sgnn_planner::units::{fmt_bytes, parse_bytes};

const ABOUT: &str = "SwitchGNN control plane: turns a graph into switch tables and host schedules.

A plan decides, once, everything the switch and the hosts need for in-network multicast and
aggregation (SwitchGNN paper, sections 3.2-3.3): which worker owns each vertex, how the
cross-partition edges are cut into blocks that fit the switch's aggregator memory, the order in
which each block's vertices are sent (graph-aware multicast reordering), and which aggregator
sums each destination's features.

Typical use:
  switch-ctl plan --graph rmat:scale=14,edge_factor=16 --workers 8 --switch-mem 10MB --out plan/
  switch-ctl plan --verify plan/
  switch-ctl show --plan plan/ --block 0";

#[derive(Parser)]
#[command(name = "switch-ctl", version, about = ABOUT, long_about = ABOUT)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Plan a graph for M workers and a switch (or verify an existing plan with --verify DIR).
    ///
    /// Writes a plan directory (format documented in docs/formats.md): plan.json, the graph,
    /// the partition, per-block switch tables, per-worker schedules and report.json with the
    /// traffic model, which is also printed as a table.
    Plan(PlanArgs),
    /// Print a plan's summary, one block's switch table (--block) or one worker's schedule
    /// (--worker).
    Show(ShowArgs),
    /// Measure planning time and memory against a plain `gpmetis` k-way run on the same graph,
    /// and the scaling of every stage over graph sizes.
    Bench(BenchArgs),
    /// Install a plan into a running switch over P4Runtime: settings, workers, forwarding,
    /// priorities, the block-advance multicast group, the recirculation clone session and every
    /// block's aggregation entries.
    ///
    /// The target is bmv2 (`simple_switch_grpc --no-p4 -- --grpc-server-addr 127.0.0.1:9559`,
    /// then pass --p4info and --device-config to push the compiled program), a Tofino's
    /// P4Runtime server, or the software switch (`softswitch --p4runtime 127.0.0.1:9559 ...`).
    /// Checks that the switch runs the SwitchGNN P4 program (docs/switch-interface.md) and
    /// that the plan fits its sizes before writing anything.
    Load(LoadArgs),
    /// Print what a running switch holds: entries per table, settings, multicast group, event
    /// and port counters, and the block-synchronisation registers where readable.
    Dump(DumpArgs),
    /// Remove everything `load` installed and restore the initial settings.
    Clear(TargetArgs),
}

#[derive(Args, Clone)]
struct TargetArgs {
    /// The switch: a P4Runtime address (host:port, or unix:/path: bmv2, the software switch,
    /// a Tofino with P4Runtime), or bfrt://host:port for a Tofino's BfRuntime server
    /// (bf_switchd, usually port 50052; runs p4/tna, docs/tofino.md).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:9559")]
    target: String,
    /// BfRuntime client id (bfrt:// targets).
    #[arg(long, default_value_t = 0)]
    client_id: u32,
    /// P4Runtime device id.
    #[arg(long, default_value_t = 0)]
    device_id: u64,
    /// Election id (the highest connected client is primary).
    #[arg(long, default_value_t = 1)]
    election_id: u128,
    /// Talk P4Runtime over TLS, trusting this CA certificate (PEM) for the switch's
    /// certificate (host:port targets; `softswitch --p4runtime-tls-cert` serves one).
    #[arg(long, value_name = "FILE")]
    tls_ca: Option<PathBuf>,
    /// The name the switch's certificate carries, if not the host of --target.
    #[arg(long, value_name = "NAME", requires = "tls_ca")]
    tls_domain: Option<String>,
}

impl TargetArgs {
    /// P4Runtime client options: TLS when --tls-ca is given.
    fn client_options(&self) -> Result<sgnn_p4rt::ClientOptions> {
        let mut o = sgnn_p4rt::ClientOptions::default();
        if let Some(ca) = &self.tls_ca {
            if self.target.starts_with("bfrt://") {
                bail!(
                    "--tls-ca is for P4Runtime targets; BfRuntime (bfrt://) runs without TLS here"
                );
            }
            o.tls = Some(sgnn_p4rt::ClientTls {
                ca_pem: std::fs::read(ca)
                    .with_context(|| format!("--tls-ca: reading {}", ca.display()))?,
                domain: self.tls_domain.clone(),
            });
        }
        Ok(o)
    }
}

#[derive(Args)]
struct LoadArgs {
    #[command(flatten)]
    target: TargetArgs,
    /// Plan directory (from `switch-ctl plan --out`).
    #[arg(long, value_name = "DIR")]
    plan: PathBuf,
    /// Push this P4Info (binary .bin or text .txtpb from p4c --p4runtime-files) with
    /// --device-config before installing (bmv2 started with --no-p4).
    #[arg(long, value_name = "FILE", requires = "device_config")]
    p4info: Option<PathBuf>,
    /// The target binary to push (bmv2: the JSON p4c wrote).
    #[arg(long, value_name = "FILE", requires = "p4info")]
    device_config: Option<PathBuf>,
    /// Switch port of worker 0, 1, ... (default: worker w on port w).
    #[arg(long = "worker-port", value_name = "PORT", value_delimiter = ',')]
    worker_ports: Vec<u32>,
    /// Port of the recirculation clone session (default: one past the last worker port).
    #[arg(long, value_name = "PORT")]
    recirculation_port: Option<u32>,
    /// Egress queue depth (packets) above which the switch marks ECN (default: never).
    #[arg(long, value_name = "PKTS")]
    ecn_threshold: Option<u32>,
    /// Drop simulator: drop every n-th SwitchGNN frame from a host (0: off).
    #[arg(long, default_value_t = 0)]
    drop_every: u32,
    /// Drop simulator: drop each SwitchGNN frame from a host with this probability.
    #[arg(long, default_value_t = 0.0)]
    drop_prob: f64,
    /// Updates per P4Runtime WriteRequest.
    #[arg(long, default_value_t = 1000)]
    batch: usize,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

#[derive(Args)]
struct DumpArgs {
    #[command(flatten)]
    target: TargetArgs,
    /// Also list the entries of this table (agg_table, worker_table, port_worker,
    /// worker_addr, ipv4_forward, dscp_priority).
    #[arg(long, value_name = "NAME")]
    table: Option<String>,
    /// Print at most this many entries of --table.
    #[arg(long, default_value_t = 50)]
    limit: usize,
    /// Print the whole dump as JSON instead.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct PlanArgs {
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
    partitioner: String,

    /// Values per vertex feature vector; vectors longer than one aggregator are split into
    /// segments of agg-bytes/4 values, each its own aggregator.
    #[arg(long, value_name = "D", default_value_t = 128)]
    feature_dim: u32,

    /// Bytes per aggregator (the paper's 128 B = 32 int32 lanes; the wire format carries 32).
    #[arg(long, value_name = "BYTES", default_value = "128", value_parser = parse_bytes)]
    agg_bytes: u64,

    /// Send order inside a block: gamr (priority BFS, highest degree first), random or id.
    #[arg(long, value_name = "ORDER", default_value = "gamr")]
    order: String,

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
    #[arg(long, value_name = "MODE", default_value = "auto", value_parser = parse_aggregate)]
    aggregate: sgnn_plan::delivery::AggregateMode,

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
    #[arg(long, value_name = "VECTORS", default_value_t = sgnn_plan::recycle::DEFAULT_SLACK, requires = "recycle")]
    recycle_slack: u64,

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

#[derive(Args)]
struct ShowArgs {
    /// Plan directory.
    #[arg(long, value_name = "DIR")]
    plan: PathBuf,
    /// Print this block's switch table: key (block, source, pass) -> aggregator, destination,
    /// destination worker, expected count.
    #[arg(long, value_name = "N")]
    block: Option<u32>,
    /// Print this worker's schedule: sends and expected results per block.
    #[arg(long, value_name = "W")]
    worker: Option<u32>,
    /// Estimate what recycling aggregators by live range would give this plan: rows live at
    /// once per block against rows held, and the blocks, uploads and results if consecutive
    /// blocks were merged while the rows live at once fit the memory (`sgnn_plan::live`;
    /// docs/planner.md, "Recycling by live range").
    #[arg(long)]
    recycling: bool,
    /// Print at most this many rows.
    #[arg(long, default_value_t = 50)]
    limit: usize,
}

#[derive(Args)]
struct BenchArgs {
    /// Graph to plan (see `plan --graph`).
    #[arg(long, default_value = "rmat:scale=20,edge_factor=16")]
    graph: String,
    /// Workers.
    #[arg(long, default_value_t = 32)]
    workers: u32,
    /// Switch memory.
    #[arg(long, default_value = "10MB", value_parser = parse_bytes)]
    switch_mem: u64,
    /// Feature dimension.
    #[arg(long, default_value_t = 128)]
    feature_dim: u32,
    /// The reference METIS binary (Debian package `metis`).
    #[arg(long, default_value = "gpmetis")]
    gpmetis: String,
    /// Skip the gpmetis reference run.
    #[arg(long)]
    no_gpmetis: bool,
    /// Instead of one comparison, plan R-MAT graphs of these scales (e.g. 16..21, edge factor
    /// from --edge-factor) and print each stage's time: the scaling curve.
    #[arg(long, value_name = "A..B")]
    scales: Option<String>,
    /// Edge factor for --scales.
    #[arg(long, default_value_t = 16)]
    edge_factor: u32,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Plan(a) => match &a.verify {
            Some(dir) => verify(dir),
            None => plan(&a),
        },
        Command::Show(a) => show(&a),
        Command::Bench(a) => bench(&a),
        Command::Load(a) => load(&a),
        Command::Dump(a) => dump(&a),
        Command::Clear(a) => clear(&a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Draws one progress bar per stage and prints a line when a stage finishes.
struct Progress {
    bar: Option<ProgressBar>,
    quiet: bool,
}

impl Progress {
    fn new(quiet: bool) -> Progress {
        Progress { bar: None, quiet }
    }

    fn on(&mut self, ev: Event) {
        match ev {
            Event::Start { stage, total } => {
                if self.quiet {
                    return;
                }
                let bar = match total {
                    Some(t) => ProgressBar::new(t).with_style(
                        ProgressStyle::with_template(
                            "{spinner} {prefix:>10} [{elapsed_precise}] {wide_bar} {percent:>3}% {msg}",
                        )
                        .unwrap(),
                    ),
                    None => ProgressBar::new_spinner().with_style(
                        ProgressStyle::with_template("{spinner} {prefix:>10} [{elapsed_precise}] {msg}")
                            .unwrap(),
                    ),
                };
                bar.set_prefix(stage);
                bar.enable_steady_tick(std::time::Duration::from_millis(120));
                self.bar = Some(bar);
            }
            Event::Progress { done, message } => {
                if let Some(b) = &self.bar {
                    b.set_position(done);
                    b.set_message(message);
                }
            }
            Event::Done {
                stage,
                seconds,
                summary,
            } => {
                if let Some(b) = self.bar.take() {
                    b.finish_and_clear();
                }
                eprintln!("  {stage:>10}  {seconds:>8.2} s  {summary}");
            }
        }
    }
}

fn load_graph(spec: &str, progress: &mut Progress) -> Result<sgnn_graph::LoadedGraph> {
    let source: GraphSource = spec.parse().map_err(|e| anyhow::anyhow!("--graph: {e}"))?;
    progress.on(Event::Start {
        stage: "load",
        total: None,
    });
    let t = Instant::now();
    let g = source.load()?;
    progress.on(Event::Done {
        stage: "load",
        seconds: t.elapsed().as_secs_f64(),
        summary: g.summary(),
    });
    Ok(g)
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

fn parse_aggregate(s: &str) -> Result<sgnn_plan::delivery::AggregateMode, String> {
    sgnn_plan::delivery::AggregateMode::parse(s).map_err(|e| e.to_string())
}

fn plan(a: &PlanArgs) -> Result<()> {
    let spec = a.graph.as_deref().unwrap();
    let out = a.out.as_deref().unwrap();
    let agg_bytes = u32::try_from(a.agg_bytes).context("--agg-bytes is too large")?;
    let profile = profile_of(a)?;
    let switch_mem = profile.agg_mem_bytes;
    let config = PlanConfig {
        workers: a.workers,
        partitioner: a.partitioner.clone(),
        switch_mem_bytes: switch_mem,
        agg_bytes,
        feature_dim: a.feature_dim,
        order: a.order.clone(),
        seed: a.seed,
        max_passes: a.max_passes,
        leaves: a.leaves,
        aggregate: "paper".into(),
        recycle_slack: a.recycle.then_some(a.recycle_slack),
    };
    config.validate()?;
    if a.recycle && a.aggregate == sgnn_plan::delivery::AggregateMode::Paper {
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
    let (plan, mut report) = make_plan(loaded.csr, loaded.stats, &req, &mut |e| progress.on(e))?;
    progress.on(Event::Start {
        stage: "predict",
        total: None,
    });
    let t = Instant::now();
    report.predicted = sgnn_plan::delivery::compare(&plan, &profile);
    let plan = sgnn_planner::planner::apply_delivery(plan, &mut report, a.aggregate, &profile)?;
    report.profile = Some(profile);
    let predict_s = t.elapsed().as_secs_f64();
    report.planning_seconds.insert("predict".into(), predict_s);
    progress.on(Event::Done {
        stage: "predict",
        seconds: predict_s,
        summary: "per-pair delivery chosen, every mode predicted".into(),
    });
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
            sgnn_plan::delivery::Sizes::of(&plan).blocks(rows).max(1)
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
    println!(
        "plan tag {:08x} (switch-ctl load installs it; sgnn-hostd checks the switch holds it)",
        plan.tag()
    );
    println!("wrote {}", out.display());
    Ok(())
}

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

fn show(a: &ShowArgs) -> Result<()> {
    let plan = Plan::load(&a.plan)?;
    let m = &plan.manifest;
    if a.recycling {
        let r = sgnn_plan::live::recycle(&plan);
        let pct = |x: u64, of: u64| 100.0 * x as f64 / of.max(1) as f64;
        println!(
            "recycling by live range (sgnn_plan::live; each worker sends its share of a block in order, one vector per step):"
        );
        println!(
            "  rows per block: {} held, {} live at once at each block's peak ({:.1}%), capacity {} per block",
            r.rows,
            r.peaks,
            pct(r.peaks, r.rows),
            r.capacity_rows
        );
        println!(
            "  blocks   {:>10} -> {:>10} ({:.1}%)",
            r.blocks,
            r.recycled_blocks(),
            pct(r.recycled_blocks(), r.blocks)
        );
        println!(
            "  uploads  {:>10} -> {:>10} vectors ({:.1}%)",
            r.sends,
            r.recycled_sends(),
            pct(r.recycled_sends(), r.sends)
        );
        println!(
            "  results  {:>10} -> {:>10} vectors ({:.1}%)",
            r.rows,
            r.recycled_rows(),
            pct(r.recycled_rows(), r.rows)
        );
        return Ok(());
    }
    if let Some(b) = a.block {
        let Some(block) = plan.blocks.get(b as usize) else {
            bail!(
                "block {b} does not exist: the plan has {} blocks (0..{})",
                plan.blocks.len(),
                plan.blocks.len()
            );
        };
        println!("# switch table of block {b} (level {}): key (block, source, pass) -> action aggregate(first_aggregator, destination, dst_worker, expected)", block.level);
        println!(
            "{:>6} {:>10} {:>5} {:>10} {:>10} {:>10} {:>8}",
            "block", "source", "pass", "agg_base", "dst", "dst_wkr", "expected"
        );
        let mut rows = 0;
        'outer: for (i, &src) in block.sources.iter().enumerate() {
            for (pass, &row) in block.passes(i).iter().enumerate() {
                let s = block.aggregators[row as usize];
                println!(
                    "{:>6} {:>10} {:>5} {:>10} {:>10} {:>10} {:>8}",
                    b, src, pass, s.base, s.dst, plan.partition[s.dst as usize], s.expected
                );
                rows += 1;
                if rows >= a.limit {
                    println!(
                        "... ({} entries in all; raise --limit)",
                        block.num_contributions()
                    );
                    break 'outer;
                }
            }
        }
        return Ok(());
    }
    if let Some(w) = a.worker {
        if w >= plan.workers() {
            bail!(
                "worker {w} does not exist: the plan has workers 0..{}",
                plan.workers()
            );
        }
        let s = Plan::load_worker_schedule(&a.plan, w)?;
        println!(
            "# worker {w}: {} sends, {} expected results",
            s.sends.len(),
            s.receives.len()
        );
        for (b, v) in s.sends.iter().take(a.limit) {
            println!("send    block {b:>5} vertex {v}");
        }
        for (b, v, e) in s.receives.iter().take(a.limit) {
            println!("receive block {b:>5} vertex {v} ({e} contributions)");
        }
        return Ok(());
    }
    println!(
        "plan {} (format {} v{})",
        a.plan.display(),
        m.format,
        m.version
    );
    println!(
        "graph      {} ({} vertices, {} edges, fingerprint {})",
        m.graph.source, m.graph.num_vertices, m.graph.num_edges, m.graph.fingerprint
    );
    println!("workers    {} ({})", m.config.workers, m.config.partitioner);
    if m.config.leaves > 1 {
        println!("{}", leaves_line(&plan));
    }
    println!(
        "plan tag   {:08x} (installed by switch-ctl load, checked by sgnn-hostd)",
        plan.tag()
    );
    println!(
        "switch     {} = {} aggregators of {} B; {} segments per vertex",
        fmt_bytes(m.config.switch_mem_bytes),
        m.aggregators,
        m.config.agg_bytes,
        m.segments
    );
    println!(
        "blocks     {} in {} levels, order {}",
        m.blocks.len(),
        plan.levels(),
        m.config.order
    );
    println!(
        "fixed pt   {} fraction bits (|x| <= {})",
        m.frac_bits, m.max_abs_value
    );
    Ok(())
}

/// One line on a plan's placement on leaves: the worker ids of each leaf and the cut edges
/// between leaves (what a leaf-spine fabric's uplinks carry).
fn leaves_line(plan: &Plan) -> String {
    let c = &plan.manifest.config;
    let per = c.workers / c.leaves;
    let p = &plan.partition;
    let (mut cross, mut cross_leaf) = (0u64, 0u64);
    for (u, v) in plan.graph.edges() {
        let (a, b) = (p[u as usize], p[v as usize]);
        if a != b {
            cross += 1;
            if a / per != b / per {
                cross_leaf += 1;
            }
        }
    }
    format!(
        "leaves     {} of {per} workers (leaf l holds workers l*{per}..l*{per}+{}); {cross_leaf} of {cross} cross edges cross leaves",
        c.leaves,
        per - 1
    )
}

/// Writes the graph in METIS format for gpmetis.
fn write_metis_graph(g: &sgnn_graph::Csr, path: &Path) -> Result<()> {
    use std::io::Write;
    let mut f = std::io::BufWriter::new(std::fs::File::create(path)?);
    writeln!(f, "{} {}", g.num_vertices(), g.num_edges())?;
    let mut line = String::new();
    for v in 0..g.num_vertices() as u32 {
        line.clear();
        for (i, &u) in g.neighbors(v).iter().enumerate() {
            if i > 0 {
                line.push(' ');
            }
            line += &(u + 1).to_string();
        }
        line.push('\n');
        f.write_all(line.as_bytes())?;
    }
    f.flush()?;
    Ok(())
}

/// Runs a command and returns (wall seconds, peak RSS bytes of the child).
fn run_measured(cmd: &mut std::process::Command) -> Result<(f64, u64)> {
    let t = Instant::now();
    let child = cmd
        .stdout(std::process::Stdio::null())
        .spawn()
        .with_context(|| {
            format!(
                "starting {:?} (install Debian's `metis` package, or pass --no-gpmetis)",
                cmd.get_program()
            )
        })?;
    let pid = child.id() as i32;
    let mut status = 0i32;
    // SAFETY: rusage is a plain C struct of integers and timevals, for which all-zero bytes
    // are a valid value; wait4 overwrites it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: wait4 on our own child with valid out-pointers.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    if r < 0 {
        bail!("waiting for {:?} failed", cmd.get_program());
    }
    if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
        bail!("{:?} failed (status {status})", cmd.get_program());
    }
    Ok((t.elapsed().as_secs_f64(), usage.ru_maxrss as u64 * 1024))
}

fn bench(a: &BenchArgs) -> Result<()> {
    let mut progress = Progress::new(false);
    let config = |workers| PlanConfig {
        workers,
        partitioner: "metis".into(),
        switch_mem_bytes: a.switch_mem,
        agg_bytes: 128,
        feature_dim: a.feature_dim,
        order: "gamr".into(),
        seed: 1,
        max_passes: DEFAULT_MAX_PASSES,
        leaves: 1,
        aggregate: "paper".into(),
        recycle_slack: None,
    };
    if let Some(range) = &a.scales {
        let (lo, hi) = range
            .split_once("..")
            .and_then(|(l, h)| Some((l.parse::<u32>().ok()?, h.parse::<u32>().ok()?)))
            .context("--scales takes A..B, e.g. 16..21")?;
        println!("| scale | vertices | edges | partition s | boundary s | blocks s | order s | traffic s | total s | blocks | peak RSS |");
        println!("|---|---|---|---|---|---|---|---|---|---|---|");
        for scale in lo..=hi {
            let spec = format!("rmat:scale={scale},edge_factor={}", a.edge_factor);
            let g = load_graph(&spec, &mut progress)?;
            let req = PlanRequest {
                config: config(a.workers),
                graph_source: spec,
                max_abs_value: 8.0,
            };
            let (n, m) = (g.csr.num_vertices(), g.csr.num_edges());
            let (_, r) = make_plan(g.csr, g.stats, &req, &mut |e| progress.on(e))?;
            let s = |k: &str| r.planning_seconds.get(k).copied().unwrap_or(0.0);
            println!(
                "| {scale} | {n} | {m} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {} | {} |",
                s("partition"),
                s("boundary"),
                s("blocks"),
                s("order"),
                s("traffic"),
                s("total"),
                r.blocks.count,
                fmt_bytes(r.peak_rss_bytes)
            );
        }
        return Ok(());
    }
    let g = load_graph(&a.graph, &mut progress)?;
    let mut gpmetis = None;
    if !a.no_gpmetis {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("graph.metis");
        eprintln!("writing METIS graph file for {} ...", a.gpmetis);
        write_metis_graph(&g.csr, &path)?;
        eprintln!("running {} {} {} ...", a.gpmetis, path.display(), a.workers);
        let (secs, rss) = run_measured(
            std::process::Command::new(&a.gpmetis)
                .arg(&path)
                .arg(a.workers.to_string()),
        )?;
        eprintln!(
            "  {:>10}  {secs:>8.2} s  peak {}",
            "gpmetis",
            fmt_bytes(rss)
        );
        gpmetis = Some((secs, rss));
    }
    let req = PlanRequest {
        config: config(a.workers),
        graph_source: a.graph.clone(),
        max_abs_value: 8.0,
    };
    let (plan, r) = make_plan(g.csr, g.stats, &req, &mut |e| progress.on(e))?;
    let dir = tempfile::tempdir()?;
    let t = Instant::now();
    plan.save(dir.path())?;
    let write_s = t.elapsed().as_secs_f64();
    let total = r.planning_seconds["total"];
    println!(
        "graph            {} ({} vertices, {} edges), {} workers, {}",
        a.graph,
        plan.graph.num_vertices(),
        plan.graph.num_edges(),
        a.workers,
        fmt_bytes(a.switch_mem)
    );
    for (k, v) in &r.planning_seconds {
        println!("stage {k:<10} {v:>8.2} s");
    }
    println!("stage {:<10} {write_s:>8.2} s", "write");
    println!(
        "plan total       {:.2} s (incl. write {write_s:.2} s), peak RSS {}",
        total + write_s,
        fmt_bytes(sgnn_planner::report::peak_rss_bytes())
    );
    println!(
        "blocks           {} in {} levels",
        r.blocks.count, r.blocks.levels
    );
    if let Some((secs, rss)) = gpmetis {
        println!("gpmetis          {secs:.2} s, peak RSS {}", fmt_bytes(rss));
        println!(
            "ratio            {:.2}x gpmetis (target <= 2.5x)",
            (total + write_s) / secs
        );
    }
    Ok(())
}

/// The switch of `--target`: over BfRuntime for `bfrt://` (checked against the TNA program's
/// objects), else over P4Runtime (checked against the contract for the architecture the
/// switch's P4Info reports: v1model, or TNA for a Tofino).
fn connect(t: &TargetArgs) -> Result<Box<dyn switch_ctl::Target>> {
    use sgnn_p4rt::schema::{switchgnn_p4info_for, Arch};
    if let Some(addr) = t.target.strip_prefix("bfrt://") {
        let device = u32::try_from(t.device_id).context("--device-id is too large for BfRt")?;
        return Ok(Box::new(switch_ctl::target::BfrtTarget::connect(
            addr,
            device,
            t.client_id,
            &switchgnn_p4info_for(Arch::Tna),
        )?));
    }
    // A Tofino running the TNA program over P4Runtime reports architecture tna (or t2na).
    Ok(Box::new(
        switch_ctl::target::P4RuntimeTarget::connect_switchgnn_with(
            &t.target,
            t.device_id,
            t.election_id,
            t.client_options()?,
        )?,
    ))
}

fn load(a: &LoadArgs) -> Result<()> {
    use switch_ctl::install::{install, sizes_of};
    use switch_ctl::program::{program_for, Deployment};
    use switch_ctl::target::P4RuntimeTarget;
    let plan = Plan::load(&a.plan).with_context(|| format!("loading plan {}", a.plan.display()))?;
    let t = &a.target;
    let mut target: Box<dyn switch_ctl::Target> = match (&a.p4info, &a.device_config) {
        (Some(_), Some(_)) if t.target.starts_with("bfrt://") => bail!(
            "--p4info/--device-config push a pipeline over P4Runtime; a bfrt:// switch loads its program with bf_switchd (docs/tofino.md)"
        ),
        (Some(info), Some(cfg)) => {
            let p4info = sgnn_p4rt::p4info::load_p4info(info)?;
            let expected = sgnn_p4rt::schema::switchgnn_p4info_for(sgnn_p4rt::schema::arch_of(&p4info));
            let diffs = sgnn_p4rt::schema::compare_p4info(&expected, &p4info);
            if !diffs.is_empty() {
                bail!(
                    "{} is not the SwitchGNN program's P4Info (docs/switch-interface.md):\n  {}",
                    info.display(),
                    diffs.join("\n  ")
                );
            }
            let bytes = std::fs::read(cfg).with_context(|| format!("reading {}", cfg.display()))?;
            eprintln!(
                "pushing {} and {} to {}",
                info.display(),
                cfg.display(),
                t.target
            );
            Box::new(P4RuntimeTarget::connect_and_install(
                &t.target,
                t.device_id,
                t.election_id,
                t.client_options()?,
                &p4info,
                bytes,
            )?)
        }
        _ => connect(t)?,
    };
    let workers = plan.workers();
    let mut dep = Deployment::standard(workers);
    if !a.worker_ports.is_empty() {
        dep.worker_ports = a.worker_ports.clone();
        dep.recirculation_port = a.worker_ports.iter().max().copied().unwrap_or(0) + 1;
    }
    if let Some(p) = a.recirculation_port {
        dep.recirculation_port = p;
    }
    if let Some(e) = a.ecn_threshold {
        dep.ecn_threshold = e;
    }
    dep.drop_every = a.drop_every;
    if !(0.0..=1.0).contains(&a.drop_prob) {
        bail!("--drop-prob is a probability in 0..1, got {}", a.drop_prob);
    }
    dep.drop_probability = a.drop_prob;
    let sizes = sizes_of(target.as_ref())?;
    let prog = program_for(&plan, &dep, &sizes)?;
    let bar = if a.quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(1).with_style(
            ProgressStyle::with_template(
                "{spinner} load [{elapsed_precise}] {wide_bar} {pos}/{len} ops {per_sec}",
            )
            .unwrap(),
        )
    };
    let report = install(target.as_mut(), &prog, a.batch, &mut |done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    })?;
    bar.finish_and_clear();
    if report.cleared > 0 {
        eprintln!("removed {} entries of an earlier plan", report.cleared);
    }
    if report.registers_skipped {
        eprintln!(
            "note: this switch does not write registers over P4Runtime (bmv2's PI); the sync registers keep their values (0 after a pipeline push: use --p4info/--device-config for a fresh start)"
        );
    }
    println!(
        "loaded {}: {} workers, {} blocks, {} aggregation entries, {} operations in {:.2} s ({:.0} entries/s) into {}",
        a.plan.display(),
        workers,
        plan.blocks.len(),
        prog.agg_entries(),
        report.entries,
        report.seconds,
        report.rate(),
        t.target
    );
    Ok(())
}

fn dump(a: &DumpArgs) -> Result<()> {
    let mut target = connect(&a.target)?;
    let mut tables = serde_json::Map::new();
    for t in switch_ctl::install::TABLES {
        let n = target.read_table(t)?.len();
        tables.insert(t.to_string(), n.into());
    }
    let config = target.read_default("switch_config")?;
    let settings: serde_json::Map<String, serde_json::Value> = config
        .map(|e| {
            e.params
                .iter()
                .map(|(k, v)| (k.clone(), (*v as u64).into()))
                .collect()
        })
        .unwrap_or_default();
    let group = target
        .read_multicast_group(switch_ctl::program::ADVANCE_GROUP)?
        .unwrap_or_default();
    let mut events = target.read_counters("events")?;
    // A Tofino counts egress events in a counter of their own (docs/tofino.md).
    if target.index().counter("egress_events").is_ok() {
        for (e, x) in events
            .iter_mut()
            .zip(target.read_counters("egress_events")?)
        {
            e.packets += x.packets;
            e.bytes += x.bytes;
        }
    }
    let mut ev = serde_json::Map::new();
    for (i, name) in sgnn_p4rt::schema::EVENTS.iter().enumerate() {
        ev.insert(
            name.to_string(),
            events.get(i).map_or(0, |c| c.packets).into(),
        );
    }
    let mut ports = serde_json::Map::new();
    for dir in ["port_rx", "port_tx"] {
        let c = target.read_counters(dir)?;
        let m: serde_json::Map<String, serde_json::Value> = c
            .iter()
            .enumerate()
            .filter(|(_, c)| c.packets > 0)
            .map(|(i, c)| {
                (
                    i.to_string(),
                    serde_json::json!({"packets": c.packets, "bytes": c.bytes}),
                )
            })
            .collect();
        ports.insert(dir.to_string(), m.into());
    }
    let mut regs = serde_json::Map::new();
    let mut regs_note = None;
    for r in ["sync_round", "sync_block", "sync_count"] {
        match target.read_register(r, 0) {
            Ok(v) => {
                regs.insert(r.to_string(), (v as u64).into());
            }
            Err(e) => {
                regs_note = Some(format!("registers not readable: {e}"));
                break;
            }
        }
    }
    let entries = match &a.table {
        Some(t) => target
            .read_table(t)?
            .into_iter()
            .take(a.limit)
            .map(|e| format!("{:?} -> {}({:?})", e.matches, e.action, e.params))
            .collect::<Vec<_>>(),
        None => Vec::new(),
    };
    let v = serde_json::json!({
        "target": a.target.target,
        "tables": tables,
        "settings": settings,
        "advance_group": group.iter().map(|r| serde_json::json!({"rid": r.instance, "port": r.port})).collect::<Vec<_>>(),
        "events": ev,
        "ports": ports,
        "registers": regs,
    });
    if a.json {
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    println!("switch {}", a.target.target);
    println!("tables:");
    for (k, n) in &tables {
        println!("  {k:<14} {n} entries");
    }
    println!("settings: {}", serde_json::Value::Object(settings));
    println!(
        "advance group 1: {}",
        group
            .iter()
            .map(|r| format!("worker {} on port {}", r.instance, r.port))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!("events (nonzero):");
    for (k, n) in &ev {
        if n.as_u64() != Some(0) {
            println!("  {k:<22} {n}");
        }
    }
    println!("ports: {}", serde_json::Value::Object(ports));
    match regs_note {
        Some(n) => println!("{n}"),
        None => println!("sync registers: {}", serde_json::Value::Object(regs)),
    }
    if let Some(t) = &a.table {
        println!("{t} (first {}):", a.limit);
        for e in entries {
            println!("  {e}");
        }
    }
    Ok(())
}

fn clear(t: &TargetArgs) -> Result<()> {
    let mut target = connect(t)?;
    let n = switch_ctl::install::clear(target.as_mut())?;
    println!(
        "cleared {n} entries and restored the initial settings on {}",
        t.target
    );
    Ok(())
}
