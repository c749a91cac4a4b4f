//! A replay of one layer's delivery in time: the cost model's refinement of the busiest-link
//! bound ([`super::Prediction::bound_us`]).
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
//!   that pass and the others on the recirculation port, a FIFO of passes that a vector
//!   re-enters at the tail after each of its passes, behind what arrived meanwhile (`R`); a
//!   partial is added in its arrival pass (`A`, `C`);
//! - a sum is ready at its last contribution's pass and goes down to its worker;
//! - every downlink is a work-conserving queue of vectors in order of availability, so its
//!   last frame leaves when its last busy period ends, whatever the priorities within it;
//! - a worker sends BlockDone once its own vectors of the block are out and its last one has
//!   arrived; the switch multicasts BlockAdvance when every BlockDone is in, and the next
//!   block (or, after the last block, the next round) starts when it arrives: the daemons'
//!   block synchronisation, which the last block pays too.
//!
//! The daemons' control frames of loss recovery are replayed too (docs/host.md, "Loss
//! recovery"): after its last vector of a block (at the block's start if it sends none) each
//! worker sends a tail probe, which the switch answers to it; the last probe to arrive is
//! answered instead by the all-sent notice to every worker (one control frame each: every
//! uplink carries its probe after its data, every downlink an answer and the notice, the
//! last prober's the notice only).
//!
//! Cost: O(V log V + D log D) for V vectors sent and D vectors delivered. The packet-level
//! simulator runs the daemons and the switch's pipeline on the same schedule frame by frame
//! (`tools/sim`, `RealTraffic`); `docs/planner.md` ("Cost model") gives the replay's error
//! against it.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use sgnn_plan::profile::SwitchProfile;
use sgnn_plan::traffic::BlockLoad;

use crate::cost::Sizes;
use crate::layout::Tables;

/// A time, totally ordered (the replay's times are finite).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Ordered(f64);

impl Eq for Ordered {}

impl PartialOrd for Ordered {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

impl Ord for Ordered {
    fn cmp(&self, o: &Self) -> Ordering {
        self.0.total_cmp(&o.0)
    }
}

/// One layer's delivery replayed in time.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Replay {
    /// When the round ends (the last block's BlockAdvance reaches the workers), microseconds
    /// from the start of the layer.
    pub time_us: f64,
    /// When each block's last sum completed at the switch.
    pub block_done_us: Vec<f64>,
}

