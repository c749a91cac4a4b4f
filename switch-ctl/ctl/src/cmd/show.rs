//! `switch-ctl show`: a plan's summary, one block's switch table, one worker's schedule, or
//! what recycling aggregators by live range would give the plan.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;
use sgnn_plan::Plan;
use sgnn_planner::units::fmt_bytes;

#[derive(Args)]
pub struct ShowArgs {
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
    /// blocks were merged while the rows live at once fit the memory (`sgnn_delivery::live`;
    /// docs/planner.md, "Recycling by live range").
    #[arg(long)]
    recycling: bool,
    /// Print at most this many rows.
    #[arg(long, default_value_t = 50)]
    limit: usize,
}

/// Prints the part of the plan the flags ask for (the summary by default).
pub fn run(a: &ShowArgs) -> Result<()> {
    let plan = Plan::load(&a.plan)?;
    let m = &plan.manifest;
    if a.recycling {
        let r = sgnn_delivery::live::recycle(&plan);
        let pct = |x: u64, of: u64| 100.0 * x as f64 / of.max(1) as f64;
        println!(
            "recycling by live range (sgnn_delivery::live; each worker sends its share of a block in order, one vector per step):"
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
pub fn leaves_line(plan: &Plan) -> String {
    let cut = plan.leaf_cut();
    let per = cut.workers_per_leaf;
    format!(
        "leaves     {} of {per} workers (leaf l holds workers l*{per}..l*{per}+{}); {} of {} cross edges cross leaves",
        plan.manifest.config.leaves,
        per - 1,
        cut.cross_leaf_edges,
        cut.cross_edges
    )
}
