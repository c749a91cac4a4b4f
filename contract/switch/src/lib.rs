//! The switch contract: what the SwitchGNN P4 program (`p4/v1model`, and `p4/tna` where
//! [`tna`] says so) exposes to everything outside it, defined once.
//!
//! One module per P4 control, as `p4/v1model/` has one file per control: [`admission`], [`aggregation`],
//! [`block_sync`], [`recovery`], [`forwarding`], [`priority`], [`ecn`], [`drop_simulator`],
//! [`config`] (the `switch_config` table) and [`counters`]. Each holds its tables (with typed
//! keys and actions), its registers, its sizes and ids, and the numbers other parts must agree
//! on (the advance multicast group, the recirculation clone session, the event counter's
//! order).
//!
//! Who reads it: `sgnn-p4rt` builds the P4Info the program must produce from [`TABLES`],
//! [`ACTIONS`], [`REGISTERS`] and [`COUNTERS`]; `switch-ctl` turns a plan into [`Entry`]s
//! through [`TypedEntry`]; the software switch stores [`TypedEntry`]s in its tables and serves
//! them back by the same names; the testbed, `switch-ctl dump` and the metrics name events by
//! [`counters::Event`]. `bmv2-tests/tests/p4_source.rs` checks every object and constant here
//! against the P4 source without a compiler, so CI fails when the two disagree.
#![warn(missing_docs)]

pub mod admission;
pub mod aggregation;
pub mod block_sync;
pub mod config;
pub mod counters;
pub mod drop_simulator;
pub mod ecn;
mod entry;
pub mod fabric;
pub mod forwarding;
pub mod priority;
pub mod recovery;
pub mod tna;

pub use entry::{ContractError, Entry, TableKey, TypedEntry};

/// An exact match field of a table: its P4Runtime name and width.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    /// Name (`@name` of the key expression).
    pub name: &'static str,
    /// Width in bits.
    pub bits: u32,
}

/// A parameter of an action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Param {
    /// Name.
    pub name: &'static str,
    /// Width in bits.
    pub bits: u32,
}

/// An action: its `@name`, `@id` and parameters in declaration order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Action {
    /// `@name` without the leading dot.
    pub name: &'static str,
    /// `@id` (the P4Info id is `0x01 << 24 | id`).
    pub id: u32,
    /// Parameters.
    pub params: &'static [Param],
}

/// A table: its `@name`, `@id`, exact keys, actions and size. Every keyed table's default is
/// `NoAction` (a miss drops, or does nothing); a keyless table's only action is its default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Table {
    /// `@name` without the leading dot.
    pub name: &'static str,
    /// `@id` (the P4Info id is `0x02 << 24 | id`).
    pub id: u32,
    /// Exact match fields, in key order (none: keyless).
    pub keys: &'static [Key],
    /// Actions (besides `NoAction`).
    pub actions: &'static [&'static Action],
    /// Entries it holds.
    pub size: u32,
}

impl Table {
    /// Whether the table has no key (its default action is its setting).
    pub fn keyless(&self) -> bool {
        self.keys.is_empty()
    }

    /// The action of this table named `name`.
    pub fn action(&self, name: &str) -> Option<&'static Action> {
        self.actions.iter().copied().find(|a| a.name == name)
    }

    /// The width of key field `name`.
    pub fn key(&self, name: &str) -> Option<&'static Key> {
        self.keys.iter().find(|k| k.name == name)
    }
}

/// A register array: its `@name`, `@id`, cell width and cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Register {
    /// `@name` without the leading dot.
    pub name: &'static str,
    /// `@id` (the P4Info id is `0x10 << 24 | id` in the v1model program).
    pub id: u32,
    /// Cell width in bits.
    pub bits: u32,
    /// Cells.
    pub size: u32,
}

/// What a counter counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Packets.
    Packets,
    /// Packets and bytes.
    Both,
}

/// A counter array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counter {
    /// `@name` without the leading dot.
    pub name: &'static str,
    /// `@id` (the P4Info id is `0x12 << 24 | id` in the v1model program).
    pub id: u32,
    /// Unit.
    pub unit: Unit,
    /// Cells.
    pub size: u32,
}

/// Every table of the program, in `@id` order.
pub const TABLES: [&Table; 7] = [
    &aggregation::AGG_TABLE,
    &forwarding::WORKER_TABLE,
    &forwarding::IPV4_FORWARD,
    &priority::DSCP_PRIORITY,
    &forwarding::WORKER_ADDR,
    &config::SWITCH_CONFIG,
    &forwarding::PORT_WORKER,
];

/// Every action but core.p4's `NoAction`, in `@id` order.
pub const ACTIONS: [&Action; 12] = [
    &aggregation::AGGREGATE,
    &aggregation::DELIVER,
    &forwarding::SET_WORKER,
    &forwarding::FORWARD,
    &priority::SET_PRIORITY,
    &forwarding::SET_WORKER_ADDR,
    &config::SET_CONFIG,
    &aggregation::REPLICATE,
    &forwarding::SET_PORT_WORKER,
    &aggregation::AGGREGATE_UP,
    &aggregation::AGGREGATE_PARTIALS,
    &forwarding::SET_PORT_LINK,
];

