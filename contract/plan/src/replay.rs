//! A replay of one layer's delivery in time: the cost model's refinement of the busiest-link
//! bound ([`crate::delivery::Prediction::bound_us`]).
//!
//! The bound assumes the uplinks, the recirculation and the downlinks overlap perfectly. They
//! do not when many senders feed one sum: a sum completes only when its slowest sender reaches
//! it, and the results that complete late then drain through the downlinks after the uplinks
//! are idle. The replay follows the schedule the hosts and the switch actually run, one feature
//! vector (`segments` frames) at a time:
//! - every worker sends its list ([`Tables::send`]) back to back, block by block, starting a
//!   block when its BlockAdvance arrives;
//! - a vector's first frame reaches the switch one frame time and one link delay after it
//!   leaves; a raw vector is replicated at once (`M`), feeds its first per-edge aggregator in
//!   that pass and the others on the recirculation path, which serves passes first come first
//!   served (`R`); a partial is added in its arrival pass (`A`, `C`);
//! - a sum is ready at its last contribution's pass and goes down to its worker;
//! - every downlink is a work-conserving queue of vectors in order of availability, so its
//!   last frame leaves when its last busy period ends, whatever the priorities within it;
//! - the switch multicasts BlockAdvance when a block's last sum completes.
//!
//! Cost: O(V log V + D log D) for V vectors sent and D vectors delivered. Every quantity is the
//! one the packet-level simulator (`tools/sim`, `Deliver`) charges, at the granularity of a
//! vector rather than a frame; `docs/planner.md` ("Cost model") gives its error on the grid.

use crate::delivery::{Sizes, Tables};
use crate::profile::SwitchProfile;

/// One layer's delivery replayed in time.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Replay {
    /// When the last vector reaches its worker, microseconds from the start of the layer.
    pub time_us: f64,
    /// When each block's last sum completed at the switch.
    pub block_done_us: Vec<f64>,
}

impl Tables {
    /// Replays the delivery for a plan partitioned by `part` on a star under `prof` (see the
    /// module doc).
    pub fn replay(&self, part: &[u32], prof: &SwitchProfile, sizes: Sizes) -> Replay {
        let m = self.raw_send.len();
        let seg = sizes.segments.max(1) as f64;
        let tau = prof.data_frame_us();
        let vec_us = seg * tau;
        let delay = prof.delay_us;
        let pass = prof.pass_us();
        let rows = self.row_dst.len();
        let mut count = vec![0u32; rows];
        let mut ready = vec![0f64; rows];
        // Availability at the switch of every vector each worker's downlink carries.
        let mut down: Vec<Vec<f64>> = vec![Vec::new(); m];
        // When each worker's uplink is free, and when it may start the next block.
        let mut up_free = vec![0f64; m];
        let mut start = 0f64;
        let mut recirc_free = 0f64;
        let mut block_done_us = Vec::with_capacity(self.blocks as usize);
        let mut arrivals: Vec<(f64, u32, usize)> = Vec::new();
        for b in 0..self.blocks {
            arrivals.clear();
            for (q, free) in up_free.iter_mut().enumerate() {
                let t0 = free.max(start);
                let sends = self.sends(q, b);
                for i in 0..sends.len() {
                    arrivals.push((t0 + i as f64 * vec_us + tau + delay, q as u32, i));
                }
                *free = t0 + sends.len() as f64 * vec_us;
            }
            // Arrival order matters only to the recirculation queue.
            arrivals.sort_by(|a, b| a.0.total_cmp(&b.0));
            let mut done_at = start;
            let mut complete = |row: u32, at: f64, ready: &mut [f64], down: &mut [Vec<f64>]| {
                let r = row as usize;
                ready[r] = ready[r].max(at);
                count[r] += 1;
                if count[r] == self.row_expected[r] {
                    let dst = part[self.row_dst[r] as usize] as usize;
                    down[dst].push(ready[r]);
                    done_at = done_at.max(ready[r]);
                }
            };
            for &(a, q, i) in &arrivals {
                let s = self.sends(q as usize, b)[i];
                let v = s.vertex as usize;
                if s.partial {
                    complete(self.row_of[v], a, &mut ready, &mut down);
                    continue;
                }
                for &p in &self.mcast[self.mcast_off[v]..self.mcast_off[v + 1]] {
                    down[p as usize].push(a);
                }
                let targets = &self.r_rows[self.r_off[v]..self.r_off[v + 1]];
                if targets.is_empty() {
                    continue;
                }
                let k = targets.len();
                let begin = recirc_free.max(a);
                if k > 1 {
                    recirc_free = begin + seg * (k - 1) as f64 * pass;
                }
                for (p, &row) in targets.iter().enumerate() {
                    let at = if p == 0 { a } else { begin + p as f64 * pass };
                    complete(row, at, &mut ready, &mut down);
                }
            }
            block_done_us.push(done_at);
            // BlockAdvance: one control frame and a link crossing to every worker.
            start = done_at + prof.control_frame_us() + delay;
        }
        let mut time_us = 0f64;
        for list in &mut down {
            list.sort_by(|a, b| a.total_cmp(b));
            let mut t = 0f64;
            for &a in list.iter() {
                t = t.max(a) + vec_us;
            }
            if !list.is_empty() {
                time_us = time_us.max(t + delay);
            }
        }
        Replay {
            time_us,
            block_done_us,
        }
    }
}

