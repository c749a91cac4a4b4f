//! The cost model of a delivery: the load each per-pair choice ([`Delivery`]) puts on every
//! host link and on the switch's recirculation path, and the predicted time of one layer's
//! exchange ([`Prediction`]): the busiest-link bound of a choice ([`evaluate`], kept up to date
//! pair by pair for the `auto` search), refined by a replay of the schedule its tables run
//! ([`Replay`], in `cost/replay.rs`); the paper's plan predicted block by block
//! ([`predict_paper`]) or bounded without its blocks ([`bound_paper`]); and the host-based
//! baseline ([`predict_host_based`]).
//!
//! The four ways ([`Delivery`]), counted per feature segment (one data frame):
//! - `H`, host-based unicast: every boundary vertex u of q with a neighbour in p is sent to p.
//!   Uplink of q and downlink of p: one frame per such u.
//! - `M`, multicast raw features: u is sent once and the switch replicates it to every
//!   partition chosen `M` (or `R`) for it; p sums on the host. Uplink of q: one frame per u
//!   over all its `M`/`R` partitions; downlink of p: one frame per u.
//! - `A`, in-switch sum of host pre-aggregated partials: q sums its own neighbours of each v of
//!   p and sends one partial per (v, q); the switch adds the partials of all `A`/`R` senders of
//!   v in one aggregator, one pass each. Uplink of q: one frame per v; downlink of p: one frame
//!   per v over all its `A`/`R` senders.
//! - `R`, the paper's per-edge aggregation: raw u (uploaded as for `M`) is added into the
//!   aggregator of each neighbour v in p, one recirculation pass per cross edge after the
//!   first; p receives one sum per v (shared with `A`).
//!
//! The cost model of one layer on a star (every term in microseconds):
//!
//! ```text
//! T = max(busiest uplink, busiest downlink, recirculation passes x pass time)
//!     + (blocks - 1) x barrier + sync + latency
//! ```
//!
//! plus the latency of one frame's trip ([`SwitchProfile::latency_us`]), where a link's time is
//! its frames times the data frame time of the profile, `blocks` is the number of rounds the
//! in-switch destinations need (`ceil(destinations x segments / aggregators)`, and at least
//! `ceil(sends / (seen_cells / segments))`: a block's sources, the raw vertices and partials of
//! every worker sent in it, take one cell each per segment of the switch's `src_seen`
//! register, [`SwitchProfile::seen_cells`]; at least 1: the plan the daemons run has one block
//! even when nothing is summed in the switch), a barrier
//! ([`SwitchProfile::barrier_us`]) separates two consecutive blocks and the last block ends
//! with the BlockDone / BlockAdvance exchange ([`SwitchProfile::sync_us`]), as the daemons and
//! the switch run them. `R` re-sends a source in every block it appears in
//! (the paper's multi-level blocks), which this count does not model, so `R` is only chosen when
//! every in-switch destination fits in one block. The paper's own plan is predicted block by
//! block from its tables ([`predict_paper`]).

mod replay;

pub use replay::Replay;

use std::collections::HashSet;

use serde::{Deserialize, Serialize};
use sgnn_plan::profile::SwitchProfile;
use sgnn_plan::traffic::StrategyTraffic;
use sgnn_plan::Plan;
use sgnn_wire::{wire_bytes, CONTROL_FRAME_LEN, DATA_FRAME_LEN};

use crate::choice::{Choice, Delivery};
use crate::layout::Tables;
use crate::pair_index::PairIndex;

/// What one layer costs under a choice, counted per feature segment.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    /// Predicted time of one layer's exchange, microseconds: the replay of the delivery's
    /// schedule ([`Tables::replay`]) where the planner built its tables, else [`Self::bound_us`].
    pub time_us: f64,
    /// The busiest-link bound: the busiest uplink, downlink or the recirculation, as if they
    /// overlapped perfectly, plus barriers and one latency. The local search minimises it; the
    /// replay adds what the bound misses (sums that complete late and drain afterwards).
    #[serde(default)]
    pub bound_us: f64,
    /// Busiest uplink, microseconds.
    pub uplink_us: f64,
    /// Busiest downlink, microseconds.
    pub downlink_us: f64,
    /// Recirculation, microseconds.
    pub recirc_us: f64,
    /// Block barriers, microseconds.
    pub barriers_us: f64,
    /// Data frames on the busiest uplink.
    pub max_uplink_frames: u64,
    /// Data frames on the busiest downlink.
    pub max_downlink_frames: u64,
    /// Recirculation passes (every pass after a frame's first).
    pub recirc_passes: u64,
    /// Rounds of in-switch aggregation (block barriers).
    pub blocks: u64,
    /// Vertices whose sum the switch computes.
    pub switch_destinations: u64,
    /// Multicast groups needed (distinct replication sets of raw frames).
    pub multicast_groups: u64,
    /// Ordered pairs with cross edges delivered H, M, A, R, C.
    pub pairs: [u64; 5],
}

