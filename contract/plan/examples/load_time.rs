//! Times `Plan::load` of a plan directory and, separately, the structural checks it runs
//! (`Plan::check_structure`), so the cost of the checks at start-up can be stated:
//! `cargo run --release -p sgnn-plan --example load_time -- DIR [RUNS]`.

use std::time::{Duration, Instant};

use sgnn_plan::Plan;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let dir = args.next().ok_or("usage: load_time DIR [RUNS]")?;
    let runs: usize = args.next().map(|r| r.parse()).transpose()?.unwrap_or(11);
    let (mut loads, mut checks) = (Vec::new(), Vec::new());
    let mut plan = None;
    for _ in 0..runs {
        let t = Instant::now();
        let p = Plan::load(dir.as_ref())?;
        loads.push(t.elapsed());
        let t = Instant::now();
        p.check_structure()?;
        checks.push(t.elapsed());
        plan = Some(p);
    }
    let p = plan.ok_or("RUNS must be at least 1")?;
    let (load, check) = (median(loads), median(checks));
    let without = load.saturating_sub(check);
    println!(
        "{dir}: {} vertices, {} edges, {} blocks, {} workers; median of {runs}: Plan::load {:.1} ms, of which check_structure {:.2} ms ({:.1}% over the load without it, {:.1} ms)",
        p.graph.num_vertices(),
        p.graph.num_edges(),
        p.blocks.len(),
        p.workers(),
        load.as_secs_f64() * 1e3,
        check.as_secs_f64() * 1e3,
        100.0 * check.as_secs_f64() / without.as_secs_f64(),
        without.as_secs_f64() * 1e3
    );
    Ok(())
}
