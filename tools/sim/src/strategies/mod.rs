//! Strategies as host and switch logic ([`App`]s) driven by a real plan.
//!
//! - [`HostBased`] (BNS-GCN, p = 1): every worker unicasts, for each boundary vertex it owns,
//!   one feature vector (`segments` data frames) to every remote worker with a neighbour of
//!   it, all-to-all, paced at line rate; the switch only forwards. Destinations are served
//!   round-robin one vector at a time, starting at the next worker, so the all-to-all is
//!   spread over the receivers.
//! - [`SwitchGnn`] (paper 3.2-3.3): per block in plan order each worker sends its block
//!   sources' frames in the planned order (each source's segments back to back); the switch
//!   adds every contribution into the aggregators of the block's table, and when an
//!   aggregator's count reaches its expected value emits one Result frame to the destination's
//!   worker. A source feeding `k` aggregators uses pass 0 on arrival and `k - 1` passes on
//!   the recirculation path (a FIFO server of its own bandwidth: pass `p` of a packet whose
//!   recirculation starts at `t` completes at `t + p * frame_time`); the time is computed,
//!   not simulated pass by pass. A worker sends BlockDone once its sources are out and all its
//!   results of the block are in; when every worker has, the switch multicasts
//!   BlockAdvance and the next block starts.
//!   On a leaf-spine fabric the aggregation has two levels: each leaf adds its own workers'
//!   contributions (with its own recirculation path) and finishes a row whose contributors
//!   are all under the destination's leaf; otherwise each contributing leaf sends a partial
//!   to the spine hashed from (block, row, segment), which finishes it. BlockDone goes to
//!   spine 0, whose BlockAdvance the leaves replicate to their workers.
//!
//! The other strategies have their model in their own module: [`g3`], [`strawman`] (also
//! `unlimited`), [`supergcn`], [`hermod`], and the approximate [`emma`], [`grappa`], [`dgs`];
//! host-only ones run on the [`exchange`] engine.
//!
//! Frames carry the DSCP class of `sgnn_wire::dscp` as their priority queue: block control 7,
//! results 5, data 2.

use sgnn_wire::{wire_bytes, CONTROL_FRAME_LEN, DATA_FRAME_LEN};

use crate::net::{Kind, Pkt, Time};

pub mod dgs;
pub mod emma;
pub mod exchange;
pub mod g3;
pub mod grappa;
pub mod hermod;
mod host_based;
pub mod strawman;
pub mod supergcn;
mod switchgnn;

pub use exchange::Exchange;
pub use host_based::HostBased;
pub use strawman::OneShot;
pub use switchgnn::{SwitchCounters, SwitchGnn};

/// Priority queue of block control frames (DSCP 46).
pub const PRIO_CONTROL: u8 = 7;
/// Priority queue of results and acks (DSCP 34).
pub const PRIO_RESULT: u8 = 5;
/// Priority queue of feature data (DSCP 10).
pub const PRIO_DATA: u8 = 2;

/// Wire bytes of a data frame (210).
pub const DATA_WIRE: u32 = wire_bytes(DATA_FRAME_LEN) as u32;
/// Wire bytes of a control frame (84).
pub const CONTROL_WIRE: u32 = wire_bytes(CONTROL_FRAME_LEN) as u32;

/// SplitMix64 (Steele, Lea, Flood 2014): the seeded, reproducible hash the approximate
/// strategies use for their random choices (chunks, samples), so a test can recompute them.
pub fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The key of `v` in a random draw named by `(seed, stream)`: `splitmix64(splitmix64(seed ^
/// splitmix64(stream)) ^ v)`.
pub fn draw_key(seed: u64, stream: u64, v: u64) -> u64 {
    splitmix64(splitmix64(seed ^ splitmix64(stream)) ^ v)
}

pub(crate) fn data_pkt(
    kind: Kind,
    prio: u8,
    src: u32,
    dst: u32,
    block: u32,
    a: u32,
    seg: u32,
) -> Pkt {
    Pkt {
        kind,
        prio,
        ecn: false,
        seg: seg as u16,
        wire: DATA_WIRE,
        src,
        dst,
        block,
        a,
    }
}

/// Recirculation passes still to come at `now` on a path busy without gaps until `free`,
/// one pass every `pass`: `ceil((free - now) / pass)` (for [`crate::App::gauges`], which
/// counts a contribution at the time of its pass).
pub(crate) fn passes_pending(free: Time, now: Time, pass: Time) -> u64 {
    free.saturating_sub(now).div_ceil(pass)
}

pub(crate) fn control_pkt(kind: Kind, src: u32, dst: u32, block: u32) -> Pkt {
    Pkt {
        kind,
        prio: PRIO_CONTROL,
        ecn: false,
        seg: 0,
        wire: CONTROL_WIRE,
        src,
        dst,
        block,
        a: 0,
    }
}
