//! The real-code harness: the daemons' engines ([`sgnn_transport::Engine`]) and the software
//! switch's [`softswitch::Pipeline`] in one process, in virtual time, over a channel whose
//! faults are options, with invariant checkers run on every event. TigerBeetle's VOPR and its
//! simulated cluster are the model: one seed gives one run, event for event, and a swarm of
//! seeds draws its own fault options from each.
//!
//! - [`channel`]: the network between the workers and the switch: [`Faults`] (drop,
//!   duplicate, reorder, delay), seeded by [`crate::hash`], plus targeted drops and injected
//!   frames;
//! - [`cluster`]: [`Cluster`], N engines and the loaded switch on that channel, and its event
//!   loop ([`Cluster::run`]); workers can start late or die;
//! - [`invariants`]: what must hold after every event (an aggregator never counts a
//!   contribution twice, block synchronisation is monotone), at the end of every layer (no
//!   busy aggregator) and for every sum (bit for bit the reference's, within the codec's
//!   bound of the real sums); a broken one panics with the event number, the seed and what
//!   broke ([`Violation`]);
//! - [`layers`]: [`run_layers`], rounds chained as the daemon's stand-alone mode chains them,
//!   every worker's sums checked as they arrive;
//! - [`swarm`]: [`Scenario`] (fault options, plan, mode and sizes drawn from one seed) and
//!   [`swarm()`] (many seeds; a failing one is printed with a command that reproduces it);
//! - [`switch`]: a switch loaded with a plan, as `switch-ctl load` leaves it;
//! - [`frames`]: frames built by hand (a switch's or a stranger's).
//!
//! `strategies::RealTraffic` (the simulator's real-code strategies) uses the switch loading
//! and the sums check; `tests/harness.rs`, `tests/swarm.rs`, `tests/recovery.rs`,
//! `tests/congestion.rs` and the runtime fuzz targets (`tools/sim/fuzz`) use the rest.

pub mod channel;
pub mod cluster;
pub mod frames;
pub mod invariants;
pub mod layers;
pub mod swarm;
pub mod switch;

pub use channel::{Channel, Faults, To, LATENCY_NS, STRAY_PORT};
pub use cluster::{Cluster, EngineError};
pub use invariants::{Invariants, Violation};
pub use layers::{feature, run_layers, LayerCheck};
pub use swarm::{swarm, Scenario, SwarmSummary};
pub use switch::{loaded_switch, worker_ports};
