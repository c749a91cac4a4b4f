//! One worker on several cores: a plan split by feature columns (`switch-ctl plan --cores N`;
//! docs/host.md, "One worker on several cores").
//!
//! A vertex's values travel as segments of 32, and nothing in the protocol mixes two
//! columns: each segment has its own aggregator, Result and bitmap bit. So a `W`-worker plan
//! of `D` values per vertex is, column for column, `N` plans of `D / N` values each on the
//! same partition. [`split_columns`] writes them as one plan for the switch: `W * N` workers
//! (core `k` of worker `w` is worker `w * N + k`), the graph `N` times over (copy `k` of
//! vertex `v` is vertex `k * V + v`, owned by core `k` of `v`'s worker), and every block row's
//! `S` aggregators cut into `N` runs of `S / N`, one per copy. Every core is then a whole
//! engine of its own: its own socket, sequence numbers, recovery and block barrier, with no
//! lock or queue between cores, and the switch needs no change. The links carry the same
//! Data and Result frames as the original plan; each core adds its own control frames
//! (BlockDone, tail probe) per block.

use sgnn_graph::{Csr, VertexId};
use sgnn_plan::model::{AggSlot, Block, ColumnSplit, Partial, Plan};

use crate::PlanningError;

/// `plan` split over `cores` cores per worker by feature columns (see the module doc). `cores`
/// must divide both the values per vertex and the aggregators per vertex (segments) of
/// `plan`, so that every copy's columns fill whole aggregators; 1 returns the plan as it is.
pub fn split_columns(plan: Plan, cores: u32) -> Result<Plan, PlanningError> {
    let m = &plan.manifest;
    let cfg = &m.config;
    if cores == 0 {
        return Err(PlanningError::Input(
            "--cores must be at least 1 (1: one core per worker, no split)".into(),
        ));
    }
    if cores == 1 {
        return Ok(plan);
    }
    if m.split.is_some() {
        return Err(PlanningError::Input(
            "this plan is split over cores already; split the original plan instead".into(),
        ));
    }
    let segments = cfg.segments();
    let lanes = cfg.lanes_per_aggregator();
    if !cfg.feature_dim.is_multiple_of(cores) || !segments.is_multiple_of(cores) {
        return Err(PlanningError::Input(format!(
            "--cores {cores} must divide the values per vertex ({}) and the aggregators per vertex ({segments}, {lanes} values each), so that every core's columns fill whole aggregators; use --feature-dim {} or a --cores that divides {segments}",
            cfg.feature_dim,
            segments.div_ceil(cores) * cores * lanes
        )));
    }
    let copy_dim = cfg.feature_dim / cores;
    let copy_segments = segments / cores;
    if copy_dim.div_ceil(lanes) != copy_segments {
        return Err(PlanningError::Input(format!(
            "--cores {cores}: {copy_dim} values per core need {} aggregators of {lanes} values, not {copy_segments}; use a --feature-dim that is a multiple of {}",
            copy_dim.div_ceil(lanes),
            cores * lanes
        )));
    }
    let workers = cfg.workers * cores;
    if workers > sgnn_switch::config::MAX_WORKERS {
        return Err(PlanningError::Input(format!(
            "{} workers x {cores} cores = {workers} workers for the switch, more than its {}; use fewer --cores",
            cfg.workers,
            sgnn_switch::config::MAX_WORKERS
        )));
    }
    let n = plan.graph.num_vertices();
    let total = n as u64 * cores as u64 + plan.partials.len() as u64 * cores as u64;
    if total > u32::MAX as u64 {
        return Err(PlanningError::Input(format!(
            "{cores} copies of {n} vertices and {} partials need {total} ids, more than 32 bits hold; use fewer --cores",
            plan.partials.len()
        )));
    }
    let (v0, p0) = (n as u32, plan.partials.len() as u32);
    // Block source ids: vertex `s` of copy `k` is `k * V + s`; partial `j` of copy `k` is
    // `cores * V + k * P + j`.
    let source = |s: u32, k: u32| -> u32 {
        if s < v0 {
            k * v0 + s
        } else {
            cores * v0 + k * p0 + (s - v0)
        }
    };
    let worker = |w: u32, k: u32| w * cores + k;

    let graph = copies(&plan.graph, cores);
    let mut partition = Vec::with_capacity(n * cores as usize);
    for k in 0..cores {
        partition.extend(plan.partition.iter().map(|&w| worker(w, k)));
    }
    let mut partials = Vec::with_capacity(plan.partials.len() * cores as usize);
    for k in 0..cores {
        partials.extend(plan.partials.iter().map(|p| Partial {
            dst: k * v0 + p.dst,
            sender: worker(p.sender, k),
        }));
    }
    let (mut replicate_ptr, mut replicate) = (Vec::new(), Vec::new());
    if !plan.replicate_ptr.is_empty() {
        replicate_ptr.push(0u32);
        for k in 0..cores {
            for v in 0..v0 {
                replicate.extend(plan.replicas(v).iter().map(|&w| worker(w, k)));
                replicate_ptr.push(replicate.len() as u32);
            }
        }
    }
    let blocks: Vec<Block> = plan
        .blocks
        .iter()
        .map(|b| {
            let mut out = Block {
                level: b.level,
                sources: Vec::with_capacity(b.sources.len() * cores as usize),
                fanout_ptr: vec![0],
                fanout: Vec::with_capacity(b.fanout.len() * cores as usize),
                aggregators: Vec::with_capacity(b.aggregators.len() * cores as usize),
            };
            // Row `r` of copy `k` is row `r * cores + k`; a source's copies follow each other,
            // so every core sends its copy in the original order.
            for (i, &s) in b.sources.iter().enumerate() {
                for k in 0..cores {
                    out.sources.push(source(s, k));
                    out.fanout
                        .extend(b.passes(i).iter().map(|&r| r * cores + k));
                    out.fanout_ptr.push(out.fanout.len() as u32);
                }
            }
            for a in &b.aggregators {
                for k in 0..cores {
                    out.aggregators.push(AggSlot {
                        dst: k * v0 + a.dst,
                        base: a.base + k * copy_segments,
                        expected: a.expected,
                        generation: a.generation,
                    });
                }
            }
            out
        })
        .collect();

    let mut manifest = m.clone();
    manifest.graph.num_vertices = graph.num_vertices() as u64;
    manifest.graph.num_edges = graph.num_edges();
    manifest.graph.fingerprint = format!("{:016x}", graph.fingerprint());
    manifest.config.workers = workers;
    manifest.config.feature_dim = copy_dim;
    manifest.segments = copy_segments;
    manifest.blocks = blocks
        .iter()
        .enumerate()
        .map(|(i, b)| b.summary(i, copy_segments))
        .collect();
    manifest.files = Default::default();
    manifest.digest = String::new();
    manifest.split = Some(ColumnSplit {
        cores,
        workers: cfg.workers,
        vertices: n as u64,
        feature_dim: cfg.feature_dim,
    });
    let split = Plan {
        manifest,
        graph,
        partition,
        blocks,
        partials,
        replicate_ptr,
        replicate,
    };
    sgnn_plan::verify(&split)?;
    Ok(split)
}

