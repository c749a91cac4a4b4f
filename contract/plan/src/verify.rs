//! Re-checks every invariant of a plan (`switch-ctl plan --verify DIR`).
//!
//! The checks, in order, each failing with a message that names the block, vertex or edge:
//! 1. the manifest matches the arrays (vertex count, block count, worker count, derived sizes);
//! 2. the partition assigns every vertex a worker in range and no worker is empty;
//! 3. every block is well formed: sources unique, pointers monotone, aggregator rows in range,
//!    destinations unique, aggregator ranges `[base, base + segments)` inside the switch and
//!    disjoint, no source over the pass limit, every expected count equal to the number of
//!    passes that feed the row and within the 16-bit `Count` field;
//! 4. every contribution `source -> destination` is a cross-partition edge of the graph, and (in
//!    paper plans) the reverse contribution is served by the same block; a pre-aggregated
//!    partial (source id `n + k`, partials plans) feeds exactly its destination's row, from
//!    another worker, and contributes one edge per vertex it sums;
//! 5. coverage: every directed cross-partition contribution is served by exactly one block;
//! 6. the block count fits the 16-bit `Block_id` field and the summaries match the blocks.

use crate::model::AggregateMode;
use crate::model::{Plan, MAX_BLOCKS, MAX_EXPECTED};
use crate::PlanError;

fn fail<T>(msg: String) -> Result<T, PlanError> {
    Err(PlanError::Invariant(msg))
}

/// Facts a successful verification establishes, for the CLI to print.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VerifySummary {
    /// Blocks checked.
    pub blocks: usize,
    /// Directed cross-partition contributions, each served exactly once.
    pub contributions: u64,
    /// Largest number of aggregators any block uses.
    pub peak_aggregators: u64,
}

