//! Errors of the transport.

/// Everything that can stop a worker.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    /// The plan cannot be used by this worker (wrong worker id, inconsistent files, too small
    /// for the requested feature size, ...). The message says what to fix.
    #[error("{0}")]
    Plan(String),
    /// The plan directory could not be read.
    #[error(transparent)]
    PlanIo(#[from] sgnn_plan::PlanError),
    /// The application passed features that do not fit the plan or the round.
    #[error("{0}")]
    BadInput(String),
    /// An operation was called in a state where it makes no sense (e.g. a second round
    /// started while one is running).
    #[error("{0}")]
    State(String),
    /// The switch or a peer sent something that only a different plan or a misconfigured
    /// testbed produces.
    #[error("{0}")]
    Protocol(String),
    /// Nothing moved for longer than the stall timeout; the message says what the worker was
    /// waiting for and from whom.
    #[error("{0}")]
    Stalled(String),
    /// A peer answered none of this worker's liveness hellos for
    /// `EngineConfig::liveness_ns` while this worker waited: it is dead or cut off.
    #[error("{message}")]
    PeerSilent {
        /// The silent peer.
        worker: u16,
        /// What happened and what to do.
        message: String,
    },
    /// The datapath failed.
    #[error("datapath: {0}")]
    Io(#[from] std::io::Error),
}
