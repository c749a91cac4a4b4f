//! `sgnn sim`'s planning: the graph loaded once, the user's planner options with each
//! strategy's variant applied, placement on leaves on a leaf-spine, and one plan per distinct
//! set of options (a spinner shows the planner's stage).

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use sgnn_plan::model::PlanConfig;
use sgnn_plan::Plan;
use sgnn_planner::planner::{make_plan, PlanRequest};

use super::{Settings, SimArgs};

/// The plans and which strategy runs on which.
pub(super) struct Planned {
    /// One per distinct set of planner options, in order of first use.
    pub plans: Vec<Plan>,
    /// Per strategy (in `--strategies` order), the index of its plan.
    pub plan_of: Vec<usize>,
    /// Seconds each plan took.
    pub plan_secs: Vec<f64>,
    /// Seconds loading the graph took.
    pub load_secs: f64,
    /// The header's `placement:` line.
    pub placement: String,
}

/// Loads the graph and makes every plan the strategies need.
pub(super) fn plan_all(a: &SimArgs, st: &Settings) -> Result<Planned> {
    let strategies = &st.strategies;
    let switch_mem_bytes = st.switch_mem_bytes;
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
        aggregate: sgnn_plan::AggregateMode::Paper,
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
                aggregate: sgnn_plan::AggregateMode::Paper,
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
    for s in strategies {
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
    Ok(Planned {
        plans,
        plan_of,
        plan_secs,
        load_secs,
        placement,
    })
}
