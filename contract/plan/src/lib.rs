//! SwitchGNN plans.
//!
//! A plan is everything the pre-processing phase of SwitchGNN decides (paper sections 3.2-3.3):
//! which worker owns each vertex, how the cross-partition edges are cut into blocks that fit the
//! switch's aggregators, in which order each block's sources are sent, and which aggregator each
//! destination uses. This crate owns the plan's data model ([`Plan`]), its versioned on-disk form
//! ([`Plan::save`], [`Plan::load`], documented in `docs/formats.md`), the invariant checker
//! ([`verify`]) and the traffic model ([`traffic`]). It does not compute plans: `switch-ctl` does.
//! Everything downstream (switch tables, host schedules, the simulator, reports) reads plans
//! through this crate, so nothing re-derives what the plan decided.

pub mod delivery;
mod error;
mod io;
pub mod live;
pub mod lower;
pub mod model;
pub mod mvc;
pub mod profile;
pub mod recycle;
pub mod replay;
pub mod structure;
pub mod traffic;
pub mod verify;

pub use error::PlanError;
pub use model::{
    AggSlot, AggregateMode, Block, BlockSummary, LeafCut, Manifest, Partial, Partitioner, Plan,
    PlanConfig, ReplicaGroups, SendOrder, WorkerSchedule, FIRST_REPLICA_GROUP,
};
pub use verify::verify;

/// Name written into every manifest so a foreign JSON file is recognised.
pub const FORMAT_NAME: &str = "sgnn-plan";
/// Version of the on-disk layout; bumped on any incompatible change.
pub const FORMAT_VERSION: u32 = 1;
