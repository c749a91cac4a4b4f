//! Lowering a capacity-aware delivery ([`crate::layout::Tables`]) into a [`Plan`] the switch
//! and the hosts run: blocks of aggregator rows, sources in send order, and pre-aggregated
//! partials as virtual sources.
//!
//! The switch needs no new semantics for `A` (partials) and `R` (per-edge raw): a partial of
//! `(v, q)` is a block source with the id `num_vertices + k` and one pass into `v`'s row, so
//! `agg_table` gets one `aggregate` entry for it, exactly as a paper source with one pass; a
//! raw vertex summed per edge is a paper source. What changes is on the hosts: the sender of a
//! partial sums its own neighbours of `v` ([`Plan::partial_terms`]) and sends that sum, and the
//! receiver counts the partial as one contribution (docs/planner.md, "What the hosts and the
//! switch run").
//!
//! `M` (and the raw half of `C`) is one new action: a raw vertex's first pass names the
//! multicast group of the workers it is replicated to ([`Plan::replicas`],
//! [`Plan::replica_groups`]); the packet replication engine sends each of them a copy (a
//! Bypass addressed to "every neighbour of the source"), and per-edge rows of the same vertex,
//! if any, follow from pass 1 on the recirculation path.

use sgnn_plan::model::{AggSlot, Block, Partial, Plan, MAX_BLOCKS, MAX_EXPECTED, MAX_GENERATION};
use sgnn_plan::profile::SwitchProfile;
use sgnn_plan::{AggregateMode, PlanError};

use crate::cost::Planned;
use crate::layout::{Layout, Send, Tables};
use crate::pair_index::PairIndex;
use crate::plan::plan_delivery_laid_out;

/// `plan` (a paper plan) re-planned with delivery `mode` under `prof` and lowered: the plan the
/// switch and the daemons run for `switch-ctl plan --aggregate MODE`. `paper` is `plan` itself.
/// When `auto`'s per-edge sums (R) do not fit the pass limit, the best choice without them,
/// with a note saying so.
pub fn deliver(
    plan: &Plan,
    mode: AggregateMode,
    prof: &SwitchProfile,
) -> Result<(Plan, Option<String>), PlanError> {
    deliver_laid_out(plan, mode, prof, Layout::Spread)
}

/// [`deliver`], its tables in `layout` ([`Layout::RoundRobin`]: the plans the bmv2 recording
/// was made from).
pub fn deliver_laid_out(
    plan: &Plan,
    mode: AggregateMode,
    prof: &SwitchProfile,
    layout: Layout,
) -> Result<(Plan, Option<String>), PlanError> {
    if mode == AggregateMode::Paper {
        return Ok((plan.clone(), None));
    }
    let idx = PairIndex::new(plan);
    let d = plan_delivery_laid_out(plan, &idx, mode, prof, true, layout);
    deliver_planned(plan, &idx, &d, mode, prof, layout)
}

/// [`deliver_laid_out`] with the delivery of `mode` already planned on `idx` (`planned`, from
/// [`crate::plan::plan_delivery_laid_out`] with per-edge sums allowed, or
/// [`crate::compare::compare_with`] in [`Layout::Spread`]): the same plan without planning it
/// twice.
pub fn deliver_planned(
    plan: &Plan,
    idx: &PairIndex,
    planned: &Planned,
    mode: AggregateMode,
    prof: &SwitchProfile,
    layout: Layout,
) -> Result<(Plan, Option<String>), PlanError> {
    deliver_fallback(plan, idx, planned, mode, prof, layout).map(|(p, note, _)| (p, note))
}