/// The sizes the cost model needs besides the profile.
#[derive(Debug, Clone, Copy)]
pub struct Sizes {
    /// Aggregators (frames) one feature vector takes.
    pub segments: u64,
    /// Aggregators the switch memory holds.
    pub aggregators: u64,
    /// Recycling by live range and its slack ([`sgnn_plan::PlanConfig::recycle_slack`]).
    pub recycle_slack: Option<u64>,
    /// Cells of the switch's `src_seen` register ([`SwitchProfile::seen_cells`]): a block's
    /// sources x segments must fit. `u64::MAX` for no limit.
    pub seen_cells: u64,
}

impl Sizes {
    /// Destinations one round of in-switch aggregation holds (each takes `segments`
    /// aggregators), at least 1.
    pub fn capacity_rows(&self) -> u64 {
        (self.aggregators / self.segments.max(1)).max(1)
    }

    /// Rounds `dests` in-switch destinations need (0 for none), by the aggregator memory
    /// alone.
    pub fn blocks(&self, dests: u64) -> u64 {
        dests.div_ceil(self.capacity_rows())
    }

    /// Sources one block may hold: `seen_cells / segments` (each source takes one `src_seen`
    /// cell per segment), at least 1.
    pub fn sends_per_block(&self) -> u64 {
        (self.seen_cells / self.segments.max(1)).max(1)
    }

    /// Rounds `dests` in-switch destinations fed by `sends` sends (raw vertices and partials
    /// of every worker) need at least: as many as the aggregator memory needs, and as many as
    /// `src_seen` needs to hold every send once, `ceil(sends / sends_per_block)`. A lower
    /// bound: the cut ([`Tables`]) ends a block at a row boundary, so it may take more (and
    /// fewer only where a single row's sends exceed the limit, which no cut can hold).
    pub fn blocks_for(&self, dests: u64, sends: u64) -> u64 {
        self.blocks(dests)
            .max(sends.div_ceil(self.sends_per_block()))
    }

    /// The plan's sizes, with no `src_seen` limit (`seen_cells: u64::MAX`): what the plan's
    /// memory alone allows. Planning for a switch takes [`Sizes::for_switch`].
    pub fn of(plan: &Plan) -> Sizes {
        Sizes {
            segments: plan.manifest.segments as u64,
            aggregators: plan.manifest.aggregators,
            recycle_slack: plan.manifest.config.recycle_slack,
            seen_cells: u64::MAX,
        }
    }

    /// The plan's sizes on the switch of `prof`: [`Sizes::of`] with its `src_seen` cells.
    /// The profile's cells, even for a plan with more aggregators than its program holds
    /// (whose simulated switch has more: [`sgnn_plan::profile::seen_cells_for`]): plans fit the
    /// switch the profile names.
    pub fn for_switch(plan: &Plan, prof: &SwitchProfile) -> Sizes {
        Sizes {
            seen_cells: prof.seen_cells,
            ..Sizes::of(plan)
        }
    }
}

/// Link and switch load under a choice, kept up to date pair by pair (the local search changes
/// one pair at a time in time proportional to that pair's lists).
pub(crate) struct Load<'a> {
    idx: &'a PairIndex,
    pub(crate) choice: Choice,
    owner: &'a [u32],
    /// Pairs of u's owner, with u among their sources, that upload u raw (M or R).
    raw_uses: Vec<u32>,
    /// Senders of v whose contributions the switch sums for v (A or R).
    sum_uses: Vec<u32>,
    /// Cross edges of u aggregated per edge (R).
    r_edges: Vec<u32>,
    up: Vec<i64>,
    down: Vec<i64>,
    /// Vectors uploaded into the switch's plan, over every worker: raw vertices (once each)
    /// and partials, what [`Tables::send`] holds. `up` also counts `H` uploads, which the
    /// switch only forwards (they are in no block).
    sends: i64,
    passes: i64,
    dests: i64,
    r_pairs: i64,
}

fn passes_of(r_edges: u32) -> i64 {
    r_edges.saturating_sub(1) as i64
}

