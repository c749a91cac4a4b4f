//! The planning pipeline: graph -> partition -> boundary graph -> blocks -> send order and
//! aggregators -> plan (+ report with the traffic model).

use std::collections::BTreeMap;
use std::time::Instant;

use sgnn_delivery::lower::deliver_fallback;
use sgnn_delivery::{compare_with, Layout, PairIndex};
use sgnn_graph::{BuildStats, Csr, VertexId};
use sgnn_plan::model::{GraphSummary, Manifest, PlanConfig};
use sgnn_plan::profile::SwitchProfile;
use sgnn_plan::AggregateMode;
use sgnn_plan::{traffic, Plan, FORMAT_NAME, FORMAT_VERSION};

use crate::blocks::{split_multilevel, BlockLimits, EdgeBlock};
use crate::order::build_block;
use crate::partition::{leaf_crossings, partition_on_leaves, remote_counts};
use crate::report::{peak_rss_bytes, BlockStats, LevelStats, PartitionStats, Report};
use crate::PlanningError;

/// What the pipeline tells its observer (the CLI draws progress bars from these).
#[derive(Debug, Clone)]
pub enum Event {
    /// A stage begins; `total` is its amount of work when known.
    Start {
        /// Stage name.
        stage: &'static str,
        /// Work units, if known.
        total: Option<u64>,
    },
    /// Work done so far in the current stage.
    Progress {
        /// Units done.
        done: u64,
        /// What is happening.
        message: String,
    },
    /// A stage ended.
    Done {
        /// Stage name.
        stage: &'static str,
        /// Wall time.
        seconds: f64,
        /// One line of what it produced.
        summary: String,
    },
}

/// Everything the planner needs besides the graph.
#[derive(Debug, Clone)]
pub struct PlanRequest {
    /// The user's configuration (recorded in the manifest).
    pub config: PlanConfig,
    /// How the graph was given, for the manifest.
    pub graph_source: String,
    /// Largest absolute feature value the fixed-point scale must represent.
    pub max_abs_value: f32,
}

struct Stages<'a> {
    observer: &'a mut dyn FnMut(Event),
    times: BTreeMap<String, f64>,
}

impl Stages<'_> {
    fn run<T>(
        &mut self,
        stage: &'static str,
        total: Option<u64>,
        f: impl FnOnce(&mut dyn FnMut(u64, String)) -> Result<(T, String), PlanningError>,
    ) -> Result<T, PlanningError> {
        (self.observer)(Event::Start { stage, total });
        let t = Instant::now();
        let observer = &mut *self.observer;
        let mut tick = |done: u64, message: String| (observer)(Event::Progress { done, message });
        let (value, summary) = f(&mut tick)?;
        let seconds = t.elapsed().as_secs_f64();
        self.times.insert(stage.to_string(), seconds);
        (self.observer)(Event::Done {
            stage,
            seconds,
            summary,
        });
        Ok(value)
    }
}

/// Cross-partition edges `(u, v)`, `u < v`.
pub fn cross_edges(g: &Csr, part: &[u32]) -> Vec<(VertexId, VertexId)> {
    g.edges()
        .filter(|&(u, v)| part[u as usize] != part[v as usize])
        .collect()
}

/// Plans `graph` (already loaded) for `req`: the paper's plan, with its multi-level blocks.
/// Returns the plan and its report; writes nothing.
pub fn make_plan(
    graph: Csr,
    build: BuildStats,
    req: &PlanRequest,
    observer: &mut dyn FnMut(Event),
) -> Result<(Plan, Report), PlanningError> {
    make_plan_with(graph, build, req, true, observer)
}

/// [`make_plan`], with the paper's multi-level blocks (the stages `blocks` and `order`) only
/// when `paper_blocks`: without them the plan has the graph, the partition and the sizes but
/// no blocks, which is all a delivery plan is made from ([`sgnn_delivery::lower`]). The report's
/// `switchgnn` traffic is then that of no block.
pub fn make_plan_with(
    graph: Csr,
    build: BuildStats,
    req: &PlanRequest,
    paper_blocks: bool,
    observer: &mut dyn FnMut(Event),
) -> Result<(Plan, Report), PlanningError> {
    make_plan_indexed(graph, build, req, paper_blocks, false, observer).map(|(p, r, _)| (p, r))
}

