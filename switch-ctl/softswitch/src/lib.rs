//! The SwitchGNN software switch.
//!
//! [`pipeline::Pipeline`] is a model of the P4 program in `p4/`: the same tables (by name, key
//! and action), the same register arrays, the same pass-by-pass recirculation and the same
//! counters, processing one frame at a time and returning the frames it emits. It runs behind
//! any datapath (UDP, AF_PACKET, DPDK) and inside tests, on one thread or, as
//! [`pipeline::shards::Shards`], a front and aggregator shards on several; [`tables`] fills its tables from a plan.
//!
//! The `softswitch` binary runs it on numbered ports ([`ports`]) behind a P4Runtime server
//! ([`p4rt`], over the names of [`control`]), with captures ([`capture`]), counters
//! ([`stats`]) and a metrics endpoint ([`metrics`]).

#![deny(clippy::undocumented_unsafe_blocks)]

pub mod capture;
pub mod control;
pub mod limits;
pub mod metrics;
pub mod p4rt;
pub mod pipeline;
pub mod ports;
pub mod stats;
pub mod tables;

pub use pipeline::shards::Shards;
pub use pipeline::{
    Counters, Emitted, FabricRole, Pipeline, PortCount, Recirculation, SwitchConfig, PORTS,
    SEEN_CELLS, SEEN_VALID,
};
pub use tables::{
    AggAction, AggregateParams, PortEnd, Replica, Tables, WorkerAddr, WorkerPort, ADVANCE_GROUP,
};