impl<'a> Load<'a> {
    pub(crate) fn new(idx: &'a PairIndex, owner: &'a [u32]) -> Load<'a> {
        let m = idx.workers;
        let mut l = Load {
            idx,
            choice: Choice::uniform(m, Delivery::H),
            owner,
            raw_uses: vec![0; idx.vertices],
            sum_uses: vec![0; idx.vertices],
            r_edges: vec![0; idx.vertices],
            up: vec![0; m],
            down: vec![0; m],
            sends: 0,
            passes: 0,
            dests: 0,
            r_pairs: 0,
        };
        for q in 0..m {
            for p in 0..m {
                if q != p {
                    l.apply(q, p, Delivery::H, 1);
                }
            }
        }
        l
    }

    /// Adds (`sign = 1`) or removes (`sign = -1`) the load of delivering pair (q, p) by `d`.
    fn apply(&mut self, q: usize, p: usize, d: Delivery, sign: i64) {
        let (src, nbrs) = self.idx.pair(q, p);
        let (dst, _) = self.idx.pair(p, q);
        if src.is_empty() {
            return;
        }
        let n_src = src.len() as i64;
        let n_dst = dst.len() as i64;
        match d {
            Delivery::H => {
                self.up[q] += sign * n_src;
                self.down[p] += sign * n_src;
            }
            Delivery::C => {
                let (raw, partial) = (self.idx.cover(q, p), self.idx.cover(p, q));
                self.raw(q, raw, sign);
                self.down[p] += sign * raw.len() as i64;
                self.up[q] += sign * partial.len() as i64;
                self.sends += sign * partial.len() as i64;
                self.sum(p, partial, sign);
            }
            Delivery::M | Delivery::R => {
                self.raw(q, src, sign);
                if d == Delivery::M {
                    self.down[p] += sign * n_src;
                } else {
                    for (&u, &k) in src.iter().zip(nbrs) {
                        let e = &mut self.r_edges[u as usize];
                        let before = passes_of(*e);
                        *e = if sign > 0 { *e + k } else { *e - k };
                        self.passes += passes_of(*e) - before;
                    }
                    self.r_pairs += sign;
                    self.sum(p, dst, sign);
                }
            }
            Delivery::A => {
                self.up[q] += sign * n_dst;
                self.sends += sign * n_dst;
                self.sum(p, dst, sign);
            }
        }
    }

    /// One more (or one fewer) use of each vertex of `src` (on worker `q`) raw: a vertex is
    /// uploaded once however many pairs use it.
    fn raw(&mut self, q: usize, src: &[u32], sign: i64) {
        for &u in src {
            let c = &mut self.raw_uses[u as usize];
            if sign > 0 {
                *c += 1;
                if *c == 1 {
                    self.up[q] += 1;
                    self.sends += 1;
                }
            } else {
                *c -= 1;
                if *c == 0 {
                    self.up[q] -= 1;
                    self.sends -= 1;
                }
            }
        }
    }

    /// One more (or one fewer) in-switch sender of each destination in `dst` (on worker `p`).
    fn sum(&mut self, p: usize, dst: &[u32], sign: i64) {
        for &v in dst {
            debug_assert_eq!(self.owner[v as usize] as usize, p);
            let c = &mut self.sum_uses[v as usize];
            if sign > 0 {
                *c += 1;
                if *c == 1 {
                    self.down[p] += 1;
                    self.dests += 1;
                }
            } else {
                *c -= 1;
                if *c == 0 {
                    self.down[p] -= 1;
                    self.dests -= 1;
                }
            }
        }
    }

    pub(crate) fn set(&mut self, q: usize, p: usize, d: Delivery) {
        let old = self.choice.get(q, p);
        if old != d {
            self.apply(q, p, old, -1);
            self.apply(q, p, d, 1);
            self.choice.c[q * self.idx.workers + p] = d;
        }
    }

    /// The predicted time and a tie-breaker (sum of squared link loads, so the search can walk
    /// along a plateau of the maximum towards balance).
    pub(crate) fn score(&self, prof: &SwitchProfile, sizes: Sizes) -> (f64, f64) {
        let t = self.time(prof, sizes);
        let sq: f64 = self
            .up
            .iter()
            .chain(&self.down)
            .map(|&x| (x as f64) * (x as f64))
            .sum();
        (t, sq)
    }

    /// Blocks of the plan the daemons run: at least one (a round ends with a block sync), and
    /// at least what the aggregator memory and the switch's `src_seen` need
    /// ([`Sizes::blocks_for`]; the tables' cut may take more, which [`crate::plan::plan_delivery_with`]
    /// follows).
    fn blocks(&self, sizes: Sizes) -> u64 {
        sizes
            .blocks_for(self.dests as u64, self.sends as u64)
            .max(1)
    }

    /// Recirculation passes per segment: the per-edge passes (`R`) and, on a switch with
    /// harvest passes (the TNA program's lane pairs), `harvest_passes` per in-switch
    /// destination. That counts a lone contribution too (which costs none on the switch): an
    /// upper bound, fine for a cost model that only compares deliveries.
    fn recirc_passes_for(&self, prof: &SwitchProfile) -> i64 {
        self.passes + self.dests * i64::from(prof.harvest_passes)
    }

    fn time(&self, prof: &SwitchProfile, sizes: Sizes) -> f64 {
        let blocks = self.blocks(sizes);
        if self.r_pairs > 0 && blocks > 1 {
            return f64::INFINITY;
        }
        let seg = sizes.segments as f64;
        let up = *self.up.iter().max().unwrap_or(&0) as f64 * seg * prof.data_frame_us();
        let down = *self.down.iter().max().unwrap_or(&0) as f64 * seg * prof.data_frame_us();
        let recirc = self.recirc_passes_for(prof) as f64 * seg * prof.pass_us();
        up.max(down).max(recirc) + barriers_us(blocks, prof) + prof.latency_us()
    }

    pub(crate) fn prediction(&self, prof: &SwitchProfile, sizes: Sizes) -> Prediction {
        let seg = sizes.segments;
        let max_up = *self.up.iter().max().unwrap_or(&0) as u64;
        let max_down = *self.down.iter().max().unwrap_or(&0) as u64;
        let blocks = self.blocks(sizes);
        let t = self.time(prof, sizes);
        Prediction {
            time_us: t,
            bound_us: t,
            uplink_us: (max_up * seg) as f64 * prof.data_frame_us(),
            downlink_us: (max_down * seg) as f64 * prof.data_frame_us(),
            recirc_us: (self.recirc_passes_for(prof) as u64 * seg) as f64 * prof.pass_us(),
            barriers_us: barriers_us(blocks, prof),
            max_uplink_frames: max_up * seg,
            max_downlink_frames: max_down * seg,
            recirc_passes: self.recirc_passes_for(prof) as u64 * seg,
            blocks,
            switch_destinations: self.dests as u64,
            multicast_groups: self.multicast_groups(),
            pairs: self.choice.counts(self.idx),
        }
    }

    /// Distinct sets of ports a raw frame is replicated to (the `M` destinations of its vertex,
    /// plus the recirculation port when it also feeds `R` aggregators).
    fn multicast_groups(&self) -> u64 {
        let m = self.idx.workers;
        let mut sets: Vec<Vec<u32>> = vec![Vec::new(); self.idx.vertices];
        for q in 0..m {
            for p in 0..m {
                if q == p {
                    continue;
                }
                let d = self.choice.get(q, p);
                if matches!(d, Delivery::M | Delivery::R | Delivery::C) {
                    let port = if d == Delivery::R { u32::MAX } else { p as u32 };
                    let raw = if d == Delivery::C {
                        self.idx.cover(q, p)
                    } else {
                        self.idx.pair(q, p).0
                    };
                    for &u in raw {
                        let s = &mut sets[u as usize];
                        if s.last() != Some(&port) {
                            s.push(port);
                        }
                    }
                }
            }
        }
        let mut distinct: HashSet<Vec<u32>> = HashSet::new();
        for mut s in sets {
            if s.len() > 1 {
                s.sort_unstable();
                s.dedup();
                distinct.insert(s);
            }
        }
        distinct.len() as u64
    }

    /// Bytes on every host link: data frames, plus every block's synchronisation (each worker's
    /// BlockDone up and the BlockAdvance down to it, the last block too).
    pub(crate) fn traffic(&self, sizes: Sizes) -> StrategyTraffic {
        let data = wire_bytes(DATA_FRAME_LEN) * sizes.segments;
        let ctl = wire_bytes(CONTROL_FRAME_LEN);
        let blocks = self.blocks(sizes);
        let m = self.idx.workers as u64;
        let up: Vec<u64> = self
            .up
            .iter()
            .map(|&x| x as u64 * data + blocks * ctl)
            .collect();
        let down: Vec<u64> = self
            .down
            .iter()
            .map(|&x| x as u64 * data + blocks * ctl)
            .collect();
        let control = 2 * blocks * ctl * m;
        let frames_up: u64 = self.up.iter().map(|&x| x as u64).sum::<u64>() * sizes.segments;
        let frames_down: u64 = self.down.iter().map(|&x| x as u64).sum::<u64>() * sizes.segments;
        let (tu, td): (u64, u64) = (up.iter().sum(), down.iter().sum());
        StrategyTraffic {
            total: tu + td,
            upload: tu - control / 2,
            download: td - control / 2,
            control,
            frames: frames_up + frames_down + 2 * blocks * m,
            max_worker_uplink: up.iter().copied().max().unwrap_or(0),
            max_worker_downlink: down.iter().copied().max().unwrap_or(0),
            in_network_fraction: None,
            peak_aggregators: Some((self.dests as u64 * sizes.segments).min(sizes.aggregators)),
            per_worker_uplink: up,
            per_worker_downlink: down,
        }
    }
}

