//! What one worker needs to know about a plan, indexed for the state machine.
//!
//! Built once from a [`Plan`] (and checked against the worker's schedule files): the worker's
//! local vertices, their local (same-worker) neighbours, and per block the sources it sends
//! (with the destinations each recirculation pass feeds) and the destinations it receives
//! (with the sources each one sums). Everything the protocol needs at run time is a lookup
//! here, never a scan of the plan.

use std::collections::HashMap;

use rustc_hash::FxHashMap;

use sgnn_plan::{Plan, WorkerSchedule};
use sgnn_wire::codec::FixedPoint;
use sgnn_wire::LANES;

use crate::error::{BadInput, UnusablePlan};
use crate::TransportError;

/// One of this worker's sources in a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SourceEntry {
    /// Global vertex id, or the virtual id of a pre-aggregated partial (`num_vertices + k`).
    pub vertex: u32,
    /// Index among this worker's local vertices (`u32::MAX` for a partial: its value is the
    /// sum of [`WorkerView::partial_terms`]).
    pub local: u32,
    /// Its passes are `passes[pass_start..pass_start + pass_len]`, pass `p` at `pass_start + p`.
    pub pass_start: u32,
    /// Number of passes (in-block destinations), the Data packet's `count`.
    pub pass_len: u32,
    /// Wire pass of `passes[pass_start]`: 1 for a source the switch replicates first (its
    /// pass 0 is `replicate`), else 0.
    pub pass_offset: u8,
}

/// One recirculation pass of a source: the destination it feeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PassEntry {
    /// Destination vertex.
    pub dst: u32,
    /// Worker owning the destination.
    pub dst_worker: u16,
}

/// One of this worker's destinations in a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DestEntry {
    /// Global vertex id.
    pub vertex: u32,
    /// Index among this worker's local vertices.
    pub local: u32,
    /// Contributions its aggregate sums (the Result's `count`).
    pub expected: u32,
    /// Its sources are `dest_sources[src_start..src_start + expected]`.
    pub src_start: u32,
    /// The sum (mod 2^32) of its sources' ids: what the switch's contributor digest
    /// (`agg_ids`) holds once the aggregate is complete.
    pub ids: u32,
    /// A source of it and the wire pass at which that source feeds it: the `agg_table` key a
    /// pull names to reach this destination's aggregator.
    pub probe_src: u32,
    /// See [`DestEntry::probe_src`].
    pub probe_pass: u8,
}

/// A source feeding one of this worker's destinations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RemoteSource {
    /// Global vertex id.
    pub vertex: u32,
    /// Worker owning it.
    pub worker: u16,
}

/// Lists keyed by vertex id, as three arrays: the keys ascending, offsets, and the values of
/// every key in turn. It answers what a `HashMap<u32, Vec<u32>>` would, in about 4 bytes per
/// value and 8 per key, where the map took a heap allocation and a slot per key: a worker's
/// view holds one per block, and the simulator 128 views at once (docs/benchmarks.md).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MultiIndex {
    keys: Vec<u32>,
    off: Vec<u32>,
    vals: Vec<u32>,
}

impl MultiIndex {
    /// The index of `(key, value)` pairs; a key's values keep their order in `pairs`.
    pub fn from_pairs(mut pairs: Vec<(u32, u32)>) -> MultiIndex {
        pairs.sort_by_key(|p| p.0);
        let mut m = MultiIndex {
            keys: Vec::new(),
            off: Vec::new(),
            vals: Vec::with_capacity(pairs.len()),
        };
        for (k, v) in pairs {
            if m.keys.last() != Some(&k) {
                m.keys.push(k);
                m.off.push(m.vals.len() as u32);
            }
            m.vals.push(v);
        }
        m.off.push(m.vals.len() as u32);
        m.keys.shrink_to_fit();
        m.off.shrink_to_fit();
        m
    }

    /// The values of `key`, if it has any.
    pub fn get(&self, key: u32) -> Option<&[u32]> {
        let i = self.keys.binary_search(&key).ok()?;
        Some(&self.vals[self.off[i] as usize..self.off[i + 1] as usize])
    }