impl Tables {
    /// The vectors block `b` puts on every worker's links, as
    /// [`sgnn_plan::traffic::block_loads`] counts them in the lowered plan: each worker's sends,
    /// and each worker's rows and raw copies replicated to it.
    pub fn block_load(&self, part: &[u32], b: u32) -> BlockLoad {
        let m = self.raw_send.len();
        let mut l = BlockLoad {
            up: vec![0; m],
            down: vec![0; m],
        };
        for (q, up) in l.up.iter_mut().enumerate() {
            let sends = self.sends(q, b);
            *up = sends.len() as u64;
            for s in sends.iter().filter(|s| !s.partial) {
                let v = s.vertex as usize;
                for &p in &self.mcast[self.mcast_off[v]..self.mcast_off[v + 1]] {
                    l.down[p as usize] += 1;
                }
            }
        }
        if !self.row_dst.is_empty() {
            let lo = self.block_start.get(b as usize).copied().unwrap_or(0) as usize;
            let hi = self
                .block_start
                .get(b as usize + 1)
                .map_or(self.row_dst.len(), |&h| h as usize);
            for &v in &self.row_dst[lo..hi] {
                l.down[part[v as usize] as usize] += 1;
            }
        }
        l
    }

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
        // What each worker's downlink carries in the current block: (availability at the
        // switch, time on the link) of every vector and control frame; when each downlink is
        // free; when each worker's tail probe reaches the switch.
        let mut down: Vec<Vec<(f64, f64)>> = vec![Vec::new(); m];
        let mut probe_in = vec![0f64; m];
        // When each worker's last vector of the block is out (its BlockDone waits for that,
        // not for its probe).
        let mut data_out = vec![0f64; m];
        let mut down_free = vec![0f64; m];
        // When each worker's uplink is free, and when the block starts (its BlockAdvance).
        let mut up_free = vec![0f64; m];
        let mut start = 0f64;
        let mut recirc_free = 0f64;
        let mut block_done_us = Vec::with_capacity(self.blocks as usize);
        let mut arrivals: Vec<(f64, u32, usize)> = Vec::new();
        let ctl = prof.control_frame_us();
        for b in 0..self.blocks.max(1) {
            arrivals.clear();
            // Planned pacing: each worker spreads its vectors over the block's span.
            let load = self.block_load(part, b);
            for (q, free) in up_free.iter_mut().enumerate() {
                let t0 = free.max(start);
                let sends = self.sends(q, b);
                let every = vec_us / load.share(q);
                // A paced vector's frames leave one per `every / seg`: it is whole at the
                // switch when its last frame is, which the downlink then follows frame by
                // frame (a vector at line rate: its first frame time, as before).
                let spread = (seg - 1.0) * (every / seg - tau);
                for i in 0..sends.len() {
                    arrivals.push((t0 + i as f64 * every + tau + delay + spread, q as u32, i));
                }
                *free = t0
                    + sends.len().saturating_sub(1) as f64 * every
                    + if sends.is_empty() { 0.0 } else { vec_us };
                data_out[q] = *free;
                // The tail probe after the last vector (at the start if none).
                probe_in[q] = *free + ctl + delay;
                *free += ctl;
            }
            // Each probe is answered to its worker, but the last one to arrive, which becomes
            // the all-sent notice to every worker.
            let last = (0..m)
                .max_by(|&a, &b| probe_in[a].total_cmp(&probe_in[b]))
                .unwrap_or(0);
            for (q, d) in down.iter_mut().enumerate() {
                if q != last {
                    d.push((probe_in[q], ctl));
                }
                d.push((probe_in[last], ctl));
            }
            // Arrival order matters only to the recirculation queue.
            arrivals.sort_by(|a, b| a.0.total_cmp(&b.0));
            let mut done_at = start;
            let mut complete =
                |row: u32, at: f64, ready: &mut [f64], down: &mut [Vec<(f64, f64)>]| {
                    let r = row as usize;
                    ready[r] = ready[r].max(at);
                    count[r] += 1;
                    if count[r] == self.row_expected[r] {
                        let dst = part[self.row_dst[r] as usize] as usize;
                        down[dst].push((ready[r], vec_us));
                        done_at = done_at.max(ready[r]);
                    }
                };
            // The recirculation port: a FIFO of passes served one vector (its `segments`
            // frames) at a time; a vector's next pass re-enters at the tail when its pass is
            // done, behind whatever arrived meanwhile, as on the switch. Entries are
            // (enqueue time, order, arrival index, target index).
            let mut fifo: BinaryHeap<Reverse<(Ordered, u64, usize, usize)>> = BinaryHeap::new();
            let mut order = 0u64;
            let vector_pass = seg * pass;
            let serve_until = |until: f64,
                               fifo: &mut BinaryHeap<Reverse<(Ordered, u64, usize, usize)>>,
                               order: &mut u64,
                               recirc_free: &mut f64,
                               complete: &mut dyn FnMut(u32, f64)| {
                while let Some(&Reverse((Ordered(enq), _, ai, j))) = fifo.peek() {
                    let begin = recirc_free.max(enq);
                    if begin > until {
                        break;
                    }
                    fifo.pop();
                    let done = begin + vector_pass;
                    *recirc_free = done;
                    let (_, q, i) = arrivals[ai];
                    let v = self.sends(q as usize, b)[i].vertex as usize;
                    let targets = &self.r_rows[self.r_off[v]..self.r_off[v + 1]];
                    complete(targets[j], done);
                    if j + 1 < targets.len() {
                        *order += 1;
                        fifo.push(Reverse((Ordered(done), *order, ai, j + 1)));
                    }
                }
            };
            for (ai, &(a, q, i)) in arrivals.iter().enumerate() {
                serve_until(
                    a,
                    &mut fifo,
                    &mut order,
                    &mut recirc_free,
                    &mut |row, at| complete(row, at, &mut ready, &mut down),
                );
                let s = self.sends(q as usize, b)[i];
                let v = s.vertex as usize;
                if s.partial {
                    complete(self.row_of[v], a, &mut ready, &mut down);
                    continue;
                }
                for &p in &self.mcast[self.mcast_off[v]..self.mcast_off[v + 1]] {
                    down[p as usize].push((a, vec_us));
                }
                let targets = &self.r_rows[self.r_off[v]..self.r_off[v + 1]];
                if targets.is_empty() {
                    continue;
                }
                // Pass 0 on arrival, the others on the recirculation port; a replicated vertex
                // spends pass 0 on its replication, so all its sums are recirculated.
                let replicated = self.mcast_off[v + 1] > self.mcast_off[v];
                let first = if replicated {
                    0
                } else {
                    complete(targets[0], a, &mut ready, &mut down);
                    1
                };
                if targets.len() > first {
                    order += 1;
                    fifo.push(Reverse((Ordered(a), order, ai, first)));
                }
            }
            serve_until(
                f64::INFINITY,
                &mut fifo,
                &mut order,
                &mut recirc_free,
                &mut |row, at| complete(row, at, &mut ready, &mut down),
            );
            block_done_us.push(done_at);
            // Each worker's downlink drains the block's vectors; its BlockDone leaves once its
            // own vectors are out and its last vector is in, and reaches the switch a control
            // frame and a link crossing later.
            let mut all_done = start;
            for (w, list) in down.iter_mut().enumerate() {
                list.sort_by(|a, b| a.0.total_cmp(&b.0));
                // The worker's BlockDone waits for its vectors, not for the acks to it.
                let mut t = down_free[w];
                let mut last_vector = None;
                for &(a, len) in list.iter() {
                    t = t.max(a) + len;
                    if len == vec_us {
                        last_vector = Some(t);
                    }
                }
                down_free[w] = t;
                let last_in = last_vector.map_or(start, |t| t + delay);
                list.clear();
                let done = last_in.max(data_out[w]).max(start);
                all_done = all_done.max(done + ctl + delay);
            }
            // BlockAdvance: one control frame and a link crossing to every worker.
            start = all_done + ctl + delay;
        }
        let time_us = start;
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
    use crate::choice::{Choice, Delivery};
    use crate::pair_index::PairIndex;

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
            seen_cells: u64::MAX,
        };
        let choice = Choice::uniform(2, d);
        let bound = crate::cost::evaluate(&idx, &part, &choice, prof, sizes)
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

    /// A vector's time at the pace of a worker that sends as many vectors as its busiest
    /// downlink receives: planned pacing spreads them over the downlink's time stretched by
    /// [`sgnn_plan::traffic::PACE_HEADROOM`].
    fn paced(vec: f64) -> f64 {
        vec * sgnn_plan::traffic::PACE_HEADROOM
    }

    #[test]
    fn per_edge_sums_of_many_senders_drain_after_the_uplinks() {
        let prof = free_recirculation();
        let (n, vec, d) = (16u32, prof.data_frame_us(), prof.delay_us);
        let (replay, bound) = replay_of(n, Delivery::R, &prof);
        // Every sum waits for the last of the n raw vectors (sent one per paced vector time),
        // then all n go down (the probe answers and the all-sent notice come later and follow
        // them), then the block's BlockDone goes up and its BlockAdvance down.
        let last_arrival = (n - 1) as f64 * paced(vec) + vec + d;
        let want = last_arrival + n as f64 * vec + d + prof.sync_us();
        assert!((replay - want).abs() < 1e-6, "replay {replay} want {want}");
        assert!(
            (bound - (n as f64 * vec + prof.latency_us() + prof.sync_us())).abs() < 1e-6,
            "{bound}"
        );
        assert!(
            (replay - bound - (n - 1) as f64 * paced(vec)).abs() < 1e-6,
            "the drain is the downlink's n - 1 vectors the bound overlaps"
        );
    }

    #[test]
    fn partials_complete_as_they_arrive_and_meet_the_paced_bound() {
        let prof = free_recirculation();
        let (n, vec) = (16u32, prof.data_frame_us());
        // The probes and the all-sent notice follow a worker's last partial: off the path.
        // The bound overlaps the links at line rate; the paced senders take the headroom on
        // every vector but the last.
        for d in [Delivery::A, Delivery::M] {
            let (replay, bound) = replay_of(n, d, &prof);
            let want = bound + (n - 1) as f64 * (paced(vec) - vec);
            assert!(
                (replay - want).abs() < 1e-6,
                "{d:?}: replay {replay} want {want} (bound {bound})"
            );
        }
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
            replay
                < passes
                    + (n + 1) as f64 * prof.data_frame_us()
                    + prof.latency_us()
                    + prof.sync_us()
                    + 1e-6,
            "replay {replay} passes {passes}"
        );
    }
}
