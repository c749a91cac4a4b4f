//! Aggregator recycling by live range (`switch-ctl plan --recycle`).
//!
//! A delivery plan ([`Tables`]) gives every worker one send list, walked in row order: a
//! partial is sent at its destination's row, so every sender of a destination reaches it at
//! about the same point of its list. Without recycling a block holds `capacity_rows` rows, one
//! aggregator row per destination for the whole block. But a row is only busy from the first
//! contribution that reaches it to the last; once its sum is out, its aggregators can hold
//! the next destination's. This module cuts the rows into blocks and assigns aggregators by
//! those live ranges:
//!
//! - **Schedule.** In block `b`, worker `q` sends its share in order, one feature vector per
//!   time step: the `k`-th send of the share leaves at step `k` (every worker at the same
//!   rate: what the uplinks do when they all send). Row `r` is live over
//!   `[first, last + slack]`, `first` and `last` the steps of the earliest and latest send
//!   that feeds it. The slack is the margin a real run needs: senders drift apart, and a
//!   contribution that arrives later than the schedule says must still find its row.
//! - **Blocks.** Rows are taken in order; a block grows while the most rows live at once (a
//!   segment tree over the steps: range add, global maximum) fits `capacity_rows`. So a block
//!   may hold many more destinations than the memory has rows, as long as they are not all
//!   live together. It also stops before a row whose sends would take the block's sources past
//!   [`Tables::max_block_sends`] (the switch's `src_seen` holds one cell per source and
//!   segment of a block, however the aggregators are recycled); a row alone over that limit
//!   stays whole, in a block of its own.
//! - **Aggregators.** Within a block with more rows than the memory, interval colouring: rows
//!   by first step, each takes an aggregator row whose last user's range ended before it
//!   starts (a min-heap of busy rows by end), else a new one. That needs exactly the peak
//!   (interval graphs are perfect). The users of one aggregator row are numbered: generation
//!   0, 1, 2, ... in schedule order; the switch holds the generation with the aggregator's
//!   state and bypasses a contribution of an older generation to the host
//!   (docs/switch-interface.md, "Generations"), so even a contribution that arrives after its
//!   row was recycled cannot corrupt a sum: it reaches its receiver raw.
//!
//! Cost: O(S log S) for S sends, plus a segment tree the size of the longest send list.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::layout::Tables;

/// Default slack (`switch-ctl plan --recycle-slack`), in feature vectors of a sender's list.
pub const DEFAULT_SLACK: u64 = 16;

/// Range add and global maximum over `0..n`.
struct MaxTree {
    n: usize,
    max: Vec<i64>,
    add: Vec<i64>,
}

impl MaxTree {
    fn new(n: usize) -> MaxTree {
        let n = n.max(1);
        MaxTree {
            n,
            max: vec![0; 4 * n],
            add: vec![0; 4 * n],
        }
    }

    /// Adds `d` over `lo..=hi` (clamped to the tree).
    fn range_add(&mut self, lo: usize, hi: usize, d: i64) {
        let hi = hi.min(self.n - 1);
        if lo <= hi {
            self.go(1, 0, self.n - 1, lo, hi, d);
        }
    }

    fn go(&mut self, node: usize, l: usize, r: usize, lo: usize, hi: usize, d: i64) {
        if hi < l || r < lo {
            return;
        }
        if lo <= l && r <= hi {
            self.max[node] += d;
            self.add[node] += d;
            return;
        }
        let mid = (l + r) / 2;
        self.go(2 * node, l, mid, lo, hi, d);
        self.go(2 * node + 1, mid + 1, r, lo, hi, d);
        self.max[node] = self.add[node] + self.max[2 * node].max(self.max[2 * node + 1]);
    }

    fn peak(&self) -> i64 {
        self.max[1]
    }
}

