//! The traffic model: bytes on the wire for one layer of propagation under each strategy.
//!
//! Every strategy is counted in whole Ethernet frames of the real protocol
//! (`docs/protocol.md`): a feature segment travels in a data frame of
//! [`sgnn_wire::DATA_FRAME_LEN`] bytes, block synchronisation in control frames of
//! [`sgnn_wire::CONTROL_FRAME_LEN`] bytes, and each frame costs [`sgnn_wire::wire_bytes`] on a
//! link (FCS, minimum frame size, preamble and inter-frame gap included). A vertex's feature
//! vector is `segments` frames. "Upload" is what workers send to the switch (their uplinks);
//! "download" is what the switch sends to workers (their downlinks); a host-to-host unicast
//! crosses one of each. Acks of the reliability layer and transport acks of the host-based
//! baselines are left out of every strategy alike (they are small and transport-specific).
//!
//! Strategies (names as they appear in `report.json` under `traffic_bytes.<name>`):
//! - `host_based`: BNS-GCN with p = 1. Each boundary vertex is unicast once to every remote
//!   partition with a neighbour of it and summed at the receiver.
//! - `strawman`: in-network, one block, boundary vertices sent in random order; a destination
//!   gets aggregators at its first contribution if the switch has room, otherwise all its
//!   contributions go to its worker raw (once per source and worker: raw features are cached
//!   and shared by the worker's vertices); aggregators are freed on completion (paper 2.3.2).
//! - `switchgnn`: the plan's blocks: per block every source is uploaded once, every destination
//!   receives one aggregate, and each worker sends one block-done and receives one
//!   block-advance (paper 3.3).
//! - `unlimited`: in-network with unlimited aggregators, the lower bound: every boundary vertex
//!   uploaded once, every boundary vertex receives one aggregate.
//! - `supergcn_mvc`: host-only pre/post aggregation (SuperGCN): per pair of partitions, one
//!   message per vertex of a minimum vertex cover of their cross edges, in each direction.
//!   This module counts its frames from the covers' sizes ([`supergcn_mvc_of`]); the covers
//!   themselves are an algorithm's (a maximum matching), so `supergcn_mvc` and `model`, the
//!   traffic of every strategy keyed by name, are `sgnn_delivery::traffic`'s.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};
use sgnn_wire::{wire_bytes, CONTROL_FRAME_LEN, DATA_FRAME_LEN};

use crate::model::Plan;

/// Names of the strategies, in report order.
pub const STRATEGIES: [&str; 5] = [
    "host_based",
    "strawman",
    "switchgnn",
    "unlimited",
    "supergcn_mvc",
];

/// Bytes one strategy puts on the wire for one layer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StrategyTraffic {
    /// Upload + download + control, in bytes on the wire.
    pub total: u64,
    /// Feature frames from workers to the switch.
    pub upload: u64,
    /// Feature frames from the switch to workers (aggregates and raw deliveries).
    pub download: u64,
    /// Block synchronisation frames (both directions).
    pub control: u64,
    /// Number of frames of all kinds.
    pub frames: u64,
    /// Largest uplink of one worker (upload + its control).
    pub max_worker_uplink: u64,
    /// Largest downlink of one worker.
    pub max_worker_downlink: u64,
    /// Share of remote contributions summed in the switch (in-network strategies only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_network_fraction: Option<f64>,
    /// Most aggregators in use at once (in-network strategies only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_aggregators: Option<u64>,
    /// Per-worker uplink bytes.
    pub per_worker_uplink: Vec<u64>,
    /// Per-worker downlink bytes.
    pub per_worker_downlink: Vec<u64>,
}

/// Accumulates frames per worker link.
struct Links {
    up: Vec<u64>,
    down: Vec<u64>,
    control: u64,
    frames: u64,
    data: u64,
    ctl: u64,
}

impl Links {
    fn new(workers: u32, segments: u32) -> Links {
        Links {
            up: vec![0; workers as usize],
            down: vec![0; workers as usize],
            control: 0,
            frames: 0,
            data: wire_bytes(DATA_FRAME_LEN) * segments as u64,
            ctl: wire_bytes(CONTROL_FRAME_LEN),
        }
    }

    /// One feature vector (all segments) on worker `w`'s uplink, `times` times.
    fn upload(&mut self, w: u32, times: u64) {
        self.up[w as usize] += self.data * times;
        self.frames += times * (self.data / wire_bytes(DATA_FRAME_LEN));
    }

    fn download(&mut self, w: u32, times: u64) {
        self.down[w as usize] += self.data * times;
        self.frames += times * (self.data / wire_bytes(DATA_FRAME_LEN));
    }

    /// One control frame up from every worker and one down to every worker.
    fn block_sync(&mut self) {
        for w in 0..self.up.len() {
            self.up[w] += self.ctl;
            self.down[w] += self.ctl;
            self.control += 2 * self.ctl;
            self.frames += 2;
        }
    }

