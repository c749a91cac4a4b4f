//! SwitchGNN's delivery planning: how the contributions of every ordered pair of partitions
//! reach their destinations (host unicast `H`, multicast `M`, in-switch sums of partials `A`,
//! per-edge sums `R`, or a vertex cover `C`), what that costs, and the plan the switch and the
//! hosts then run (`switch-ctl plan --aggregate multicast|partials|auto`). It reads and writes
//! plans through the contract ([`sgnn_plan`]: the data model, the on-disk format, the checks
//! and the traffic model) and needs no METIS, so the simulator uses it without the planner.
//!
//! What is where:
//! - `pair_index.rs`: [`PairIndex`], per ordered pair of partitions its boundary vertices,
//!   their neighbour counts and a minimum vertex cover of its cross edges;
//! - `choice.rs`: [`Delivery`] (the M/A/R/C/H ways) and [`Choice`] (one way per pair);
//! - `layout.rs`: [`Tables`], a choice laid out for the hosts and the switch (sends in order,
//!   replication and per-edge tables, aggregator rows, blocks), with [`Layout`], [`RawOrder`]
//!   and [`Send`];
//! - `cost.rs`: the cost model: [`Sizes`], [`Prediction`], the busiest-link bound of a choice
//!   ([`evaluate`]), [`Planned`], the paper's plan predicted ([`predict_paper`]) or bounded
//!   ([`bound_paper`]), the host-based baseline ([`predict_host_based`]);
//!   `cost/replay.rs`: the replay of a layout's schedule in time ([`Replay`]);
//! - `auto.rs`: the capacity-aware `auto` search ([`search`], [`auto_candidates`],
//!   [`optimize`]);
//! - `plan.rs`: one mode's delivery planned, laid out and replayed ([`plan_delivery`],
//!   [`REPLAY_MARGIN`]);
//! - `compare.rs`: every mode side by side for `switch-ctl plan` and `report.json`
//!   ([`compare()`], [`ModeRow`]);
//! - `lower.rs`: a delivery lowered into a [`sgnn_plan::Plan`] ([`lower::deliver`],
//!   [`lower::lower`]);
//! - `recycle.rs`: blocks cut by aggregator live range ([`recycle::DEFAULT_SLACK`]);
//! - `live.rs`: what recycling by live range could give back on a plan ([`live::recycle`]);
//! - `mvc.rs`: maximum matchings and minimum vertex covers of bipartite graphs;
//! - `traffic.rs`: SuperGCN's covers and bytes, and the traffic of every strategy
//!   ([`traffic::model`], `report.json`'s `traffic_bytes`).

pub mod auto;
pub mod choice;
pub mod compare;
pub mod cost;
pub mod layout;
pub mod live;
pub mod lower;
pub mod mvc;
pub mod pair_index;
pub mod plan;
pub mod recycle;
#[cfg(test)]
mod testing;
pub mod traffic;

pub use auto::{auto_candidates, optimize, search};
pub use choice::{Choice, Delivery};
pub use compare::{compare, compare_with, ModeRow};
pub use cost::{
    bound_paper, evaluate, predict_host_based, predict_paper, Planned, Prediction, Replay, Sizes,
};
pub use layout::{Layout, RawOrder, Send, Tables};
pub use pair_index::PairIndex;
pub use plan::{plan_delivery, plan_delivery_laid_out, plan_delivery_with, REPLAY_MARGIN};
