//! Planning: the plan of each delivery the testbed runs (`plan/`, `plan-NAME/`), made and
//! written as `switch-ctl plan` would, with a spinner naming each stage; `sgnn train` and
//! `sgnn serve` plan through [`plan_graph`] too.

use std::path::Path;
use std::time::Duration;

use anyhow::{anyhow, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use sgnn_plan::model::PlanConfig;
use sgnn_plan::AggregateMode;
use sgnn_plan::Plan;
use sgnn_planner::planner::{make_plan, PlanRequest};

use super::TestbedArgs;

/// The run name of a delivery: `switchgnn` for the paper's, `switchgnn-NAME` otherwise.
pub(super) fn run_name(aggregate: AggregateMode) -> String {
    match aggregate {
        AggregateMode::Paper => "switchgnn".into(),
        m => format!("switchgnn-{}", m.name()),
    }
}

/// Plans `a.graph` for the delivery `aggregate` into `dir`, split over `--cores` cores per
/// worker when there are several.
pub(super) fn make_the_plan(a: &TestbedArgs, aggregate: AggregateMode, dir: &Path) -> Result<Plan> {
    let g = sgnn_graph::load_graph(&a.graph).with_context(|| format!("loading {}", a.graph))?;
    plan_graph(
        g.csr,
        g.stats,
        &a.graph,
        &PlanOptions {
            workers: a.workers,
            partitioner: a.partitioner,
            switch_mem: &a.switch_mem,
            feature_dim: a.feature_dim,
            seed: a.seed,
            aggregate,
            recycle_slack: (a.recycle && aggregate != AggregateMode::Paper)
                .then_some(a.recycle_slack),
            cores: a.cores,
        },
        dir,
    )
}

/// What the cluster commands (`testbed`, `train`, `serve`) let a user choose of a plan; the
/// rest is fixed: 128-byte aggregators (the wire's), the `gamr` order, 256 passes, one leaf.
pub(crate) struct PlanOptions<'a> {
    pub workers: u32,
    pub partitioner: sgnn_plan::Partitioner,
    /// Switch memory as the user wrote it (`4MB`).
    pub switch_mem: &'a str,
    pub feature_dim: u32,
    pub seed: u64,
    /// How the sums are delivered (`switch-ctl plan --aggregate`), chosen under the default
    /// switch profile.
    pub aggregate: AggregateMode,
    /// Recycling by live range (`switch-ctl plan --recycle-slack`), delivery plans only.
    pub recycle_slack: Option<u64>,
    /// Cores per worker: the plan split by feature columns (`switch-ctl plan --cores`); 1: no
    /// split.
    pub cores: u32,
}

/// Plans `graph` (from `source`) with `opts`, with a spinner naming each stage, splits it
/// over `opts.cores` cores per worker, and writes it to `dir`.
pub(crate) fn plan_graph(
    graph: sgnn_graph::Csr,
    stats: sgnn_graph::BuildStats,
    source: &str,
    opts: &PlanOptions,
    dir: &Path,
) -> Result<Plan> {
    let config = PlanConfig {
        workers: opts.workers,
        partitioner: opts.partitioner,
        switch_mem_bytes: sgnn_planner::units::parse_bytes(opts.switch_mem)
            .map_err(|e| anyhow!("--switch-mem: {e}"))?,
        agg_bytes: sgnn_wire::PAYLOAD_LEN as u32,
        feature_dim: opts.feature_dim,
        order: sgnn_plan::SendOrder::Gamr,
        seed: opts.seed,
        max_passes: 256,
        leaves: 1,
        aggregate: sgnn_plan::AggregateMode::Paper,
        recycle_slack: opts.recycle_slack,
    };
    let spinner = ProgressBar::new_spinner();
    spinner.set_style(ProgressStyle::with_template("{spinner} plan: {msg}").unwrap());
    spinner.enable_steady_tick(Duration::from_millis(100));
    let req = PlanRequest {
        config,
        graph_source: source.to_string(),
        max_abs_value: 1.0,
    };
    let (plan, mut report) = make_plan(graph, stats, &req, &mut |e| {
        if let sgnn_planner::planner::Event::Start { stage, .. } = e {
            spinner.set_message(stage.to_string());
        }
    })?;
    spinner.set_message(format!("delivery ({})", opts.aggregate.name()));
    let profile = sgnn_plan::profile::SwitchProfile::named("default")?;
    let plan = sgnn_planner::planner::apply_delivery(plan, &mut report, opts.aggregate, &profile)?;
    let made = format!(
        "plan ({}): {} vertices, {} workers, {} blocks, {} segments per vertex -> {}",
        plan.manifest.config.aggregate,
        plan.graph.num_vertices(),
        plan.workers(),
        plan.blocks.len(),
        plan.manifest.segments,
        dir.display()
    );
    let plan = sgnn_planner::split::split_columns(plan, opts.cores)?;
    plan.save(dir)
        .with_context(|| format!("writing the plan to {}", dir.display()))?;
    spinner.finish_and_clear();
    eprintln!("{made}");
    if let Some(c) = plan.manifest.split {
        eprintln!(
            "plan split over {} cores per worker: {} workers for the switch, {} values each -> {}",
            c.cores,
            plan.workers(),
            plan.manifest.config.feature_dim,
            dir.display()
        );
    }
    Ok(plan)
}
