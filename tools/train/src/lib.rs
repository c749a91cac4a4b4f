//! `sgnn-train`: full-graph GNN training whose every neighbour sum goes through an
//! [`exchange::Exchange`]: in one process ([`exchange::LocalExchange`], the reference), or
//! across workers through the SwitchGNN daemons. `docs/training.md` has the maths, the
//! recipe and the results.

pub mod daemon;
pub mod data;
pub mod distributed;
pub mod exchange;
pub mod gnn;
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
    /// A label is outside the classes training can allocate ([`data::MAX_CLASSES`]).
    #[error("{path}: label {label} at row {row} is out of range: labels are -1 (unlabelled) or classes 0..{limit} (the limit: below the number of vertices and below 2^20)")]
    Label {
        /// The labels file.
        path: std::path::PathBuf,
        /// Row of the first bad label.
        row: usize,
        /// The label as written.
        label: i128,
        /// Exclusive upper bound on labels.
        limit: u64,
    },
    /// The exchange failed (a daemon, a worker).
    #[error("exchange: {0}")]
    Exchange(String),
}