/// [`make_plan_with`]; with `index`, also the plan's pair index, built in the `traffic` stage
/// (whose SuperGCN covers it then gives) for the deliveries to use.
fn make_plan_indexed(
    graph: Csr,
    build: BuildStats,
    req: &PlanRequest,
    paper_blocks: bool,
    index: bool,
    observer: &mut dyn FnMut(Event),
) -> Result<(Plan, Report, Option<PairIndex>), PlanningError> {
    let cfg = req.config.clone();
    cfg.validate()?;
    let (partitioner, order) = (cfg.partitioner, cfg.order);
    let n = graph.num_vertices();
    if graph.num_edges() == 0 {
        return Err(PlanningError::Input(
            "the graph has no edges: nothing to exchange".into(),
        ));
    }
    if cfg.workers as usize > n {
        return Err(PlanningError::Input(format!(
            "{} workers but the graph has only {n} vertices: lower --workers",
            cfg.workers
        )));
    }
    let total_start = Instant::now();
    let mut st = Stages {
        observer,
        times: BTreeMap::new(),
    };
    let segments = cfg.segments();

    let part = st.run("partition", None, |_| {
        let p = partition_on_leaves(&graph, cfg.workers, cfg.leaves, partitioner, cfg.seed)?;
        let placed = if cfg.leaves > 1 {
            let per = cfg.workers / cfg.leaves;
            let cross_leaf = leaf_crossings(&graph, &p, per);
            format!(
                ", placed on {} leaves of {per} ({cross_leaf} edges cross leaves)",
                cfg.leaves
            )
        } else {
            String::new()
        };
        Ok((
            p,
            format!("{} parts with {partitioner}{placed}", cfg.workers),
        ))
    })?;

    let (cross, pstats) = st.run("boundary", None, |_| {
        let cross = cross_edges(&graph, &part);
        let mut sizes = vec![0u64; cfg.workers as usize];
        for &p in &part {
            sizes[p as usize] += 1;
        }
        let mut boundary = vec![false; n];
        for &(u, v) in &cross {
            boundary[u as usize] = true;
            boundary[v as usize] = true;
        }
        let remote = remote_counts(&graph, cfg.workers, &part);
        let stats = PartitionStats {
            cross_edges: cross.len() as u64,
            edge_cut_fraction: cross.len() as f64 / graph.num_edges() as f64,
            boundary_vertices: boundary.iter().filter(|&&b| b).count() as u64,
            min_worker_vertices: *sizes.iter().min().unwrap(),
            max_worker_vertices: *sizes.iter().max().unwrap(),
            max_worker_remote_vertices: *remote.iter().max().unwrap(),
            min_worker_remote_vertices: *remote.iter().min().unwrap(),
        };
        let summary = format!(
            "{} cross edges ({:.1}% of edges), {} boundary vertices",
            stats.cross_edges,
            stats.edge_cut_fraction * 100.0,
            stats.boundary_vertices
        );
        Ok(((cross, stats), summary))
    })?;

    let limits = BlockLimits {
        vertices: cfg.block_capacity(),
        degree: cfg.max_passes.min(sgnn_plan::model::MAX_EXPECTED),
    };
    let total_cross = cross.len() as u64;
    let edge_blocks: Vec<EdgeBlock> = if !paper_blocks {
        drop(cross);
        Vec::new()
    } else {
        st.run("blocks", Some(total_cross), |tick| {
            let blocks = split_multilevel(n, cross, limits, cfg.seed, |p| {
                tick(p.served, format!("level {}: {} blocks", p.level, p.blocks))
            })?;
            let levels = blocks.iter().map(|b| b.level + 1).max().unwrap_or(0);
            let summary = format!("{} blocks in {levels} levels", blocks.len());
            Ok((blocks, summary))
        })?
    };
    if edge_blocks.len() > sgnn_plan::model::MAX_BLOCKS {
        return Err(PlanningError::Input(format!(
            "the plan needs {} blocks but Block_id is 16 bits (at most {}); raise --switch-mem or lower --feature-dim",
            edge_blocks.len(),
            sgnn_plan::model::MAX_BLOCKS
        )));
    }

    let nblocks = edge_blocks.len() as u64;
    let blocks = if !paper_blocks {
        Vec::new()
    } else {
        st.run("order", Some(nblocks), |tick| {
            // Blocks are independent: order and allocate them on both cores.
            let threads = std::thread::available_parallelism()
                .map_or(1, |p| p.get())
                .min(8);
            let mut out: Vec<Option<sgnn_plan::Block>> = vec![None; edge_blocks.len()];
            let done = std::sync::atomic::AtomicU64::new(0);
            let chunk = edge_blocks.len().div_ceil(threads).max(1);
            std::thread::scope(|s| {
                let handles: Vec<_> = edge_blocks
                    .chunks(chunk)
                    .zip(out.chunks_mut(chunk))
                    .enumerate()
                    .map(|(ci, (eb, ob))| {
                        let done = &done;
                        s.spawn(move || {
                            for (i, (e, o)) in eb.iter().zip(ob.iter_mut()).enumerate() {
                                let bid = (ci * chunk + i) as u64;
                                *o = Some(build_block(
                                    e.level,
                                    &e.edges,
                                    order,
                                    segments,
                                    cfg.seed ^ bid,
                                ));
                                done.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            }
                        })
                    })
                    .collect();
                while handles.iter().any(|h| !h.is_finished()) {
                    tick(
                        done.load(std::sync::atomic::Ordering::Relaxed),
                        format!("{order} order"),
                    );
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
            });
            let blocks: Vec<_> = out.into_iter().map(|b| b.unwrap()).collect();
            Ok((blocks, format!("{order} send order, aggregators allocated")))
        })?
    };
    drop(edge_blocks);

    let max_degree = (0..n as u32)
        .map(|v| graph.degree(v))
        .max()
        .unwrap_or(1)
        .max(1);
    let fixed = sgnn_wire::codec::FixedPoint::for_sum(req.max_abs_value, max_degree as u32)
        .map_err(|e| {
            PlanningError::Input(format!(
                "no fixed-point scale can sum {max_degree} values of magnitude {}: {e}; lower --max-abs",
                req.max_abs_value
            ))
        })?;
    let manifest = Manifest {
        format: FORMAT_NAME.into(),
        version: FORMAT_VERSION,
        created_by: format!("switch-ctl {}", env!("CARGO_PKG_VERSION")),
        graph: GraphSummary {
            source: req.graph_source.clone(),
            num_vertices: n as u64,
            num_edges: graph.num_edges(),
            fingerprint: format!("{:016x}", graph.fingerprint()),
            self_loops_removed: build.self_loops,
            duplicates_removed: build.duplicates,
        },
        segments,
        aggregators: cfg.aggregators(),
        frac_bits: fixed.frac_bits,
        max_abs_value: req.max_abs_value,
        blocks: blocks
            .iter()
            .enumerate()
            .map(|(i, b)| b.summary(i, segments))
            .collect(),
        config: cfg.clone(),
        files: Default::default(),
        digest: String::new(),
        split: None,
    };
    let plan = Plan {
        manifest,
        graph,
        partition: part,
        blocks,
        partials: Vec::new(),
        replicate_ptr: Vec::new(),
        replicate: Vec::new(),
    };

    let (traffic_bytes, idx) = st.run("traffic", None, |_| {
        let idx = index.then(|| PairIndex::new(&plan));
        let t = match &idx {
            Some(idx) => sgnn_delivery::traffic::model_indexed(&plan, idx),
            None => sgnn_delivery::traffic::model(&plan),
        };
        let s = &t["switchgnn"];
        let h = &t["host_based"];
        let summary = if paper_blocks {
            format!(
                "switchgnn {:.1}% of host_based",
                s.total as f64 / h.total.max(1) as f64 * 100.0
            )
        } else {
            let u = &t["unlimited"];
            format!(
                "unlimited {:.1}% of host_based (switchgnn: the delivery's, below)",
                u.total as f64 / h.total.max(1) as f64 * 100.0
            )
        };
        Ok(((t, idx), summary))
    })?;

    let blocks = block_stats(&plan);
    let mut planning_seconds = st.times;
    planning_seconds.insert("total".into(), total_start.elapsed().as_secs_f64());
    let report = Report {
        format: "sgnn-plan-report".into(),
        version: 1,
        graph: plan.manifest.graph.clone(),
        workers: cfg.workers,
        partitioner: cfg.partitioner,
        order: cfg.order,
        switch_mem_bytes: cfg.switch_mem_bytes,
        agg_bytes: cfg.agg_bytes,
        feature_dim: cfg.feature_dim,
        segments,
        partition: pstats,
        blocks,
        aggregate: plan.manifest.config.aggregate,
        notes: Vec::new(),
        planning_seconds,
        peak_rss_bytes: peak_rss_bytes(),
        traffic_bytes,
        profile: None,
        predicted: Vec::new(),
    };
    Ok((plan, report, idx))
}

/// The block structure of `plan` for the report.
pub fn block_stats(plan: &Plan) -> BlockStats {
    let cfg = &plan.manifest.config;
    let segments = plan.manifest.segments;
    let mut per_level: Vec<LevelStats> = Vec::new();
    for b in &plan.blocks {
        if per_level.len() <= b.level as usize {
            per_level.resize_with(b.level as usize + 1, LevelStats::default);
        }
        let l = &mut per_level[b.level as usize];
        l.level = b.level;
        l.blocks += 1;
        l.edges += b.num_contributions() / 2;
    }
    BlockStats {
        count: plan.blocks.len() as u64,
        levels: plan.levels(),
        per_level,
        peak_aggregators: plan
            .blocks
            .iter()
            .map(|b| b.aggregators_used(segments))
            .max()
            .unwrap_or(0),
        switch_aggregators: cfg.aggregators(),
        capacity_vertices: cfg.block_capacity(),
        max_passes: plan
            .blocks
            .iter()
            .map(|b| b.max_passes())
            .max()
            .unwrap_or(0),
        // Every pass after a source's first; a replicated vertex's first pass replicates it
        // and its per-edge rows follow (a replicated vertex may have none).
        recirculations: plan
            .blocks
            .iter()
            .flat_map(|b| {
                (0..b.sources.len()).map(move |i| {
                    let wire = b.passes(i).len() + !plan.replicas(b.sources[i]).is_empty() as usize;
                    wire.saturating_sub(1) as u64
                })
            })
            .sum(),
        uploads: plan.blocks.iter().map(|b| b.sources.len() as u64).sum(),
    }
}

/// Re-plans how `plan`'s cross-partition sums are delivered (`switch-ctl plan --aggregate`):
/// `paper` returns `plan` as it is; `partials`, `multicast` and `auto` choose the delivery of
/// every pair under `profile` and lower it to blocks, partials and replication sets
/// ([`sgnn_delivery::lower::deliver`]), then verify the result. The report's blocks, traffic,
/// notes and delivery name follow the returned plan.
pub fn apply_delivery(
    plan: Plan,
    report: &mut Report,
    mode: AggregateMode,
    profile: &SwitchProfile,
) -> Result<Plan, PlanningError> {
    if mode == AggregateMode::Paper {
        return Ok(plan);
    }
    let (lowered, note) = sgnn_delivery::lower::deliver(&plan, mode, profile)?;
    sgnn_plan::verify(&lowered)?;
    adopt(&lowered, note, report, mode);
    Ok(lowered)
}

/// The report of a plan made by the delivery of `mode`, lowered and verified.
fn adopt(lowered: &Plan, note: Option<String>, report: &mut Report, mode: AggregateMode) {
    report.notes.extend(note);
    report.blocks = block_stats(lowered);
    report.aggregate = mode;
    report
        .traffic_bytes
        .insert("switchgnn".into(), traffic::switchgnn(lowered));
}

/// Everything `switch-ctl plan` computes, and what `switch-ctl bench` times: the plan of
/// `req` delivered by `mode` under `profile`, and its report with every mode's predicted time
/// (`Report::predicted`). The paper's multi-level blocks are computed only for
/// `mode == paper` ([`make_plan_with`]); for the others the paper's row is a lower bound
/// ([`sgnn_delivery::bound_paper`]). The pair index is built once (in the stage
/// `traffic`, whose SuperGCN covers it gives), and the chosen mode's delivery is planned once,
/// for its row of the comparison and for the plan (the stage `predict`), then lowered and
/// verified (the stage `lower`). The report's `total` covers every stage.
pub fn plan_and_deliver(
    graph: Csr,
    build: BuildStats,
    req: &PlanRequest,
    mode: AggregateMode,
    profile: &SwitchProfile,
    observer: &mut dyn FnMut(Event),
) -> Result<(Plan, Report), PlanningError> {
    let start = Instant::now();
    let paper = mode == AggregateMode::Paper;
    let (plan, mut report, idx) =
        make_plan_indexed(graph, build, req, paper, true, &mut *observer)?;
    let idx = idx.expect("make_plan_indexed builds the index when asked");
    let mut st = Stages {
        observer,
        times: BTreeMap::new(),
    };
    let (rows, kept) = st.run("predict", None, |_| {
        let (rows, kept) = compare_with(&plan, &idx, profile, paper, (!paper).then_some(mode));
        Ok((
            (rows, kept),
            "per-pair delivery chosen, every mode predicted".to_string(),
        ))
    })?;
    report.predicted = rows;
    report.profile = Some(profile.clone());
    let plan = match kept {
        None => plan,
        Some(planned) => {
            let (lowered, note, fallback) = st.run("lower", None, |_| {
                let (lowered, note, fallback) =
                    deliver_fallback(&plan, &idx, &planned, mode, profile, Layout::Spread)?;
                sgnn_plan::verify(&lowered)?;
                let summary = format!("{mode}: {} blocks, verified", lowered.blocks.len());
                Ok(((lowered, note, fallback), summary))
            })?;
            // Where the choice could not be lowered, the mode's row is what the plan runs.
            if let Some(d) = fallback {
                if let Some(row) = report.predicted.iter_mut().find(|r| r.mode == mode.name()) {
                    row.prediction = d.prediction;
                    row.total_bytes = d.traffic.total;
                }
            }
            adopt(&lowered, note, &mut report, mode);
            lowered
        }
    };
    report.planning_seconds.extend(st.times);
    report
        .planning_seconds
        .insert("total".into(), start.elapsed().as_secs_f64());
    report.peak_rss_bytes = peak_rss_bytes();
    Ok((plan, report))
}
