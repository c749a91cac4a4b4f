//! `dgs` (APPROXIMATE): DGS-style sampled mini-batch feature pulls (thesis chapter 3: traffic
//! model 3.1.4, equation 3.4, "|remote sampled nodes| x |features sampled|"; sampler 3.2.3;
//! evaluation settings 3.4: batch 1024, fan-out {64, 64}, feature sampling rate 0.85).
//!
//! The simulated unit is one training iteration (a 2-layer sampled mini-batch), with these
//! documented choices:
//!
//! - Targets: each worker takes the [`BATCH`] vertices of its partition with the smallest
//!   keys `draw_key(seed, TARGETS, v)` (all of them if it has fewer).
//! - Fan-out {64, 64}: every target samples `min(64, degree)` neighbours without replacement:
//!   those with the smallest `draw_key(seed, t, v)` (uniform sampling by random keys); every
//!   distinct hop-1 vertex `x` samples 64 of its neighbours the same way with stream `x` (a
//!   vertex's sample is fixed within the iteration). The sampled set is targets, hop 1 and
//!   hop 2 together, deduplicated.
//! - Pulls: for every remote owner `p`, the worker sends a request of `ceil(k / 32)` data
//!   frames (`k` vertex ids of 4 bytes, 32 per 128-byte payload) and `p` answers, once the
//!   whole request is in, with `k * ceil(ceil(0.85 F) / 32)` data frames (the top 85% of the
//!   `F` feature dimensions, 32 values per frame). Owners answer requests in the order they
//!   complete.
//!
//! Not modelled: the explanation-guided node importance and the locality deviation `epsilon`
//! (sampling here is uniform), model synchronisation (the thesis omits it too), computation.

use std::collections::BTreeMap;

use sgnn_plan::Plan;

use super::scheduled::{Cond, Run, Schedule, NO_COND};
use super::{DATA_WIRE, PRIO_DATA};
use crate::hash::draw_key;

/// Target vertices per worker and iteration.
pub const BATCH: usize = 1024;
/// Neighbours sampled per vertex at each of the two hops.
pub const FANOUT: [usize; 2] = [64, 64];
/// Feature sampling rate `N_f`, in hundredths.
pub const FEATURE_RATE_PCT: u64 = 85;
/// Stream id of the target draw.
pub const TARGETS: u64 = u64::MAX;

/// Data frames per pulled vertex for feature dimension `f`.
pub fn frames_per_vertex(f: u32) -> u64 {
    (f as u64 * FEATURE_RATE_PCT).div_ceil(100).div_ceil(32)
}

/// The `k` smallest of `items` by key, into `out` (cleared first).
fn bottom_k(items: &mut [(u64, u32)], k: usize, out: &mut Vec<u32>) {
    out.clear();
    if items.len() > k {
        items.select_nth_unstable(k);
        out.extend(items[..k].iter().map(|x| x.1));
    } else {
        out.extend(items.iter().map(|x| x.1));
    }
}

/// Vertices worker `w` pulls from each other worker in one iteration: `(owner, count)`.
pub fn pulls(plan: &Plan, w: u32) -> BTreeMap<u32, u64> {
    let n = plan.graph.num_vertices();
    let seed = plan.manifest.config.seed;
    let part = &plan.partition;
    let mut keyed: Vec<(u64, u32)> = (0..n as u32)
        .filter(|&v| part[v as usize] == w)
        .map(|v| (draw_key(seed, TARGETS, v as u64), v))
        .collect();
    let mut frontier = Vec::new();
    bottom_k(&mut keyed, BATCH, &mut frontier);
    let mut in_set = vec![false; n];
    let mut sampled: Vec<u32> = Vec::new();
    for &t in &frontier {
        in_set[t as usize] = true;
        sampled.push(t);
    }
    let mut pick = Vec::new();
    for &k in &FANOUT {
        let mut next = Vec::new();
        for &x in &frontier {
            keyed.clear();
            keyed.extend(
                plan.graph
                    .neighbors(x)
                    .iter()
                    .map(|&v| (draw_key(seed, x as u64, v as u64), v)),
            );
            bottom_k(&mut keyed, k, &mut pick);
            for &v in &pick {
                if !in_set[v as usize] {
                    in_set[v as usize] = true;
                    sampled.push(v);
                    next.push(v);
                }
            }
        }
        frontier = next;
    }
    let mut out = BTreeMap::new();
    for v in sampled {
        let p = part[v as usize];
        if p != w {
            *out.entry(p).or_insert(0) += 1;
        }
    }
    out
}

/// One DGS iteration's pulls (run out of order: owners answer completed requests).
pub fn schedule(plan: &Plan) -> Schedule {
    let m = plan.workers();
    let fpv = frames_per_vertex(plan.manifest.config.feature_dim);
    let all: Vec<BTreeMap<u32, u64>> = (0..m).map(|w| pulls(plan, w)).collect();
    let mut sched = Schedule::new();
    for w in 0..m {
        for k in 1..m {
            let p = (w + k) % m;
            if let Some(&cnt) = all[w as usize].get(&p) {
                sched.push(Run {
                    dst: p,
                    frames: cnt.div_ceil(32) as u32,
                    wire: DATA_WIRE,
                    cond: NO_COND,
                    prio: PRIO_DATA,
                    gated: true,
                });
            }
        }
        for k in 1..m {
            let r = (w + k) % m;
            if let Some(&cnt) = all[r as usize].get(&w) {
                let cond = sched.cond(Cond {
                    not_before: 0,
                    from: r,
                    need: cnt.div_ceil(32),
                });
                sched.push(Run {
                    dst: r,
                    frames: (cnt * fpv) as u32,
                    wire: DATA_WIRE,
                    cond,
                    prio: PRIO_DATA,
                    gated: false,
                });
            }
        }
        sched.end_host();
    }
    sched
}