#[cfg(test)]
mod tests {
    use sgnn_graph::Csr;

    use super::*;
    use crate::delivery::{Choice, Delivery, PairIndex};

    /// K(n, n): worker 0 holds 0..n, worker 1 holds n..2n, every vertex of one side a neighbour
    /// of every vertex of the other.
    fn biclique(n: u32) -> (Csr, Vec<u32>) {
        let mut edges = Vec::new();
        for u in 0..n {
            for v in n..2 * n {
                edges.push((u, v));
            }
        }
        let part = (0..2 * n).map(|v| u32::from(v >= n)).collect();
        (Csr::from_edges(2 * n as usize, &edges).0, part)
    }

    fn replay_of(n: u32, d: Delivery, prof: &SwitchProfile) -> (f64, f64) {
        let (g, part) = biclique(n);
        let idx = PairIndex::of(&g, &part, 2);
        let sizes = Sizes {
            segments: 1,
            aggregators: 1 << 20,
            recycle_slack: None,
        };
        let choice = Choice::uniform(2, d);
        let bound = crate::delivery::evaluate(&idx, &part, &choice, prof, sizes)
            .prediction
            .bound_us;
        let t = Tables::new(&idx, &g, &part, &choice, sizes);
        (t.replay(&part, prof, sizes).time_us, bound)
    }

    fn free_recirculation() -> SwitchProfile {
        let mut p = SwitchProfile::named("default").unwrap();
        p.recirc_gbps = 1e12;
        p
    }

    #[test]
    fn per_edge_sums_of_many_senders_drain_after_the_uplinks() {
        let prof = free_recirculation();
        let (n, vec, d) = (16u32, prof.data_frame_us(), prof.delay_us);
        let (replay, bound) = replay_of(n, Delivery::R, &prof);
        // Every sum waits for the last of the n raw vectors, then all n go down.
        let last_arrival = (n - 1) as f64 * vec + vec + d;
        let want = last_arrival + n as f64 * vec + d;
        assert!((replay - want).abs() < 1e-6, "replay {replay} want {want}");
        assert!(
            (bound - (n as f64 * vec + prof.latency_us())).abs() < 1e-6,
            "{bound}"
        );
        assert!(
            (replay - bound - (n - 1) as f64 * vec).abs() < 1e-6,
            "the drain is the downlink's n - 1 vectors the bound overlaps"
        );
    }

    #[test]
    fn partials_complete_as_they_arrive_and_meet_the_bound() {
        let prof = free_recirculation();
        let (replay, bound) = replay_of(16, Delivery::A, &prof);
        assert!(
            (replay - bound).abs() < 1e-6,
            "replay {replay} bound {bound}"
        );
        let (replay, bound) = replay_of(16, Delivery::M, &prof);
        assert!(
            (replay - bound).abs() < 1e-6,
            "replay {replay} bound {bound}"
        );
    }

    #[test]
    fn recirculation_serves_passes_first_come_first_served() {
        // At one pass per frame time, the 2n raw vectors with n targets each need 2n (n - 1)
        // passes: the recirculation, not the links, sets the time.
        let mut prof = SwitchProfile::named("default").unwrap();
        prof.recirc_gbps = prof.link_gbps;
        let n = 16u32;
        let (replay, _) = replay_of(n, Delivery::R, &prof);
        let passes = (2 * n * (n - 1)) as f64 * prof.pass_us();
        assert!(replay > passes, "replay {replay} passes {passes}");
        assert!(
            replay < passes + (n + 1) as f64 * prof.data_frame_us() + prof.latency_us() + 1e-6,
            "replay {replay} passes {passes}"
        );
    }
}