/// The outcome of planning one mode's delivery.
#[derive(Debug, Clone)]
pub struct Planned {
    /// What the hosts send and the switch does ([`crate::plan::plan_delivery`] fills it; empty from
    /// [`evaluate`] and [`crate::auto::optimize`], which do not see the graph).
    pub tables: Tables,
    /// The per-pair choice.
    pub choice: Choice,
    /// Its predicted cost.
    pub prediction: Prediction,
    /// Its bytes on every host link.
    pub traffic: StrategyTraffic,
}

impl Planned {
    /// The prediction and traffic with `blocks` blocks (what the tables cut: by live range
    /// when recycling, and where `src_seen` ends a block early) instead of the cost model's
    /// lower bound ([`Sizes::blocks_for`]): the barriers and the block synchronisation frames
    /// of each.
    pub(crate) fn with_blocks(&mut self, blocks: u64, prof: &SwitchProfile) {
        let blocks = blocks.max(1);
        let p = &mut self.prediction;
        let (old, new) = (p.blocks, blocks);
        let barriers = barriers_us(new, prof);
        p.bound_us += barriers - p.barriers_us;
        p.barriers_us = barriers;
        p.blocks = blocks;
        resync_traffic(&mut self.traffic, old, new);
    }
}

/// `t` with the block synchronisation of `new` blocks instead of `old`: each block costs
/// every worker one control frame up (its BlockDone) and one down (the BlockAdvance).
fn resync_traffic(t: &mut StrategyTraffic, old: u64, new: u64) {
    let m = t.per_worker_downlink.len() as u64;
    let ctl = wire_bytes(CONTROL_FRAME_LEN);
    for d in t
        .per_worker_downlink
        .iter_mut()
        .chain(t.per_worker_uplink.iter_mut())
    {
        *d = *d - old * ctl + new * ctl;
    }
    t.control = 2 * new * ctl * m;
    t.total = t.total - 2 * old * ctl * m + 2 * new * ctl * m;
    t.frames = t.frames - 2 * old * m + 2 * new * m;
    t.max_worker_downlink = t.per_worker_downlink.iter().copied().max().unwrap_or(0);
    t.max_worker_uplink = t.per_worker_uplink.iter().copied().max().unwrap_or(0);
}

