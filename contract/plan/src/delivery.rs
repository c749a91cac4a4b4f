//! Capacity-aware delivery: for every ordered pair of partitions (q sends, p receives), how the
//! sum of q's contributions reaches p's vertices, the load each choice puts on every host link
//! and on the switch's recirculation path, the predicted time of one layer's exchange (the cost
//! model), and the local search that chooses per pair (`switch-ctl plan --aggregate auto`).
//!
//! The four ways ([`Delivery`]), counted per feature segment (one data frame):
//! - `H`, host-based unicast: every boundary vertex u of q with a neighbour in p is sent to p.
//!   Uplink of q and downlink of p: one frame per such u.
//! - `M`, multicast raw features: u is sent once and the switch replicates it to every
//!   partition chosen `M` (or `R`) for it; p sums on the host. Uplink of q: one frame per u
//!   over all its `M`/`R` partitions; downlink of p: one frame per u.
//! - `A`, in-switch sum of host pre-aggregated partials: q sums its own neighbours of each v of
//!   p and sends one partial per (v, q); the switch adds the partials of all `A`/`R` senders of
//!   v in one aggregator, one pass each. Uplink of q: one frame per v; downlink of p: one frame
//!   per v over all its `A`/`R` senders.
//! - `R`, the paper's per-edge aggregation: raw u (uploaded as for `M`) is added into the
//!   aggregator of each neighbour v in p, one recirculation pass per cross edge after the
//!   first; p receives one sum per v (shared with `A`).
//!
//! The cost model of one layer on a star (every term in microseconds):
//!
//! ```text
//! T = max(busiest uplink, busiest downlink, recirculation passes x pass time)
//!     + (blocks - 1) x barrier + sync + latency
//! ```
//!
//! plus the latency of one frame's trip ([`SwitchProfile::latency_us`]), where a link's time is
//! its frames times the data frame time of the profile, `blocks` is the number of rounds the
//! in-switch destinations need (`ceil(destinations x segments / aggregators)`, and at least
//! `ceil(sends / (seen_cells / segments))`: a block's sources, the raw vertices and partials of
//! every worker sent in it, take one cell each per segment of the switch's `src_seen`
//! register, [`SwitchProfile::seen_cells`]; at least 1: the plan the daemons run has one block
//! even when nothing is summed in the switch), a barrier
//! ([`SwitchProfile::barrier_us`]) separates two consecutive blocks and the last block ends
//! with the BlockDone / BlockAdvance exchange ([`SwitchProfile::sync_us`]), as the daemons and
//! the switch run them. `R` re-sends a source in every block it appears in
//! (the paper's multi-level blocks), which this count does not model, so `R` is only chosen when
//! every in-switch destination fits in one block. The paper's own plan is predicted block by
//! block from its tables ([`predict_paper`]).

use std::collections::HashSet;

use serde::{Deserialize, Serialize};
use sgnn_wire::{wire_bytes, CONTROL_FRAME_LEN, DATA_FRAME_LEN};

use sgnn_graph::Csr;

use crate::model::AggregateMode;
use crate::model::Plan;
use crate::profile::SwitchProfile;
use crate::traffic::StrategyTraffic;

/// How the contributions of one ordered pair of partitions are delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Delivery {
    /// Host-based unicast of raw features.
    H,
    /// Raw features multicast by the switch, summed on the receiving host.
    M,
    /// Host pre-aggregated partials, summed in the switch in one pass each.
    A,
    /// Raw features summed in the switch per edge, through recirculation (the paper's design).
    R,
    /// A minimum vertex cover of the pair's cross edges (SuperGCN's unit, in the network):
    /// the pair's sources in the cover go raw as `M` (replicated, shared with q's other `M`
    /// pairs), the pair's destinations in the cover get a partial as `A` (summed in the switch
    /// with the other senders' partials) of q's neighbours not sent raw. Every cross edge is
    /// carried once, by its source or its destination.
    C,
}

/// For every ordered pair (q, p), the boundary vertices of q with a neighbour in p and how many
/// neighbours each has there. The destinations in p of q's contributions are the sources of
/// the pair (p, q), so one list per pair serves both directions.
#[derive(Debug, Clone)]
pub struct PairIndex {
    workers: usize,
    /// Pair `q * M + p` owns `src[off[i]..off[i + 1]]`.
    off: Vec<usize>,
    src: Vec<u32>,
    nbrs: Vec<u32>,
    vertices: usize,
    /// Pair `q * M + p` owns `cover[cover_off[i]..cover_off[i + 1]]`: the vertices of `q` in a
    /// minimum vertex cover of the cross edges between `q` and `p` (one cover per unordered
    /// pair, so pair `(p, q)` holds its other side).
    cover_off: Vec<usize>,
    cover: Vec<u32>,
}

impl PairIndex {
    /// Builds the index of a plan's graph and partition.
    pub fn new(plan: &Plan) -> PairIndex {
        PairIndex::of(&plan.graph, &plan.partition, plan.workers() as usize)
    }

    /// Builds the index from a graph's adjacency and its partition into `m` workers.
    pub fn of(g: &Csr, part: &[u32], m: usize) -> PairIndex {
        let mut count = vec![0usize; m * m + 1];
        let mut per: Vec<u32> = vec![0; m];
        let mut touched: Vec<usize> = Vec::new();
        // Pass 1: list sizes. Pass 2: fill. Vertices in id order, so lists are sorted.
        for pass in 0..2 {
            let mut fill = if pass == 1 {
                let mut off = vec![0usize; m * m + 1];
                for i in 0..m * m {
                    off[i + 1] = off[i] + count[i];
                }
                Some((off.clone(), off))
            } else {
                None
            };
            let total = fill.as_ref().map(|f| f.0[m * m]).unwrap_or(0);
            let mut src = vec![0u32; total];
            let mut nbrs = vec![0u32; total];
            for u in 0..g.num_vertices() as u32 {
                let q = part[u as usize] as usize;
                for &v in g.neighbors(u) {
                    let p = part[v as usize] as usize;
                    if p != q {
                        if per[p] == 0 {
                            touched.push(p);
                        }
                        per[p] += 1;
                    }
                }
                for &p in &touched {
                    let i = q * m + p;
                    match &mut fill {
                        None => count[i] += 1,
                        Some((_, cur)) => {
                            src[cur[i]] = u;
                            nbrs[cur[i]] = per[p];
                            cur[i] += 1;
                        }
                    }
                    per[p] = 0;
                }
                touched.clear();
            }
            if let Some((off, _)) = fill {
                let (cover_off, cover) = covers(g, part, m);
                return PairIndex {
                    workers: m,
                    off,
                    src,
                    nbrs,
                    vertices: g.num_vertices(),
                    cover_off,
                    cover,
                };
            }
        }
        unreachable!("the second pass returns")
    }

    /// The vertices of `q` in the minimum vertex cover of the cross edges between `q` and `p`.
    pub fn cover(&self, q: usize, p: usize) -> &[u32] {
        let i = q * self.workers + p;
        &self.cover[self.cover_off[i]..self.cover_off[i + 1]]
    }

    /// Number of workers.
    pub fn workers(&self) -> usize {
        self.workers
    }

    /// Boundary vertices of `q` with a neighbour in `p`, and their neighbour counts in `p`.
    pub fn pair(&self, q: usize, p: usize) -> (&[u32], &[u32]) {
        let i = q * self.workers + p;
        let r = self.off[i]..self.off[i + 1];
        (&self.src[r.clone()], &self.nbrs[r])
    }
}

/// A minimum vertex cover of every unordered pair's cross edges, as per-ordered-pair lists of
/// the cover's vertices on each side (ascending ids).
fn covers(g: &Csr, part: &[u32], m: usize) -> (Vec<usize>, Vec<u32>) {
    use crate::mvc::{min_vertex_cover, Bipartite};
    let mut buckets: Vec<Vec<(u32, u32)>> = vec![Vec::new(); m * m];
    for (u, v) in g.edges() {
        let (pu, pv) = (part[u as usize] as usize, part[v as usize] as usize);
        if pu == pv {
            continue;
        }
        if pu < pv {
            buckets[pu * m + pv].push((u, v));
        } else {
            buckets[pv * m + pu].push((v, u));
        }
    }
    let mut lists: Vec<Vec<u32>> = vec![Vec::new(); m * m];
    let mut lmap = vec![u32::MAX; g.num_vertices()];
    let mut rmap = vec![u32::MAX; g.num_vertices()];
    for q in 0..m {
        for p in q + 1..m {
            let edges = &buckets[q * m + p];
            if edges.is_empty() {
                continue;
            }
            let (mut ls, mut rs) = (Vec::new(), Vec::new());
            let mut local = Vec::with_capacity(edges.len());
            for &(l, r) in edges {
                if lmap[l as usize] == u32::MAX {
                    lmap[l as usize] = ls.len() as u32;
                    ls.push(l);
                }
                if rmap[r as usize] == u32::MAX {
                    rmap[r as usize] = rs.len() as u32;
                    rs.push(r);
                }
                local.push((lmap[l as usize], rmap[r as usize]));
            }
            let (cl, cr) = min_vertex_cover(&Bipartite::from_edges(ls.len(), rs.len(), &local));
            let mut a: Vec<u32> = ls.iter().zip(&cl).filter(|c| *c.1).map(|c| *c.0).collect();
            let mut b: Vec<u32> = rs.iter().zip(&cr).filter(|c| *c.1).map(|c| *c.0).collect();
            a.sort_unstable();
            b.sort_unstable();
            lists[q * m + p] = a;
            lists[p * m + q] = b;
            for &l in &ls {
                lmap[l as usize] = u32::MAX;
            }
            for &r in &rs {
                rmap[r as usize] = u32::MAX;
            }
        }
    }
    let mut off = vec![0usize; m * m + 1];
    let mut flat = Vec::new();
    for (i, l) in lists.into_iter().enumerate() {
        flat.extend(l);
        off[i + 1] = flat.len();
    }
    (off, flat)
}

/// The per-pair choice: `choice[q * M + p]` for q != p.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    workers: usize,
    c: Vec<Delivery>,
}

impl Choice {
    /// Every pair the same.
    pub fn uniform(workers: usize, d: Delivery) -> Choice {
        Choice {
            workers,
            c: vec![d; workers * workers],
        }
    }

    /// The choice of pair (q sends, p receives).
    pub fn get(&self, q: usize, p: usize) -> Delivery {
        self.c[q * self.workers + p]
    }

