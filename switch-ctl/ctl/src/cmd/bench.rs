//! `switch-ctl bench`: planning time and memory against a plain `gpmetis` k-way run on the
//! same graph, or each stage's time over a range of R-MAT scales.

use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;
use sgnn_plan::model::{PlanConfig, DEFAULT_MAX_PASSES};
use sgnn_plan::AggregateMode;
use sgnn_plan::{Partitioner, SendOrder};
use sgnn_planner::planner::{make_plan, plan_and_deliver, PlanRequest};
use sgnn_planner::units::{fmt_bytes, parse_bytes};

use super::progress::{load_graph, Progress};

#[derive(Args)]
pub struct BenchArgs {
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
    /// The delivery planned and timed, as `switch-ctl plan --aggregate` (default: auto, the
    /// plan's own default). The comparison runs exactly what `switch-ctl plan` runs: the
    /// paper's multi-level blocks (stages `blocks`, `order`) only for `paper`; every mode
    /// predicted and the chosen one's per-pair search and replay (`predict`); its lowering
    /// and verification (`lower`); the plan directory and report written (`write`). Not with
    /// --scales, which times the paper's partitioning and blocks.
    #[arg(long, default_value = "auto", value_name = "MODE")]
    aggregate: AggregateMode,
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

/// One comparison with `gpmetis`, or with `--scales` the scaling table.
pub fn run(a: &BenchArgs) -> Result<()> {
    let mut progress = Progress::new(false);
    let config = |workers| PlanConfig {
        workers,
        partitioner: Partitioner::Metis,
        switch_mem_bytes: a.switch_mem,
        agg_bytes: 128,
        feature_dim: a.feature_dim,
        order: SendOrder::Gamr,
        seed: 1,
        max_passes: DEFAULT_MAX_PASSES,
        leaves: 1,
        aggregate: AggregateMode::Paper,
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
    // What `switch-ctl plan` runs, stage for stage (the paper's multi-level blocks only for
    // `--aggregate paper`), and then writes, report included.
    let mut profile = sgnn_plan::profile::SwitchProfile::named("default")?;
    profile.agg_mem_bytes = a.switch_mem;
    let (plan, r) = plan_and_deliver(g.csr, g.stats, &req, a.aggregate, &profile, &mut |e| {
        progress.on(e)
    })?;
    let dir = tempfile::tempdir()?;
    let t = Instant::now();
    plan.save(dir.path())?;
    std::fs::write(
        dir.path().join("report.json"),
        serde_json::to_string_pretty(&r)? + "\n",
    )?;
    let write_s = t.elapsed().as_secs_f64();
    let total = r.planning_seconds["total"];
    println!(
        "graph            {} ({} vertices, {} edges), {} workers, {}, --aggregate {}",
        a.graph,
        plan.graph.num_vertices(),
        plan.graph.num_edges(),
        a.workers,
        fmt_bytes(a.switch_mem),
        a.aggregate
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
    for n in &r.notes {
        println!("note             {n}");
    }
    if let Some((secs, rss)) = gpmetis {
        println!("gpmetis          {secs:.2} s, peak RSS {}", fmt_bytes(rss));
        println!(
            "ratio            {:.2}x gpmetis (target <= 1.5x)",
            (total + write_s) / secs
        );
    }
    Ok(())
}