/// `cores` disjoint copies of `g`: vertex `v` of copy `k` is `k * V + v`.
fn copies(g: &Csr, cores: u32) -> Csr {
    let n = g.num_vertices() as u64;
    let m = g.indices().len() as u64;
    let mut indptr = Vec::with_capacity(g.indptr().len() * cores as usize);
    let mut indices = Vec::with_capacity(g.indices().len() * cores as usize);
    indptr.push(0u64);
    for k in 0..cores as u64 {
        indptr.extend(g.indptr()[1..].iter().map(|&p| p + k * m));
        indices.extend(g.indices().iter().map(|&u| (k * n) as VertexId + u));
    }
    Csr::from_raw(indptr, indices).expect("copies of a valid CSR are a valid CSR")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::planner::{plan_and_deliver, PlanRequest};
    use sgnn_plan::model::{AggregateMode, PlanConfig};
    use sgnn_plan::traffic;

    fn plan(aggregate: AggregateMode, dim: u32, recycle: bool) -> Plan {
        let g = sgnn_graph::load_graph("rmat:scale=9,edge_factor=8,seed=4").unwrap();
        let req = PlanRequest {
            config: PlanConfig {
                workers: 4,
                partitioner: sgnn_plan::Partitioner::Metis,
                switch_mem_bytes: 64 << 10,
                agg_bytes: 128,
                feature_dim: dim,
                order: sgnn_plan::SendOrder::Gamr,
                seed: 1,
                max_passes: 256,
                leaves: 1,
                aggregate: AggregateMode::Paper,
                recycle_slack: recycle.then_some(4),
            },
            graph_source: "rmat".into(),
            max_abs_value: 1.0,
        };
        let profile = sgnn_plan::profile::SwitchProfile::named("default").unwrap();
        plan_and_deliver(g.csr, g.stats, &req, aggregate, &profile, &mut |_| {})
            .unwrap()
            .0
    }

    /// Every delivery splits into a plan that passes every invariant, whose Data and Result
    /// frames are the original's (only the block synchronisation is per core), and whose
    /// partition keeps each copy on its worker's cores.
    #[test]
    fn a_split_plan_verifies_and_moves_the_same_data() {
        for (aggregate, recycle) in [
            (AggregateMode::Paper, false),
            (AggregateMode::Auto, false),
            (AggregateMode::Partials, true),
            (AggregateMode::Multicast, false),
        ] {
            let p = plan(aggregate, 128, recycle);
            for cores in [2u32, 4] {
                let s = split_columns(p.clone(), cores).unwrap();
                let what = format!("{aggregate:?} split over {cores} cores");
                assert_eq!(s.workers(), 4 * cores, "{what}");
                assert_eq!(s.manifest.config.feature_dim, 128 / cores, "{what}");
                assert_eq!(s.blocks.len(), p.blocks.len(), "{what}");
                let (a, b) = (traffic::switchgnn(&p), traffic::switchgnn(&s));
                assert_eq!(b.upload, a.upload, "{what}: uplink data");
                assert_eq!(b.download, a.download, "{what}: downlink data");
                assert_eq!(b.control, cores as u64 * a.control, "{what}: control");
                assert_eq!(b.peak_aggregators, a.peak_aggregators, "{what}");
                let (ha, hb) = (traffic::host_based(&p), traffic::host_based(&s));
                assert_eq!(hb.total, ha.total, "{what}: host-based bytes");
                let split = s.manifest.split.unwrap();
                let n = p.graph.num_vertices();
                for k in 0..cores as usize {
                    for v in 0..n {
                        let x = s.partition[k * n + v];
                        assert_eq!(split.machine(x), p.partition[v], "{what}");
                        assert_eq!(split.core(x), k as u32, "{what}");
                    }
                }
                // Each core's schedule is its worker's, copy for copy.
                for w in 0..4 {
                    let orig = p.worker_schedule(w);
                    for k in 0..cores {
                        let c = s.worker_schedule(w * cores + k);
                        assert_eq!(c.sends.len(), orig.sends.len(), "{what}");
                        assert_eq!(c.receives.len(), orig.receives.len(), "{what}");
                    }
                }
            }
        }
    }

    #[test]
    fn columns_split_and_join_back() {
        let s = ColumnSplit {
            cores: 2,
            workers: 2,
            vertices: 3,
            feature_dim: 4,
        };
        let x: Vec<f32> = (0..12).map(|i| i as f32).collect();
        let split = s.split_rows(&x);
        assert_eq!(&split[..2], &[0.0, 1.0]);
        assert_eq!(&split[6..8], &[2.0, 3.0]);
        assert_eq!(s.join_rows(&split), x);
    }

    #[test]
    fn cores_that_cut_an_aggregator_are_refused_with_the_fix() {
        let p = plan(AggregateMode::Paper, 64, false);
        let e = split_columns(p.clone(), 4).unwrap_err().to_string();
        assert!(
            e.contains("--cores 4 must divide") && e.contains("--feature-dim 128"),
            "{e}"
        );
        assert!(split_columns(p.clone(), 0).is_err());
        let one = split_columns(p.clone(), 1).unwrap();
        assert_eq!(one.tag(), p.tag());
        let two = split_columns(p.clone(), 2).unwrap();
        let e = split_columns(two.clone(), 2).unwrap_err().to_string();
        assert!(e.contains("split over cores already"), "{e}");
        // The checker holds a split plan to its split.
        let mut bad = two.clone();
        bad.manifest.split.as_mut().unwrap().workers = 3;
        let e = sgnn_plan::verify(&bad).unwrap_err().to_string();
        assert!(e.contains("does not give this plan's"), "{e}");
        // Values whose products overflow are refused, not a panic.
        let mut huge = two.clone();
        huge.manifest.split.as_mut().unwrap().workers = u32::MAX;
        let e = sgnn_plan::verify(&huge).unwrap_err().to_string();
        assert!(e.contains("does not give this plan's"), "{e}");
    }
}