/// Checks every invariant of `plan`; returns the first violation as [`PlanError::Invariant`]
/// (or, for what [`Plan::check_structure`] checks, [`PlanError::Structure`]).
pub fn verify(plan: &Plan) -> Result<VerifySummary, PlanError> {
    // The structural checks first (every loader runs them too): the checks below index the
    // arrays with the plan's own values.
    plan.check_structure()?;
    let m = &plan.manifest;
    let cfg = &m.config;
    let n = plan.graph.num_vertices();
    let workers = cfg.workers;
    let segments = cfg.segments();

    // 1. Manifest against arrays.
    if m.graph.num_vertices != n as u64 || m.graph.num_edges != plan.graph.num_edges() {
        return fail(format!(
            "manifest says {} vertices / {} edges, graph files hold {} / {}",
            m.graph.num_vertices,
            m.graph.num_edges,
            n,
            plan.graph.num_edges()
        ));
    }
    if m.segments != segments || m.aggregators != cfg.aggregators() {
        return fail(format!(
            "manifest sizes (segments {}, aggregators {}) disagree with its config (segments {}, aggregators {})",
            m.segments, m.aggregators, segments, cfg.aggregators()
        ));
    }
    if plan.blocks.len() != m.blocks.len() {
        return fail(format!(
            "manifest lists {} blocks, {} were loaded",
            m.blocks.len(),
            plan.blocks.len()
        ));
    }
    if plan.blocks.len() > MAX_BLOCKS {
        return fail(format!(
            "{} blocks do not fit the 16-bit Block_id field (at most {MAX_BLOCKS})",
            plan.blocks.len()
        ));
    }

    // 2. Partition.
    if plan.partition.len() != n {
        return fail(format!(
            "partition has {} entries for {} vertices",
            plan.partition.len(),
            n
        ));
    }
    let mut sizes = vec![0u64; workers as usize];
    for (v, &p) in plan.partition.iter().enumerate() {
        if p >= workers {
            return fail(format!(
                "vertex {v} is assigned to worker {p}, but there are only {workers} workers"
            ));
        }
        sizes[p as usize] += 1;
    }
    if let Some(w) = sizes.iter().position(|&s| s == 0) {
        return fail(format!("worker {w} owns no vertex"));
    }
    // 2b. A plan split by columns ([`crate::model::ColumnSplit`]; its sizes were checked
    // with the structure): copy `k` of a vertex belongs to core `k` of the original's worker
    // of the vertex, the same in every copy.
    if let Some(c) = m.split {
        let (cores, v0) = (c.cores, c.vertices as usize);
        for (x, &p) in plan.partition.iter().enumerate() {
            let (k, v) = ((x / v0) as u32, x % v0);
            if p % cores != k || p / cores != plan.partition[v] / cores {
                return fail(format!(
                    "vertex {x} (copy {k} of vertex {v}) is assigned to worker {p}, not to core {k} of vertex {v}'s worker {}",
                    plan.partition[v] / cores
                ));
            }
        }
    }

    // 3-5. Blocks; collect every contribution as (src << 32 | dst) for the coverage check.
    let mut seen: Vec<u64> = Vec::new();
    let mut peak = 0u64;
    // Scratch marks indexed by vertex, reset after each block.
    let mut src_mark = vec![u32::MAX; n + plan.partials.len()];
    // The vertices every partial sums ([`Plan::partial_terms`]), all at once: one walk over
    // each destination's neighbours rather than one per partial of it (a hub's partials from
    // every other worker would each walk its whole adjacency).
    let terms = PartialTerms::of(plan);
    for (k, p) in plan.partials.iter().enumerate() {
        if p.dst as usize >= n || p.sender >= workers {
            return fail(format!(
                "partial {k} (source id {}) names destination {} and sender {}, outside the graph (n = {n}) or the workers ({workers})",
                n + k,
                p.dst,
                p.sender
            ));
        }
        if plan.partition[p.dst as usize] == p.sender {
            return fail(format!(
                "partial {k} sums worker {}'s neighbours of its own vertex {}: local edges must not use the switch",
                p.sender, p.dst
            ));
        }
        if terms.of_partial(k).is_empty() {
            return fail(format!(
                "partial {k}: worker {} holds no neighbour of {}",
                p.sender, p.dst
            ));
        }
    }
    let mut dst_mark = vec![u32::MAX; n];
    for (b, block) in plan.blocks.iter().enumerate() {
        let bid = b as u32;
        let ctx = |msg: String| format!("block {b}: {msg}");
        let summary = block.summary(b, segments);
        if summary != m.blocks[b] {
            return fail(ctx(format!(
                "manifest summary {:?} does not match the block's arrays {:?}",
                m.blocks[b], summary
            )));
        }
        if block.fanout_ptr.len() != block.sources.len() + 1
            || block.fanout_ptr.first() != Some(&0)
            || *block.fanout_ptr.last().unwrap() as usize != block.fanout.len()
        {
            return fail(ctx(format!(
                "fanout_ptr has {} entries for {} sources and {} passes",
                block.fanout_ptr.len(),
                block.sources.len(),
                block.fanout.len()
            )));
        }
        let aggs = block.aggregators.len();
        let used = block.aggregators_used(segments);
        if used > cfg.aggregators() {
            return fail(ctx(format!(
                "uses {used} aggregators ({aggs} destinations x {segments} segments) but the switch has {}",
                cfg.aggregators()
            )));
        }
        peak = peak.max(used);
        // Aggregator ranges in the switch and disjoint: sort bases and compare neighbours.
        // Rows of a recycling plan may share a base, each with its own generation.
        let mut ranges: Vec<(u32, u32, usize)> = block
            .aggregators
            .iter()
            .enumerate()
            .map(|(i, a)| (a.base, a.generation, i))
            .collect();
        ranges.sort_unstable();
        for (k, &(base, generation, i)) in ranges.iter().enumerate() {
            if generation > crate::model::MAX_GENERATION {
                return fail(ctx(format!(
                    "destination {} has generation {generation}, beyond the switch's 16 bits",
                    block.aggregators[i].dst
                )));
            }
            if k > 0 && ranges[k - 1].0 == base {
                let j = ranges[k - 1].2;
                if ranges[k - 1].1 == generation {
                    return fail(ctx(format!(
                        "destinations {} and {} overlap in aggregators (both from {base}, the same generation {generation}): a switch could not tell their contributions apart",
                        block.aggregators[j].dst, block.aggregators[i].dst
                    )));
                }
                continue;
            }
            if base as u64 + segments as u64 > cfg.aggregators() {
                return fail(ctx(format!(
                    "destination {} uses aggregators {}..{}, beyond the switch's {}",
                    block.aggregators[i].dst,
                    base,
                    base as u64 + segments as u64,
                    cfg.aggregators()
                )));
            }
            if k > 0 && (ranges[k - 1].0 as u64 + segments as u64) > base as u64 {
                let j = ranges[k - 1].2;
                return fail(ctx(format!(
                    "destinations {} and {} overlap in aggregators (bases {} and {}, {} segments each)",
                    block.aggregators[j].dst, block.aggregators[i].dst, ranges[k - 1].0, base, segments
                )));
            }
        }
        let mut fed = vec![0u32; aggs];
        for (i, slot) in block.aggregators.iter().enumerate() {
            if slot.dst as usize >= n {
                return fail(ctx(format!(
                    "aggregator row {i} names destination {} outside the graph (n = {n})",
                    slot.dst
                )));
            }
            if dst_mark[slot.dst as usize] == bid {
                return fail(ctx(format!(
                    "destination {} has two aggregator rows",
                    slot.dst
                )));
            }
            dst_mark[slot.dst as usize] = bid;
        }
        for (i, &src) in block.sources.iter().enumerate() {
            if src as usize >= src_mark.len() {
                return fail(ctx(format!(
                    "source {src} is outside the graph (n = {n}) and its {} partials",
                    plan.partials.len()
                )));
            }
            if src_mark[src as usize] == bid {
                return fail(ctx(format!("source {src} is listed twice")));
            }
            src_mark[src as usize] = bid;
            if block.fanout_ptr[i] > block.fanout_ptr[i + 1] {
                return fail(ctx(format!("fanout_ptr decreases at source {src}")));
            }
            let passes = block.passes(i);
            let replicas = plan.replicas(src);
            if passes.is_empty() && replicas.is_empty() {
                return fail(ctx(format!(
                    "source {src} feeds no aggregator and is replicated to no worker"
                )));
            }
            // A replicated source's first pass replicates it; its rows follow from pass 1.
            let wire_passes = passes.len() + !replicas.is_empty() as usize;
            if wire_passes as u32 > cfg.max_passes {
                return fail(ctx(format!(
                    "source {src} needs {wire_passes} passes, more than the limit {}",
                    cfg.max_passes
                )));
            }
            let owner = plan.partition.get(src as usize).copied();
            let well_formed = |owner: u32| {
                replicas
                    .iter()
                    .enumerate()
                    .all(|(k, &p)| p < workers && p != owner && (k == 0 || replicas[k - 1] < p))
            };
            if let Some(owner) = owner.filter(|&o| !replicas.is_empty() && well_formed(o)) {
                // One walk over the neighbours for every worker of the set (the loop below,
                // for a set it would refuse, walks them once per worker to name the first
                // fault in order).
                let mut counts = vec![0u32; replicas.len()];
                for &v in plan.graph.neighbors(src) {
                    let p = plan.partition[v as usize];
                    if p != owner {
                        if let Ok(k) = replicas.binary_search(&p) {
                            counts[k] += 1;
                            seen.push(((src as u64) << 32) | v as u64);
                        }
                    }
                }
                if let Some(k) = counts.iter().position(|&c| c == 0) {
                    return fail(ctx(format!(
                        "source {src} is replicated to worker {}, which holds none of its neighbours",
                        replicas[k]
                    )));
                }
            } else if !replicas.is_empty() {
                let owner = plan.partition[src as usize];
                for (k, &p) in replicas.iter().enumerate() {
                    if p >= workers || p == owner || (k > 0 && replicas[k - 1] >= p) {
                        return fail(ctx(format!(
                            "source {src} (worker {owner}) is replicated to {replicas:?}: workers must be ascending, below {workers} and not its own"
                        )));
                    }
                    let before = seen.len();
                    seen.extend(
                        plan.graph
                            .neighbors(src)
                            .iter()
                            .filter(|&&v| plan.partition[v as usize] == p)
                            .map(|&v| ((src as u64) << 32) | v as u64),
                    );
                    if seen.len() == before {
                        return fail(ctx(format!(
                            "source {src} is replicated to worker {p}, which holds none of its neighbours"
                        )));
                    }
                }
            }
            for &row in passes {
                let Some(slot) = block.aggregators.get(row as usize) else {
                    return fail(ctx(format!(
                        "source {src} feeds aggregator row {row}, but the block has {aggs} rows"
                    )));
                };
                let dst = slot.dst;
                if let Some(p) = plan.partial(src) {
                    if passes.len() != 1 || dst != p.dst {
                        return fail(ctx(format!(
                            "partial {src} (worker {}'s sum for {}) must feed exactly its destination's row, but feeds {} rows, the first for {dst}",
                            p.sender,
                            p.dst,
                            passes.len()
                        )));
                    }
                    fed[row as usize] += 1;
                    seen.extend(
                        terms
                            .of_partial(src as usize - n)
                            .iter()
                            .map(|&u| ((u as u64) << 32) | dst as u64),
                    );
                    continue;
                }
                if plan.graph.neighbors(src).binary_search(&dst).is_err() {
                    return fail(ctx(format!(
                        "contribution {src} -> {dst} is not an edge of the graph"
                    )));
                }
                if plan.partition[src as usize] == plan.partition[dst as usize] {
                    return fail(ctx(format!(
                        "contribution {src} -> {dst} stays inside worker {} and must not use the switch",
                        plan.partition[src as usize]
                    )));
                }
                fed[row as usize] += 1;
                seen.push(((src as u64) << 32) | dst as u64);
            }
        }
        for (i, slot) in block.aggregators.iter().enumerate() {
            if slot.expected != fed[i] {
                return fail(ctx(format!(
                    "destination {} expects {} contributions but {} sources feed it",
                    slot.dst, slot.expected, fed[i]
                )));
            }
            if slot.expected == 0 || slot.expected > MAX_EXPECTED {
                return fail(ctx(format!(
                    "destination {} expects {} contributions; must be 1..={MAX_EXPECTED} (16-bit Count)",
                    slot.dst, slot.expected
                )));
            }
        }
        // Both directions of an edge in the same block: every destination is also a source
        // feeding its contributors back. Checked through the coverage pass below by block id.
    }

    // 5. Coverage: sort contributions; each directed cross edge exactly once.
    seen.sort_unstable();
    for w in seen.windows(2) {
        if w[0] == w[1] {
            return fail(format!(
                "contribution {} -> {} is served by more than one block",
                w[0] >> 32,
                w[0] & 0xffff_ffff
            ));
        }
    }
    // The cross edges come in ascending (u, v) order (sorted adjacency), as `seen` is sorted:
    // one merge walk finds each (`seen` holds nothing else: every key was checked to be a
    // cross edge above).
    let mut expected_total = 0u64;
    let mut at = 0usize;
    for u in 0..n as u32 {
        let pu = plan.partition[u as usize];
        for &v in plan.graph.neighbors(u) {
            if plan.partition[v as usize] != pu {
                expected_total += 1;
                let key = ((u as u64) << 32) | v as u64;
                while at < seen.len() && seen[at] < key {
                    at += 1;
                }
                if seen.get(at) != Some(&key) {
                    return fail(format!(
                        "cross edge {u} -> {v} (workers {pu} -> {}) is served by no block",
                        plan.partition[v as usize]
                    ));
                }
            }
        }
    }
    debug_assert_eq!(expected_total, seen.len() as u64);

    // 4 (second half). Reverse contribution in the same block (the paper's blocks; a delivery
    // plan's blocks are cut by destination rows instead).
    let paper_blocks = plan.partials.is_empty() && cfg.aggregate == AggregateMode::Paper;
    for (b, block) in plan.blocks.iter().enumerate().filter(|_| paper_blocks) {
        let mut pairs: Vec<u64> = Vec::with_capacity(block.fanout.len());
        for (i, &src) in block.sources.iter().enumerate() {
            for &row in block.passes(i) {
                pairs.push(((src as u64) << 32) | block.aggregators[row as usize].dst as u64);
            }
        }
        pairs.sort_unstable();
        for &p in &pairs {
            let rev = ((p & 0xffff_ffff) << 32) | (p >> 32);
            if pairs.binary_search(&rev).is_err() {
                return fail(format!(
                    "block {b}: serves {} -> {} but not {} -> {}; both directions of an edge belong to one block",
                    p >> 32,
                    p & 0xffff_ffff,
                    p & 0xffff_ffff,
                    p >> 32
                ));
            }
        }
    }

    Ok(VerifySummary {
        blocks: plan.blocks.len(),
        contributions: expected_total,
        peak_aggregators: peak,
    })
}