/// The time `blocks` blocks spend synchronising: a barrier between two blocks and the last
/// block's BlockDone / BlockAdvance exchange.
fn barriers_us(blocks: u64, prof: &SwitchProfile) -> f64 {
    blocks.saturating_sub(1) as f64 * prof.barrier_us() + prof.sync_us()
}

/// Evaluates a given choice.
pub fn evaluate(
    idx: &PairIndex,
    owner: &[u32],
    choice: &Choice,
    prof: &SwitchProfile,
    sizes: Sizes,
) -> Planned {
    let mut l = Load::new(idx, owner);
    for q in 0..idx.workers {
        for p in 0..idx.workers {
            if q != p {
                l.set(q, p, choice.get(q, p));
            }
        }
    }
    Planned {
        tables: Tables::default(),
        prediction: l.prediction(prof, sizes),
        traffic: l.traffic(sizes),
        choice: l.choice,
    }
}

/// The paper's plan (every pair `R`, multi-level blocks), predicted block by block: each block
/// takes as long as its busiest link or its recirculation, then a barrier; the last block ends
/// with the BlockDone / BlockAdvance exchange. A link carries its data frames and the daemons'
/// control frames of loss recovery (per block, every worker's tail probe and the switch's
/// answer, and the all-sent notice to every worker).
pub fn predict_paper(plan: &Plan, prof: &SwitchProfile) -> Prediction {
    let m = plan.workers() as usize;
    let seg = plan.manifest.segments as u64;
    let mut p = Prediction {
        pairs: [0; 5],
        ..Prediction::default()
    };
    let (mut up, mut down) = (vec![0u64; m], vec![0u64; m]);
    let (mut ack_up, mut ack_down) = (vec![0u64; m], vec![0u64; m]);
    let mut dests: HashSet<u32> = HashSet::new();
    let link_us = |frames: &[u64], acks: &[u64]| -> f64 {
        frames
            .iter()
            .zip(acks)
            .map(|(&f, &a)| f as f64 * prof.data_frame_us() + a as f64 * prof.control_frame_us())
            .fold(0.0, f64::max)
    };
    for (b, block) in plan.blocks.iter().enumerate() {
        for v in [&mut up, &mut down, &mut ack_up, &mut ack_down] {
            v.iter_mut().for_each(|x| *x = 0);
        }
        let mut passes = 0u64;
        for (i, &u) in block.sources.iter().enumerate() {
            let q = plan.owner(u).unwrap_or(0);
            up[q as usize] += seg;
            passes += (block.passes(i).len() as u64).saturating_sub(1) * seg;
        }
        // Each aggregator completes once per segment; a TNA switch harvests it (an upper
        // bound: a lone contribution costs none).
        passes += block.aggregators.len() as u64 * seg * u64::from(prof.harvest_passes);
        for slot in &block.aggregators {
            let dst = plan.partition[slot.dst as usize];
            down[dst as usize] += seg;
            dests.insert(slot.dst);
        }
        // Every worker's tail probe, and its answer or the all-sent notice (an upper bound:
        // the last prober gets the notice only).
        for q in 0..m {
            ack_up[q] += 1;
            ack_down[q] += 2;
        }
        let (mu, md) = (
            *up.iter().max().unwrap_or(&0),
            *down.iter().max().unwrap_or(&0),
        );
        let link = link_us(&up, &ack_up).max(link_us(&down, &ack_down));
        let recirc = passes as f64 * prof.pass_us();
        if b > 0 {
            p.time_us += prof.barrier_us();
        }
        p.time_us += link.max(recirc);
        p.uplink_us += mu as f64 * prof.data_frame_us();
        p.downlink_us += md as f64 * prof.data_frame_us();
        p.recirc_us += recirc;
        p.max_uplink_frames += mu;
        p.max_downlink_frames += md;
        p.recirc_passes += passes;
        p.blocks = b as u64 + 1;
    }
    p.barriers_us = barriers_us(p.blocks, prof);
    p.time_us += prof.sync_us() + prof.latency_us();
    p.bound_us = p.time_us;
    p.switch_destinations = dests.len() as u64;
    p
}