    /// How many ordered pairs with cross edges use each way, in the order H, M, A, R, C.
    pub fn counts(&self, idx: &PairIndex) -> [u64; 5] {
        let mut n = [0u64; 5];
        for q in 0..self.workers {
            for p in 0..self.workers {
                if q != p && !idx.pair(q, p).0.is_empty() {
                    n[self.get(q, p) as usize] += 1;
                }
            }
        }
        n
    }
}

/// What a choice means for the hosts and the switch: each worker's sends, the switch's
/// replication and aggregation tables. The simulator runs these; the daemon and the switch
/// programs will read the same.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tables {
    /// Per worker, the vertices it uploads raw (once each, for every `M` and `R` pair), in
    /// ascending id.
    pub raw_send: Vec<Vec<u32>>,
    /// Per worker, the destinations it sends a pre-aggregated partial for (`A` pairs), in row
    /// order: block by block, round robin over the receiving workers, ascending vertex id
    /// within each, so every sender of a destination reaches it at about the same point of its
    /// list and the sum completes early.
    pub partial_send: Vec<Vec<u32>>,
    /// Per vertex u, the workers its raw frame is replicated to (`M`):
    /// `mcast[mcast_off[u]..mcast_off[u + 1]]`, ascending.
    pub mcast: Vec<u32>,
    /// Offsets into `mcast`, one per vertex plus one.
    pub mcast_off: Vec<usize>,
    /// Per vertex u, the aggregator rows its raw frame is added into, one pass each (`R`):
    /// `r_rows[r_off[u]..r_off[u + 1]]`.
    pub r_rows: Vec<u32>,
    /// Offsets into `r_rows`.
    pub r_off: Vec<usize>,
    /// Aggregator row of each vertex the switch sums for, `u32::MAX` for none.
    pub row_of: Vec<u32>,
    /// Destination vertex of each row.
    pub row_dst: Vec<u32>,
    /// Contributions each row waits for: one per `R` edge into it plus one per `A` sender.
    pub row_expected: Vec<u32>,
    /// Rounds of in-switch aggregation (at least 1): rows are numbered round robin over the
    /// receiving workers (each worker's destinations in ascending id) and cut into blocks of
    /// at most `Sizes::capacity_rows` rows, so every block holds about as many sums for every
    /// worker. A block also ends before the row whose sends would take its sources past
    /// [`Self::max_block_sends`] (the switch's `src_seen`); [`Self::block_start`] has the cuts.
    pub blocks: u32,
    /// Destinations per block.
    pub capacity_rows: u32,
    /// Sources (sends of every worker) one block may hold: the switch's `src_seen` cells over
    /// the segments of a vector ([`Sizes::sends_per_block`]), `None` for no limit. A row's
    /// sends are the sends of every worker placed at it ([`Self::send_row`]); a single row
    /// whose sends alone exceed the limit cannot be cut and is left in a block of its own,
    /// over the limit: `switch-ctl load` and the simulator refuse such a plan, naming the
    /// block (`sgnn_switch::aggregation::block_over_seen_cells`). That happens when nothing
    /// is summed in the switch (no rows: every send in the one block, as `--aggregate
    /// multicast` plans), or when the rows are far fewer than the sends.
    pub max_block_sends: Option<u64>,
    /// Per worker, everything it sends, in sending order: raw vertices and partials merged by
    /// the aggregator row they feed, so that every worker walks the rows in the same order and
    /// sums complete steadily rather than all at the end. A partial is placed at its
    /// destination's row, a raw vertex that feeds rows per edge (`R`) at the first of them,
    /// and a raw vertex that is only replicated at an even spacing over the rows.
    pub send: Vec<Vec<Send>>,
    /// Per worker, where each block's sends start in `send` (`blocks + 1` offsets).
    pub send_block_off: Vec<Vec<usize>>,
    /// Per worker, the row position of each send in `send` (where it was placed among the
    /// rows: a partial at its destination's row), nondecreasing: blocks cut the lists here.
    pub send_row: Vec<Vec<u32>>,
    /// First row of every block and one past the last (`blocks + 1` entries). Without
    /// recycling, blocks of `capacity_rows` rows, or fewer where the block's sends reach
    /// [`Self::max_block_sends`].
    pub block_start: Vec<u32>,
    /// Aggregator row (within its block; the first aggregator is `slot * segments`) and
    /// generation of every row. Without recycling, a row's position in its block and 0.
    pub row_slot: Vec<u32>,
    /// See [`Self::row_slot`].
    pub row_gen: Vec<u32>,
    /// Recycling by live range ([`crate::recycle`]): the slack, or `None` for none.
    pub recycle_slack: Option<u64>,
    /// Where raw vertices with per-edge sums (`R`) go in `send`.
    pub raw_order: RawOrder,
    /// How rows and replicated raw vertices are spread over the lists.
    pub layout: Layout,
}

/// How [`Tables`] lay out the aggregator rows and the replicated raw vertices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Layout {
    /// For planned pacing (docs/host.md, "Planned pacing"): rows interleave the receiving
    /// workers in proportion to their rows, and the vertices of each replica set are spread
    /// evenly over their sender's list, so a paced downlink receives at a steady rate.
    #[default]
    Spread,
    /// The layout before planned pacing: rows round robin over the receiving workers,
    /// replicated raw vertices in id order. Kept for the plans the bmv2 recording was made
    /// from (`bmv2-tests`), which are fixed inputs of a differential test.
    RoundRobin,
}

/// Where a worker sends its raw vertices that feed per-edge sums (`R`). Partials and raw
/// vertices that are only replicated are placed as [`Tables::send`] says in either case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RawOrder {
    /// At the first aggregator row the vertex feeds.
    #[default]
    FirstRow,
    /// By descending number of per-edge rows (hubs first), spread evenly over the rows. A sum
    /// fed by many senders completes only when its last contributor arrives; sending the hubs
    /// first lets the many sums they share complete early and drain while the uplinks work,
    /// as the paper's GAMR order does for its blocks.
    FanOut,
}

/// One feature vector a worker sends (`segments` frames).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Send {
    /// The vertex sent raw, or the destination of the partial.
    pub vertex: u32,
    /// A pre-aggregated partial (else a raw vertex).
    pub partial: bool,
}

impl Tables {
    /// The tables of `choice` on `g` partitioned by `part`, with the switch memory of `sizes`,
    /// in the [`Layout::Spread`] layout.
    pub fn new(idx: &PairIndex, g: &Csr, part: &[u32], choice: &Choice, sizes: Sizes) -> Tables {
        Tables::laid_out(idx, g, part, choice, sizes, Layout::Spread)
    }

    /// [`Tables::new`] in `layout`.
    pub fn laid_out(
        idx: &PairIndex,
        g: &Csr,
        part: &[u32],
        choice: &Choice,
        sizes: Sizes,
        layout: Layout,
    ) -> Tables {
        let m = idx.workers;
        let n = g.num_vertices();
        let mut t = Tables {
            raw_send: vec![Vec::new(); m],
            partial_send: vec![Vec::new(); m],
            row_of: vec![u32::MAX; n],
            layout,
            ..Tables::default()
        };
        // Rows: every destination with an A, R or C sender.
        let mut cover_raw: Vec<Vec<u32>> = vec![Vec::new(); n];
        let mut expected = vec![0u32; n];
        let mut summed = vec![false; n];
        for q in 0..m {
            for p in 0..m {
                if q == p {
                    continue;
                }
                match choice.get(q, p) {
                    Delivery::A => {
                        for &v in idx.pair(p, q).0 {
                            summed[v as usize] = true;
                            expected[v as usize] += 1;
                        }
                    }
                    Delivery::R => {
                        for (&v, &k) in idx.pair(p, q).0.iter().zip(idx.pair(p, q).1) {
                            summed[v as usize] = true;
                            expected[v as usize] += k;
                        }
                    }
                    Delivery::C => {
                        for &v in idx.cover(p, q) {
                            summed[v as usize] = true;
                            expected[v as usize] += 1;
                        }
                        for &u in idx.cover(q, p) {
                            cover_raw[u as usize].push(p as u32);
                        }
                    }
                    Delivery::H | Delivery::M => {}
                }
            }
        }
        let mut per_worker: Vec<Vec<u32>> = vec![Vec::new(); m];
        for v in 0..n {
            if summed[v] {
                per_worker[part[v] as usize].push(v as u32);
            }
        }
        // Rows interleaved in proportion: worker p's i-th row at (i + 1/2) / len(p) of the
        // order, so that every worker's sums are spread over the whole order and its downlink
        // receives at a steady rate while the senders go through it (a plain round robin
        // leaves the order's tail to the workers with the most rows, whose downlinks then
        // take every sum at once).
        // (The round-robin layout: the i-th row of every worker at i.)
        let mut keyed: Vec<(f64, u32, u32)> = Vec::new();
        for (p, list) in per_worker.iter().enumerate() {
            let len = list.len() as f64;
            for (i, &v) in list.iter().enumerate() {
                let key = match layout {
                    Layout::Spread => (i as f64 + 0.5) / len,
                    Layout::RoundRobin => i as f64,
                };
                keyed.push((key, p as u32, v));
            }
        }
        keyed.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        for (_, _, v) in keyed {
            t.row_of[v as usize] = t.row_dst.len() as u32;
            t.row_dst.push(v);
            t.row_expected.push(expected[v as usize]);
        }
        t.capacity_rows = sizes.capacity_rows().min(u32::MAX as u64) as u32;
        t.max_block_sends = (sizes.seen_cells != u64::MAX).then(|| sizes.sends_per_block());
        t.recycle_slack = sizes.recycle_slack;
        // Raw frames: replication and per-edge rows of every vertex.
        t.mcast_off.push(0);
        t.r_off.push(0);
        for u in 0..n as u32 {
            let q = part[u as usize] as usize;
            let start = t.mcast.len();
            let mut raw = false;
            for &v in g.neighbors(u) {
                let p = part[v as usize] as usize;
                if p == q {
                    continue;
                }
                match choice.get(q, p) {
                    Delivery::M => {
                        raw = true;
                        if !t.mcast[start..].contains(&(p as u32)) {
                            t.mcast.push(p as u32);
                        }
                    }
                    Delivery::R => {
                        raw = true;
                        t.r_rows.push(t.row_of[v as usize]);
                    }
                    Delivery::H | Delivery::A | Delivery::C => {}
                }
            }
            for &p in &cover_raw[u as usize] {
                raw = true;
                if !t.mcast[start..].contains(&p) {
                    t.mcast.push(p);
                }
            }
            t.mcast[start..].sort_unstable();
            if raw {
                t.raw_send[q].push(u);
            }
            t.mcast_off.push(t.mcast.len());
            t.r_off.push(t.r_rows.len());
        }
        // Partials in row order: block by block, round robin over the receiving workers.
        for q in 0..m {
            let mut list = Vec::new();
            for p in (0..m).filter(|&p| p != q) {
                match choice.get(q, p) {
                    Delivery::A => list.extend_from_slice(idx.pair(p, q).0),
                    Delivery::C => list.extend_from_slice(idx.cover(p, q)),
                    _ => {}
                }
            }
            list.sort_unstable_by_key(|&v| t.row_of[v as usize]);
            t.partial_send[q] = list;
        }
        t.merge_sends();
        t
    }

