//! The layout of a choice ([`Tables`]): what a per-pair [`Choice`] means for the hosts and the
//! switch. Each worker's raw vertices and partials in sending order, the switch's replication
//! (`M`, `C`) and per-edge (`R`) tables, an aggregator row per destination it sums, and the
//! cut of the rows into blocks (by aggregator memory and the switch's `src_seen`, or by live
//! range: [`crate::recycle`]). [`Layout`] spreads the rows and the replicated raw vertices for
//! planned pacing (or keeps the older round robin); [`RawOrder`] places the raw vertices of
//! per-edge sums.

use sgnn_graph::Csr;

use crate::choice::{Choice, Delivery};
use crate::cost::Sizes;
use crate::pair_index::PairIndex;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use rand::{Rng, SeedableRng};

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
}