impl Tables {
    /// Cuts the rows into blocks and assigns aggregator rows and generations by live range
    /// (see the module doc); sets `blocks`, `block_start`, `row_slot` and `row_gen`.
    pub(crate) fn recycle(&mut self, slack: u64) {
        let rows = self.row_dst.len();
        let cap = self.capacity_rows.max(1) as i64;
        if rows as i64 <= cap {
            // Every row has its own aggregator row: nothing to recycle, and the plain cut
            // (`merge_sends`: one block, or more where `src_seen` ends one) is the greedy's.
            return;
        }
        let limit = self.max_block_sends.unwrap_or(u64::MAX);
        let row_sends = self.row_sends();
        // Every send that feeds a row: (row, worker, index in the worker's list).
        let mut feeds: Vec<(u32, u32, u32)> = Vec::new();
        for (q, list) in self.send.iter().enumerate() {
            for (i, s) in list.iter().enumerate() {
                if s.partial {
                    feeds.push((self.row_of[s.vertex as usize], q as u32, i as u32));
                } else {
                    let u = s.vertex as usize;
                    for &r in &self.r_rows[self.r_off[u]..self.r_off[u + 1]] {
                        feeds.push((r, q as u32, i as u32));
                    }
                }
            }
        }
        feeds.sort_unstable();
        let mut feed_off = vec![0usize; rows + 1];
        for &(r, _, _) in &feeds {
            feed_off[r as usize + 1] += 1;
        }
        for r in 0..rows {
            feed_off[r + 1] += feed_off[r];
        }
        let horizon = self.send.iter().map(|l| l.len()).max().unwrap_or(0) + slack as usize + 1;
        let mut tree = MaxTree::new(horizon);
        let m = self.send.len();
        let mut start = vec![0u32; m];
        let mut block_start = vec![0u32];
        let mut ranges: Vec<(usize, usize)> = Vec::new();
        let mut lo = 0usize;
        while lo < rows {
            // Each worker's share of the block starts at its first send at row `lo` or later.
            for (q, s) in start.iter_mut().enumerate() {
                *s = self.send_row[q].partition_point(|&r| (r as usize) < lo) as u32;
            }
            ranges.clear();
            let mut hi = lo;
            let mut sends = 0u64;
            while hi < rows {
                if hi > lo && sends + row_sends[hi] > limit {
                    break; // src_seen would not hold the block's sources
                }
                let fs = &feeds[feed_off[hi]..feed_off[hi + 1]];
                let (mut a, mut b) = (usize::MAX, 0usize);
                for &(_, q, i) in fs {
                    let t = i.saturating_sub(start[q as usize]) as usize;
                    a = a.min(t);
                    b = b.max(t);
                }
                if fs.is_empty() {
                    a = 0;
                }
                let b = b + slack as usize;
                tree.range_add(a, b, 1);
                if tree.peak() > cap && hi > lo {
                    tree.range_add(a, b, -1);
                    break;
                }
                ranges.push((a, b));
                sends += row_sends[hi];
                hi += 1;
            }
            for &(a, b) in &ranges {
                tree.range_add(a, b, -1);
            }
            self.colour(lo, &ranges, cap as usize);
            block_start.push(hi as u32);
            lo = hi;
        }
        self.blocks = (block_start.len() - 1) as u32;
        self.block_start = block_start;
    }