    /// The same tables with the raw vertices of per-edge sums sent in `order`.
    pub fn reordered(mut self, order: RawOrder) -> Tables {
        if self.raw_order != order {
            self.raw_order = order;
            self.merge_sends();
        }
        self
    }

    /// Builds `send` and `send_row` from the raw and partial lists, then cuts them into
    /// blocks: of `capacity_rows` rows, or by live range ([`crate::recycle`]), and in either
    /// case before a row whose sends would take the block past [`Self::max_block_sends`].
    fn merge_sends(&mut self) {
        let rows = self.row_dst.len() as f64;
        self.send.clear();
        self.send_row.clear();
        for q in 0..self.raw_send.len() {
            let raws = &self.raw_send[q];
            let n_raw = raws.len() as f64;
            let mut keyed: Vec<(f64, Send)> = Vec::new();
            // Per-edge raws by descending fan-out (hubs first), as ranks spread over the rows.
            let mut rank = vec![0usize; raws.len()];
            if self.raw_order == RawOrder::FanOut {
                let fan = |u: u32| self.r_off[u as usize + 1] - self.r_off[u as usize];
                let mut ix: Vec<usize> = (0..raws.len()).collect();
                ix.sort_by_key(|&i| std::cmp::Reverse(fan(raws[i])));
                for (r, &i) in ix.iter().enumerate() {
                    rank[i] = r;
                }
            }
            // Raw vertices that are only replicated: the vertices of each replica set spread
            // evenly over the sender's list (the i-th of a set of n in [i / n, (i + 1) / n)), so that
            // every receiving worker, whose copies are a union of such sets, gets a steady
            // share of the sender's pace instead of the copies of a run of vertex ids whose
            // neighbours sit on one worker.
            let mut set_size: std::collections::HashMap<&[u32], u64> =
                std::collections::HashMap::new();
            for &u in raws {
                *set_size.entry(self.mcast_of(u)).or_default() += 1;
            }
            let mut set_seen: std::collections::HashMap<&[u32], u64> =
                std::collections::HashMap::new();
            for (i, &u) in raws.iter().enumerate() {
                let targets = &self.r_rows[self.r_off[u as usize]..self.r_off[u as usize + 1]];
                let spread = if self.layout == Layout::RoundRobin {
                    (i as f64 + 0.5) / n_raw
                } else {
                    let set = self.mcast_of(u);
                    let seen = set_seen.entry(set).or_default();
                    // Within its slot, a place drawn from the vertex id, so that the many
                    // sets of one vertex do not all stand at the middle.
                    let jitter = (u64::from(u).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 11) as f64
                        / (1u64 << 53) as f64;
                    let f = (*seen as f64 + jitter) / set_size[set] as f64;
                    *seen += 1;
                    f
                };
                let key = match targets.iter().min() {
                    Some(_) if self.raw_order == RawOrder::FanOut => {
                        (rank[i] as f64 + 0.5) * rows / n_raw
                    }
                    Some(&r) => r as f64,
                    None if rows > 0.0 => spread * rows,
                    None => spread * n_raw,
                };
                keyed.push((
                    key,
                    Send {
                        vertex: u,
                        partial: false,
                    },
                ));
            }
            for &v in &self.partial_send[q] {
                keyed.push((
                    self.row_of[v as usize] as f64 + 0.5,
                    Send {
                        vertex: v,
                        partial: true,
                    },
                ));
            }
            keyed.sort_by(|a, b| a.0.total_cmp(&b.0));
            let last_row = (rows - 1.0).max(0.0);
            self.send_row
                .push(keyed.iter().map(|k| k.0.min(last_row) as u32).collect());
            self.send.push(keyed.into_iter().map(|k| k.1).collect());
        }
        let n = self.row_dst.len();
        let cap = self.capacity_rows.max(1) as usize;
        let limit = self.max_block_sends.unwrap_or(u64::MAX);
        let row_sends = self.row_sends();
        self.block_start = vec![0];
        self.row_slot = vec![0; n];
        let (mut lo, mut sends) = (0usize, 0u64);
        for (r, &k) in row_sends.iter().enumerate() {
            // A block ends at `capacity_rows` rows, or before a row whose sends would take it
            // past the src_seen limit (a row alone over the limit stays whole: see
            // `max_block_sends`).
            if r > lo && (r - lo >= cap || sends + k > limit) {
                self.block_start.push(r as u32);
                (lo, sends) = (r, 0);
            }
            sends += k;
            self.row_slot[r] = (r - lo) as u32;
        }
        self.block_start.push(n as u32);
        self.blocks = (self.block_start.len() - 1) as u32;
        self.row_gen = vec![0; n];
        if let Some(slack) = self.recycle_slack {
            self.recycle(slack);
        }
        self.cut_sends();
    }

    /// The workers raw vertex `u` is replicated to.
    fn mcast_of(&self, u: u32) -> &[u32] {
        &self.mcast[self.mcast_off[u as usize]..self.mcast_off[u as usize + 1]]
    }

    /// Sends placed at each aggregator row, over every worker: what the row brings into its
    /// block's sources. (With no rows, nothing: every send is in the one block.)
    pub(crate) fn row_sends(&self) -> Vec<u64> {
        let mut k = vec![0u64; self.row_dst.len()];
        if k.is_empty() {
            return k;
        }
        let last = k.len() - 1;
        for rows in &self.send_row {
            for &r in rows {
                k[(r as usize).min(last)] += 1;
            }
        }
        k
    }

    /// `send_block_off` from `send_row` and `block_start`.
    fn cut_sends(&mut self) {
        let last_block = self.blocks.saturating_sub(1);
        self.send_block_off.clear();
        for rows in &self.send_row {
            let mut off = vec![0usize; self.blocks as usize + 1];
            for &r in rows {
                let b = if self.row_dst.is_empty() {
                    0
                } else {
                    self.block_of_row(r).min(last_block)
                };
                off[b as usize + 1] += 1;
            }
            for b in 0..self.blocks as usize {
                off[b + 1] += off[b];
            }
            self.send_block_off.push(off);
        }
    }

    /// The block of aggregator row `row`.
    pub fn block_of_row(&self, row: u32) -> u32 {
        if self.block_start.len() < 2 {
            return row / self.capacity_rows.max(1);
        }
        (self.block_start.partition_point(|&s| s <= row) as u32).saturating_sub(1)
    }

    /// Rows in block `b`.
    pub fn rows_in_block(&self, b: u32) -> u32 {
        let b = b as usize;
        match (self.block_start.get(b), self.block_start.get(b + 1)) {
            (Some(&lo), Some(&hi)) => hi - lo,
            _ => 0,
        }
    }

    /// Worker `q`'s sends during block `b`.
    pub fn sends(&self, q: usize, b: u32) -> &[Send] {
        let off = &self.send_block_off[q];
        &self.send[q][off[b as usize]..off[b as usize + 1]]
    }

    /// Raw copies delivered to workers (vectors).
    pub fn raw_deliveries(&self) -> u64 {
        self.mcast.len() as u64
    }
}

/// What one layer costs under a choice, counted per feature segment.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    /// Predicted time of one layer's exchange, microseconds: the replay of the delivery's
    /// schedule ([`Tables::replay`]) where the planner built its tables, else [`Self::bound_us`].
    pub time_us: f64,
    /// The busiest-link bound: the busiest uplink, downlink or the recirculation, as if they
    /// overlapped perfectly, plus barriers and one latency. The local search minimises it; the
    /// replay adds what the bound misses (sums that complete late and drain afterwards).
    #[serde(default)]
    pub bound_us: f64,
    /// Busiest uplink, microseconds.
    pub uplink_us: f64,
    /// Busiest downlink, microseconds.
    pub downlink_us: f64,
    /// Recirculation, microseconds.
    pub recirc_us: f64,
    /// Block barriers, microseconds.
    pub barriers_us: f64,
    /// Data frames on the busiest uplink.
    pub max_uplink_frames: u64,
    /// Data frames on the busiest downlink.
    pub max_downlink_frames: u64,
    /// Recirculation passes (every pass after a frame's first).
    pub recirc_passes: u64,
    /// Rounds of in-switch aggregation (block barriers).
    pub blocks: u64,
    /// Vertices whose sum the switch computes.
    pub switch_destinations: u64,
    /// Multicast groups needed (distinct replication sets of raw frames).
    pub multicast_groups: u64,
    /// Ordered pairs with cross edges delivered H, M, A, R, C.
    pub pairs: [u64; 5],
}

/// The sizes the cost model needs besides the profile.
#[derive(Debug, Clone, Copy)]
pub struct Sizes {
    /// Aggregators (frames) one feature vector takes.
    pub segments: u64,
    /// Aggregators the switch memory holds.
    pub aggregators: u64,
    /// Recycling by live range and its slack ([`crate::model::PlanConfig::recycle_slack`]).
    pub recycle_slack: Option<u64>,
    /// Cells of the switch's `src_seen` register ([`SwitchProfile::seen_cells`]): a block's
    /// sources x segments must fit. `u64::MAX` for no limit.
    pub seen_cells: u64,
}

impl Sizes {
    /// Destinations one round of in-switch aggregation holds (each takes `segments`
    /// aggregators), at least 1.
    pub fn capacity_rows(&self) -> u64 {
        (self.aggregators / self.segments.max(1)).max(1)
    }

    /// Rounds `dests` in-switch destinations need (0 for none), by the aggregator memory
    /// alone.
    pub fn blocks(&self, dests: u64) -> u64 {
        dests.div_ceil(self.capacity_rows())
    }

    /// Sources one block may hold: `seen_cells / segments` (each source takes one `src_seen`
    /// cell per segment), at least 1.
    pub fn sends_per_block(&self) -> u64 {
        (self.seen_cells / self.segments.max(1)).max(1)
    }

