//! SwitchGNN plans.
//!
//! A plan is everything the pre-processing phase of SwitchGNN decides (paper sections 3.2-3.3):
//! which worker owns each vertex, how the cross-partition edges are cut into blocks that fit the
//! switch's aggregators, in which order each block's sources are sent, and which aggregator each
//! destination uses. This crate owns the plan's data model ([`Plan`]), its versioned on-disk form
//! ([`Plan::save`], [`Plan::load`], documented in `docs/formats.md`), the invariant checker
//! ([`verify()`]) and the traffic model ([`traffic`]). It does not compute plans: the planner
//! (`switch-ctl/planner`: partitions, blocks, orders) and the delivery planning
//! (`switch-ctl/delivery`: the pair index, the per-pair choice, the cost model, the `auto`
//! search, lowering, recycling) do. Everything downstream (switch tables, host schedules, the
//! simulator, reports) reads plans through this crate, so nothing re-derives what the plan
//! decided.
//!
//! What is where:
//! - `model.rs`: the data model ([`Plan`], its manifest, configuration, blocks and limits);
//! - `io.rs`: the versioned on-disk format ([`Plan::save`], [`Plan::load`]);
//! - `structure.rs`: the structural checks every reader runs at load
//!   ([`Plan::check_structure`]);
//! - `verify.rs`: the deeper invariants ([`verify()`]);
//! - `profile.rs`: switch profiles, the sizes and rates of a target
//!   ([`profile::SwitchProfile`]);
//! - `traffic.rs`: the traffic model, bytes on the wire per strategy, and the blocks' loads
//!   and planned pacing the daemons read ([`traffic::block_loads`], [`traffic::pace`]);
//! - `error.rs`: [`PlanError`].

mod error;
mod io;
pub mod model;
pub mod profile;
pub mod structure;
pub mod traffic;
pub mod verify;

pub use error::PlanError;
pub use model::{
    AggSlot, AggregateMode, Block, BlockSummary, ColumnSplit, LeafCut, Manifest, Partial,
    Partitioner, Plan, PlanConfig, ReplicaGroups, SendOrder, WorkerSchedule, FIRST_REPLICA_GROUP,
};
pub use verify::verify;

/// Name written into every manifest so a foreign JSON file is recognised.
pub const FORMAT_NAME: &str = "sgnn-plan";
/// Version of the on-disk layout; bumped on any incompatible change.
pub const FORMAT_VERSION: u32 = 1;