/// [`deliver_planned`], and the delivery the plan runs when it is not `planned`: where `auto`'s
/// choice cannot be lowered, it falls back, with a note saying why,
/// - from per-edge sums (`R`) over the pass limit to the best choice without them;
/// - from replicated raw vertices (`M`, `C`) whose worker sets outnumber the switch's
///   multicast group ids (a large graph over many workers: 95,091 sets for rmat 2^20 at 32
///   workers) to pre-aggregated partials for every pair, which replicate nothing.
pub fn deliver_fallback(
    plan: &Plan,
    idx: &PairIndex,
    planned: &Planned,
    mode: AggregateMode,
    prof: &SwitchProfile,
    layout: Layout,
) -> Result<(Plan, Option<String>, Option<Planned>), PlanError> {
    if mode == AggregateMode::Paper {
        return Ok((plan.clone(), None, None));
    }
    let e = match lower(plan, &planned.tables, mode) {
        Ok(p) => return Ok((p, None, None)),
        Err(e) if mode == AggregateMode::Auto => e,
        Err(e) => return Err(e),
    };
    let (e, replicates, mut notes) = if planned.tables.r_rows.is_empty() {
        (e, !planned.tables.mcast.is_empty(), Vec::new())
    } else {
        let d = plan_delivery_laid_out(plan, idx, mode, prof, false, layout);
        let note = format!(
            "auto: per-edge sums dropped ({e}); the plan uses multicast, partials and covers only"
        );
        match lower(plan, &d.tables, mode) {
            Ok(p) => return Ok((p, Some(note), Some(d))),
            Err(e) => (e, !d.tables.mcast.is_empty(), vec![note]),
        }
    };
    if !replicates {
        return Err(e);
    }
    let d = plan_delivery_laid_out(plan, idx, AggregateMode::Partials, prof, false, layout);
    // Partials fail only where every delivery would (too many blocks or ids): say what failed
    // first.
    let Ok(p) = lower(plan, &d.tables, AggregateMode::Auto) else {
        return Err(e);
    };
    notes.push(format!(
        "auto: replicated raw vertices dropped ({e}); the plan sends pre-aggregated partials for every pair"
    ));
    Ok((p, Some(notes.join("; ")), Some(d)))
}

