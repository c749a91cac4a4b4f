//! `sgnn-train`: full-graph GNN training whose every neighbour sum goes through an
//! [`exchange::Exchange`]: in one process ([`exchange::LocalExchange`], the reference), or
//! across workers through the SwitchGNN daemons. `docs/training.md` has the maths, the
//! recipe and the results.

pub mod daemon;
pub mod data;
pub mod distributed;
mod error;
pub mod exchange;
pub mod gnn;
pub mod train;

pub use error::{ExchangeError, InputError, SbmProblem, ShapeMismatch, TrainError};
