//! `emma` (APPROXIMATE): Emma's source-node-centric chunking (Emma paper III-A, "Source Node
//! Centric Chunking"; evaluation setting B = 10 in section IV).
//!
//! Model: all vertices are split into [`CHUNKS`] chunks by a seeded uniform draw (vertex `u`
//! is in chunk `draw_key(seed, STREAM, u) % CHUNKS`, [`super::draw_key`]; `seed` is the plan's
//! seed), and one training iteration pushes only one chunk's sources: each boundary vertex of
//! chunk 0 sends its vector (`segments` data frames) once to every remote worker with a
//! neighbour of it (Emma's all-to-all over NCCL, host to host), destinations served
//! round-robin one vector at a time as in `host_based`. The other neighbours use historical
//! embeddings ("moving aggregation"), which cost no traffic. So the simulated unit is one
//! iteration of one layer, about `1 / CHUNKS` of `host_based`'s bytes:
//!
//! `bytes = 2 * sum over boundary u with chunk(u) = 0 of |remote workers of u| * segments * 210`
//!
//! (uplink plus downlink). Approximate: Emma computes with stale embeddings for the rest, so
//! its per-iteration time is not comparable to an exact layer without accuracy results.

use sgnn_plan::Plan;

use super::scheduled::Schedule;
use super::{DATA_WIRE, PRIO_DATA};
use crate::hash::draw_key;

/// Chunks `B` (the paper's setting).
pub const CHUNKS: u64 = 10;
/// Stream id of the chunk draw in [`super::draw_key`].
pub const STREAM: u64 = 0x656d6d61; // "emma"

/// Chunk of vertex `u` under `seed`.
pub fn chunk(seed: u64, u: u32) -> u64 {
    draw_key(seed, STREAM, u as u64) % CHUNKS
}

/// The chunk-0 push of one layer under `plan`'s partition.
pub fn schedule(plan: &Plan) -> Schedule {
    let m = plan.workers() as usize;
    let seed = plan.manifest.config.seed;
    let part = &plan.partition;
    let mut vectors = vec![0u64; m * m];
    let mut parts: Vec<u32> = Vec::new();
    for u in 0..plan.graph.num_vertices() as u32 {
        if chunk(seed, u) != 0 {
            continue;
        }
        let pu = part[u as usize];
        plan.remote_parts(u, &mut parts);
        for &d in &parts {
            vectors[pu as usize * m + d as usize] += 1;
        }
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