/// A lower bound on [`predict_paper`] that needs no blocks: the least time any plan of the
/// paper's design can take on `plan`'s partition under `prof`, whatever its multi-level blocks.
/// `switch-ctl plan` prints it for the paper when the chosen delivery is another, so that the
/// blocks (most of the planning time on large graphs) are computed only for `--aggregate paper`.
///
/// Every block of a paper plan that passes [`sgnn_plan::verify()`] holds at most `cap =
/// aggregators / segments` vertices, feeds at most `limit = min(max_passes, 65535)` rows from
/// one source, and serves both directions of each of its edges, so the vertices its edges
/// touch are both its sources and its destinations. With `d_u` the cross degree of `u`, `n_u`
/// the blocks `u` appears in and `B` the blocks:
/// - `ceil(d_u / limit) <= n_u <= min(d_u, B)`, `sum_u n_u <= B x cap`, and `B` is at least
///   `ceil(boundary vertices / cap)` and every `ceil(d_u / limit)`;
/// - worker `q`'s downlink carries one sum per appearance of its vertices, `x_q = sum over u
///   of q of n_u` vectors, and two control frames per block (its uplink as many vectors and
///   one control frame per block); a sum over blocks of the busiest link is at least the
///   busiest sum;
/// - a source feeds its rows in one pass each after its first, and a TNA switch harvests each
///   row: `sum_u (d_u - n_u) + harvest_passes x sum_u n_u` passes;
/// - a block takes as long as its busiest link or its recirculation, and `B - 1` barriers
///   separate the blocks.
///
/// So the plan takes at least `T + (B - 1) barriers + sync + latency`, where `T` is the least
/// time such that some `x_q` within those limits keeps every downlink and the recirculation
/// within `T`; the bound is the least of that over `B`. Each appearance of a vertex moves a
/// vector from the recirculation to two host links, which is the trade the paper's blocks
/// make. The prediction's parts are those of the `B` (`blocks`) and `x_q` that attain it.
/// Cost: O(V + E + M x B) for the `B` scanned.
pub fn bound_paper(plan: &Plan, idx: &PairIndex, prof: &SwitchProfile) -> Prediction {
    let m = idx.workers;
    let seg = plan.manifest.segments.max(1) as f64;
    let cfg = &plan.manifest.config;
    let cap = (plan.manifest.aggregators / plan.manifest.segments.max(1) as u64).max(1);
    let limit = cfg.max_passes.clamp(1, sgnn_plan::model::MAX_EXPECTED) as u64;
    // Cross degree of every vertex: its neighbours over every pair it sends on.
    let mut d = vec![0u64; idx.vertices];
    for q in 0..m {
        for p in 0..m {
            if q != p {
                let (src, nbrs) = idx.pair(q, p);
                for (&u, &k) in src.iter().zip(nbrs) {
                    d[u as usize] += k as u64;
                }
            }
        }
    }
    let owner = &plan.partition;
    // Per worker: the fewest appearances of its vertices, and its vertices by cross degree.
    let mut least = vec![0u64; m];
    let mut by_degree: Vec<(u64, u32)> = Vec::new();
    let (mut boundary, mut b_min, mut total_d) = (0u64, 1u64, 0u64);
    for (u, &du) in d.iter().enumerate() {
        if du > 0 {
            let n_u = du.div_ceil(limit);
            least[owner[u] as usize] += n_u;
            boundary += 1;
            total_d += du;
            b_min = b_min.max(n_u);
            by_degree.push((du, owner[u]));
        }
    }
    b_min = b_min.max(boundary.div_ceil(cap));
    by_degree.sort_unstable();
    let least_total: u64 = least.iter().sum();
    let max_d = by_degree.last().map_or(0, |x| x.0);
    let (dfu, cfu, pass) = (
        prof.data_frame_us(),
        prof.control_frame_us(),
        prof.pass_us(),
    );
    let vec_us = seg * dfu;
    let h = f64::from(prof.harvest_passes);
    let fixed = |b: u64| barriers_us(b, prof) + prof.latency_us();
    let recirc = |n: f64| seg * pass * (total_d as f64 + (h - 1.0) * n);
    // most[q] = sum over u of q of min(d_u, B); `above[q]` its vertices with d_u > B.
    let mut most = vec![0u64; m];
    let mut above = vec![0u64; m];
    let mut next = 0usize; // first of `by_degree` with d_u > B
    let mut b = b_min;
    for &(du, q) in &by_degree {
        most[q as usize] += du.min(b);
        if du > b {
            above[q as usize] += 1;
        }
    }
    while next < by_degree.len() && by_degree[next].0 <= b {
        next += 1;
    }
    // (total, B, T, N, the downlinks' most appearances at that B)
    let mut best: Option<(f64, u64, f64, f64, Vec<u64>)> = None;
    loop {
        if best.as_ref().is_some_and(|x| fixed(b) >= x.0) {
            break;
        }
        let ctl = 2.0 * b as f64 * cfu;
        let t_min = least.iter().copied().max().unwrap_or(0) as f64 * vec_us + ctl;
        let room = (b * cap) as f64;
        if least_total as f64 <= room {
            // Appearances that fit every downlink within `t`.
            let n_at = |t: f64| -> f64 {
                let x = ((t - ctl) / vec_us).max(0.0);
                let n: f64 = (0..m)
                    .map(|q| x.min(most[q] as f64).max(least[q] as f64))
                    .sum();
                n.min(room)
            };
            let t = if h >= 1.0 {
                t_min.max(recirc(least_total as f64))
            } else if recirc(n_at(t_min)) <= t_min {
                t_min
            } else {
                // recirc(n_at(t)) - t decreases in t: bisect for where it crosses 0, and keep
                // the lower end (a lower bound).
                let (mut lo, mut hi) = (t_min, recirc(least_total as f64).max(t_min));
                while hi - lo > 1e-9 * hi.max(1.0) {
                    let mid = 0.5 * (lo + hi);
                    if recirc(n_at(mid)) <= mid {
                        hi = mid;
                    } else {
                        lo = mid;
                    }
                }
                lo
            };
            let total = t + fixed(b);
            if best.as_ref().is_none_or(|x| total < x.0) {
                let n = if h >= 1.0 {
                    least_total as f64
                } else {
                    n_at(t)
                };
                best = Some((total, b, t, n, most.clone()));
            }
        }
        if b >= max_d.max(b_min) && best.is_some() {
            // Past the largest cross degree nothing changes but the barriers.
            break;
        }
        // B + 1: every vertex with d_u > B may appear once more.
        b += 1;
        for q in 0..m {
            most[q] += above[q];
        }
        while next < by_degree.len() && by_degree[next].0 <= b {
            above[by_degree[next].1 as usize] -= 1;
            next += 1;
        }
    }
    let (time, blocks, t, n, most) = best.expect("some B holds every appearance");
    let ctl = 2.0 * blocks as f64 * cfu;
    let x = ((t - ctl) / vec_us).max(0.0);
    let busiest = (0..m)
        .map(|q| x.min(most[q] as f64).max(least[q] as f64))
        .fold(0.0, f64::max);
    let frames = (busiest * seg).floor() as u64;
    let passes = (recirc(n) / pass).max(0.0).floor() as u64;
    Prediction {
        time_us: time,
        bound_us: time,
        uplink_us: busiest * vec_us,
        downlink_us: busiest * vec_us,
        recirc_us: recirc(n).max(0.0),
        barriers_us: barriers_us(blocks, prof),
        max_uplink_frames: frames,
        max_downlink_frames: frames,
        recirc_passes: passes,
        blocks,
        switch_destinations: boundary,
        multicast_groups: 0,
        pairs: [0; 5],
    }
}

