//! Planned pacing against the plan's own queues (issue 30, docs/host.md "Planned pacing"):
//! with ECN at the default threshold and the daemons' rate control on, a capacity-aware plan
//! runs at its predicted time, with no rate halving, because its senders spread each block over
//! the block's busiest link; without planned pacing the same plan's synchronized deliveries
//! queue past the threshold and the senders halve. Simulated time and event counts are
//! deterministic for a seed, so these are exact relations, not timings.

use sgnn_plan::Plan;
use sgnn_planner::planner::{make_plan, PlanRequest};
use sgnn_sim::net::PS_PER_US;
use sgnn_sim::{run_strategy_with, DaemonOptions, RunReport, Strategy, Time, Topology};
use sgnn_transport::Pacing;

mod common;
use common::*;

const DELAY: Time = 2 * PS_PER_US;

/// One layer with the default network (ECN at 100 KB) and the daemons' default rate control,
/// every sum checked against the single-process reference.
fn simulate(p: &Plan, s: Strategy, pacing: Pacing) -> RunReport {
    let topo = Topology::star(p.workers(), 100 * GBPS, DELAY);
    let opts = DaemonOptions {
        pacing,
        verify: true,
        ..DaemonOptions::default()
    };
    run_strategy_with(p, s, topo, sim_cfg(), &opts, &mut |_| {}).unwrap()
}

fn us(r: &RunReport) -> f64 {
    r.time.expect("completed") as f64 / PS_PER_US as f64
}

/// `auto` within 10% of its own prediction, with no halving, and faster than host-based
/// exchange with and without its rate control; returns (auto, predicted) in us.
fn check_auto(what: &str, p: &Plan) -> (f64, f64) {
    let auto = simulate(p, Strategy::SwitchGnnAuto, Pacing::Planned);
    let t = us(&auto);
    let predicted = auto.predicted.as_ref().unwrap().time_us;
    let host = us(&simulate(p, Strategy::HostBased, Pacing::Planned));
    let host_no_cc = us(&simulate(p, Strategy::HostBasedNoCc, Pacing::Planned));
    eprintln!(
        "{what}: auto {t:.1} us (predicted {predicted:.1}, {} halvings, {} marks), host-based {host:.1} us, without rate control {host_no_cc:.1} us",
        auto.hosts.rate_decreases,
        auto.ecn_marked()
    );
    assert_eq!(
        auto.hosts.rate_decreases, 0,
        "{what}: the plan's own queues halved its senders"
    );
    assert!(
        (t - predicted).abs() <= 0.10 * predicted,
        "{what}: auto {t:.1} us against {predicted:.1} us predicted"
    );
    assert!(
        t < host.min(host_no_cc),
        "{what}: auto {t:.1} us, host-based {host:.1} / {host_no_cc:.1} us"
    );
    (t, predicted)
}

#[test]
fn a_paced_plan_runs_at_its_prediction_with_ecn_on_a_generated_graph() {
    // R-MAT 2^12 at 16 workers: every worker's sums converge on the busiest downlinks.
    let g = sgnn_graph::load_graph("rmat:scale=12,edge_factor=32,seed=2").unwrap();
    let req = PlanRequest {
        config: base_config(16, 10_000_000, 128),
        graph_source: "rmat".into(),
        max_abs_value: 1.0,
    };
    let p = make_plan(g.csr, g.stats, &req, &mut |_| {}).unwrap().0;
    let (paced, _) = check_auto("rmat 2^12, 16 workers", &p);
    // Without planned pacing the same plan queues past the threshold and the senders halve.
    let free = simulate(&p, Strategy::SwitchGnnAuto, Pacing::Off);
    eprintln!(
        "unpaced: {:.1} us, {} halvings, {} marks",
        us(&free),
        free.hosts.rate_decreases,
        free.ecn_marked()
    );
    assert!(free.ecn_marked() > 0 && free.hosts.rate_decreases > 0);
    assert!(us(&free) > paced);
}

#[test]
fn email_enron_at_8_workers_runs_at_its_prediction_with_ecn_on() {
    let Some(dir) = sgnn_testkit::dataset("email-Enron", "email-Enron pacing test") else {
        return;
    };
    let g = sgnn_graph::load_graph(dir.join("edges.txt.gz").to_str().unwrap()).unwrap();
    let req = PlanRequest {
        config: base_config(8, 10_000_000, 128),
        graph_source: "email-Enron".into(),
        max_abs_value: 1.0,
    };
    let p = make_plan(g.csr, g.stats, &req, &mut |_| {}).unwrap().0;
    check_auto("email-Enron, 8 workers", &p);
}
