//! What the TNA program (`p4/tna`, Tofino) declares differently from the v1model one
//! (`docs/tofino.md`, "Names and widths"): its sizes (`p4/tna/config.p4`), two registers 32
//! bits wide, lanes in pairs (one register per two lanes), and a second events counter for
//! egress. `sgnn-p4rt`'s
//! `switchgnn_p4info_for(Arch::Tna)` applies these and nothing else.

use crate::counters::EVENT_COUNTERS;
use crate::{Counter, Register, Unit};

/// Aggregators of the TNA program.
pub const AGGREGATORS: u32 = 16384;
/// Entries of its `agg_table`.
pub const AGG_TABLE_SIZE: u32 = 65536;
/// Cells of its `src_seen`.
pub const SEEN_CELLS: u32 = 65536;
/// Width of `src_seen` and `sync_done` cells (a Tofino register is 8, 16 or 32 bits wide).
pub const WIDE_REGISTER_BITS: u32 = 32;

/// Registers of the v1model program the TNA program does not declare (`docs/tofino.md`, "Loss
/// recovery"): the all-sent count ([`crate::recovery::SENT_DONE`],
/// [`crate::recovery::SENT_COUNT`]). Counting clean probes needs the probe's second pass to
/// compare the worker's known NACK count with `seq_next`, which put a second PHV operand on
/// `seq_next`'s stateful ALU and pushed the chain to 14 stages of Tofino 1's 12 (measured
/// 2026-11-27). A Tofino never sends the all-sent notice; its daemons fall back to the fetch
/// timeout for a lost Result, as before the notice existed.
pub const V1MODEL_ONLY_REGISTERS: [&Register; 2] =
    [&crate::recovery::SENT_DONE, &crate::recovery::SENT_COUNT];

/// `agg_table` actions of the v1model program the TNA program does not declare: the
/// leaf-spine fabric's ([`crate::fabric`]). A partial's count added by `aggregate_partials`
/// needs `agg_count`'s stateful ALU to take the frame's count as an operand, and its two
/// condition units and four register actions are taken (`docs/tofino.md`, "Loss
/// recovery"); not attempted in the twelve stages.
pub const V1MODEL_ONLY_ACTIONS: [&crate::Action; 2] = [
    &crate::aggregation::AGGREGATE_UP,
    &crate::aggregation::AGGREGATE_PARTIALS,
];

/// `egress_events`: a Tofino counter belongs to one gress, so egress counts its events here.
pub const EGRESS_EVENTS: Counter = Counter {
    name: "egress_events",
    id: 4,
    unit: Unit::Packets,
    size: EVENT_COUNTERS,
};

/// The struct type of [`AGG_PAIR`]'s cells in the TNA program (`p4/tna/headers.p4`): two
/// signed 32-bit lanes, `first` and `second`.
pub const LANE_PAIR_TYPE: &str = "lane_pair_t";
/// The members of [`LANE_PAIR_TYPE`], lane `2k` then lane `2k + 1`.
pub const LANE_PAIR_MEMBERS: [&str; 2] = ["first", "second"];
/// Lane pairs: register `agg_pair_k` of the TNA program holds lanes `2k` and `2k + 1` of every
/// aggregator, one stateful ALU adding both (`docs/tofino.md`, "Lane pairs"). The v1model
/// program has `agg_value_0` .. `agg_value_31` instead, one lane each.
pub const LANE_PAIRS: usize = crate::aggregation::LANES / 2;

/// Bits of a [`LANE_PAIR_TYPE`] cell: two lanes of `sgnn_wire::LANE_BYTES` each.
pub const LANE_PAIR_BITS: u32 = 2 * 8 * sgnn_wire::LANE_BYTES as u32;

macro_rules! pairs {
    ($($k:literal),*) => {
        [$(Register {
            name: concat!("agg_pair_", $k),
            id: $k + 1,
            bits: LANE_PAIR_BITS,
            size: AGGREGATORS,
        }),*]
    };
}

/// `agg_pair_0` .. `agg_pair_15` (cells of [`LANE_PAIR_TYPE`], 64 bits): what the TNA program
/// declares in place of the v1model program's [`crate::aggregation::AGG_VALUE`].
pub const AGG_PAIR: [Register; LANE_PAIRS] =
    pairs!(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tofino_profiles_hold_what_the_tna_program_declares() {
        assert_eq!(
            sgnn_plan::profile::TNA_AGG_MEM_BYTES,
            u64::from(AGGREGATORS) * (crate::aggregation::LANES * sgnn_wire::LANE_BYTES) as u64
        );
    }
}