/// Every partial's terms ([`Plan::partial_terms`]) in one array: partial `k` sums
/// `terms[off[k]..off[k + 1]]`, ascending. Partials whose destination or sender is out of
/// range (which [`verify`] refuses) sum nothing here.
struct PartialTerms {
    off: Vec<usize>,
    terms: Vec<u32>,
}

impl PartialTerms {
    fn of(plan: &Plan) -> PartialTerms {
        let n = plan.graph.num_vertices();
        let workers = plan.manifest.config.workers as usize;
        let valid =
            |p: &crate::model::Partial| (p.dst as usize) < n && (p.sender as usize) < workers;
        // Partials by destination and sender; per worker, the range of the destination's
        // partials it sends (one, unless the plan repeats a partial: each then sums the same
        // terms, as `partial_terms` gives them).
        let mut by_dst: Vec<usize> = (0..plan.partials.len())
            .filter(|&k| valid(&plan.partials[k]))
            .collect();
        by_dst.sort_by_key(|&k| (plan.partials[k].dst, plan.partials[k].sender));
        let mut range = vec![(0usize, 0usize); workers];
        let mut count = vec![0usize; plan.partials.len()];
        let mut terms_of = |fill: &mut dyn FnMut(usize, u32)| {
            for group in by_dst.chunk_by(|&a, &b| plan.partials[a].dst == plan.partials[b].dst) {
                let dst = plan.partials[group[0]].dst;
                for (i, run) in group
                    .chunk_by(|&a, &b| plan.partials[a].sender == plan.partials[b].sender)
                    .scan(0usize, |at, run| {
                        let start = *at;
                        *at += run.len();
                        Some((start, run))
                    })
                {
                    range[plan.partials[run[0]].sender as usize] = (i, i + run.len());
                }
                let to = plan.partition[dst as usize];
                for &u in plan.graph.neighbors(dst) {
                    let q = plan.partition[u as usize] as usize;
                    let (lo, hi) = range[q];
                    if lo < hi && !plan.replicas(u).contains(&to) {
                        for &k in &group[lo..hi] {
                            fill(k, u);
                        }
                    }
                }
                for &k in group {
                    range[plan.partials[k].sender as usize] = (0, 0);
                }
            }
        };
        terms_of(&mut |k, _| count[k] += 1);
        let mut off = vec![0usize; plan.partials.len() + 1];
        for k in 0..plan.partials.len() {
            off[k + 1] = off[k] + count[k];
        }
        let mut cur = off.clone();
        let mut terms = vec![0u32; off[plan.partials.len()]];
        terms_of(&mut |k, u| {
            terms[cur[k]] = u;
            cur[k] += 1;
        });
        PartialTerms { off, terms }
    }

    fn of_partial(&self, k: usize) -> &[u32] {
        &self.terms[self.off[k]..self.off[k + 1]]
    }
}
