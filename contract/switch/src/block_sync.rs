//! `p4/v1model/block_sync.p4`: block synchronisation. Every worker reports BlockDone for the
//! round and block being exchanged; when all have, the switch multicasts BlockAdvance to
//! [`ADVANCE_GROUP`] (one replica per worker, `rid` = the worker id) and moves to the next
//! block (after the last block of a round, block 0 of the next round). A BlockDone for an
//! earlier block is answered with that block's BlockAdvance, to its sender alone.

use crate::config::MAX_WORKERS;
use crate::Register;

/// The multicast group of BlockAdvance: every worker (`ADVANCE_MCAST_GROUP`).
pub const ADVANCE_GROUP: u16 = 1;

/// `sync_round`: the round being exchanged.
pub const SYNC_ROUND: Register = Register {
    name: "sync_round",
    id: 37,
    bits: 16,
    size: 1,
};
/// `sync_block`: the block being exchanged.
pub const SYNC_BLOCK: Register = Register {
    name: "sync_block",
    id: 38,
    bits: 16,
    size: 1,
};
/// `sync_done`: which workers reported the current block done.
pub const SYNC_DONE: Register = Register {
    name: "sync_done",
    id: 39,
    bits: 8,
    size: MAX_WORKERS,
};
/// `sync_count`: how many.
pub const SYNC_COUNT: Register = Register {
    name: "sync_count",
    id: 40,
    bits: 16,
    size: 1,
};

/// `round << 16 | block`: the position `agg_tag` and `src_seen` store.
pub const fn tag(round: u16, block: u16) -> u32 {
    ((round as u32) << 16) | block as u32
}