    /// The values of the `i`-th key (ascending order), if there are that many keys.
    pub fn values_at(&self, i: usize) -> Option<&[u32]> {
        let (&lo, &hi) = (self.off.get(i)?, self.off.get(i + 1)?);
        Some(&self.vals[lo as usize..hi as usize])
    }

    /// The position of `key` among the keys (ascending), the index [`MultiIndex::values_at`]
    /// takes, if it has values: one search where `contains_key` then `get` would be two.
    #[inline]
    pub fn position(&self, key: u32) -> Option<usize> {
        self.keys.binary_search(&key).ok()
    }

    /// Whether `key` has values.
    pub fn contains_key(&self, key: u32) -> bool {
        self.keys.binary_search(&key).is_ok()
    }

    /// The keys, ascending.
    pub fn keys(&self) -> &[u32] {
        &self.keys
    }

    /// Keys.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether there is no key.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

/// One block from this worker's side.
#[derive(Debug, Clone, Default)]
pub struct BlockView {
    /// Sources this worker sends, in the planned order.
    pub sources: Vec<SourceEntry>,
    /// Passes of those sources, flat.
    pub passes: Vec<PassEntry>,
    /// Destinations this worker receives.
    pub dests: Vec<DestEntry>,
    /// Sources of those destinations, flat.
    pub dest_sources: Vec<RemoteSource>,
    /// Destination vertex -> index into `dests`.
    pub dest_index: FxHashMap<u32, u32>,
    /// Source vertex -> indexes into `dests` it feeds (who can use a raw copy of it).
    pub feeds: MultiIndex,
    /// Source vertex -> index into `sources`.
    pub source_index: FxHashMap<u32, u32>,
    /// Remote vertices the switch replicates to this worker in this block (a delivery
    /// plan's `M`): each arrives once per segment as a Bypass for every local neighbour.
    pub raw_in: Vec<RemoteSource>,
    /// Vertex -> index into `raw_in`.
    pub raw_in_index: FxHashMap<u32, u32>,
}

impl BlockView {
    /// Sources of destination `i`.
    pub fn sources_of(&self, i: usize) -> &[RemoteSource] {
        let d = &self.dests[i];
        &self.dest_sources[d.src_start as usize..(d.src_start + d.expected) as usize]
    }

