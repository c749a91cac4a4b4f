//! `sgnn-train`: full-graph GNN training whose every neighbour sum goes through an
//! [`exchange::Exchange`]: in one process ([`exchange::LocalExchange`], the reference), or
//! across workers through the SwitchGNN daemons. `docs/training.md` has the maths, the
//! recipe and the results.

pub mod data;
pub mod distributed;
pub mod exchange;
pub mod model;
pub mod train;

/// Why training could not start or go on.
#[derive(Debug, thiserror::Error)]
pub enum TrainError {
    /// A missing or malformed input (file, flag).
    #[error("{0}")]
    Input(String),
    /// Arrays of the wrong shape reached an operation.
    #[error("shape mismatch: {0}")]
    Shape(String),
    /// The exchange failed (a daemon, a worker).
    #[error("exchange: {0}")]
    Exchange(String),
}
