//! The SwitchGNN host transport.
//!
//! A worker's side of SwitchGNN (paper sections 3.3-3.4 and 4, "Host"): per propagation round
//! it sends its sources block by block in the planned order, collects the switch's aggregated
//! results, recovers whatever was lost (send and reception bitmaps, acks, a shared cache of
//! raw contributions, fetch on timeout, RESEND retransmissions), adds local neighbours, and
//! hands the per-vertex sums to the application. The baseline (host-based unicast) runs in
//! the same machinery.
//!
//! * [`engine::Engine`] is the protocol as a sans-IO state machine: fed frames and time, it
//!   emits frames. Nothing in it knows about sockets or clocks.
//! * [`datapath::Datapath`] moves bursts of Ethernet frames; [`datapath::UdpDatapath`] is the
//!   unprivileged kernel-UDP backend the software switch speaks.
//! * [`session::Session`] drives an engine over a datapath and offers the application API,
//!   [`session::Session::propagate`].
//! * The daemon's Unix-socket interface for training processes is its own crate, `sgnn-ipc`
//!   (`contract/ipc`), shared with `sgnn-train` and the Python client.
//!
//! The protocol, its state diagram and why sums stay exact are in `docs/host.md`.

#![deny(clippy::undocumented_unsafe_blocks)]

pub mod class;
pub mod datapath;
pub mod engine;
pub mod error;
pub mod rate;
pub mod reference;
pub mod session;
pub mod stats;
pub mod view;

pub use class::{DscpMap, TrafficClass};
pub use engine::{Direction, Engine, EngineConfig, Layer, Mode};
pub use error::{
    BadInput, Heard, ProtocolError, RoundAt, Stall, SwitchHolds, TransportError, UnusablePlan,
    WrongState,
};
pub use rate::{Pacing, RateConfig, RateConfigError};
pub use session::Session;
pub use stats::Stats;
pub use view::WorkerView;
