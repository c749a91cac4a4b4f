//! Aggregator live ranges: how much switch memory recycling by live range could give back.
//!
//! A block holds one aggregator row per destination for the whole block. With the send order
//! fixed, a row is only busy from the first contribution that reaches it to the last; a
//! planner that recycled rows by live range (interval colouring over the order) would need as
//! many rows as are live at once, not as many as the block has, and could pack more
//! destinations (and so fewer blocks, barriers and re-sent sources) into the same memory.
//!
//! This module measures that on a plan without building it:
//! - the schedule: every worker sends its share of a block in the block's order, all at the
//!   same rate, so the `k`-th source of a worker's share leaves at time `k` (one feature
//!   vector); a row is live from the earliest to the latest send that feeds it (per-edge
//!   passes are taken as instantaneous: recirculation only lengthens live ranges);
//! - [`block_peak`]: the most rows live at once in one block (the rows interval colouring
//!   would need);
//! - [`recycle`]: consecutive blocks merged greedily, each group sent as one block (a source in
//!   several of its blocks sent once, a destination in several summed in one row) while the
//!   group's peak fits the memory: the blocks, uplink vectors and results a recycling plan
//!   would have, in the plan's own order.
//!
//! It is an estimate of what the data-plane work (a generation tag per aggregator, so a late
//! contribution never lands in a recycled row) would buy; `docs/planner.md` ("Recycling by
//! live range") has the numbers.

use std::collections::HashMap;

use sgnn_plan::model::Block;
use sgnn_plan::Plan;

/// The blocks of a plan and who sends each source: what the live ranges depend on.
struct Schedule<'a> {
    blocks: &'a [Block],
    owner: &'a dyn Fn(u32) -> usize,
    workers: usize,
}

/// A group of consecutive blocks sent as one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Group {
    /// Rows live at once at the peak.
    pub peak: u64,
    /// Distinct destinations (rows) the group sums.
    pub rows: u64,
    /// Vectors the workers upload (a source once per group).
    pub sends: u64,
}

/// The schedule of blocks `lo..hi` of `plan` sent as one block: for each row (destination)
/// its live range, and the sends. A source already sent in the group feeds its later rows
/// from its first send.
fn group(s: &Schedule, lo: usize, hi: usize) -> Group {
    let mut next = vec![0u64; s.workers];
    let mut sent: HashMap<u32, u64> = HashMap::new();
    let mut range: HashMap<u32, (u64, u64)> = HashMap::new();
    for block in &s.blocks[lo..hi] {
        for (i, &u) in block.sources.iter().enumerate() {
            let q = (s.owner)(u).min(s.workers - 1);
            let t = *sent.entry(u).or_insert_with(|| {
                next[q] += 1;
                next[q] - 1
            });
            for &row in block.passes(i) {
                let v = block.aggregators[row as usize].dst;
                let r = range.entry(v).or_insert((t, t));
                r.0 = r.0.min(t);
                r.1 = r.1.max(t);
            }
        }
    }
    let mut events: Vec<(u64, i64)> = Vec::with_capacity(2 * range.len());
    for &(a, b) in range.values() {
        events.push((a, 1));
        events.push((b + 1, -1));
    }
    events.sort_unstable();
    let (mut live, mut peak) = (0i64, 0i64);
    for (_, d) in events {
        live += d;
        peak = peak.max(live);
    }
    Group {
        peak: peak as u64,
        rows: range.len() as u64,
        sends: sent.len() as u64,
    }
}

fn schedule_of(plan: &Plan) -> (Box<dyn Fn(u32) -> usize + '_>, usize) {
    let owner = Box::new(move |u: u32| plan.owner(u).unwrap_or(0) as usize);
    (owner, (plan.workers() as usize).max(1))
}

/// The most rows live at once in block `b` (what interval colouring would need).
pub fn block_peak(plan: &Plan, b: usize) -> u64 {
    let (owner, workers) = schedule_of(plan);
    let s = Schedule {
        blocks: &plan.blocks,
        owner: &*owner,
        workers,
    };
    group(&s, b, b + 1).peak
}

/// What recycling by live range would give on `plan`, in its own order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Recycling {
    /// Rows one block may hold at once (aggregators / segments).
    pub capacity_rows: u64,
    /// The plan's blocks, their rows and their peaks summed, and its uplink vectors and
    /// results (rows) summed over blocks.
    pub blocks: u64,
    /// Rows summed over the plan's blocks.
    pub rows: u64,
    /// Peaks summed over the plan's blocks.
    pub peaks: u64,
    /// Uplink vectors of the plan (a source once per block it is in).
    pub sends: u64,
    /// Groups of consecutive blocks that fit when rows are recycled.
    pub groups: Vec<(usize, usize, Group)>,
}

impl Recycling {
    /// Blocks with recycling.
    pub fn recycled_blocks(&self) -> u64 {
        self.groups.len() as u64
    }
    /// Uplink vectors with recycling.
    pub fn recycled_sends(&self) -> u64 {
        self.groups.iter().map(|g| g.2.sends).sum()
    }
    /// Results (rows) with recycling.
    pub fn recycled_rows(&self) -> u64 {
        self.groups.iter().map(|g| g.2.rows).sum()
    }
}

