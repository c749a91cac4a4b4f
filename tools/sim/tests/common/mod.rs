//! Planning helpers shared by the simulator's integration tests: real plans of small R-MAT
//! graphs made by `switch-ctl`'s planner.
#![allow(dead_code)] // each test binary uses its own subset

use sgnn_plan::model::PlanConfig;
use sgnn_plan::Plan;
use sgnn_planner::planner::{make_plan, PlanRequest};
use sgnn_sim::net::{ChannelStats, Net, NetStats, Out};
use sgnn_sim::{App, NetConfig, Pkt, RunReport, SimConfig, Time};

/// One gigabit per second.
pub const GBPS: u64 = 1_000_000_000;

/// METIS, GAMR order, 128-byte aggregators, seed 1.
pub fn base_config(workers: u32, mem: u64, dim: u32) -> PlanConfig {
    PlanConfig {
        workers,
        partitioner: sgnn_plan::Partitioner::Metis,
        switch_mem_bytes: mem,
        agg_bytes: 128,
        feature_dim: dim,
        order: sgnn_plan::SendOrder::Gamr,
        seed: 1,
        max_passes: 256,
        leaves: 1,
        aggregate: sgnn_plan::AggregateMode::Paper,
        recycle_slack: None,
    }
}

/// The plan of `rmat:scale={scale},edge_factor=8` under `config`.
pub fn plan_with(scale: u32, config: PlanConfig) -> Plan {
    let g = sgnn_graph::load_graph(&format!("rmat:scale={scale},edge_factor=8")).unwrap();
    let req = PlanRequest {
        config,
        graph_source: "test".into(),
        max_abs_value: 1.0,
    };
    make_plan(g.csr, g.stats, &req, &mut |_| {}).unwrap().0
}

/// [`plan_with`] the [`base_config`].
pub fn plan(scale: u32, workers: u32, mem: u64, dim: u32) -> Plan {
    plan_with(scale, base_config(workers, mem, dim))
}

/// Default buffers and ECN, a 100 Gbit/s recirculation path.
pub fn sim_cfg() -> SimConfig {
    SimConfig {
        net: NetConfig::default(),
        recirc_bps: 100 * GBPS,
        harvest_passes: 0,
    }
}

/// A strategy that sends nothing and never finishes (background alone).
pub struct Idle;

impl App for Idle {
    fn host_next(&mut self, _: u32, _: Time) -> Option<Pkt> {
        None
    }
    fn host_recv(&mut self, host: u32, pkt: Pkt, _: Time, _: &mut Out) {
        panic!("idle host {host} got {pkt:?}")
    }
    fn switch_recv(&mut self, _: u32, pkt: Pkt, _: Time, _: &mut Out) {
        panic!("switch got {pkt:?}")
    }
    fn progress(&self) -> (u64, u64) {
        (0, 1)
    }
}

/// Every frame and byte injected was consumed or dropped, and the channels' drops (frames and
/// bytes) add up to the totals; `what` names the run in failure messages.
pub fn assert_stats_conserved<'a>(
    s: &NetStats,
    channels: impl Iterator<Item = &'a ChannelStats> + Clone,
    what: &str,
) {
    assert_eq!(
        s.injected_frames,
        s.consumed_frames + s.dropped_frames,
        "{what} frames"
    );
    assert_eq!(
        s.injected_bytes,
        s.consumed_bytes + s.dropped_bytes,
        "{what} bytes"
    );
    let drops: u64 = channels.clone().map(|c| c.dropped_frames).sum();
    assert_eq!(drops, s.dropped_frames, "{what} channel drops (frames)");
    let drops: u64 = channels.map(|c| c.dropped_bytes).sum();
    assert_eq!(drops, s.dropped_bytes, "{what} channel drops (bytes)");
}

/// [`assert_stats_conserved`] of a network after a run.
pub fn assert_net_conserved(net: &Net) {
    assert_stats_conserved(&net.stats, net.channels.iter().map(|c| &c.stats), "network");
}

/// [`assert_stats_conserved`] of a strategy's run report.
pub fn assert_run_conserved(r: &RunReport) {
    assert_stats_conserved(&r.net, r.links.iter().map(|l| &l.stats), &r.strategy);
}

/// The host links' bytes less the daemons' acks ([`RunReport::overhead`]), per worker:
/// (uplinks, downlinks). What the traffic model counts, for runs of the real code.
pub fn less_acks(r: &RunReport) -> (Vec<u64>, Vec<u64>) {
    let o = r.overhead.clone().unwrap_or_default();
    let sub = |a: &[u64], b: &[u64]| -> Vec<u64> {
        a.iter()
            .enumerate()
            .map(|(i, &x)| x - b.get(i).copied().unwrap_or(0))
            .collect()
    };
    (
        sub(&r.host_uplink, &o.uplink),
        sub(&r.host_downlink, &o.downlink),
    )
}

/// The plan of graph `graph` (a `sgnn_graph::load_graph` spec) under `config`, values up to
/// `max_abs_value` (the cross-crate tests' plans: `tests/harness.rs`, `tests/recovery.rs`,
/// `tests/congestion.rs`, `tests/swarm.rs`).
pub fn plan_of(graph: &str, config: PlanConfig, max_abs_value: f32) -> Plan {
    let g = sgnn_graph::load_graph(graph).unwrap();
    let req = PlanRequest {
        config,
        graph_source: "rmat".into(),
        max_abs_value,
    };
    make_plan(g.csr, g.stats, &req, &mut |_| {}).unwrap().0
}