    /// Rounds `dests` in-switch destinations fed by `sends` sends (raw vertices and partials
    /// of every worker) need at least: as many as the aggregator memory needs, and as many as
    /// `src_seen` needs to hold every send once, `ceil(sends / sends_per_block)`. A lower
    /// bound: the cut ([`Tables`]) ends a block at a row boundary, so it may take more (and
    /// fewer only where a single row's sends exceed the limit, which no cut can hold).
    pub fn blocks_for(&self, dests: u64, sends: u64) -> u64 {
        self.blocks(dests)
            .max(sends.div_ceil(self.sends_per_block()))
    }

    /// The plan's sizes, with no `src_seen` limit (`seen_cells: u64::MAX`): what the plan's
    /// memory alone allows. Planning for a switch takes [`Sizes::for_switch`].
    pub fn of(plan: &Plan) -> Sizes {
        Sizes {
            segments: plan.manifest.segments as u64,
            aggregators: plan.manifest.aggregators,
            recycle_slack: plan.manifest.config.recycle_slack,
            seen_cells: u64::MAX,
        }
    }

    /// The plan's sizes on the switch of `prof`: [`Sizes::of`] with its `src_seen` cells.
    /// The profile's cells, even for a plan with more aggregators than its program holds
    /// (whose simulated switch has more: [`crate::profile::seen_cells_for`]): plans fit the
    /// switch the profile names.
    pub fn for_switch(plan: &Plan, prof: &SwitchProfile) -> Sizes {
        Sizes {
            seen_cells: prof.seen_cells,
            ..Sizes::of(plan)
        }
    }
}

/// Link and switch load under a choice, kept up to date pair by pair (the local search changes
/// one pair at a time in time proportional to that pair's lists).
struct Load<'a> {
    idx: &'a PairIndex,
    choice: Choice,
    owner: &'a [u32],
    /// Pairs of u's owner, with u among their sources, that upload u raw (M or R).
    raw_uses: Vec<u32>,
    /// Senders of v whose contributions the switch sums for v (A or R).
    sum_uses: Vec<u32>,
    /// Cross edges of u aggregated per edge (R).
    r_edges: Vec<u32>,
    up: Vec<i64>,
    down: Vec<i64>,
    /// Vectors uploaded into the switch's plan, over every worker: raw vertices (once each)
    /// and partials, what [`Tables::send`] holds. `up` also counts `H` uploads, which the
    /// switch only forwards (they are in no block).
    sends: i64,
    passes: i64,
    dests: i64,
    r_pairs: i64,
}

fn passes_of(r_edges: u32) -> i64 {
    r_edges.saturating_sub(1) as i64
}

impl<'a> Load<'a> {
    fn new(idx: &'a PairIndex, owner: &'a [u32]) -> Load<'a> {
        let m = idx.workers;
        let mut l = Load {
            idx,
            choice: Choice::uniform(m, Delivery::H),
            owner,
            raw_uses: vec![0; idx.vertices],
            sum_uses: vec![0; idx.vertices],
            r_edges: vec![0; idx.vertices],
            up: vec![0; m],
            down: vec![0; m],
            sends: 0,
            passes: 0,
            dests: 0,
            r_pairs: 0,
        };
        for q in 0..m {
            for p in 0..m {
                if q != p {
                    l.apply(q, p, Delivery::H, 1);
                }
            }
        }
        l
    }

    /// Adds (`sign = 1`) or removes (`sign = -1`) the load of delivering pair (q, p) by `d`.
    fn apply(&mut self, q: usize, p: usize, d: Delivery, sign: i64) {
        let (src, nbrs) = self.idx.pair(q, p);
        let (dst, _) = self.idx.pair(p, q);
        if src.is_empty() {
            return;
        }
        let n_src = src.len() as i64;
        let n_dst = dst.len() as i64;
        match d {
            Delivery::H => {
                self.up[q] += sign * n_src;
                self.down[p] += sign * n_src;
            }
            Delivery::C => {
                let (raw, partial) = (self.idx.cover(q, p), self.idx.cover(p, q));
                self.raw(q, raw, sign);
                self.down[p] += sign * raw.len() as i64;
                self.up[q] += sign * partial.len() as i64;
                self.sends += sign * partial.len() as i64;
                self.sum(p, partial, sign);
            }
            Delivery::M | Delivery::R => {
                self.raw(q, src, sign);
                if d == Delivery::M {
                    self.down[p] += sign * n_src;
                } else {
                    for (&u, &k) in src.iter().zip(nbrs) {
                        let e = &mut self.r_edges[u as usize];
                        let before = passes_of(*e);
                        *e = if sign > 0 { *e + k } else { *e - k };
                        self.passes += passes_of(*e) - before;
                    }
                    self.r_pairs += sign;
                    self.sum(p, dst, sign);
                }
            }
            Delivery::A => {
                self.up[q] += sign * n_dst;
                self.sends += sign * n_dst;
                self.sum(p, dst, sign);
            }
        }
    }

    /// One more (or one fewer) use of each vertex of `src` (on worker `q`) raw: a vertex is
    /// uploaded once however many pairs use it.
    fn raw(&mut self, q: usize, src: &[u32], sign: i64) {
        for &u in src {
            let c = &mut self.raw_uses[u as usize];
            if sign > 0 {
                *c += 1;
                if *c == 1 {
                    self.up[q] += 1;
                    self.sends += 1;
                }
            } else {
                *c -= 1;
                if *c == 0 {
                    self.up[q] -= 1;
                    self.sends -= 1;
                }
            }
        }
    }

    /// One more (or one fewer) in-switch sender of each destination in `dst` (on worker `p`).
    fn sum(&mut self, p: usize, dst: &[u32], sign: i64) {
        for &v in dst {
            debug_assert_eq!(self.owner[v as usize] as usize, p);
            let c = &mut self.sum_uses[v as usize];
            if sign > 0 {
                *c += 1;
                if *c == 1 {
                    self.down[p] += 1;
                    self.dests += 1;
                }
            } else {
                *c -= 1;
                if *c == 0 {
                    self.down[p] -= 1;
                    self.dests -= 1;
                }
            }
        }
    }

    fn set(&mut self, q: usize, p: usize, d: Delivery) {
        let old = self.choice.get(q, p);
        if old != d {
            self.apply(q, p, old, -1);
            self.apply(q, p, d, 1);
            self.choice.c[q * self.idx.workers + p] = d;
        }
    }

    /// The predicted time and a tie-breaker (sum of squared link loads, so the search can walk
    /// along a plateau of the maximum towards balance).
    fn score(&self, prof: &SwitchProfile, sizes: Sizes) -> (f64, f64) {
        let t = self.time(prof, sizes);
        let sq: f64 = self
            .up
            .iter()
            .chain(&self.down)
            .map(|&x| (x as f64) * (x as f64))
            .sum();
        (t, sq)
    }

    /// Blocks of the plan the daemons run: at least one (a round ends with a block sync), and
    /// at least what the aggregator memory and the switch's `src_seen` need
    /// ([`Sizes::blocks_for`]; the tables' cut may take more, which [`plan_delivery_with`]
    /// follows).
    fn blocks(&self, sizes: Sizes) -> u64 {
        sizes
            .blocks_for(self.dests as u64, self.sends as u64)
            .max(1)
    }

    /// Recirculation passes per segment: the per-edge passes (`R`) and, on a switch with
    /// harvest passes (the TNA program's lane pairs), `harvest_passes` per in-switch
    /// destination. That counts a lone contribution too (which costs none on the switch): an
    /// upper bound, fine for a cost model that only compares deliveries.
    fn recirc_passes_for(&self, prof: &SwitchProfile) -> i64 {
        self.passes + self.dests * i64::from(prof.harvest_passes)
    }

    fn time(&self, prof: &SwitchProfile, sizes: Sizes) -> f64 {
        let blocks = self.blocks(sizes);
        if self.r_pairs > 0 && blocks > 1 {
            return f64::INFINITY;
        }
        let seg = sizes.segments as f64;
        let up = *self.up.iter().max().unwrap_or(&0) as f64 * seg * prof.data_frame_us();
        let down = *self.down.iter().max().unwrap_or(&0) as f64 * seg * prof.data_frame_us();
        let recirc = self.recirc_passes_for(prof) as f64 * seg * prof.pass_us();
        up.max(down).max(recirc) + barriers_us(blocks, prof) + prof.latency_us()
    }

    fn prediction(&self, prof: &SwitchProfile, sizes: Sizes) -> Prediction {
        let seg = sizes.segments;
        let max_up = *self.up.iter().max().unwrap_or(&0) as u64;
        let max_down = *self.down.iter().max().unwrap_or(&0) as u64;
        let blocks = self.blocks(sizes);
        let t = self.time(prof, sizes);
        Prediction {
            time_us: t,
            bound_us: t,
            uplink_us: (max_up * seg) as f64 * prof.data_frame_us(),
            downlink_us: (max_down * seg) as f64 * prof.data_frame_us(),
            recirc_us: (self.recirc_passes_for(prof) as u64 * seg) as f64 * prof.pass_us(),
            barriers_us: barriers_us(blocks, prof),
            max_uplink_frames: max_up * seg,
            max_downlink_frames: max_down * seg,
            recirc_passes: self.recirc_passes_for(prof) as u64 * seg,
            blocks,
            switch_destinations: self.dests as u64,
            multicast_groups: self.multicast_groups(),
            pairs: self.choice.counts(self.idx),
        }
    }

    /// Distinct sets of ports a raw frame is replicated to (the `M` destinations of its vertex,
    /// plus the recirculation port when it also feeds `R` aggregators).
    fn multicast_groups(&self) -> u64 {
        let m = self.idx.workers;
        let mut sets: Vec<Vec<u32>> = vec![Vec::new(); self.idx.vertices];
        for q in 0..m {
            for p in 0..m {
                if q == p {
                    continue;
                }
                let d = self.choice.get(q, p);
                if matches!(d, Delivery::M | Delivery::R | Delivery::C) {
                    let port = if d == Delivery::R { u32::MAX } else { p as u32 };
                    let raw = if d == Delivery::C {
                        self.idx.cover(q, p)
                    } else {
                        self.idx.pair(q, p).0
                    };
                    for &u in raw {
                        let s = &mut sets[u as usize];
                        if s.last() != Some(&port) {
                            s.push(port);
                        }
                    }
                }
            }
        }
        let mut distinct: HashSet<Vec<u32>> = HashSet::new();
        for mut s in sets {
            if s.len() > 1 {
                s.sort_unstable();
                s.dedup();
                distinct.insert(s);
            }
        }
        distinct.len() as u64
    }

    /// Bytes on every host link: data frames, plus every block's synchronisation (each worker's
    /// BlockDone up and the BlockAdvance down to it, the last block too).
    fn traffic(&self, sizes: Sizes) -> StrategyTraffic {
        let data = wire_bytes(DATA_FRAME_LEN) * sizes.segments;
        let ctl = wire_bytes(CONTROL_FRAME_LEN);
        let blocks = self.blocks(sizes);
        let m = self.idx.workers as u64;
        let up: Vec<u64> = self
            .up
            .iter()
            .map(|&x| x as u64 * data + blocks * ctl)
            .collect();
        let down: Vec<u64> = self
            .down
            .iter()
            .map(|&x| x as u64 * data + blocks * ctl)
            .collect();
        let control = 2 * blocks * ctl * m;
        let frames_up: u64 = self.up.iter().map(|&x| x as u64).sum::<u64>() * sizes.segments;
        let frames_down: u64 = self.down.iter().map(|&x| x as u64).sum::<u64>() * sizes.segments;
        let (tu, td): (u64, u64) = (up.iter().sum(), down.iter().sum());
        StrategyTraffic {
            total: tu + td,
            upload: tu - control / 2,
            download: td - control / 2,
            control,
            frames: frames_up + frames_down + 2 * blocks * m,
            max_worker_uplink: up.iter().copied().max().unwrap_or(0),
            max_worker_downlink: down.iter().copied().max().unwrap_or(0),
            in_network_fraction: None,
            peak_aggregators: Some((self.dests as u64 * sizes.segments).min(sizes.aggregators)),
            per_worker_uplink: up,
            per_worker_downlink: down,
        }
    }
}