/// The host-based baseline predicted with the same model.
pub fn predict_host_based(
    idx: &PairIndex,
    owner: &[u32],
    prof: &SwitchProfile,
    sizes: Sizes,
) -> Planned {
    let mut planned = evaluate(
        idx,
        owner,
        &Choice::uniform(idx.workers, Delivery::H),
        prof,
        sizes,
    );
    // The baseline's daemons run no blocks: no block synchronisation, in time or in bytes.
    let p = &mut planned.prediction;
    p.time_us -= p.barriers_us;
    p.bound_us -= p.barriers_us;
    p.barriers_us = 0.0;
    let old = p.blocks;
    p.blocks = 0;
    resync_traffic(&mut planned.traffic, old, 0);
    planned
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auto::optimize;
    use crate::testing::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn each_way_counts_frames_as_the_module_says() {
        let (g, part) = small();
        let idx = PairIndex::of(&g, &part, 3);
        // Pair lists: (0 -> 1): sources 0 (2 nbrs: 3, 4), 1, 2 (1 nbr: 3 each).
        assert_eq!(idx.pair(0, 1), (&[0u32, 1, 2][..], &[2u32, 1, 1][..]));
        assert_eq!(idx.pair(1, 0), (&[3u32, 4][..], &[3u32, 1][..]));
        assert_eq!(idx.pair(0, 2), (&[0u32][..], &[1u32][..]));
        // H: one frame per (u, remote partition).
        let h = load_of(&idx, &part, &Choice::uniform(3, Delivery::H));
        assert_eq!((h.0, h.1), (vec![4, 2, 1], vec![3, 3, 1]));
        // M: every boundary vertex uploaded once; downlinks as H.
        let m = load_of(&idx, &part, &Choice::uniform(3, Delivery::M));
        assert_eq!((m.0, m.1), (vec![3, 2, 1], vec![3, 3, 1]));
        // A: one partial per (v, sender): worker 1 pre-sums for 0, 1 and 2 (3 frames where M
        // sends 3 and 4 raw); one sum per boundary vertex down.
        let a = load_of(&idx, &part, &Choice::uniform(3, Delivery::A));
        assert_eq!((a.0, a.1), (vec![3, 3, 1], vec![3, 2, 1]));
        assert_eq!(a.3, 6);
        // R: uploads as M, downloads as A, one pass per cross edge after a source's first:
        // vertex 0 has 3 cross edges (2 passes), 3 has 3 (2 passes), the rest 1 each.
        let r = load_of(&idx, &part, &Choice::uniform(3, Delivery::R));
        assert_eq!((r.0, r.1, r.2), (vec![3, 2, 1], vec![3, 2, 1], 4));
    }

    /// A TNA switch's harvest passes (`harvest_passes`, docs/tofino.md "Lane pairs") add one
    /// pass per in-switch destination to the recirculation the model charges, and nothing
    /// where nothing is summed in the switch.
    #[test]
    fn harvest_passes_count_one_pass_per_in_switch_destination() {
        let (g, part) = small();
        let idx = PairIndex::of(&g, &part, 3);
        let mut tofino = prof();
        tofino.harvest_passes = 1;
        for (d, dests) in [
            (Delivery::H, 0),
            (Delivery::M, 0),
            (Delivery::A, 6),
            (Delivery::R, 6),
        ] {
            let c = Choice::uniform(3, d);
            let plain = evaluate(&idx, &part, &c, &prof(), BIG).prediction;
            let t = evaluate(&idx, &part, &c, &tofino, BIG).prediction;
            assert_eq!(t.switch_destinations, dests, "{d:?}");
            assert_eq!(t.recirc_passes, plain.recirc_passes + dests, "{d:?}");
            assert!(t.time_us >= plain.time_us, "{d:?}");
        }
    }

    #[test]
    fn incremental_changes_equal_a_fresh_evaluation() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let (g, part) = random_graph(&mut rng, 300, 1500, 5);
        let idx = PairIndex::of(&g, &part, 5);
        let mut l = Load::new(&idx, &part);
        let ways = [
            Delivery::H,
            Delivery::M,
            Delivery::A,
            Delivery::R,
            Delivery::C,
        ];
        for _ in 0..400 {
            let (q, p) = (rng.gen_range(0..5), rng.gen_range(0..5));
            if q != p {
                l.set(q, p, ways[rng.gen_range(0..5)]);
            }
        }
        let fresh = evaluate(&idx, &part, &l.choice, &prof(), BIG);
        assert_eq!(l.prediction(&prof(), BIG), fresh.prediction);
        assert_eq!(l.traffic(BIG), fresh.traffic);
    }

    /// The cost model's blocks are at least what `src_seen` needs for every send (raw vertices
    /// and partials of every worker, what the tables hold), and the tables cut there.
    #[test]
    fn the_cost_model_and_the_tables_count_the_blocks_src_seen_forces() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(13);
        let (g, part) = random_graph(&mut rng, 400, 2000, 4);
        let idx = PairIndex::of(&g, &part, 4);
        let ways = [Delivery::M, Delivery::A, Delivery::C];
        let mut c = Choice::uniform(4, Delivery::M);
        for q in 0..4 {
            for p in 0..4 {
                c.c[q * 4 + p] = ways[(q + p) % 3];
            }
        }
        let free = Tables::new(&idx, &g, &part, &c, BIG);
        assert_eq!(free.blocks, 1);
        let sends: u64 = free.send.iter().map(|l| l.len() as u64).sum();
        let mut l = Load::new(&idx, &part);
        for q in 0..4 {
            for p in 0..4 {
                if q != p {
                    l.set(q, p, c.get(q, p));
                }
            }
        }
        assert_eq!(l.sends as u64, sends, "the load counts the tables' sends");
        assert_eq!(
            l.up.iter().sum::<i64>() as u64,
            sends,
            "no H: every upload is a send"
        );
        // Three segments; src_seen for a fifth of the sends per block.
        let limit = sends / 5;
        let sizes = Sizes {
            segments: 3,
            seen_cells: limit * 3 + 2,
            ..BIG
        };
        assert_eq!(sizes.sends_per_block(), limit);
        let predicted = evaluate(&idx, &part, &c, &prof(), sizes).prediction.blocks;
        assert_eq!(predicted, sends.div_ceil(limit));
        let t = Tables::new(&idx, &g, &part, &c, sizes);
        assert!(t.blocks as u64 >= predicted, "the bound is a lower bound");
        for b in 0..t.blocks {
            let k: usize = (0..4).map(|q| t.sends(q, b).len()).sum();
            assert!(k as u64 <= limit, "block {b}: {k} sends > {limit}");
            assert!(t.rows_in_block(b) > 0);
            // Slots restart in every block.
            let lo = t.block_start[b as usize];
            assert_eq!(t.row_slot[lo as usize], 0);
        }
        assert_eq!(*t.block_start.last().unwrap() as usize, t.row_dst.len());
    }

    #[test]
    fn per_edge_aggregation_needs_one_block() {
        let (g, part) = small();
        let idx = PairIndex::of(&g, &part, 3);
        // 6 destinations, 4 aggregators: two blocks, which `R` cannot be predicted for.
        let tight = Sizes {
            segments: 1,
            aggregators: 4,
            recycle_slack: None,
            seen_cells: u64::MAX,
        };
        let r = evaluate(
            &idx,
            &part,
            &Choice::uniform(3, Delivery::R),
            &prof(),
            tight,
        );
        assert!(r.prediction.time_us.is_infinite());
        let a = evaluate(
            &idx,
            &part,
            &Choice::uniform(3, Delivery::A),
            &prof(),
            tight,
        );
        assert_eq!(a.prediction.blocks, 2);
        assert!(a.prediction.time_us.is_finite());
        let auto = optimize(
            &idx,
            &part,
            &prof(),
            tight,
            &[Delivery::M, Delivery::A, Delivery::R],
            8,
        );
        assert!(auto.prediction.time_us.is_finite());
    }
}