/// Every register of the program, in `@id` order (ids 41-47 were settings registers in an
/// early draft and are not reused).
pub const REGISTERS: [&Register; 48] = {
    let l = &aggregation::AGG_VALUE;
    [
        &l[0],
        &l[1],
        &l[2],
        &l[3],
        &l[4],
        &l[5],
        &l[6],
        &l[7],
        &l[8],
        &l[9],
        &l[10],
        &l[11],
        &l[12],
        &l[13],
        &l[14],
        &l[15],
        &l[16],
        &l[17],
        &l[18],
        &l[19],
        &l[20],
        &l[21],
        &l[22],
        &l[23],
        &l[24],
        &l[25],
        &l[26],
        &l[27],
        &l[28],
        &l[29],
        &l[30],
        &l[31],
        &aggregation::AGG_COUNT,
        &aggregation::AGG_STATE,
        &aggregation::AGG_TAG,
        &aggregation::AGG_ECN,
        &block_sync::SYNC_ROUND,
        &block_sync::SYNC_BLOCK,
        &block_sync::SYNC_DONE,
        &block_sync::SYNC_COUNT,
        &drop_simulator::DROP_SEEN,
        &aggregation::SRC_SEEN,
        &aggregation::AGG_GEN,
        &aggregation::AGG_IDS,
        &recovery::SEQ_NEXT,
        &recovery::SEQ_GAP,
        &recovery::SENT_DONE,
        &recovery::SENT_COUNT,
    ]
};

/// Every counter of the program, in `@id` order.
pub const COUNTERS: [&Counter; 3] = [&counters::EVENTS, &counters::PORT_RX, &counters::PORT_TX];

/// The table named `name`.
pub fn table(name: &str) -> Option<&'static Table> {
    TABLES.iter().copied().find(|t| t.name == name)
}

/// The register named `name`.
pub fn register(name: &str) -> Option<&'static Register> {
    REGISTERS.iter().copied().find(|r| r.name == name)
}

/// The counter named `name`.
pub fn counter(name: &str) -> Option<&'static Counter> {
    COUNTERS.iter().copied().find(|c| c.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_in_order() {
        let ids = |v: Vec<u32>| {
            let mut s = v.clone();
            s.sort_unstable();
            s.dedup();
            assert_eq!(s, v, "ids unique and ascending");
        };
        ids(TABLES.iter().map(|t| t.id).collect());
        ids(ACTIONS.iter().map(|a| a.id).collect());
        ids(REGISTERS.iter().map(|r| r.id).collect());
        ids(COUNTERS.iter().map(|c| c.id).collect());
    }

    #[test]
    fn every_action_of_a_table_is_an_action_of_the_program() {
        for t in TABLES {
            for a in t.actions {
                assert!(ACTIONS.contains(a), "{}: {}", t.name, a.name);
            }
        }
        for a in ACTIONS {
            assert!(
                TABLES.iter().any(|t| t.actions.contains(&a)),
                "{} belongs to no table",
                a.name
            );
        }
    }

    #[test]
    fn lane_registers_are_named_and_numbered_by_lane() {
        for (i, r) in aggregation::AGG_VALUE.iter().enumerate() {
            assert_eq!(r.name, format!("agg_value_{i}"));
            assert_eq!(r.id, i as u32 + 1);
        }
        assert_eq!(aggregation::AGG_VALUE.len(), sgnn_wire::LANES);
    }

    /// The planner cuts blocks at the profile's `seen_cells` (sgnn-plan cannot name this
    /// crate, so it keeps its own copy of the sizes): they must be the programs' `src_seen`.
    #[test]
    fn the_profiles_src_seen_cells_are_the_programs() {
        use sgnn_plan::profile::{SwitchProfile, TNA_SEEN_CELLS, V1MODEL_SEEN_CELLS};
        assert_eq!(V1MODEL_SEEN_CELLS, u64::from(aggregation::SEEN_CELLS));
        assert_eq!(V1MODEL_SEEN_CELLS, u64::from(aggregation::SRC_SEEN.size));
        assert_eq!(TNA_SEEN_CELLS, u64::from(tna::SEEN_CELLS));
        let cells = |name| SwitchProfile::named(name).unwrap().seen_cells;
        assert_eq!(cells("default"), u64::from(aggregation::SEEN_CELLS));
        assert_eq!(cells("tofino1"), u64::from(tna::SEEN_CELLS));
        assert_eq!(cells("tofino2"), u64::from(tna::SEEN_CELLS));
        // A larger build keeps the programs' cells per aggregator.
        use sgnn_plan::profile::SEEN_CELLS_PER_AGGREGATOR;
        assert_eq!(
            u64::from(aggregation::SEEN_CELLS),
            SEEN_CELLS_PER_AGGREGATOR * u64::from(aggregation::AGGREGATORS)
        );
        assert_eq!(
            u64::from(tna::SEEN_CELLS),
            SEEN_CELLS_PER_AGGREGATOR * u64::from(tna::AGGREGATORS)
        );
    }
}
