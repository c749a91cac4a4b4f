//! `grappa` (APPROXIMATE): Grappa's gradient-only communication (Grappa paper 3.2 isolated
//! training, 3.3 dynamic repartitioning by chunk sweeping, 3.5 controller).
//!
//! Partitions train in isolation, so a layer exchanges no features at all; an iteration
//! all-reduces the gradients, and every super-epoch each worker loads one more chunk of the
//! graph. The simulated unit is one training iteration, with these documented assumptions:
//!
//! - Gradients: one GCN layer's square weight matrix, `F x F` 32-bit values (`F` = the
//!   plan's feature dimension), 32 values per data frame: `G = ceil(F^2 / 32)` frames.
//! - Ring all-reduce (reduce-scatter then all-gather) over the `M` workers: `2 (M - 1)` steps;
//!   in each step worker `w` sends one chunk of `C = ceil(G / M)` frames to `w + 1 (mod M)`,
//!   and step `s >= 1` starts only once `s` chunks from `w - 1` have arrived (the data
//!   dependency of the ring).
//! - Repartitioning: `M + 1` graph chunks (paper 3.3, "with M + 1 chunks"), a super-epoch of
//!   `c - 1 = M` epochs (the controller's target of `e / (c - 1)` super-epochs for `e` epochs,
//!   3.5), one iteration per epoch (full-graph). Each repartition, worker `w` loads one chunk
//!   of `ceil(n / (M + 1))` vertices' features from worker `w + 1 (mod M)`; amortised over the
//!   `M` iterations of a super-epoch that is `R = ceil(ceil(n / (M + 1)) * segments / M)` data
//!   frames per iteration, sent at a lower priority (queue 1) than the all-reduce (queue 2)
//!   and whenever the ring step is blocked. Topology bytes are left out.
//!
//! Per worker: uplink = downlink = `(2 (M - 1) C + R) * 210` bytes; total `2 M` times that.

use sgnn_plan::Plan;

use super::scheduled::{Cond, Run, Schedule, NO_COND};
use super::{DATA_WIRE, PRIO_DATA};

/// Priority queue of the amortised repartition traffic (below the all-reduce).
pub const PRIO_REPARTITION: u8 = 1;

/// `(G, C, R)`: gradient frames, ring chunk frames, repartition frames per iteration.
pub fn sizes(plan: &Plan) -> (u64, u64, u64) {
    let m = plan.workers() as u64;
    let f = plan.manifest.config.feature_dim as u64;
    let g = (f * f).div_ceil(32);
    let c = g.div_ceil(m);
    let chunk_vertices = (plan.graph.num_vertices() as u64).div_ceil(m + 1);
    let r = (chunk_vertices * plan.manifest.segments as u64).div_ceil(m);
    (g, c, r)
}

/// One Grappa iteration's communication (run out of order: the ring first when ready).
pub fn schedule(plan: &Plan) -> Schedule {
    let m = plan.workers();
    let (_, c, r) = sizes(plan);
    let mut sched = Schedule::new();
    for w in 0..m {
        if m > 1 {
            let next = (w + 1) % m;
            let prev = (w + m - 1) % m;
            for s in 0..2 * (m as u64 - 1) {
                let cond = sched.cond(Cond {
                    not_before: 0,
                    from: prev,
                    need: s * c,
                });
                sched.push(Run {
                    dst: next,
                    frames: c as u32,
                    wire: DATA_WIRE,
                    cond,
                    prio: PRIO_DATA,
                    gated: true,
                });
            }
        }
        if m > 1 {
            // w sends the chunk its predecessor loads.
            sched.push(Run {
                dst: (w + m - 1) % m,
                frames: r as u32,
                wire: DATA_WIRE,
                cond: NO_COND,
                prio: PRIO_REPARTITION,
                gated: false,
            });
        }
        sched.end_host();
    }
    sched
}