    /// Passes of source `i`.
    pub fn passes_of(&self, i: usize) -> &[PassEntry] {
        let s = &self.sources[i];
        &self.passes[s.pass_start as usize..(s.pass_start + s.pass_len) as usize]
    }
}

/// What the host-based baseline exchanges: every boundary vertex goes once to every remote
/// worker with a neighbour of it.
#[derive(Debug, Clone, Default)]
pub struct HostBasedView {
    /// `(local index, worker)` pairs to send, in vertex order.
    pub sends: Vec<(u32, u16)>,
    /// Remote vertices this worker needs, with their owners, sorted by vertex.
    pub needs: Vec<RemoteSource>,
    /// Remote vertex -> local indexes of its neighbours here (its keys are `needs`'
    /// vertices, in the same order).
    pub consumers: MultiIndex,
}

/// Everything one worker needs from a plan.
#[derive(Debug, Clone)]
pub struct WorkerView {
    /// This worker.
    pub worker: u16,
    /// Workers in the plan.
    pub workers: u16,
    /// Vertices in the graph.
    pub num_vertices: u32,
    /// This worker's vertices, ascending (the row order of features and sums).
    pub local_vertices: Vec<u32>,
    /// Global id -> local index (only for local vertices).
    pub local_index: FxHashMap<u32, u32>,
    /// Local neighbours of local vertex `i`: `local_nbrs[local_ptr[i]..local_ptr[i+1]]`.
    pub local_ptr: Vec<u32>,
    /// Local neighbour indexes.
    pub local_nbrs: Vec<u32>,
    /// Degree of every local vertex (all neighbours).
    pub degree: Vec<u32>,
    /// Blocks in order.
    pub blocks: Vec<BlockView>,
    /// The baseline's exchange.
    pub host_based: HostBasedView,
    /// Segments (aggregators per vertex) the plan allocated.
    pub segments: u16,
    /// The plan's feature dimension.
    pub feature_dim: u32,
    /// Fixed-point format of the lanes (the plan's fraction bits, clamped for the maximum
    /// degree of the graph).
    pub fixed: FixedPoint,
    /// Largest degree in the graph (terms of the largest sum).
    pub max_degree: u32,
    /// [`Plan::tag`]: the switch must answer the start-up probe with this tag (SwitchGNN
    /// mode), or it holds another plan.
    pub plan_tag: u32,
    /// The pre-aggregated partials this worker sends (partials plans): virtual source id ->
    /// range of `partial_terms`.
    pub partials: FxHashMap<u32, (u32, u32)>,
    /// Local indexes of the vertices each partial sums (this worker's neighbours of its
    /// destination).
    pub partial_terms: Vec<u32>,
    /// The partials other workers send for this worker's vertices (what a raw copy may be).
    pub partials_in: std::collections::HashSet<u32>,
    /// Planned pacing: per block, the share of line rate this worker's sends take so that
    /// they span the block's busiest link ([`sgnn_plan::traffic::pace`]).
    pub pace: Vec<f64>,
}

impl WorkerView {
    /// Derives worker `worker`'s view of `plan`. If `schedule` is given (the worker's
    /// `sends.npy`/`receives.npy`), it must match what the blocks imply and its send order is
    /// used.
    pub fn new(
        plan: &Plan,
        worker: u32,
        schedule: Option<&WorkerSchedule>,
    ) -> Result<WorkerView, TransportError> {
        let workers = plan.workers();
        if worker >= workers {
            return Err(UnusablePlan::WorkerNotInPlan { worker, workers }.into());
        }
        if workers > u16::MAX as u32 + 1 {
            return Err(UnusablePlan::TooManyWorkers { workers }.into());
        }
        let n = plan.graph.num_vertices();
        if plan.partition.len() != n {
            return Err(UnusablePlan::PartitionLength {
                entries: plan.partition.len(),
                vertices: n,
            }
            .into());
        }
        let part = &plan.partition;
        let local_vertices: Vec<u32> = (0..n as u32)
            .filter(|&v| part[v as usize] == worker)
            .collect();
        let local_index: FxHashMap<u32, u32> = local_vertices
            .iter()
            .enumerate()
            .map(|(i, &v)| (v, i as u32))
            .collect();
        let mut local_ptr = Vec::with_capacity(local_vertices.len() + 1);
        let mut local_nbrs = Vec::new();
        let mut degree = Vec::with_capacity(local_vertices.len());
        local_ptr.push(0u32);
        let mut hb_pairs: Vec<(u32, u32)> = Vec::new();
        let mut hb_sends = Vec::new();
        for (i, &v) in local_vertices.iter().enumerate() {
            let nb = plan.graph.neighbors(v);
            degree.push(nb.len() as u32);
            let mut targets: Vec<u16> = Vec::new();
            for &u in nb {
                let pu = part[u as usize];
                if pu == worker {
                    local_nbrs.push(local_index[&u]);
                } else {
                    hb_pairs.push((u, i as u32));
                    targets.push(pu as u16);
                }
            }
            targets.sort_unstable();
            targets.dedup();
            hb_sends.extend(targets.into_iter().map(|t| (i as u32, t)));
            local_ptr.push(local_nbrs.len() as u32);
        }
        let hb_needs = MultiIndex::from_pairs(hb_pairs);
        let needs: Vec<RemoteSource> = hb_needs
            .keys()
            .iter()
            .map(|&u| RemoteSource {
                vertex: u,
                worker: part[u as usize] as u16,
            })
            .collect();
        let host_based = HostBasedView {
            sends: hb_sends,
            needs,
            consumers: hb_needs,
        };

        let mut partials = FxHashMap::default();
        let mut partial_terms = Vec::new();
        let mut partials_in = std::collections::HashSet::new();
        let mut blocks = Vec::with_capacity(plan.blocks.len());
        for (b, block) in plan.blocks.iter().enumerate() {
            let mut bv = BlockView::default();
            // Destinations first (their rows), then walk the sources filling both sides.
            let mut row_dest: HashMap<u32, u32> = HashMap::new();
            for (row, slot) in block.aggregators.iter().enumerate() {
                if part[slot.dst as usize] == worker {
                    row_dest.insert(row as u32, bv.dests.len() as u32);
                    bv.dest_index.insert(slot.dst, bv.dests.len() as u32);
                    bv.dests.push(DestEntry {
                        vertex: slot.dst,
                        local: local_index[&slot.dst],
                        expected: slot.expected,
                        src_start: 0,
                        ids: 0,
                        probe_src: 0,
                        probe_pass: 0,
                    });
                }
            }
            let mut per_dest: Vec<Vec<RemoteSource>> = vec![Vec::new(); bv.dests.len()];
            let mut feeds: Vec<(u32, u32)> = Vec::new();
            for (i, &src) in block.sources.iter().enumerate() {
                let owner = plan.owner(src).ok_or(UnusablePlan::UnknownSource {
                    block: b,
                    src,
                    vertices: n,
                    partials: plan.partials.len(),
                })?;
                let passes = block.passes(i);
                let local = match plan.partial(src) {
                    None => local_index.get(&src).copied().unwrap_or(u32::MAX),
                    Some(p) if owner == worker => {
                        let start = partial_terms.len() as u32;
                        partial_terms.extend(plan.partial_terms(p).map(|u| local_index[&u]));
                        partials.insert(src, (start, partial_terms.len() as u32 - start));
                        u32::MAX
                    }
                    Some(_) => u32::MAX,
                };
                let pass_offset = !plan.replicas(src).is_empty() as u8;
                if owner == worker {
                    let start = bv.passes.len() as u32;
                    for &row in passes {
                        let slot = block.aggregators.get(row as usize).ok_or(
                            UnusablePlan::RowOutOfRange {
                                block: b,
                                src,
                                row,
                                rows: block.aggregators.len(),
                            },
                        )?;
                        bv.passes.push(PassEntry {
                            dst: slot.dst,
                            dst_worker: part[slot.dst as usize] as u16,
                        });
                    }
                    bv.source_index.insert(src, bv.sources.len() as u32);
                    bv.sources.push(SourceEntry {
                        vertex: src,
                        local,
                        pass_start: start,
                        pass_len: passes.len() as u32,
                        pass_offset,
                    });
                }
                if plan.replicas(src).contains(&worker) {
                    if !host_based.consumers.contains_key(src) {
                        return Err(UnusablePlan::UselessReplica {
                            block: b,
                            vertex: src,
                            worker,
                        }
                        .into());
                    }
                    bv.raw_in_index.insert(src, bv.raw_in.len() as u32);
                    bv.raw_in.push(RemoteSource {
                        vertex: src,
                        worker: owner as u16,
                    });
                }
                for (p, &row) in passes.iter().enumerate() {
                    if let Some(&d) = row_dest.get(&row) {
                        if owner == worker {
                            return Err(UnusablePlan::LocalEdgeInBlock {
                                block: b,
                                src,
                                dst: bv.dests[d as usize].vertex,
                                worker,
                            }
                            .into());
                        }
                        if plan.partial(src).is_some() {
                            partials_in.insert(src);
                        }
                        let e = &mut bv.dests[d as usize];
                        e.ids = e.ids.wrapping_add(src);
                        if per_dest[d as usize].is_empty() {
                            e.probe_src = src;
                            e.probe_pass = u8::try_from(p + pass_offset as usize)
                                .map_err(|_| UnusablePlan::TooManyPasses { block: b, src })?;
                        }
                        per_dest[d as usize].push(RemoteSource {
                            vertex: src,
                            worker: owner as u16,
                        });
                        feeds.push((src, d));
                    }
                }
            }
            for (d, srcs) in per_dest.into_iter().enumerate() {
                let e = &mut bv.dests[d];
                if srcs.len() as u32 != e.expected {
                    return Err(UnusablePlan::ContributionCount {
                        block: b,
                        dst: e.vertex,
                        expected: e.expected,
                        fed: srcs.len(),
                    }
                    .into());
                }
                e.src_start = bv.dest_sources.len() as u32;
                bv.dest_sources.extend(srcs);
            }
            bv.dest_sources.shrink_to_fit();
            bv.passes.shrink_to_fit();
            bv.feeds = MultiIndex::from_pairs(feeds);
            blocks.push(bv);
        }

        if let Some(s) = schedule {
            check_schedule(s, &mut blocks, worker)?;
        }

        let lanes = LANES as u32;
        let segments = plan.manifest.segments;
        if segments == 0 || segments > u16::MAX as u32 {
            return Err(UnusablePlan::SegmentField { segments }.into());
        }
        if plan.manifest.config.feature_dim.div_ceil(lanes) != segments {
            return Err(UnusablePlan::SegmentCount {
                segments,
                feature_dim: plan.manifest.config.feature_dim,
                needed: plan.manifest.config.feature_dim.div_ceil(lanes),
            }
            .into());
        }
        let max_degree = (0..n as u32)
            .map(|v| plan.graph.degree(v) as u32)
            .max()
            .unwrap_or(1)
            .max(1);
        Ok(WorkerView {
            plan_tag: plan.tag(),
            worker: worker as u16,
            workers: workers as u16,
            num_vertices: n as u32,
            local_vertices,
            local_index,
            local_ptr,
            local_nbrs,
            degree,
            blocks,
            host_based,
            segments: segments as u16,
            feature_dim: plan.manifest.config.feature_dim,
            fixed: FixedPoint::new(plan.manifest.frac_bits, max_degree),
            max_degree,
            partials,
            partial_terms,
            partials_in,
            pace: sgnn_plan::traffic::pace(&sgnn_plan::traffic::block_loads(plan), worker as usize),
        })
    }