/// The outcome of planning one mode's delivery.
#[derive(Debug, Clone)]
pub struct Planned {
    /// What the hosts send and the switch does ([`plan_delivery`] fills it; empty from
    /// [`evaluate`] and [`optimize`], which do not see the graph).
    pub tables: Tables,
    /// The per-pair choice.
    pub choice: Choice,
    /// Its predicted cost.
    pub prediction: Prediction,
    /// Its bytes on every host link.
    pub traffic: StrategyTraffic,
}

impl Planned {
    /// The prediction and traffic with `blocks` blocks (what the tables cut: by live range
    /// when recycling, and where `src_seen` ends a block early) instead of the cost model's
    /// lower bound ([`Sizes::blocks_for`]): the barriers and the block synchronisation frames
    /// of each.
    fn with_blocks(&mut self, blocks: u64, prof: &SwitchProfile) {
        let blocks = blocks.max(1);
        let p = &mut self.prediction;
        let (old, new) = (p.blocks, blocks);
        let barriers = barriers_us(new, prof);
        p.bound_us += barriers - p.barriers_us;
        p.barriers_us = barriers;
        p.blocks = blocks;
        resync_traffic(&mut self.traffic, old, new);
    }
}

/// `t` with the block synchronisation of `new` blocks instead of `old`: each block costs
/// every worker one control frame up (its BlockDone) and one down (the BlockAdvance).
fn resync_traffic(t: &mut StrategyTraffic, old: u64, new: u64) {
    let m = t.per_worker_downlink.len() as u64;
    let ctl = wire_bytes(CONTROL_FRAME_LEN);
    for d in t
        .per_worker_downlink
        .iter_mut()
        .chain(t.per_worker_uplink.iter_mut())
    {
        *d = *d - old * ctl + new * ctl;
    }
    t.control = 2 * new * ctl * m;
    t.total = t.total - 2 * old * ctl * m + 2 * new * ctl * m;
    t.frames = t.frames - 2 * old * m + 2 * new * m;
    t.max_worker_downlink = t.per_worker_downlink.iter().copied().max().unwrap_or(0);
    t.max_worker_uplink = t.per_worker_uplink.iter().copied().max().unwrap_or(0);
}

/// The time `blocks` blocks spend synchronising: a barrier between two blocks and the last
/// block's BlockDone / BlockAdvance exchange.
fn barriers_us(blocks: u64, prof: &SwitchProfile) -> f64 {
    blocks.saturating_sub(1) as f64 * prof.barrier_us() + prof.sync_us()
}

/// Evaluates a given choice.
pub fn evaluate(
    idx: &PairIndex,
    owner: &[u32],
    choice: &Choice,
    prof: &SwitchProfile,
    sizes: Sizes,
) -> Planned {
    let mut l = Load::new(idx, owner);
    for q in 0..idx.workers {
        for p in 0..idx.workers {
            if q != p {
                l.set(q, p, choice.get(q, p));
            }
        }
    }
    Planned {
        tables: Tables::default(),
        prediction: l.prediction(prof, sizes),
        traffic: l.traffic(sizes),
        choice: l.choice,
    }
}

/// `auto`'s candidates under the busiest-link bound: [`search`] over `allowed`; when `allowed`
/// holds `R` among others, first the search without `R` and then, after the search with it,
/// every pair `R` (the paper's per-edge design without its memory cut). `R` fills the switch
/// memory in one block, and the search cannot leave such a choice for one that needs a second
/// block (every single step there has `R` and two blocks, which is never chosen), so the
/// search without `R` reaches choices the other cannot. [`plan_delivery_with`] replays them.
pub fn auto_candidates(
    idx: &PairIndex,
    owner: &[u32],
    prof: &SwitchProfile,
    sizes: Sizes,
    allowed: &[Delivery],
    max_sweeps: usize,
) -> Vec<Planned> {
    if !allowed.contains(&Delivery::R) || allowed.len() == 1 {
        return vec![search(idx, owner, prof, sizes, allowed, max_sweeps)];
    }
    let without: Vec<Delivery> = allowed
        .iter()
        .copied()
        .filter(|&d| d != Delivery::R)
        .collect();
    // The two searches are independent and deterministic: run them on two cores (the order
    // of the candidates, and so the choice, is the same as one after the other).
    let (first, second) = std::thread::scope(|s| {
        let first = s.spawn(|| search(idx, owner, prof, sizes, &without, max_sweeps));
        let second = search(idx, owner, prof, sizes, allowed, max_sweeps);
        (first.join().expect("the search without R"), second)
    });
    vec![
        first,
        second,
        evaluate(
            idx,
            owner,
            &Choice::uniform(idx.workers, Delivery::R),
            prof,
            sizes,
        ),
    ]
}

/// The best of [`auto_candidates`] by the bound alone: `auto` where no graph is at hand to
/// build tables and replay them.
pub fn optimize(
    idx: &PairIndex,
    owner: &[u32],
    prof: &SwitchProfile,
    sizes: Sizes,
    allowed: &[Delivery],
    max_sweeps: usize,
) -> Planned {
    auto_candidates(idx, owner, prof, sizes, allowed, max_sweeps)
        .into_iter()
        .reduce(|a, b| {
            if b.prediction.bound_us < a.prediction.bound_us {
                b
            } else {
                a
            }
        })
        .expect("at least one candidate")
}