    fn finish(self) -> StrategyTraffic {
        let up: u64 = self.up.iter().sum();
        let down: u64 = self.down.iter().sum();
        StrategyTraffic {
            total: up + down,
            upload: up - self.control / 2,
            download: down - self.control / 2,
            control: self.control,
            frames: self.frames,
            max_worker_uplink: self.up.iter().copied().max().unwrap_or(0),
            max_worker_downlink: self.down.iter().copied().max().unwrap_or(0),
            in_network_fraction: None,
            peak_aggregators: None,
            per_worker_uplink: self.up,
            per_worker_downlink: self.down,
        }
    }
}

/// `host_based`: BNS-GCN with p = 1.
pub fn host_based(plan: &Plan) -> StrategyTraffic {
    let mut links = Links::new(plan.workers(), plan.manifest.segments);
    let mut parts = Vec::new();
    for u in 0..plan.graph.num_vertices() as u32 {
        plan.remote_parts(u, &mut parts);
        links.upload(plan.partition[u as usize], parts.len() as u64);
        for &p in &parts {
            links.download(p, 1);
        }
    }
    links.finish()
}

/// `unlimited`: in-network aggregation with unlimited aggregators (the lower bound).
pub fn unlimited(plan: &Plan) -> StrategyTraffic {
    let mut links = Links::new(plan.workers(), plan.manifest.segments);
    let mut parts = Vec::new();
    let mut peak = 0u64;
    for u in 0..plan.graph.num_vertices() as u32 {
        plan.remote_parts(u, &mut parts);
        if !parts.is_empty() {
            let p = plan.partition[u as usize];
            links.upload(p, 1);
            links.download(p, 1);
            peak += plan.manifest.segments as u64;
        }
    }
    let mut t = links.finish();
    t.in_network_fraction = Some(1.0);
    t.peak_aggregators = Some(peak);
    t
}

/// `switchgnn`: the plan's blocks, with block synchronisation.
pub fn switchgnn(plan: &Plan) -> StrategyTraffic {
    let mut links = Links::new(plan.workers(), plan.manifest.segments);
    let mut peak = 0u64;
    for block in &plan.blocks {
        // A source is a vertex or a pre-aggregated partial, sent by its owner (an id that is
        // neither is refused by `verify` and every reader; it counts nowhere here).
        for w in block.sources.iter().filter_map(|&u| plan.owner(u)) {
            links.upload(w, 1);
        }
        for slot in &block.aggregators {
            links.download(plan.partition[slot.dst as usize], 1);
        }
        links.block_sync();
        peak = peak.max(block.aggregators_used(plan.manifest.segments));
    }
    let mut t = links.finish();
    t.in_network_fraction = Some(1.0);
    t.peak_aggregators = Some(peak);
    t
}

/// The feature vectors (each `segments` data frames) one block puts on every worker's links:
/// what the plan's pacing is computed from ([`pace`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BlockLoad {
    /// Vectors each worker sends: its raw sources and partials.
    pub up: Vec<u64>,
    /// Vectors each worker receives: one sum per aggregator row it owns, and one raw copy per
    /// vertex replicated to it.
    pub down: Vec<u64>,
}

impl BlockLoad {
    /// The block's planned span, in vector times at line rate: its busiest uplink, or its
    /// busiest downlink stretched by [`PACE_HEADROOM`], whichever is longer. Every worker
    /// spreads its sends of the block over it ([`BlockLoad::share`]).
    pub fn span(&self) -> f64 {
        let up = self.up.iter().copied().max().unwrap_or(0) as f64;
        let down = self.down.iter().copied().max().unwrap_or(0) as f64;
        up.max(down * PACE_HEADROOM)
    }

    /// The share of line rate at which worker `w` sends its vectors of the block so that they
    /// span [`BlockLoad::span`]: `k / span` for `k` vectors, at most 1 (1 for a worker that
    /// sends nothing).
    pub fn share(&self, w: usize) -> f64 {
        let k = self.up.get(w).copied().unwrap_or(0) as f64;
        let span = self.span();
        if k == 0.0 || span <= 0.0 {
            1.0
        } else {
            (k / span).min(1.0)
        }
    }
}

/// How much longer than its busiest downlink a block's sends are spread (planned pacing,
/// docs/host.md "Planned pacing"). A downlink planned at exactly its capacity cannot make up
/// the time it idles while its first sums complete, so it ends the block with a queue that
/// grows with the block's length; planned below capacity by this factor, the plan's own
/// queues stay bounded whatever the block's length.
pub const PACE_HEADROOM: f64 = 1.05;

