//! `supergcn`: SuperGCN's host-only pre/post aggregation (SuperGCN paper section 5.2-5.3,
//! "Pre- and Post-aggregation" and "Constructing Pre- and Post-aggregation Subgraph is Finding
//! Minimum Vertex Cover"; the planner's `sgnn_delivery::traffic::supergcn_mvc`).
//!
//! Model: for every pair of partitions `(p, q)` take a minimum vertex cover `C` of the
//! bipartite graph of their cross edges (`traffic::supergcn_covers`, Hopcroft-Karp and Konig).
//! Every cross edge has an endpoint in `C`, so `p` sends `q` one vector per cover vertex: the
//! raw feature of a cover vertex of `p` (post-aggregation: `q` adds it to each of its
//! neighbours), or for a cover vertex of `q` the partial sum of its neighbours in `p`
//! (pre-aggregation at the sender). Both directions carry `|C|` vectors (`segments` data
//! frames each). Workers serve their destinations round-robin one vector at a time from the
//! next worker up, as `host_based` does. Int2 quantization is not modelled (full-width
//! vectors), as in the traffic model.

use sgnn_plan::Plan;

use super::scheduled::Schedule;
use super::{DATA_WIRE, PRIO_DATA};

/// The SuperGCN exchange of one layer under `plan`'s partition.
pub fn schedule(plan: &Plan) -> Schedule {
    let m = plan.workers() as usize;
    let mut vectors = vec![0u64; m * m];
    for ((p, q), cover) in sgnn_delivery::traffic::supergcn_covers(plan) {
        vectors[p as usize * m + q as usize] = cover;
        vectors[q as usize * m + p as usize] = cover;
    }
    let mut sched = Schedule::new();
    sched.round_robin(
        m as u32,
        plan.manifest.segments,
        DATA_WIRE,
        PRIO_DATA,
        |w, d| vectors[w as usize * m + d as usize],
    );
    sched
}
