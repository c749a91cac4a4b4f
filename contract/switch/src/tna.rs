//! What the TNA program (`p4/tna`, Tofino) declares differently from the v1model one
//! (`docs/tofino.md`, "Names and widths"): its sizes (`p4/tna/config.p4`), two registers 32
//! bits wide, signed lanes, and a second events counter for egress. `sgnn-p4rt`'s
//! `switchgnn_p4info_for(Arch::Tna)` applies these and nothing else.

use crate::counters::EVENT_COUNTERS;
use crate::{Counter, Unit};

/// Aggregators of the TNA program.
pub const AGGREGATORS: u32 = 16384;
/// Entries of its `agg_table`.
pub const AGG_TABLE_SIZE: u32 = 65536;
/// Cells of its `src_seen`.
pub const SEEN_CELLS: u32 = 65536;
/// Width of `src_seen` and `sync_done` cells (a Tofino register is 8, 16 or 32 bits wide).
pub const WIDE_REGISTER_BITS: u32 = 32;

/// `egress_events`: a Tofino counter belongs to one gress, so egress counts its events here.
pub const EGRESS_EVENTS: Counter = Counter {
    name: "egress_events",
    id: 4,
    unit: Unit::Packets,
    size: EVENT_COUNTERS,
};
