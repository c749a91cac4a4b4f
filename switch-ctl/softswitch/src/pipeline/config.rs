//! Sizes of the program's register arrays and counters (`p4/v1model/config.p4`; contract: the
//! sizes of `sgnn_switch::aggregation`, `sgnn_switch::config` and `sgnn_switch::forwarding`).

/// Cells of `src_seen` (the P4 program's `SEEN_CELLS`).
pub const SEEN_CELLS: usize = sgnn_switch::aggregation::SEEN_CELLS as usize;
/// Cells of the per-worker registers (`MAX_WORKERS`).
pub(super) const MAX_WORKERS: usize = sgnn_switch::config::MAX_WORKERS as usize;

/// Largest port number plus one (size of the port counters).
pub const PORTS: usize = sgnn_switch::forwarding::PORTS as usize;