/// A local search from the best uniform choice: it changes a whole row or column of pairs, or
/// one pair, to whichever of `allowed` lowers (predicted time, sum of squared link loads),
/// sweeping until a sweep changes nothing (at most `max_sweeps`).
///
/// One trial costs O(M + |sources| + |destinations| of the pairs changed), so a sweep costs
/// O(M^3 + M x boundary incidences) for M workers.
pub fn search(
    idx: &PairIndex,
    owner: &[u32],
    prof: &SwitchProfile,
    sizes: Sizes,
    allowed: &[Delivery],
    max_sweeps: usize,
) -> Planned {
    let m = idx.workers;
    let mut l = Load::new(idx, owner);
    let mut best_start = (f64::INFINITY, f64::INFINITY);
    let mut start = allowed[0];
    for &d in allowed {
        for q in 0..m {
            for p in 0..m {
                if q != p {
                    l.set(q, p, d);
                }
            }
        }
        let s = l.score(prof, sizes);
        if s < best_start {
            best_start = s;
            start = d;
        }
    }
    for q in 0..m {
        for p in 0..m {
            if q != p {
                l.set(q, p, start);
            }
        }
    }
    let pairs: Vec<(usize, usize)> = (0..m)
        .flat_map(|q| (0..m).map(move |p| (q, p)))
        .filter(|&(q, p)| q != p && !idx.pair(q, p).0.is_empty())
        .collect();
    let mut cur = l.score(prof, sizes);
    for _ in 0..max_sweeps {
        let mut changed = false;
        // Moves of a whole row or column first: one receiver's (or sender's) pairs all at once.
        // A single pair rarely lowers the busiest link by itself (a receiver's downlink only
        // shrinks once most of its senders pre-aggregate), so the search would stop at the
        // best uniform choice without them.
        for h in 0..m {
            for col in [true, false] {
                let group: Vec<(usize, usize)> = pairs
                    .iter()
                    .copied()
                    .filter(|&(q, p)| if col { p == h } else { q == h })
                    .collect();
                if group.is_empty() {
                    continue;
                }
                let was: Vec<Delivery> = group.iter().map(|&(q, p)| l.choice.get(q, p)).collect();
                let mut best: Option<((f64, f64), Delivery)> = None;
                for &d in allowed {
                    if was.iter().all(|&w| w == d) {
                        continue;
                    }
                    for &(q, p) in &group {
                        l.set(q, p, d);
                    }
                    let s = l.score(prof, sizes);
                    if s < best.map(|b| b.0).unwrap_or(cur) {
                        best = Some((s, d));
                    }
                }
                match best {
                    Some((s, d)) => {
                        for &(q, p) in &group {
                            l.set(q, p, d);
                        }
                        cur = s;
                        changed = true;
                    }
                    None => {
                        for (&(q, p), &w) in group.iter().zip(&was) {
                            l.set(q, p, w);
                        }
                    }
                }
            }
        }
        for &(q, p) in &pairs {
            let was = l.choice.get(q, p);
            let mut best = (cur, was);
            for &d in allowed {
                if d == was {
                    continue;
                }
                l.set(q, p, d);
                let s = l.score(prof, sizes);
                if s < best.0 {
                    best = (s, d);
                }
            }
            l.set(q, p, best.1);
            if best.1 != was {
                cur = best.0;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    Planned {
        tables: Tables::default(),
        prediction: l.prediction(prof, sizes),
        traffic: l.traffic(sizes),
        choice: l.choice,
    }
}

/// The paper's plan (every pair `R`, multi-level blocks), predicted block by block: each block
/// takes as long as its busiest link or its recirculation, then a barrier; the last block ends
/// with the BlockDone / BlockAdvance exchange. A link carries its data frames and the daemons'
/// control frames of loss recovery (per block, every worker's tail probe and the switch's
/// answer, and the all-sent notice to every worker).
pub fn predict_paper(plan: &Plan, prof: &SwitchProfile) -> Prediction {
    let m = plan.workers() as usize;
    let seg = plan.manifest.segments as u64;
    let mut p = Prediction {
        pairs: [0; 5],
        ..Prediction::default()
    };
    let (mut up, mut down) = (vec![0u64; m], vec![0u64; m]);
    let (mut ack_up, mut ack_down) = (vec![0u64; m], vec![0u64; m]);
    let mut dests: HashSet<u32> = HashSet::new();
    let link_us = |frames: &[u64], acks: &[u64]| -> f64 {
        frames
            .iter()
            .zip(acks)
            .map(|(&f, &a)| f as f64 * prof.data_frame_us() + a as f64 * prof.control_frame_us())
            .fold(0.0, f64::max)
    };
    for (b, block) in plan.blocks.iter().enumerate() {
        for v in [&mut up, &mut down, &mut ack_up, &mut ack_down] {
            v.iter_mut().for_each(|x| *x = 0);
        }
        let mut passes = 0u64;
        for (i, &u) in block.sources.iter().enumerate() {
            let q = plan.owner(u).unwrap_or(0);
            up[q as usize] += seg;
            passes += (block.passes(i).len() as u64).saturating_sub(1) * seg;
        }
        // Each aggregator completes once per segment; a TNA switch harvests it (an upper
        // bound: a lone contribution costs none).
        passes += block.aggregators.len() as u64 * seg * u64::from(prof.harvest_passes);
        for slot in &block.aggregators {
            let dst = plan.partition[slot.dst as usize];
            down[dst as usize] += seg;
            dests.insert(slot.dst);
        }
        // Every worker's tail probe, and its answer or the all-sent notice (an upper bound:
        // the last prober gets the notice only).
        for q in 0..m {
            ack_up[q] += 1;
            ack_down[q] += 2;
        }
        let (mu, md) = (
            *up.iter().max().unwrap_or(&0),
            *down.iter().max().unwrap_or(&0),
        );
        let link = link_us(&up, &ack_up).max(link_us(&down, &ack_down));
        let recirc = passes as f64 * prof.pass_us();
        if b > 0 {
            p.time_us += prof.barrier_us();
        }
        p.time_us += link.max(recirc);
        p.uplink_us += mu as f64 * prof.data_frame_us();
        p.downlink_us += md as f64 * prof.data_frame_us();
        p.recirc_us += recirc;
        p.max_uplink_frames += mu;
        p.max_downlink_frames += md;
        p.recirc_passes += passes;
        p.blocks = b as u64 + 1;
    }
    p.barriers_us = barriers_us(p.blocks, prof);
    p.time_us += prof.sync_us() + prof.latency_us();
    p.bound_us = p.time_us;
    p.switch_destinations = dests.len() as u64;
    p
}

/// A lower bound on [`predict_paper`] that needs no blocks: the least time any plan of the
/// paper's design can take on `plan`'s partition under `prof`, whatever its multi-level blocks.
/// `switch-ctl plan` prints it for the paper when the chosen delivery is another, so that the
/// blocks (most of the planning time on large graphs) are computed only for `--aggregate paper`.
///
/// Every block of a paper plan that passes [`crate::verify`] holds at most `cap =
/// aggregators / segments` vertices, feeds at most `limit = min(max_passes, 65535)` rows from
/// one source, and serves both directions of each of its edges, so the vertices its edges
/// touch are both its sources and its destinations. With `d_u` the cross degree of `u`, `n_u`
/// the blocks `u` appears in and `B` the blocks:
/// - `ceil(d_u / limit) <= n_u <= min(d_u, B)`, `sum_u n_u <= B x cap`, and `B` is at least
///   `ceil(boundary vertices / cap)` and every `ceil(d_u / limit)`;
/// - worker `q`'s downlink carries one sum per appearance of its vertices, `x_q = sum over u
///   of q of n_u` vectors, and two control frames per block (its uplink as many vectors and
///   one control frame per block); a sum over blocks of the busiest link is at least the
///   busiest sum;
/// - a source feeds its rows in one pass each after its first, and a TNA switch harvests each
///   row: `sum_u (d_u - n_u) + harvest_passes x sum_u n_u` passes;
/// - a block takes as long as its busiest link or its recirculation, and `B - 1` barriers
///   separate the blocks.
///
/// So the plan takes at least `T + (B - 1) barriers + sync + latency`, where `T` is the least
/// time such that some `x_q` within those limits keeps every downlink and the recirculation
/// within `T`; the bound is the least of that over `B`. Each appearance of a vertex moves a
/// vector from the recirculation to two host links, which is the trade the paper's blocks
/// make. The prediction's parts are those of the `B` (`blocks`) and `x_q` that attain it.
/// Cost: O(V + E + M x B) for the `B` scanned.
pub fn bound_paper(plan: &Plan, idx: &PairIndex, prof: &SwitchProfile) -> Prediction {
    let m = idx.workers;
    let seg = plan.manifest.segments.max(1) as f64;
    let cfg = &plan.manifest.config;
    let cap = (plan.manifest.aggregators / plan.manifest.segments.max(1) as u64).max(1);
    let limit = cfg.max_passes.clamp(1, crate::model::MAX_EXPECTED) as u64;
    // Cross degree of every vertex: its neighbours over every pair it sends on.
    let mut d = vec![0u64; idx.vertices];
    for q in 0..m {
        for p in 0..m {
            if q != p {
                let (src, nbrs) = idx.pair(q, p);
                for (&u, &k) in src.iter().zip(nbrs) {
                    d[u as usize] += k as u64;
                }
            }
        }
    }
    let owner = &plan.partition;
    // Per worker: the fewest appearances of its vertices, and its vertices by cross degree.
    let mut least = vec![0u64; m];
    let mut by_degree: Vec<(u64, u32)> = Vec::new();
    let (mut boundary, mut b_min, mut total_d) = (0u64, 1u64, 0u64);
    for (u, &du) in d.iter().enumerate() {
        if du > 0 {
            let n_u = du.div_ceil(limit);
            least[owner[u] as usize] += n_u;
            boundary += 1;
            total_d += du;
            b_min = b_min.max(n_u);
            by_degree.push((du, owner[u]));
        }
    }
    b_min = b_min.max(boundary.div_ceil(cap));
    by_degree.sort_unstable();
    let least_total: u64 = least.iter().sum();
    let max_d = by_degree.last().map_or(0, |x| x.0);
    let (dfu, cfu, pass) = (
        prof.data_frame_us(),
        prof.control_frame_us(),
        prof.pass_us(),
    );
    let vec_us = seg * dfu;
    let h = f64::from(prof.harvest_passes);
    let fixed = |b: u64| barriers_us(b, prof) + prof.latency_us();
    let recirc = |n: f64| seg * pass * (total_d as f64 + (h - 1.0) * n);
    // most[q] = sum over u of q of min(d_u, B); `above[q]` its vertices with d_u > B.
    let mut most = vec![0u64; m];
    let mut above = vec![0u64; m];
    let mut next = 0usize; // first of `by_degree` with d_u > B
    let mut b = b_min;
    for &(du, q) in &by_degree {
        most[q as usize] += du.min(b);
        if du > b {
            above[q as usize] += 1;
        }
    }
    while next < by_degree.len() && by_degree[next].0 <= b {
        next += 1;
    }
    // (total, B, T, N, the downlinks' most appearances at that B)
    let mut best: Option<(f64, u64, f64, f64, Vec<u64>)> = None;
    loop {
        if best.as_ref().is_some_and(|x| fixed(b) >= x.0) {
            break;
        }
        let ctl = 2.0 * b as f64 * cfu;
        let t_min = least.iter().copied().max().unwrap_or(0) as f64 * vec_us + ctl;
        let room = (b * cap) as f64;
        if least_total as f64 <= room {
            // Appearances that fit every downlink within `t`.
            let n_at = |t: f64| -> f64 {
                let x = ((t - ctl) / vec_us).max(0.0);
                let n: f64 = (0..m)
                    .map(|q| x.min(most[q] as f64).max(least[q] as f64))
                    .sum();
                n.min(room)
            };
            let t = if h >= 1.0 {
                t_min.max(recirc(least_total as f64))
            } else if recirc(n_at(t_min)) <= t_min {
                t_min
            } else {
                // recirc(n_at(t)) - t decreases in t: bisect for where it crosses 0, and keep
                // the lower end (a lower bound).
                let (mut lo, mut hi) = (t_min, recirc(least_total as f64).max(t_min));
                while hi - lo > 1e-9 * hi.max(1.0) {
                    let mid = 0.5 * (lo + hi);
                    if recirc(n_at(mid)) <= mid {
                        hi = mid;
                    } else {
                        lo = mid;
                    }
                }
                lo
            };
            let total = t + fixed(b);
            if best.as_ref().is_none_or(|x| total < x.0) {
                let n = if h >= 1.0 {
                    least_total as f64
                } else {
                    n_at(t)
                };
                best = Some((total, b, t, n, most.clone()));
            }
        }
        if b >= max_d.max(b_min) && best.is_some() {
            // Past the largest cross degree nothing changes but the barriers.
            break;
        }
        // B + 1: every vertex with d_u > B may appear once more.
        b += 1;
        for q in 0..m {
            most[q] += above[q];
        }
        while next < by_degree.len() && by_degree[next].0 <= b {
            above[by_degree[next].1 as usize] -= 1;
            next += 1;
        }
    }
    let (time, blocks, t, n, most) = best.expect("some B holds every appearance");
    let ctl = 2.0 * blocks as f64 * cfu;
    let x = ((t - ctl) / vec_us).max(0.0);
    let busiest = (0..m)
        .map(|q| x.min(most[q] as f64).max(least[q] as f64))
        .fold(0.0, f64::max);
    let frames = (busiest * seg).floor() as u64;
    let passes = (recirc(n) / pass).max(0.0).floor() as u64;
    Prediction {
        time_us: time,
        bound_us: time,
        uplink_us: busiest * vec_us,
        downlink_us: busiest * vec_us,
        recirc_us: recirc(n).max(0.0),
        barriers_us: barriers_us(blocks, prof),
        max_uplink_frames: frames,
        max_downlink_frames: frames,
        recirc_passes: passes,
        blocks,
        switch_destinations: boundary,
        multicast_groups: 0,
        pairs: [0; 5],
    }
}

/// The host-based baseline predicted with the same model.
pub fn predict_host_based(
    idx: &PairIndex,
    owner: &[u32],
    prof: &SwitchProfile,
    sizes: Sizes,
) -> Planned {
    let mut planned = evaluate(
        idx,
        owner,
        &Choice::uniform(idx.workers, Delivery::H),
        prof,
        sizes,
    );
    // The baseline's daemons run no blocks: no block synchronisation, in time or in bytes.
    let p = &mut planned.prediction;
    p.time_us -= p.barriers_us;
    p.bound_us -= p.barriers_us;
    p.barriers_us = 0.0;
    let old = p.blocks;
    p.blocks = 0;
    resync_traffic(&mut planned.traffic, old, 0);
    planned
}

/// One row of the comparison `switch-ctl plan` prints and writes into `report.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ModeRow {
    /// `host_based`, `paper`, `multicast`, `partials` or `auto`.
    pub mode: String,
    /// The prediction.
    pub prediction: Prediction,
    /// Bytes on the host links (uplinks plus downlinks).
    pub total_bytes: u64,
    /// The prediction and the bytes are lower bounds, not the mode's own plan: the paper's
    /// row when its multi-level blocks were not computed ([`bound_paper`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lower_bound: bool,
}

/// Predicts every mode for a plan under a profile. `paper` is the plan's own blocks; the
/// others are computed from its partition.
pub fn compare(plan: &Plan, prof: &SwitchProfile) -> Vec<ModeRow> {
    compare_with(plan, &PairIndex::new(plan), prof, true, None).0
}

/// [`compare`] on a pair index already built, and the delivery of `keep` (not `paper`) as
/// it was planned for its row, so that the caller lowers it without planning it again
/// ([`crate::lower::deliver_planned`]). With `paper_blocks` false the plan's blocks are not
/// the paper's (a plan made without them, or a delivery plan), and the paper's row is
/// [`bound_paper`], marked [`ModeRow::lower_bound`], its bytes those of every boundary vertex
/// sent and received once.
pub fn compare_with(
    plan: &Plan,
    idx: &PairIndex,
    prof: &SwitchProfile,
    paper_blocks: bool,
    keep: Option<AggregateMode>,
) -> (Vec<ModeRow>, Option<Planned>) {
    let sizes = Sizes::for_switch(plan, prof);
    let owner = &plan.partition;
    let mut rows = Vec::new();
    let hb = predict_host_based(idx, owner, prof, sizes);
    rows.push(ModeRow {
        mode: "host_based".into(),
        total_bytes: hb.traffic.total,
        prediction: hb.prediction,
        lower_bound: false,
    });
    rows.push(if paper_blocks {
        ModeRow {
            mode: "paper".into(),
            total_bytes: crate::traffic::switchgnn(plan).total,
            prediction: predict_paper(plan, prof),
            lower_bound: false,
        }
    } else {
        ModeRow {
            mode: "paper".into(),
            total_bytes: crate::traffic::unlimited(plan).total,
            prediction: bound_paper(plan, idx, prof),
            lower_bound: true,
        }
    });
    let mut kept = None;
    for mode in [
        AggregateMode::Multicast,
        AggregateMode::Partials,
        AggregateMode::Auto,
    ] {
        let r = plan_delivery(plan, idx, mode, prof);
        rows.push(ModeRow {
            mode: mode.name().into(),
            total_bytes: r.traffic.total,
            prediction: r.prediction.clone(),
            lower_bound: false,
        });
        if keep == Some(mode) {
            kept = Some(r);
        }
    }
    (rows, kept)
}

/// The delivery of `mode` (not `paper`) for `plan` under `prof`, with its tables and its time
/// replayed ([`Tables::replay`]).
pub fn plan_delivery(
    plan: &Plan,
    idx: &PairIndex,
    mode: AggregateMode,
    prof: &SwitchProfile,
) -> Planned {
    plan_delivery_with(plan, idx, mode, prof, true)
}

/// Candidates whose bound is within this factor of the best bound are replayed, and `auto`
/// keeps the one whose replay is fastest: the bound cannot see a drain, so choices it ranks
/// alike can differ by the drain (per-edge sums fed by many senders).
pub const REPLAY_MARGIN: f64 = 1.25;

/// [`plan_delivery`], with `allow_r = false` keeping `auto` from per-edge sums (`R`): what a
/// plan falls back to when its `R` choice does not fit the switch's pass limit.
///
/// `auto` takes [`auto_candidates`]; each candidate within
/// [`REPLAY_MARGIN`] of the best bound is replayed, a candidate with `R` in both raw orders
/// ([`RawOrder`]), and the fastest replay wins.
pub fn plan_delivery_with(
    plan: &Plan,
    idx: &PairIndex,
    mode: AggregateMode,
    prof: &SwitchProfile,
    allow_r: bool,
) -> Planned {
    plan_delivery_laid_out(plan, idx, mode, prof, allow_r, Layout::Spread)
}

/// [`plan_delivery_with`], its tables in `layout`.
pub fn plan_delivery_laid_out(
    plan: &Plan,
    idx: &PairIndex,
    mode: AggregateMode,
    prof: &SwitchProfile,
    allow_r: bool,
    layout: Layout,
) -> Planned {
    let sizes = Sizes::for_switch(plan, prof);
    let owner = &plan.partition;
    let uniform = |d| evaluate(idx, owner, &Choice::uniform(idx.workers, d), prof, sizes);
    let candidates = match mode {
        AggregateMode::Multicast => vec![uniform(Delivery::M)],
        AggregateMode::Partials => vec![uniform(Delivery::A)],
        AggregateMode::Auto | AggregateMode::Paper => {
            let allowed: &[Delivery] = if allow_r {
                &[Delivery::M, Delivery::A, Delivery::C, Delivery::R]
            } else {
                &[Delivery::M, Delivery::A, Delivery::C]
            };
            auto_candidates(idx, owner, prof, sizes, allowed, 64)
        }
    };
    let best_bound = candidates
        .iter()
        .map(|c| c.prediction.bound_us)
        .fold(f64::INFINITY, f64::min);
    let mut best: Option<Planned> = None;
    let mut replayed: Vec<Choice> = Vec::new();
    for mut r in candidates {
        let bound = r.prediction.bound_us;
        if !bound.is_finite() || bound > best_bound * REPLAY_MARGIN {
            continue;
        }
        // The searches with and without `R` often end at the same choice: its tables and
        // replay would be the same, and the earlier candidate wins a tie anyway.
        if replayed.contains(&r.choice) {
            continue;
        }
        replayed.push(r.choice.clone());
        let mut tables = Tables::laid_out(idx, &plan.graph, owner, &r.choice, sizes, layout);
        r.prediction.time_us = tables.replay(owner, prof, sizes).time_us;
        if !tables.r_rows.is_empty() {
            let other = tables.clone().reordered(RawOrder::FanOut);
            let t = other.replay(owner, prof, sizes).time_us;
            if t < r.prediction.time_us {
                r.prediction.time_us = t;
                tables = other;
            }
        }
        if tables.blocks as u64 != r.prediction.blocks {
            r.with_blocks(tables.blocks as u64, prof);
        }
        r.tables = tables;
        if best
            .as_ref()
            .is_none_or(|b| r.prediction.time_us < b.prediction.time_us)
        {
            best = Some(r);
        }
    }
    best.expect("at least one candidate has the best bound")
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn prof() -> SwitchProfile {
        SwitchProfile::named("default").unwrap()
    }

    const BIG: Sizes = Sizes {
        segments: 1,
        aggregators: 1 << 20,
        recycle_slack: None,
        seen_cells: u64::MAX,
    };

    /// Worker 0 holds a hub 0 and leaves 1, 2; worker 1 holds 3, 4; worker 2 holds 5.
    /// Cross edges: 0-3, 0-4, 0-5, 1-3, 2-3.
    fn small() -> (Csr, Vec<u32>) {
        let edges = [(0, 1), (0, 2), (0, 3), (0, 4), (0, 5), (1, 3), (2, 3)];
        (Csr::from_edges(6, &edges).0, vec![0, 0, 0, 1, 1, 2])
    }

    fn load_of(idx: &PairIndex, part: &[u32], c: &Choice) -> (Vec<u64>, Vec<u64>, u64, u64) {
        let r = evaluate(idx, part, c, &prof(), BIG);
        let seg = wire_bytes(DATA_FRAME_LEN);
        let ctl = wire_bytes(CONTROL_FRAME_LEN) * r.prediction.blocks.saturating_sub(1);
        let f = |v: &Vec<u64>, c: u64| v.iter().map(|b| (b - c) / seg).collect::<Vec<_>>();
        (
            f(&r.traffic.per_worker_uplink, 0),
            f(&r.traffic.per_worker_downlink, ctl),
            r.prediction.recirc_passes,
            r.prediction.switch_destinations,
        )
    }

    #[test]
    fn each_way_counts_frames_as_the_module_says() {
        let (g, part) = small();
        let idx = PairIndex::of(&g, &part, 3);
        // Pair lists: (0 -> 1): sources 0 (2 nbrs: 3, 4), 1, 2 (1 nbr: 3 each).
        assert_eq!(idx.pair(0, 1), (&[0u32, 1, 2][..], &[2u32, 1, 1][..]));
        assert_eq!(idx.pair(1, 0), (&[3u32, 4][..], &[3u32, 1][..]));
        assert_eq!(idx.pair(0, 2), (&[0u32][..], &[1u32][..]));
        // H: one frame per (u, remote partition).
        let h = load_of(&idx, &part, &Choice::uniform(3, Delivery::H));
        assert_eq!((h.0, h.1), (vec![4, 2, 1], vec![3, 3, 1]));
        // M: every boundary vertex uploaded once; downlinks as H.
        let m = load_of(&idx, &part, &Choice::uniform(3, Delivery::M));
        assert_eq!((m.0, m.1), (vec![3, 2, 1], vec![3, 3, 1]));
        // A: one partial per (v, sender): worker 1 pre-sums for 0, 1 and 2 (3 frames where M
        // sends 3 and 4 raw); one sum per boundary vertex down.
        let a = load_of(&idx, &part, &Choice::uniform(3, Delivery::A));
        assert_eq!((a.0, a.1), (vec![3, 3, 1], vec![3, 2, 1]));
        assert_eq!(a.3, 6);
        // R: uploads as M, downloads as A, one pass per cross edge after a source's first:
        // vertex 0 has 3 cross edges (2 passes), 3 has 3 (2 passes), the rest 1 each.
        let r = load_of(&idx, &part, &Choice::uniform(3, Delivery::R));
        assert_eq!((r.0, r.1, r.2), (vec![3, 2, 1], vec![3, 2, 1], 4));
    }

    /// A TNA switch's harvest passes (`harvest_passes`, docs/tofino.md "Lane pairs") add one
    /// pass per in-switch destination to the recirculation the model charges, and nothing
    /// where nothing is summed in the switch.
    #[test]
    fn harvest_passes_count_one_pass_per_in_switch_destination() {
        let (g, part) = small();
        let idx = PairIndex::of(&g, &part, 3);
        let mut tofino = prof();
        tofino.harvest_passes = 1;
        for (d, dests) in [
            (Delivery::H, 0),
            (Delivery::M, 0),
            (Delivery::A, 6),
            (Delivery::R, 6),
        ] {
            let c = Choice::uniform(3, d);
            let plain = evaluate(&idx, &part, &c, &prof(), BIG).prediction;
            let t = evaluate(&idx, &part, &c, &tofino, BIG).prediction;
            assert_eq!(t.switch_destinations, dests, "{d:?}");
            assert_eq!(t.recirc_passes, plain.recirc_passes + dests, "{d:?}");
            assert!(t.time_us >= plain.time_us, "{d:?}");
        }
    }

    /// `n` vertices and `edges` random draws of an edge (self-loops dropped), each vertex on
    /// one of `parts` random workers, from `rng`.
    fn random_graph(
        rng: &mut rand_chacha::ChaCha8Rng,
        n: usize,
        edges: usize,
        parts: u32,
    ) -> (Csr, Vec<u32>) {
        let edges: Vec<(u32, u32)> = (0..edges)
            .map(|_| (rng.gen_range(0..n as u32), rng.gen_range(0..n as u32)))
            .filter(|(a, b)| a != b)
            .collect();
        let g = Csr::from_edges(n, &edges).0;
        let part = (0..n).map(|_| rng.gen_range(0..parts)).collect();
        (g, part)
    }

    #[test]
    fn incremental_changes_equal_a_fresh_evaluation() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let (g, part) = random_graph(&mut rng, 300, 1500, 5);
        let idx = PairIndex::of(&g, &part, 5);
        let mut l = Load::new(&idx, &part);
        let ways = [
            Delivery::H,
            Delivery::M,
            Delivery::A,
            Delivery::R,
            Delivery::C,
        ];
        for _ in 0..400 {
            let (q, p) = (rng.gen_range(0..5), rng.gen_range(0..5));
            if q != p {
                l.set(q, p, ways[rng.gen_range(0..5)]);
            }
        }
        let fresh = evaluate(&idx, &part, &l.choice, &prof(), BIG);
        assert_eq!(l.prediction(&prof(), BIG), fresh.prediction);
        assert_eq!(l.traffic(BIG), fresh.traffic);
    }

    #[test]
    fn auto_is_never_slower_than_a_uniform_choice() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let n = 400usize;
        let edges: Vec<(u32, u32)> = (0..3000)
            .map(|_| (rng.gen_range(0..n as u32), rng.gen_range(0..n as u32 / 4)))
            .filter(|(a, b)| a != b)
            .collect();
        let g = Csr::from_edges(n, &edges).0;
        let part: Vec<u32> = (0..n).map(|_| rng.gen_range(0..6)).collect();
        let idx = PairIndex::of(&g, &part, 6);
        for recirc in [100.0, 800.0, crate::profile::FREE_RECIRC_GBPS] {
            let mut pr = prof();
            pr.recirc_gbps = recirc;
            let all = [Delivery::M, Delivery::A, Delivery::C, Delivery::R];
            let auto = optimize(&idx, &part, &pr, BIG, &all, 64);
            for d in [
                Delivery::H,
                Delivery::M,
                Delivery::A,
                Delivery::R,
                Delivery::C,
            ] {
                let u = evaluate(&idx, &part, &Choice::uniform(6, d), &pr, BIG);
                assert!(
                    auto.prediction.time_us <= u.prediction.time_us + 1e-9,
                    "{recirc}: auto {} > {d:?} {}",
                    auto.prediction.time_us,
                    u.prediction.time_us
                );
            }
        }
    }

    #[test]
    fn tables_carry_the_frames_the_load_counts() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let n = 200;
        let (g, part) = random_graph(&mut rng, n, 900, 4);
        let idx = PairIndex::of(&g, &part, 4);
        let ways = [Delivery::M, Delivery::A, Delivery::R, Delivery::C];
        let mut c = Choice::uniform(4, Delivery::M);
        for q in 0..4 {
            for p in 0..4 {
                c.c[q * 4 + p] = ways[rng.gen_range(0..4)];
            }
        }
        let t = Tables::new(&idx, &g, &part, &c, BIG);
        let (up, down, passes, dests) = load_of(&idx, &part, &c);
        for w in 0..4 {
            let sent = (t.raw_send[w].len() + t.partial_send[w].len()) as u64;
            assert_eq!(sent, up[w], "uplink of {w}");
            // The merged send order holds each raw vertex and each partial once.
            let mut merged: Vec<Send> = t.send[w].clone();
            let mut lists: Vec<Send> = t.raw_send[w]
                .iter()
                .map(|&u| Send {
                    vertex: u,
                    partial: false,
                })
                .chain(t.partial_send[w].iter().map(|&v| Send {
                    vertex: v,
                    partial: true,
                }))
                .collect();
            merged.sort_by_key(|s| (s.partial, s.vertex));
            lists.sort_by_key(|s| (s.partial, s.vertex));
            assert_eq!(merged, lists, "sends of {w}");
            let raw_in = (0..n)
                .map(|u| {
                    t.mcast[t.mcast_off[u]..t.mcast_off[u + 1]]
                        .iter()
                        .filter(|&&p| p == w as u32)
                        .count() as u64
                })
                .sum::<u64>();
            let sums = t
                .row_dst
                .iter()
                .filter(|&&v| part[v as usize] == w as u32)
                .count() as u64;
            assert_eq!(raw_in + sums, down[w], "downlink of {w}");
        }
        assert_eq!(t.row_dst.len() as u64, dests);
        let r_passes: u64 = (0..n)
            .map(|u| (t.r_off[u + 1] - t.r_off[u]).saturating_sub(1) as u64)
            .sum();
        assert_eq!(r_passes, passes);
        // Every row's expected count is what its senders deliver.
        let mut got = vec![0u32; t.row_dst.len()];
        for &r in &t.r_rows {
            got[r as usize] += 1;
        }
        for list in &t.partial_send {
            for &v in list {
                got[t.row_of[v as usize] as usize] += 1;
            }
        }
        assert_eq!(got, t.row_expected);
    }

    /// The cost model's blocks are at least what `src_seen` needs for every send (raw vertices
    /// and partials of every worker, what the tables hold), and the tables cut there.
    #[test]
    fn the_cost_model_and_the_tables_count_the_blocks_src_seen_forces() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(13);
        let (g, part) = random_graph(&mut rng, 400, 2000, 4);
        let idx = PairIndex::of(&g, &part, 4);
        let ways = [Delivery::M, Delivery::A, Delivery::C];
        let mut c = Choice::uniform(4, Delivery::M);
        for q in 0..4 {
            for p in 0..4 {
                c.c[q * 4 + p] = ways[(q + p) % 3];
            }
        }
        let free = Tables::new(&idx, &g, &part, &c, BIG);
        assert_eq!(free.blocks, 1);
        let sends: u64 = free.send.iter().map(|l| l.len() as u64).sum();
        let mut l = Load::new(&idx, &part);
        for q in 0..4 {
            for p in 0..4 {
                if q != p {
                    l.set(q, p, c.get(q, p));
                }
            }
        }
        assert_eq!(l.sends as u64, sends, "the load counts the tables' sends");
        assert_eq!(
            l.up.iter().sum::<i64>() as u64,
            sends,
            "no H: every upload is a send"
        );
        // Three segments; src_seen for a fifth of the sends per block.
        let limit = sends / 5;
        let sizes = Sizes {
            segments: 3,
            seen_cells: limit * 3 + 2,
            ..BIG
        };
        assert_eq!(sizes.sends_per_block(), limit);
        let predicted = evaluate(&idx, &part, &c, &prof(), sizes).prediction.blocks;
        assert_eq!(predicted, sends.div_ceil(limit));
        let t = Tables::new(&idx, &g, &part, &c, sizes);
        assert!(t.blocks as u64 >= predicted, "the bound is a lower bound");
        for b in 0..t.blocks {
            let k: usize = (0..4).map(|q| t.sends(q, b).len()).sum();
            assert!(k as u64 <= limit, "block {b}: {k} sends > {limit}");
            assert!(t.rows_in_block(b) > 0);
            // Slots restart in every block.
            let lo = t.block_start[b as usize];
            assert_eq!(t.row_slot[lo as usize], 0);
        }
        assert_eq!(*t.block_start.last().unwrap() as usize, t.row_dst.len());
    }

    /// A row whose sends alone exceed `src_seen` cannot be cut: it stays whole, in a block of
    /// its own (`switch-ctl load` and the simulator refuse the plan).
    #[test]
    fn a_row_over_src_seen_by_itself_is_left_whole() {
        let (g, part) = small();
        let idx = PairIndex::of(&g, &part, 3);
        let one = Sizes {
            seen_cells: 1,
            ..BIG
        };
        let t = Tables::new(&idx, &g, &part, &Choice::uniform(3, Delivery::A), one);
        // Every row its own block; vertex 0's row has the partials of workers 1 and 2.
        assert_eq!(t.blocks as usize, t.row_dst.len());
        let b = t.block_of_row(t.row_of[0]);
        assert_eq!((t.sends(1, b).len(), t.sends(2, b).len()), (1, 1));
        assert!(t.row_slot.iter().all(|&s| s == 0));
    }

    #[test]
    fn per_edge_aggregation_needs_one_block() {
        let (g, part) = small();
        let idx = PairIndex::of(&g, &part, 3);
        // 6 destinations, 4 aggregators: two blocks, which `R` cannot be predicted for.
        let tight = Sizes {
            segments: 1,
            aggregators: 4,
            recycle_slack: None,
            seen_cells: u64::MAX,
        };
        let r = evaluate(
            &idx,
            &part,
            &Choice::uniform(3, Delivery::R),
            &prof(),
            tight,
        );
        assert!(r.prediction.time_us.is_infinite());
        let a = evaluate(
            &idx,
            &part,
            &Choice::uniform(3, Delivery::A),
            &prof(),
            tight,
        );
        assert_eq!(a.prediction.blocks, 2);
        assert!(a.prediction.time_us.is_finite());
        let auto = optimize(
            &idx,
            &part,
            &prof(),
            tight,
            &[Delivery::M, Delivery::A, Delivery::R],
            8,
        );
        assert!(auto.prediction.time_us.is_finite());
    }
}
