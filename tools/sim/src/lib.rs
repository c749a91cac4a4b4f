//! `sgnn-sim`: a packet-level discrete-event simulator of SwitchGNN and its baselines
//! (issue 5), driven by the real plans of `switch-ctl`.
//!
//! - [`run_strategy`] (`run.rs`): one run of a strategy, through the event loop, into a
//!   [`RunReport`]; [`Strategy`] (`strategy.rs`): the strategies and the plan each needs;
//! - [`net`]: the event core (event queue, channels, output-queued switch ports with finite
//!   buffers, ECN marking, strict DSCP priorities, host NICs with pacing);
//! - [`topology`]: hosts, switches, links and routing (star, leaf-spine with ECMP);
//! - [`strategies`]: host and switch logic of each strategy (`strategies/real.rs` runs the
//!   daemons' engines and the software switch's pipeline);
//! - [`report`]: the text summary and the CSVs of runs, links and time series;
//! - [`plot`]: SVG/PNG plots of runs and generic line and bar charts;
//! - [`cc`]: DCQCN-like rate control of the background flows; [`daemons`]: the daemons'
//!   options and counters (loss recovery); [`background`]: background flows around any
//!   strategy; [`hash`]: the seeded hashes behind every random choice;
//! - [`harness`]: the daemons' engines and the software switch's pipeline in one process over
//!   a faulty channel, invariants checked on every event, and a swarm of seeded scenarios
//!   (the cross-crate tests and the runtime fuzz targets build on it);
//! - [`SimError`]: why a call failed (one variant per kind of failure).
//!
//! `tools/sim/README.md` describes the model, what it abstracts, and its validation tests.

pub mod background;
pub mod cc;
pub mod daemons;
mod error;
pub mod harness;
pub mod hash;
pub mod net;
pub mod plot;
pub mod report;
mod run;
pub mod strategies;
mod strategy;
pub mod topology;

pub use daemons::{DaemonCounters, DaemonOptions};
pub use error::SimError;
pub use net::{tx_time, App, Gauges, NetConfig, NetStats, Pkt, Progress, Sample, Time};
pub use run::{
    run_app, run_strategy, run_strategy_with, star_profile, LinkReport, Overhead, RunReport,
    SimConfig, AUTO_MAX_SAMPLES, AUTO_SAMPLE_EVERY,
};
pub use strategy::{PlanVariant, Strategy};
pub use topology::Topology;
