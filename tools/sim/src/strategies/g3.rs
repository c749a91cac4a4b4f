//! `g3`: G3's peer-to-peer push (thesis chapter 4: partitioning 4.3.2, push and scheduling
//! 4.2.1, 4.4.2-4.4.3), on a plan partitioned with `--partitioner g3` (the strategy's
//! [`crate::PlanVariant`]).
//!
//! Model: every worker pushes, for each of its boundary vertices, one feature vector
//! (`segments` data frames) to every remote worker with a neighbour of it, host to host through
//! the switch (G3's model-parallel dimension, 4.2.1). The order is G3's node computation
//! priority: the worker's vertices in BFS visit order over its partition (4.4.3 step 1; BFS
//! from the lowest unvisited id of each component, neighbours in id order), boundary vertices
//! first, and among them those with more remote neighbours first (4.4.2: they generate more
//! communication, so their transmission should start earliest; the sort is stable, so BFS order
//! breaks ties). A vertex's vector goes to all its remote workers back to back (destinations
//! from the next worker up, cyclically), as soon as it is computed. Compute time is zero here,
//! so the bins and pipelines of 4.4 only show up as this order.
//!
//! Difference from `host_based`: the bytes are the same formula (`traffic::host_based` on the
//! G3-partitioned plan: the test checks it); the partition balances remote vertices across
//! workers (so per-worker uplinks are balanced), and the send order is vertex-major by priority
//! instead of `host_based`'s destination round-robin one vector at a time.

use sgnn_plan::Plan;

use super::scheduled::{Run, Schedule, NO_COND};
use super::{DATA_WIRE, PRIO_DATA};

/// The G3 push schedule of one layer under `plan`'s partition.
pub fn schedule(plan: &Plan) -> Schedule {
    let m = plan.workers();
    let n = plan.graph.num_vertices();
    let part = &plan.partition;
    let segments = plan.manifest.segments;
    // BFS order per worker over local edges.
    let mut visited = vec![false; n];
    let mut order: Vec<Vec<u32>> = vec![Vec::new(); m as usize];
    let mut queue = std::collections::VecDeque::new();
    for s in 0..n as u32 {
        if visited[s as usize] {
            continue;
        }
        let p = part[s as usize];
        visited[s as usize] = true;
        queue.push_back(s);
        while let Some(u) = queue.pop_front() {
            order[p as usize].push(u);
            for &v in plan.graph.neighbors(u) {
                if part[v as usize] == p && !visited[v as usize] {
                    visited[v as usize] = true;
                    queue.push_back(v);
                }
            }
        }
    }
    let mut sched = Schedule::new();
    let mut parts: Vec<u32> = Vec::new();
    let mut prio: Vec<(u32, u32)> = Vec::new();
    for (w, verts) in order.iter().enumerate() {
        prio.clear();
        for &u in verts {
            let r = plan
                .graph
                .neighbors(u)
                .iter()
                .filter(|&&v| part[v as usize] != w as u32)
                .count() as u32;
            if r > 0 {
                prio.push((u, r));
            }
        }
        prio.sort_by_key(|x| std::cmp::Reverse(x.1)); // stable: BFS order among equals
        for &(u, _) in &prio {
            // Remote workers in round-robin order starting at the next worker.
            plan.remote_parts(u, &mut parts);
            parts.sort_unstable_by_key(|&p| (p + m - w as u32 - 1) % m);
            for &d in &parts {
                sched.push(Run {
                    dst: d,
                    frames: segments,
                    wire: DATA_WIRE,
                    cond: NO_COND,
                    prio: PRIO_DATA,
                    gated: false,
                });
            }
        }
        sched.end_host();
    }
    sched
}