/// The plan that runs `tables` (computed for `plan`'s graph and partition), with the delivery
/// `aggregate` recorded in its configuration. Blocks, partials and block summaries are
/// replaced; the graph, partition and sizes are `plan`'s.
pub fn lower(plan: &Plan, tables: &Tables, aggregate: AggregateMode) -> Result<Plan, PlanError> {
    let bad = |m: String| Err(PlanError::Config(m));
    let n = plan.graph.num_vertices();
    let m = plan.workers() as usize;
    let seg = plan.manifest.segments;
    let blocks = tables.blocks.max(1) as usize;
    if blocks > MAX_BLOCKS {
        return bad(format!(
            "--aggregate {aggregate} needs {blocks} blocks, more than the {MAX_BLOCKS} the Block_id field holds; raise --switch-mem"
        ));
    }
    if blocks > 1 && !tables.r_rows.is_empty() {
        return bad(format!(
            "--aggregate {aggregate}: per-edge (R) sums need every destination in one block, but they take {blocks}"
        ));
    }
    // Partial ids: worker by worker, in each worker's send order.
    let mut partials = Vec::new();
    let mut partial_id = vec![Vec::new(); m];
    for (q, ids) in partial_id.iter_mut().enumerate() {
        for s in tables.send[q].iter().filter(|s| s.partial) {
            ids.push(n as u64 + partials.len() as u64);
            partials.push(Partial {
                dst: s.vertex,
                sender: q as u32,
            });
        }
    }
    let ids = n as u64 + partials.len() as u64;
    if ids >= u32::MAX as u64 {
        return bad(format!(
            "--aggregate {aggregate}: {n} vertices and {} partials need source ids up to {ids}, beyond the 32-bit Src_id field (u32::MAX is reserved)",
            partials.len()
        ));
    }
    let mut out = Vec::with_capacity(blocks);
    let mut next_partial = vec![0usize; m];
    for b in 0..blocks {
        let lo = tables.block_start[b] as usize;
        let hi = tables.block_start[b + 1] as usize;
        let mut block = Block {
            level: 0,
            sources: Vec::new(),
            fanout_ptr: vec![0],
            fanout: Vec::new(),
            aggregators: Vec::with_capacity(hi.saturating_sub(lo)),
        };
        for r in lo..hi {
            let expected = tables.row_expected[r];
            if expected == 0 || expected > MAX_EXPECTED {
                return bad(format!(
                    "--aggregate {aggregate}: destination {} sums {expected} contributions; the 16-bit Count holds 1..={MAX_EXPECTED}",
                    tables.row_dst[r]
                ));
            }
            let generation = tables.row_gen[r];
            if generation > MAX_GENERATION {
                return bad(format!(
                    "--aggregate {aggregate} --recycle: aggregator row {} of block {b} is reused {} times, more than the switch's 16-bit generation holds; raise --recycle-slack or --switch-mem",
                    tables.row_slot[r],
                    generation + 1
                ));
            }
            block.aggregators.push(AggSlot {
                dst: tables.row_dst[r],
                base: (tables.row_slot[r] as u64 * seg as u64) as u32,
                expected,
                generation,
            });
        }
        // Every worker's share of the block, interleaved so the block's source list keeps each
        // worker's own order (what its schedule is).
        let shares: Vec<&[Send]> = (0..m)
            .map(|q| {
                let off = &tables.send_block_off[q];
                &tables.send[q][off[b]..off[b + 1]]
            })
            .collect();
        let longest = shares.iter().map(|s| s.len()).max().unwrap_or(0);
        for i in 0..longest {
            for (q, share) in shares.iter().enumerate() {
                let Some(s) = share.get(i) else { continue };
                if s.partial {
                    let id = partial_id[q][next_partial[q]];
                    next_partial[q] += 1;
                    let row = tables.row_of[s.vertex as usize] as usize;
                    if !(lo..hi).contains(&row) {
                        return bad(format!(
                            "--aggregate {aggregate}: the partial of worker {q} for {} is sent in block {b} but its row {row} is in another block",
                            s.vertex
                        ));
                    }
                    block.sources.push(id as u32);
                    block.fanout.push((row - lo) as u32);
                } else {
                    let u = s.vertex as usize;
                    let rows = &tables.r_rows[tables.r_off[u]..tables.r_off[u + 1]];
                    if rows.is_empty() && tables.mcast_off[u] == tables.mcast_off[u + 1] {
                        return bad(format!(
                            "--aggregate {aggregate}: raw vertex {u} feeds no aggregator and is replicated to no worker"
                        ));
                    }
                    if rows.len() as u32 > plan.manifest.config.max_passes {
                        return bad(format!(
                            "--aggregate {aggregate}: vertex {u} feeds {} aggregators per edge, more than --max-passes {}",
                            rows.len(),
                            plan.manifest.config.max_passes
                        ));
                    }
                    block.sources.push(u as u32);
                    block
                        .fanout
                        .extend(rows.iter().map(|&r| (r as usize - lo) as u32));
                }
                block.fanout_ptr.push(block.fanout.len() as u32);
            }
        }
        out.push(block);
    }
    let (replicate_ptr, replicate) = if tables.mcast.is_empty() {
        (Vec::new(), Vec::new())
    } else {
        let ptr: Vec<u32> = tables.mcast_off.iter().map(|&o| o as u32).collect();
        (ptr, tables.mcast.clone())
    };
    let mut lowered = Plan {
        manifest: plan.manifest.clone(),
        graph: plan.graph.clone(),
        partition: plan.partition.clone(),
        blocks: out,
        partials,
        replicate_ptr,
        replicate,
    };
    let groups = lowered.replica_groups().sets.len();
    if groups > (u16::MAX as u32 - sgnn_plan::FIRST_REPLICA_GROUP + 1) as usize {
        return bad(format!(
            "--aggregate {aggregate}: raw frames go to {groups} distinct worker sets, more multicast groups than the switch's 16-bit group ids hold; use --aggregate partials"
        ));
    }
    lowered.manifest.config.aggregate = aggregate;
    lowered.manifest.blocks = lowered
        .blocks
        .iter()
        .enumerate()
        .map(|(i, b)| b.summary(i, seg))
        .collect();
    lowered.manifest.files.clear();
    lowered.manifest.digest.clear();
    Ok(lowered)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::Sizes;
    use crate::plan::plan_delivery_with;
    use rand::{Rng, SeedableRng};
    use sgnn_graph::Csr;
    use sgnn_plan::model::{GraphSummary, Manifest, Partitioner, PlanConfig, SendOrder};

    /// A paper plan without blocks (what `plan_delivery_with` and `lower` read: the graph, the
    /// partition and the sizes): a random graph of 4 workers x 150 vertices with many cross
    /// edges, `segments` segments per vector, `aggregators` aggregators.
    fn plan(segments: u32, aggregators: u64, recycle_slack: Option<u64>) -> Plan {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let n = 600u32;
        let edges: Vec<(u32, u32)> = (0..3000)
            .map(|_| (rng.gen_range(0..n), rng.gen_range(0..n)))
            .filter(|(a, b)| a != b)
            .collect();
        let graph = Csr::from_edges(n as usize, &edges).0;
        let config = PlanConfig {
            workers: 4,
            partitioner: Partitioner::Random,
            switch_mem_bytes: aggregators * 128,
            agg_bytes: 128,
            feature_dim: segments * 32,
            order: SendOrder::Gamr,
            seed: 1,
            max_passes: sgnn_plan::model::DEFAULT_MAX_PASSES,
            leaves: 1,
            aggregate: AggregateMode::Paper,
            recycle_slack,
        };
        let manifest = Manifest {
            format: sgnn_plan::FORMAT_NAME.into(),
            version: sgnn_plan::FORMAT_VERSION,
            created_by: "test".into(),
            graph: GraphSummary {
                source: "random".into(),
                num_vertices: n as u64,
                num_edges: graph.num_edges(),
                fingerprint: format!("{:016x}", graph.fingerprint()),
                self_loops_removed: 0,
                duplicates_removed: 0,
            },
            segments: config.segments(),
            aggregators: config.aggregators(),
            frac_bits: 16,
            max_abs_value: 1.0,
            blocks: Vec::new(),
            files: Default::default(),
            digest: String::new(),
            split: None,
            config,
        };
        Plan {
            manifest,
            partition: (0..n).map(|v| v % 4).collect(),
            graph,
            blocks: Vec::new(),
            partials: Vec::new(),
            replicate_ptr: Vec::new(),
            replicate: Vec::new(),
        }
    }

    fn profile(seen_cells: u64) -> SwitchProfile {
        let mut p = SwitchProfile::named("default").unwrap();
        p.seen_cells = seen_cells;
        p
    }

    /// Plans `mode` for `plan` on a switch of `seen_cells` src_seen cells, lowers it and checks
    /// what `switch-ctl load` checks (`sgnn_switch::aggregation::block_over_seen_cells`: a
    /// block's sources x segments within the cells), except for a block of one aggregator row
    /// (a row's sends cannot be cut). Returns the tables' blocks and the lowered plan.
    fn planned(plan: &Plan, mode: AggregateMode, seen_cells: u64) -> (u32, Plan) {
        let prof = profile(seen_cells);
        let idx = PairIndex::new(plan);
        let d = plan_delivery_with(plan, &idx, mode, &prof, true);
        assert_eq!(
            d.prediction.blocks, d.tables.blocks as u64,
            "{mode}: the prediction follows the tables' blocks"
        );
        let lowered = lower(plan, &d.tables, mode).unwrap();
        sgnn_plan::verify(&lowered).unwrap();
        assert_eq!(lowered.blocks.len(), d.tables.blocks as usize);
        // The daemons pace from the lowered plan what the replay paced from the tables.
        for (b, load) in sgnn_plan::traffic::block_loads(&lowered).iter().enumerate() {
            assert_eq!(
                *load,
                d.tables.block_load(&plan.partition, b as u32),
                "{mode}: block {b}'s links in the plan and in the tables"
            );
        }
        let seg = u64::from(lowered.manifest.segments);
        for (b, block) in lowered.blocks.iter().enumerate() {
            let cells = block.sources.len() as u64 * seg;
            assert!(
                cells <= seen_cells || block.aggregators.len() <= 1,
                "{mode}: block {b} of {} has {} sources x {seg} segments = {cells} cells > {seen_cells}",
                lowered.blocks.len(),
                block.sources.len()
            );
        }
        (d.tables.blocks, lowered)
    }

    #[test]
    fn src_seen_cuts_a_delivery_into_more_blocks_than_its_rows_need() {
        // Memory for every destination in one block, two segments per vector.
        let p = plan(2, 1 << 20, None);
        let rows_only = Sizes::for_switch(&p, &profile(u64::MAX));
        for mode in [AggregateMode::Partials, AggregateMode::Auto] {
            let (free, lowered) = planned(&p, mode, u64::MAX);
            let sources: u64 = lowered.blocks.iter().map(|b| b.sources.len() as u64).sum();
            let dests: u64 = lowered
                .blocks
                .iter()
                .map(|b| b.aggregators.len() as u64)
                .sum();
            assert!(dests > 0, "{mode}: something is summed in the switch");
            assert_eq!(free as u64, rows_only.blocks(dests).max(1), "{mode}");
            assert_eq!(free, 1, "{mode}: the rows need one block");
            // A quarter of the sources per block (`auto` may choose fewer sources then).
            let seen = sources / 4 * 2;
            let (cut, lowered) = planned(&p, mode, seen);
            let dests: u64 = lowered
                .blocks
                .iter()
                .map(|b| b.aggregators.len() as u64)
                .sum();
            let sources: u64 = lowered.blocks.iter().map(|b| b.sources.len() as u64).sum();
            assert!(
                cut as u64 > rows_only.blocks(dests).max(1),
                "{mode}: {cut} blocks for {dests} destinations"
            );
            assert!(
                cut as u64 >= (sources * 2).div_ceil(seen),
                "{mode}: {cut} blocks for {sources} sources in {seen} cells"
            );
            assert!(lowered
                .blocks
                .iter()
                .all(|b| b.sources.len() as u64 * 2 <= seen));
            // The default profile's 262,144 cells hold this small plan in one block.
            assert_eq!(planned(&p, mode, 262_144).0, 1, "{mode}");
        }
    }

    #[test]
    fn recycling_by_live_range_respects_src_seen_too() {
        // 64 destinations of memory, recycled by live range with slack 4.
        let p = plan(1, 64, Some(4));
        let (free, lowered) = planned(&p, AggregateMode::Partials, u64::MAX);
        let most = lowered
            .blocks
            .iter()
            .map(|b| b.sources.len() as u64)
            .max()
            .unwrap();
        assert!(
            lowered
                .blocks
                .iter()
                .any(|b| b.aggregators.iter().any(|a| a.generation > 0)),
            "the plan recycles"
        );
        // Half the sources of the fullest block: recycling alone made blocks too big.
        let seen = most / 2;
        let (cut, lowered) = planned(&p, AggregateMode::Partials, seen);
        assert!(
            cut > free,
            "{cut} blocks with {seen} cells, {free} without a limit"
        );
        assert!(lowered
            .blocks
            .iter()
            .all(|b| b.sources.len() as u64 <= seen));
    }

    /// `verify`'s checks of what only delivery plans have (partials and replication sets),
    /// each fault named: the partial terms and replica sets it walks once per destination or
    /// source must still find what a walk per partial or per worker found.
    #[test]
    fn verify_names_the_faults_of_partials_and_replicas() {
        let base = plan(1, 1 << 20, None);
        let n = base.graph.num_vertices() as u32;
        let err = |p: &Plan| sgnn_plan::verify(p).unwrap_err().to_string();
        let (_, partials) = planned(&base, AggregateMode::Partials, u64::MAX);
        sgnn_plan::verify(&partials).unwrap();

        // A partial moved to a worker that holds no neighbour of its destination.
        let mut bad = partials.clone();
        let (k, w) = (0..bad.partials.len())
            .find_map(|k| {
                let p = bad.partials[k];
                let owner = bad.partition[p.dst as usize];
                (0..4u32)
                    .find(|&w| {
                        w != owner
                            && !bad
                                .graph
                                .neighbors(p.dst)
                                .iter()
                                .any(|&u| bad.partition[u as usize] == w)
                    })
                    .map(|w| (k, w))
            })
            .expect("some destination has no neighbour on some worker");
        bad.partials[k].sender = w;
        let e = err(&bad);
        assert!(
            e.contains(&format!("partial {k}: worker {w} holds no neighbour")),
            "{e}"
        );

        // The same partial twice (sent twice into its row): its terms are served twice.
        let mut bad = partials.clone();
        let (b, i) = (0..bad.blocks.len())
            .find_map(|b| (!bad.blocks[b].sources.is_empty()).then_some((b, 0)))
            .unwrap();
        let block = &mut bad.blocks[b];
        let src = block.sources[i];
        let row = block.passes(i)[0];
        bad.partials.push(bad.partials[(src - n) as usize]);
        block.sources.push(n + bad.partials.len() as u32 - 1);
        block.fanout.push(row);
        block.fanout_ptr.push(block.fanout.len() as u32);
        block.aggregators[row as usize].expected += 1;
        let seg = bad.manifest.segments;
        bad.manifest.blocks[b] = bad.blocks[b].summary(b, seg);
        let e = err(&bad);
        assert!(e.contains("is served by more than one block"), "{e}");

        let (_, multicast) = planned(&base, AggregateMode::Multicast, u64::MAX);
        sgnn_plan::verify(&multicast).unwrap();
        // A vertex replicated to one more worker, which holds none of its neighbours; and
        // one whose set is not ascending.
        let with_set = |p: &Plan, u: usize, set: Vec<u32>| {
            let mut q = p.clone();
            let (lo, hi) = (q.replicate_ptr[u] as usize, q.replicate_ptr[u + 1] as usize);
            let grow = set.len() as i64 - (hi - lo) as i64;
            q.replicate.splice(lo..hi, set);
            for ptr in &mut q.replicate_ptr[u + 1..] {
                *ptr = (*ptr as i64 + grow) as u32;
            }
            q
        };
        let (u, extra) = (0..n as usize)
            .find_map(|u| {
                let set = multicast.replicas(u as u32);
                let owner = multicast.partition[u];
                (0..4u32)
                    .find(|&w| w != owner && !set.is_empty() && !set.contains(&w))
                    .map(|w| (u, w))
            })
            .expect("some vertex is replicated to fewer than every other worker");
        let mut set = multicast.replicas(u as u32).to_vec();
        set.push(extra);
        set.sort_unstable();
        let e = err(&with_set(&multicast, u, set.clone()));
        assert!(
            e.contains(&format!(
                "source {u} is replicated to worker {extra}, which holds none of its neighbours"
            )),
            "{e}"
        );
        set.reverse();
        let e = err(&with_set(&multicast, u, set));
        assert!(e.contains("workers must be ascending"), "{e}");
    }
}