/// Every block's [`BlockLoad`], in block order. Ids that are neither a vertex nor a partial
/// (refused by `verify`) count nowhere.
pub fn block_loads(plan: &Plan) -> Vec<BlockLoad> {
    let m = plan.workers() as usize;
    plan.blocks
        .iter()
        .map(|block| {
            let mut l = BlockLoad {
                up: vec![0; m],
                down: vec![0; m],
            };
            for &src in &block.sources {
                if let Some(w) = plan.owner(src).filter(|&w| (w as usize) < m) {
                    l.up[w as usize] += 1;
                }
                for &p in plan.replicas(src) {
                    if let Some(d) = l.down.get_mut(p as usize) {
                        *d += 1;
                    }
                }
            }
            for slot in &block.aggregators {
                let owner = plan.partition.get(slot.dst as usize);
                if let Some(d) = owner.and_then(|&p| l.down.get_mut(p as usize)) {
                    *d += 1;
                }
            }
            l
        })
        .collect()
}

/// The plan's pacing of worker `w` (docs/host.md, "Planned pacing"): per block, the share of
/// its line rate at which its sends of that block span the block ([`BlockLoad::share`]), so
/// that every worker's sends end together and no downlink receives faster than it drains,
/// however the plan's sends converge on it.
pub fn pace(loads: &[BlockLoad], w: usize) -> Vec<f64> {
    loads.iter().map(|l| l.share(w)).collect()
}

/// Remote-neighbour count of every vertex.
fn remote_degrees(plan: &Plan) -> Vec<u32> {
    (0..plan.graph.num_vertices() as u32)
        .map(|u| {
            let pu = plan.partition[u as usize];
            plan.graph
                .neighbors(u)
                .iter()
                .filter(|&&v| plan.partition[v as usize] != pu)
                .count() as u32
        })
        .collect()
}

/// The strawman's send order: the boundary vertices (those with a remote neighbour) in the
/// seeded random order [`strawman`] processes them in (the simulator's `strawman` sends each
/// worker's boundary vertices in this order).
pub fn strawman_order(plan: &Plan, seed: u64) -> Vec<u32> {
    strawman_order_of(&remote_degrees(plan), seed)
}

fn strawman_order_of(remaining: &[u32], seed: u64) -> Vec<u32> {
    let mut boundary: Vec<u32> = (0..remaining.len() as u32)
        .filter(|&u| remaining[u as usize] > 0)
        .collect();
    boundary.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(seed));
    boundary
}

/// `strawman`: random order, first-come aggregators, overflow delivered raw (paper 2.3.2).
pub fn strawman(plan: &Plan, seed: u64) -> StrategyTraffic {
    let n = plan.graph.num_vertices();
    let segments = plan.manifest.segments as u64;
    let capacity = plan.manifest.aggregators / segments;
    let mut links = Links::new(plan.workers(), plan.manifest.segments);
    let mut remaining = remote_degrees(plan);
    let boundary = strawman_order_of(&remaining, seed);
    const FREE: u8 = 0;
    const IN_SWITCH: u8 = 1;
    const HOST: u8 = 2;
    let mut state = vec![FREE; n];
    let mut in_use = 0u64;
    let mut peak = 0u64;
    let mut total = 0u64;
    let mut aggregated = 0u64;
    let mut raw_parts: Vec<u32> = Vec::new();
    for &u in &boundary {
        let pu = plan.partition[u as usize];
        links.upload(pu, 1);
        raw_parts.clear();
        for &v in plan.graph.neighbors(u) {
            let pv = plan.partition[v as usize];
            if pv == pu {
                continue;
            }
            total += 1;
            if state[v as usize] == FREE {
                if in_use < capacity {
                    in_use += 1;
                    peak = peak.max(in_use);
                    state[v as usize] = IN_SWITCH;
                } else {
                    state[v as usize] = HOST;
                }
            }
            if state[v as usize] == IN_SWITCH {
                aggregated += 1;
                remaining[v as usize] -= 1;
                if remaining[v as usize] == 0 {
                    links.download(pv, 1);
                    in_use -= 1;
                }
            } else if !raw_parts.contains(&pv) {
                raw_parts.push(pv);
                links.download(pv, 1);
            }
        }
    }
    let mut t = links.finish();
    t.in_network_fraction = Some(if total == 0 {
        1.0
    } else {
        aggregated as f64 / total as f64
    });
    t.peak_aggregators = Some(peak * segments);
    t
}

/// `supergcn_mvc` from the size of a minimum vertex cover of the cross edges of every pair of
/// partitions `(p, q)` with cross edges: SuperGCN sends that many vectors from `p` to `q` and as
/// many from `q` to `p`. The covers are an algorithm's (a maximum matching, Konig's theorem),
/// computed on the planning side (`sgnn_delivery::traffic::supergcn_covers`, which
/// `sgnn_delivery::traffic::supergcn_mvc` passes here); this counts their frames.
pub fn supergcn_mvc_of(
    plan: &Plan,
    covers: impl IntoIterator<Item = ((u32, u32), u64)>,
) -> StrategyTraffic {
    let mut links = Links::new(plan.workers(), plan.manifest.segments);
    for ((p, q), cover) in covers {
        links.upload(p, cover);
        links.download(q, cover);
        links.upload(q, cover);
        links.download(p, cover);
    }
    links.finish()
}
