//! `sgnn-planner`: turns a graph into a SwitchGNN plan (paper 3.2-3.3).
//!
//! It partitions the graph over the workers ([`partition`]), cuts the boundary graph into
//! blocks that fit the switch's aggregators ([`blocks`]), orders each block's sources and
//! allocates aggregators ([`order`]), chooses how every pair of workers' sums travel (the
//! deliveries of `sgnn-delivery`) and writes the plan with its report ([`planner`], [`report`]).
//! The plan's format, its invariant checker and the traffic model live in `sgnn-plan`; graph
//! input lives in `sgnn-graph`; programming a switch with a plan is `switch-ctl`'s.

pub mod blocks;
pub mod order;
pub mod partition;
pub mod planner;
pub mod report;
pub mod split;
pub mod units;

pub use planner::{make_plan, PlanRequest};

/// Errors of the planning pipeline.
#[derive(Debug, thiserror::Error)]
pub enum PlanningError {
    /// The graph could not be read.
    #[error(transparent)]
    Graph(#[from] sgnn_graph::GraphError),
    /// The plan could not be written, read or checked.
    #[error(transparent)]
    Plan(#[from] sgnn_plan::PlanError),
    /// The request does not make sense for this graph.
    #[error("{0}")]
    Input(String),
    /// METIS refused or failed.
    #[error("METIS failed: {0}")]
    Metis(String),
}
