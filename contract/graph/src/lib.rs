//! Graph input for the SwitchGNN toolkit.
//!
//! This crate owns everything between a file (or a generator spec) and an in-memory undirected
//! graph in CSR form: SNAP-style edge lists (plain or gzip), `.npy` edge and feature arrays, the
//! R-MAT power-law generator and the stochastic block model ([`sbm`]). Every reader reports
//! errors with the file and the line (or array index) at fault. Sparse ids (a few ids spread
//! over a large range, common in real SNAP dumps) are renumbered to `0..n` on load, keeping the
//! original ids ([`ids`]). The formats are documented in `docs/formats.md`.

pub mod csr;
pub mod error;
pub mod features;
pub mod ids;
pub mod npy;
pub mod rmat;
pub mod sbm;
pub mod snap;
pub mod source;

pub use csr::{BuildStats, Csr, CsrError, VertexId};
pub use error::GraphError;
pub use features::Features;
pub use rmat::RmatSpec;
pub use source::{load_graph, GraphSource, LoadedGraph};
