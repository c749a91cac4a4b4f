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
//! Frames carry the DSCP class of `sgnn_wire::dscp` as their priority queue: block control 7,
//! results 5, data 2.

use sgnn_wire::{wire_bytes, CONTROL_FRAME_LEN, DATA_FRAME_LEN};

use crate::net::{Kind, Pkt};

mod host_based;
mod switchgnn;

pub use host_based::HostBased;
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