    /// Interval colouring of the rows `lo..lo + ranges.len()` with live ranges `ranges`.
    fn colour(&mut self, lo: usize, ranges: &[(usize, usize)], cap: usize) {
        if ranges.len() <= cap {
            for k in 0..ranges.len() {
                self.row_slot[lo + k] = k as u32;
                self.row_gen[lo + k] = 0;
            }
            return;
        }
        let mut by_start: Vec<usize> = (0..ranges.len()).collect();
        by_start.sort_by_key(|&k| (ranges[k].0, k));
        let mut busy: BinaryHeap<Reverse<(usize, u32)>> = BinaryHeap::new();
        let mut free: BinaryHeap<Reverse<u32>> = BinaryHeap::new();
        let mut uses: Vec<u32> = Vec::new();
        for k in by_start {
            let (a, b) = ranges[k];
            while let Some(&Reverse((end, slot))) = busy.peek() {
                if end >= a {
                    break;
                }
                busy.pop();
                free.push(Reverse(slot));
            }
            let slot = match free.pop() {
                Some(Reverse(s)) => s,
                None => {
                    uses.push(0);
                    uses.len() as u32 - 1
                }
            };
            self.row_slot[lo + k] = slot;
            self.row_gen[lo + k] = uses[slot as usize];
            uses[slot as usize] += 1;
            busy.push(Reverse((b, slot)));
        }
        debug_assert!(uses.len() <= cap, "colouring needs the peak");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::choice::{Choice, Delivery};
    use crate::cost::Sizes;
    use crate::pair_index::PairIndex;
    use rand::{Rng, SeedableRng};
    use sgnn_graph::Csr;

    /// A random graph of 4 workers x 150 vertices with many cross edges, all pairs `d`.
    fn tables(d: Delivery, rows: u64, slack: Option<u64>) -> Tables {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let n = 600u32;
        let mut edges = Vec::new();
        for _ in 0..3000 {
            let (u, v) = (rng.gen_range(0..n), rng.gen_range(0..n));
            if u != v {
                edges.push((u.min(v), u.max(v)));
            }
        }
        let g = Csr::from_edges(n as usize, &edges).0;
        let part: Vec<u32> = (0..n).map(|v| v % 4).collect();
        let idx = PairIndex::of(&g, &part, 4);
        let sizes = Sizes {
            segments: 1,
            aggregators: rows,
            recycle_slack: slack,
            seen_cells: u64::MAX,
        };
        Tables::new(&idx, &g, &part, &Choice::uniform(4, d), sizes)
    }

    /// Recomputes every row's live range from the tables' own send lists and block cuts, and
    /// checks what the switch relies on: each block's rows fit the memory at their peak, and
    /// the rows sharing an aggregator take it in turn, generation by generation, with the slack
    /// between them.
    fn check(t: &Tables, slack: u64) {
        let rows = t.row_dst.len();
        let mut range = vec![(usize::MAX, 0usize); rows];
        for q in 0..t.send.len() {
            for b in 0..t.blocks {
                for (k, s) in t.sends(q, b).iter().enumerate() {
                    assert!(s.partial);
                    let r = t.row_of[s.vertex as usize] as usize;
                    assert_eq!(
                        t.block_of_row(r as u32),
                        b,
                        "a partial is sent in its row's block"
                    );
                    range[r].0 = range[r].0.min(k);
                    range[r].1 = range[r].1.max(k);
                }
            }
        }
        for b in 0..t.blocks {
            let (lo, hi) = (
                t.block_start[b as usize] as usize,
                t.block_start[b as usize + 1] as usize,
            );
            let mut per_slot: std::collections::BTreeMap<u32, Vec<(u32, usize, usize)>> =
                Default::default();
            for (r, &(first, last)) in range.iter().enumerate().take(hi).skip(lo) {
                assert!(t.row_slot[r] < t.capacity_rows, "slot inside the memory");
                per_slot
                    .entry(t.row_slot[r])
                    .or_default()
                    .push((t.row_gen[r], first, last));
            }
            for uses in per_slot.values_mut() {
                uses.sort_unstable();
                for (g, w) in uses.iter().enumerate() {
                    assert_eq!(w.0 as usize, g, "generations 0, 1, 2, ... per aggregator");
                }
                for w in uses.windows(2) {
                    assert!(
                        w[0].2 + (slack as usize) < w[1].1,
                        "generation {} starts at {} before generation {} ends at {} + slack {slack}",
                        w[1].0,
                        w[1].1,
                        w[0].0,
                        w[0].2
                    );
                }
            }
        }
    }

    #[test]
    fn recycled_blocks_are_fewer_and_every_aggregator_is_taken_in_turn() {
        let plain = tables(Delivery::A, 64, None);
        assert!(
            plain.blocks > 3,
            "the test needs several blocks: {}",
            plain.blocks
        );
        assert!(plain.row_gen.iter().all(|&g| g == 0));
        for slack in [0, 4, 32] {
            let t = tables(Delivery::A, 64, Some(slack));
            check(&t, slack);
            assert!(
                t.blocks < plain.blocks,
                "slack {slack}: {} blocks, {} without recycling",
                t.blocks,
                plain.blocks
            );
            assert!(
                t.row_gen.iter().any(|&g| g > 0),
                "slack {slack}: something recycled"
            );
            // Every row in exactly one block, blocks contiguous and in order.
            assert_eq!(t.block_start.first(), Some(&0));
            assert_eq!(*t.block_start.last().unwrap() as usize, t.row_dst.len());
            assert!(t.block_start.windows(2).all(|w| w[0] < w[1]));
        }
        // More slack, never fewer blocks.
        let (a, b) = (
            tables(Delivery::A, 64, Some(0)),
            tables(Delivery::A, 64, Some(32)),
        );
        assert!(a.blocks <= b.blocks);
        // Memory for everything: one block, no generation.
        let t = tables(Delivery::A, 1 << 20, Some(0));
        assert_eq!(t.blocks, 1);
        assert!(t.row_gen.iter().all(|&g| g == 0));
    }

    #[test]
    fn the_tree_keeps_the_maximum_of_overlapping_ranges() {
        let mut t = MaxTree::new(10);
        t.range_add(0, 3, 1);
        t.range_add(2, 5, 1);
        assert_eq!(t.peak(), 2);
        t.range_add(4, 9, 1);
        assert_eq!(t.peak(), 2);
        t.range_add(3, 4, 1);
        assert_eq!(t.peak(), 3);
        t.range_add(3, 4, -1);
        t.range_add(2, 5, -1);
        assert_eq!(t.peak(), 1);
        t.range_add(8, 100, 5);
        assert_eq!(t.peak(), 6);
    }
}