    /// [`WorkerView::contribution`] of a source entry of a block: a local vertex's row without
    /// a lookup (the entry holds its local index).
    pub fn contribution_of(
        &self,
        enc: &[[i32; LANES]],
        segs: usize,
        src: &SourceEntry,
        g: usize,
    ) -> Option<([i32; LANES], usize)> {
        if src.local != u32::MAX {
            return enc
                .get(src.local as usize * segs + g)
                .map(|&lanes| (lanes, 0));
        }
        self.contribution(enc, segs, src.vertex, g)
    }

    /// The encoded value worker sends for block source `src` in segment `g`, from the round's
    /// encoded features `enc` (`local * segs + g`): a local vertex's own row, or the sum of a
    /// partial's terms (saturating, with the count of saturated lanes). `None` if this worker
    /// does not send `src`.
    pub fn contribution(
        &self,
        enc: &[[i32; LANES]],
        segs: usize,
        src: u32,
        g: usize,
    ) -> Option<([i32; LANES], usize)> {
        if let Some(&local) = self.local_index.get(&src) {
            return Some((enc[local as usize * segs + g], 0));
        }
        let &(start, len) = self.partials.get(&src)?;
        let mut sum = [0i32; LANES];
        let mut sat = 0;
        for &t in &self.partial_terms[start as usize..(start + len) as usize] {
            sat += sgnn_wire::codec::accumulate(&mut sum, &enc[t as usize * segs + g]);
        }
        Some((sum, sat))
    }