/// Merges consecutive blocks of `plan` greedily while the merged schedule's peak fits the
/// switch memory. O(B x G) group evaluations for B blocks in groups of at most G, each linear
/// in its contributions.
pub fn recycle(plan: &Plan) -> Recycling {
    let seg = plan.manifest.segments.max(1) as u64;
    let (owner, workers) = schedule_of(plan);
    let s = Schedule {
        blocks: &plan.blocks,
        owner: &*owner,
        workers,
    };
    recycle_schedule(&s, (plan.manifest.aggregators / seg).max(1))
}

fn recycle_schedule(s: &Schedule, capacity_rows: u64) -> Recycling {
    let n = s.blocks.len();
    let mut r = Recycling {
        capacity_rows,
        blocks: n as u64,
        ..Recycling::default()
    };
    for b in 0..n {
        let g = group(s, b, b + 1);
        r.rows += g.rows;
        r.peaks += g.peak;
        r.sends += g.sends;
    }
    let mut lo = 0;
    while lo < n {
        let mut best = group(s, lo, lo + 1);
        let mut hi = lo + 1;
        while hi < n {
            let g = group(s, lo, hi + 1);
            if g.peak > capacity_rows {
                break;
            }
            best = g;
            hi += 1;
        }
        r.groups.push((lo, hi, best));
        lo = hi;
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use sgnn_plan::model::AggSlot;

    /// Blocks, each a list of (source, destinations); 2 workers (even sources on worker 0).
    fn blocks_of(blocks: &[Vec<(u32, Vec<u32>)>]) -> Vec<Block> {
        let mut out = Vec::new();
        for b in blocks {
            let mut blk = Block {
                fanout_ptr: vec![0],
                ..Block::default()
            };
            let mut row_of: HashMap<u32, u32> = HashMap::new();
            for (u, dsts) in b {
                blk.sources.push(*u);
                for &v in dsts {
                    let n = row_of.len() as u32;
                    let row = *row_of.entry(v).or_insert(n);
                    if row == n {
                        blk.aggregators.push(AggSlot {
                            dst: v,
                            base: n,
                            expected: 0,
                            generation: 0,
                        });
                    }
                    blk.fanout.push(row);
                }
                blk.fanout_ptr.push(blk.fanout.len() as u32);
            }
            out.push(blk);
        }
        out
    }

    fn parity(u: u32) -> usize {
        (u % 2) as usize
    }

    fn peak(blocks: &[Vec<(u32, Vec<u32>)>]) -> u64 {
        let b = blocks_of(blocks);
        let s = Schedule {
            blocks: &b,
            owner: &parity,
            workers: 2,
        };
        group(&s, 0, 1).peak
    }

    fn recycle_of(blocks: &[Vec<(u32, Vec<u32>)>], capacity: u64) -> Recycling {
        let b = blocks_of(blocks);
        let s = Schedule {
            blocks: &b,
            owner: &parity,
            workers: 2,
        };
        recycle_schedule(&s, capacity)
    }

    #[test]
    fn rows_that_end_before_others_start_share_a_slot() {
        // Worker 0 sends 0, 2, 4 at times 0, 1, 2; each feeds its own two destinations, so
        // at most two rows are live at once although the block has six.
        assert_eq!(
            peak(&[vec![
                (0, vec![11, 13]),
                (2, vec![15, 17]),
                (4, vec![19, 21])
            ]]),
            2
        );
        // A destination fed at the start and at the end stays live throughout.
        assert_eq!(
            peak(&[vec![(0, vec![11, 13]), (2, vec![15]), (4, vec![11, 17])]]),
            2
        );
        assert_eq!(
            peak(&[vec![
                (0, vec![11, 13]),
                (2, vec![15, 13]),
                (4, vec![11, 17])
            ]]),
            3
        );
    }

    #[test]
    fn blocks_merge_while_the_peak_fits_and_shared_sources_are_sent_once() {
        let blocks = vec![
            vec![(0, vec![11]), (2, vec![13])],
            vec![(0, vec![15]), (4, vec![17])],
            vec![(6, vec![11, 13, 15, 17])],
        ];
        // Capacity 2: the first two blocks merge (source 0 once: its rows 11 and 15 are
        // live together at time 0, then 13 and 17); the third needs 4 rows at once.
        let r = recycle_of(&blocks, 2);
        assert_eq!(r.blocks, 3);
        assert_eq!(r.sends, 5);
        assert_eq!(r.recycled_blocks(), 2);
        assert_eq!(r.groups[0].0..r.groups[0].1, 0..2);
        assert_eq!(r.groups[0].2.sends, 3, "source 0 sent once");
        assert_eq!(r.recycled_sends(), 4);
        // Capacity 4: everything in one block; destination 11 summed in one row.
        let r = recycle_of(&blocks, 4);
        assert_eq!(r.recycled_blocks(), 1);
        assert_eq!(r.recycled_rows(), 4);
    }
}
