//! `switch-ctl`: programs a switch with a plan.
//!
//! - [`program`]: what a plan asks of a switch (table entries, settings, multicast groups,
//!   the recirculation clone session), target-neutral and checked against the switch's sizes;
//! - [`install`]: loads a program through any [`Target`];
//! - [`dump`]: reads back what a switch holds (`switch-ctl dump`);
//! - [`backend`]: the [`Target`] trait the control plane programs a switch through, and its
//!   backends: P4Runtime (bmv2, a Tofino running the SDE's P4Runtime server, the software
//!   switch), BfRuntime (a Tofino's `bf_switchd`), in-memory, and fault-injecting.
//!
//! Planning (graph to plan) is `sgnn-planner`'s; the P4Runtime protos, client and P4Info
//! handling are `sgnn-p4rt`'s.

pub mod backend;
pub mod dump;
pub mod install;
pub mod program;

pub use backend::{Target, TargetError};