    /// Number of local vertices.
    pub fn num_local(&self) -> usize {
        self.local_vertices.len()
    }

    /// This worker's rows of `global` (`[N, dim]` row-major, every vertex of the plan), in
    /// the order of [`WorkerView::local_vertices`]: what a round starts from.
    pub fn local_rows(&self, global: &[f32], dim: usize) -> Vec<f32> {
        let mut x = Vec::with_capacity(self.local_vertices.len() * dim);
        for &v in &self.local_vertices {
            x.extend_from_slice(&global[v as usize * dim..(v as usize + 1) * dim]);
        }
        x
    }

    /// Local neighbours of local vertex `i`.
    pub fn local_neighbors(&self, i: usize) -> &[u32] {
        &self.local_nbrs[self.local_ptr[i] as usize..self.local_ptr[i + 1] as usize]
    }

    /// Segments a feature vector of `dim` values needs, or an error if the plan's aggregators
    /// cannot hold it.
    pub fn segments_for(&self, dim: usize) -> Result<u16, TransportError> {
        if dim == 0 {
            return Err(BadInput::ZeroFeatureDim.into());
        }
        let need = dim.div_ceil(LANES);
        if need > self.segments as usize {
            return Err(BadInput::FeatureDimTooLarge {
                dim,
                need,
                segments: self.segments,
                feature_dim: self.feature_dim,
            }
            .into());
        }
        Ok(need as u16)
    }
}

/// Checks the schedule files against the blocks and adopts their send order.
fn check_schedule(
    s: &WorkerSchedule,
    blocks: &mut [BlockView],
    worker: u32,
) -> Result<(), TransportError> {
    let mismatch = |file: &'static str| UnusablePlan::ScheduleMismatch { worker, file };
    let mut by_block: Vec<Vec<u32>> = vec![Vec::new(); blocks.len()];
    for &(b, v) in &s.sends {
        by_block
            .get_mut(b as usize)
            .ok_or_else(|| mismatch("sends.npy"))?
            .push(v);
    }
    for (b, order) in by_block.into_iter().enumerate() {
        let bv = &mut blocks[b];
        if order.len() != bv.sources.len() {
            return Err(mismatch("sends.npy").into());
        }
        let mut reordered = Vec::with_capacity(order.len());
        for v in order {
            let &i = bv
                .source_index
                .get(&v)
                .ok_or_else(|| mismatch("sends.npy"))?;
            reordered.push(bv.sources[i as usize]);
        }
        bv.source_index = reordered
            .iter()
            .enumerate()
            .map(|(i, s)| (s.vertex, i as u32))
            .collect();
        if bv.source_index.len() != reordered.len() {
            return Err(mismatch("sends.npy").into());
        }
        bv.sources = reordered;
    }
    let mut count = vec![0usize; blocks.len()];
    for &(b, v, e) in &s.receives {
        let bv = blocks
            .get(b as usize)
            .ok_or_else(|| mismatch("receives.npy"))?;
        let &d = bv
            .dest_index
            .get(&v)
            .ok_or_else(|| mismatch("receives.npy"))?;
        if bv.dests[d as usize].expected != e {
            return Err(mismatch("receives.npy").into());
        }
        count[b as usize] += 1;
    }
    if count
        .iter()
        .zip(blocks.iter())
        .any(|(&c, b)| c != b.dests.len())
    {
        return Err(mismatch("receives.npy").into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_multi_index_answers_as_a_map_of_lists() {
        let pairs = vec![(7, 1), (3, 9), (7, 2), (5, 0), (3, 8), (7, 0)];
        let m = MultiIndex::from_pairs(pairs.clone());
        let mut want: HashMap<u32, Vec<u32>> = HashMap::new();
        for (k, v) in pairs {
            want.entry(k).or_default().push(v);
        }
        assert_eq!(m.len(), want.len());
        assert_eq!(m.keys(), [3, 5, 7]);
        for (k, vs) in &want {
            assert_eq!(
                m.get(*k),
                Some(vs.as_slice()),
                "key {k}: values in their order"
            );
            assert!(m.contains_key(*k));
        }
        for k in [0, 4, 6, 8, u32::MAX] {
            assert_eq!(m.get(k), None);
            assert!(!m.contains_key(k));
        }
        assert_eq!(m.values_at(1), Some(&[0][..]));
        assert_eq!(m.values_at(3), None);
        assert!(MultiIndex::from_pairs(Vec::new()).is_empty());
        assert_eq!(MultiIndex::default().get(1), None);
    }
}
