//! `hermod`: the host-based exchange (`host_based`'s traffic) scheduled as Hermod schedules
//! an imbalanced all-to-all (thesis chapter 5: DSCP priorities 5.3.1 and 5.4, matching-based
//! intra-coflow scheduling 5.3.2, Algorithm 3).
//!
//! Model: the transmission matrix `T[i][j]` is the number of feature vectors worker `i` sends
//! to worker `j` (`host_based`: each boundary vertex once to every remote worker with a
//! neighbour of it). Algorithm 3 turns it into a sequence of matchings: repeatedly take a
//! maximum-weight perfect matching of the residual `T` (Hungarian algorithm), weight `w` = the
//! smallest positive matched entry, and subtract `w` from every positive matched entry. In
//! sub-phase `k` each matched pair with traffic left sends `w_k` vectors (`segments` data frames
//! each) at line rate; every receiver hears exactly one sender, so the all-to-all never makes
//! an incast. Line 10 of Algorithm 3 reads "min over all positive entries of `T`" while line 9
//! computes the matched values and leaves them unused; we take the minimum over the matched
//! values (otherwise a small unmatched entry would shrink every sub-phase to it, and some
//! sub-phases would finish no flow).
//!
//! The matching sequence is computed identically at every worker, so no messages synchronise
//! the sub-phases (5.3.2): sub-phase `k` starts at the same planned time everywhere, the sum of
//! the earlier sub-phases' durations at the host's sending rate (`w * segments` frame times).
//! A worker that is matched to nobody with traffic in a sub-phase idles through it.
//!
//! Priorities: Hermod marks each coflow with a 6-bit DSCP ([`dscp`]: micro-batch id, coflow
//! type, layer id; lower is served first) and the switches serve them with strict priority.
//! One layer of full-graph training is one coflow, so every frame here carries the same class
//! (micro-batch 0, layer 0: [`queue`] 7); the classes matter when other traffic shares the
//! switch, which then waits behind the layer's exchange.

use sgnn_plan::Plan;

use super::scheduled::{Cond, Run, Schedule, NO_COND};
use super::DATA_WIRE;
use crate::net::{tx_time, Time};

/// Hermod's DSCP (thesis 5.4): micro-batch id in the top three bits, coflow type (0: feature
/// exchange / pipeline, 1: data-parallel gradients) in the next, layer id in the lowest two.
pub fn dscp(microbatch: u8, coflow_type: u8, layer: u8) -> u8 {
    ((microbatch & 7) << 3) | ((coflow_type & 1) << 2) | (layer & 3)
}

/// The strict-priority queue (0..8, 7 first) of a Hermod DSCP: eight queues cannot hold 64
/// classes, so they serve the micro-batch bits, the most significant factor (MID > CType > LID).
pub fn queue(dscp: u8) -> u8 {
    7 - (dscp >> 3)
}

/// Maximum-weight perfect matching of the square matrix `t` (Hungarian algorithm, O(n^3)):
/// `assign[i]` is the column of row `i`.
pub fn max_weight_matching(t: &[u64], n: usize) -> Vec<usize> {
    // Minimise cost = max - t with potentials (1-based arrays, column 0 is the sentinel).
    let max = t.iter().copied().max().unwrap_or(0) as i128;
    let cost = |i: usize, j: usize| max - t[i * n + j] as i128;
    let inf = i128::MAX / 4;
    let (mut u, mut v) = (vec![0i128; n + 1], vec![0i128; n + 1]);
    let (mut p, mut way) = (vec![0usize; n + 1], vec![0usize; n + 1]);
    for i in 1..=n {
        p[0] = i;
        let mut j0 = 0;
        let mut minv = vec![inf; n + 1];
        let mut used = vec![false; n + 1];
        loop {
            used[j0] = true;
            let i0 = p[j0];
            let mut delta = inf;
            let mut j1 = 0;
            for j in 1..=n {
                if !used[j] {
                    let cur = cost(i0 - 1, j - 1) - u[i0] - v[j];
                    if cur < minv[j] {
                        minv[j] = cur;
                        way[j] = j0;
                    }
                    if minv[j] < delta {
                        delta = minv[j];
                        j1 = j;
                    }
                }
            }
            for j in 0..=n {
                if used[j] {
                    u[p[j]] += delta;
                    v[j] -= delta;
                } else {
                    minv[j] -= delta;
                }
            }
            j0 = j1;
            if p[j0] == 0 {
                break;
            }
        }
        loop {
            let j1 = way[j0];
            p[j0] = p[j1];
            j0 = j1;
            if j0 == 0 {
                break;
            }
        }
    }
    let mut assign = vec![0; n];
    for j in 1..=n {
        if p[j] > 0 {
            assign[p[j] - 1] = j - 1;
        }
    }
    assign
}

/// Algorithm 3: the matchings (row -> column) and their weights, for the `n x n` matrix `t`.
pub fn matchings(mut t: Vec<u64>, n: usize) -> Vec<(Vec<usize>, u64)> {
    let mut out = Vec::new();
    while t.iter().any(|&x| x > 0) {
        let m = max_weight_matching(&t, n);
        let w = (0..n)
            .map(|i| t[i * n + m[i]])
            .filter(|&x| x > 0)
            .min()
            .expect("a maximum-weight matching of a nonzero matrix has a positive entry");
        for (i, &j) in m.iter().enumerate() {
            let x = &mut t[i * n + j];
            *x = x.saturating_sub(w);
        }
        out.push((m, w));
    }
    out
}

/// Vectors worker `w` sends worker `d` under `host_based` (`T[w * M + d]`), Hermod's input:
/// one per boundary vertex of `w` and remote worker with a neighbour of it.
pub fn host_based_matrix(plan: &Plan) -> Vec<u64> {
    let m = plan.workers() as usize;
    let mut t = vec![0u64; m * m];
    let mut parts: Vec<u32> = Vec::new();
    for u in 0..plan.graph.num_vertices() as u32 {
        plan.remote_parts(u, &mut parts);
        let pu = plan.partition[u as usize] as usize;
        for &d in &parts {
            t[pu * m + d as usize] += 1;
        }
    }
    t
}

/// The Hermod schedule of one layer under `plan`'s partition, for hosts sending at
/// `host_bps`.
pub fn schedule(plan: &Plan, host_bps: u64) -> Schedule {
    let m = plan.workers() as usize;
    let segments = plan.manifest.segments;
    let t = host_based_matrix(plan);
    let phases = matchings(t.clone(), m);
    let frame = tx_time(DATA_WIRE as u64, host_bps);
    let prio = queue(dscp(0, 0, 0));
    let mut sched = Schedule::new();
    let mut start: Time = 0;
    let mut conds = Vec::with_capacity(phases.len());
    for (_, w) in &phases {
        conds.push(if start == 0 {
            NO_COND
        } else {
            sched.cond(Cond {
                not_before: start,
                from: 0,
                need: 0,
            })
        });
        start += w * segments as u64 * frame;
    }
    for i in 0..m {
        let mut left: Vec<u64> = t[i * m..(i + 1) * m].to_vec();
        for (k, (matching, w)) in phases.iter().enumerate() {
            let j = matching[i];
            let send = left[j].min(*w);
            left[j] -= send;
            sched.push(Run {
                dst: j as u32,
                frames: (send * segments as u64) as u32,
                wire: DATA_WIRE,
                cond: conds[k],
                prio,
                gated: false,
            });
        }
        debug_assert!(left.iter().all(|&x| x == 0));
        sched.end_host();
    }
    sched
}
