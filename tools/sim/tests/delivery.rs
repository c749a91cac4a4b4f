//! The capacity-aware delivery strategies (`multicast`, `partials`, `switchgnn_auto`) on real
//! plans, run by the real daemons' engines and the software switch's pipeline: every host link
//! carries exactly the bytes of the planner's delivery model plus the daemons' acks, the layer
//! completes with every sum delivered, the cost model's prediction (its replay of the
//! schedule) is within 5% of the simulated time for the delivery strategies and within 15%
//! for host-based exchange and the paper's plan, and `switchgnn_auto` beats the host-based
//! baseline and the paper's design when recirculation costs a frame time per pass. The
//! accuracy runs turn the daemons' rate control off (its floor at the link rate): the cost
//! model predicts the exchange, not how a controller reacts to ECN marks.

use sgnn_plan::Plan;
use sgnn_planner::planner::{make_plan, PlanRequest};
use sgnn_sim::cc::CcConfig;
use sgnn_sim::net::PS_PER_US;
use sgnn_sim::{run_strategy_with, DaemonOptions, RunReport, SimConfig, Strategy, Time, Topology};

mod common;
use common::*;

const DELAY: Time = 2 * PS_PER_US;

const DELIVERY: [Strategy; 3] = [
    Strategy::Multicast,
    Strategy::Partials,
    Strategy::SwitchGnnAuto,
];

/// The daemons with their rate control off (the floor at the link rate), every sum checked
/// against the single-process reference.
fn simulate(p: &Plan, s: Strategy, cfg: SimConfig) -> RunReport {
    let topo = Topology::star(p.workers(), 100 * GBPS, DELAY);
    let opts = DaemonOptions {
        cc: CcConfig {
            min_bps: 100 * GBPS,
            ..CcConfig::default()
        },
        verify: true,
        ..DaemonOptions::default()
    };
    run_strategy_with(p, s, topo, cfg, &opts, &mut |_| {}).unwrap()
}

fn us(r: &RunReport) -> f64 {
    r.time.expect("completed") as f64 / PS_PER_US as f64
}

#[test]
fn delivery_strategies_put_the_models_bytes_on_every_link_and_match_the_prediction() {
    let p = plan(11, 8, 100_000_000, 128);
    for recirc_gbps in [100u64, 2_400, 1_000_000] {
        let mut cfg = sim_cfg();
        cfg.recirc_bps = recirc_gbps * GBPS;
        for s in DELIVERY
            .into_iter()
            .chain([Strategy::HostBased, Strategy::SwitchGnn])
        {
            let r = simulate(&p, s, cfg);
            assert!(r.time.is_some(), "{} did not complete", s.name());
            assert_eq!(r.net.dropped_frames, 0);
            assert_run_conserved(&r);
            if let Some(model) = &r.model_traffic {
                let (up, down) = less_acks(&r);
                assert_eq!(up, model.per_worker_uplink, "{} uplinks", s.name());
                assert_eq!(down, model.per_worker_downlink, "{} downlinks", s.name());
                let acks = r.overhead.as_ref().map_or(0, |o| o.total());
                assert_eq!(r.total_bytes(), model.total + acks, "{}", s.name());
            } else {
                assert!(!DELIVERY.contains(&s), "{} has its model", s.name());
            }
            let predicted = r
                .predicted
                .as_ref()
                .expect("every one of these has a prediction");
            let err = (predicted.time_us - us(&r)).abs() / us(&r);
            eprintln!(
                "{} at {recirc_gbps} Gbit/s: predicted {:.2} us, simulated {:.2} us ({:+.1}%)",
                s.name(),
                predicted.time_us,
                us(&r),
                100.0 * (predicted.time_us - us(&r)) / us(&r)
            );
            // The delivery strategies within 5%: the replay paces whole vectors, the daemons
            // pace frame by frame (partials 3.0% here, multicast 0.5%; before planned pacing
            // both were within 2%).
            let tolerance = if DELIVERY.contains(&s) { 0.05 } else { 0.15 };
            assert!(
                err <= tolerance || std::env::var_os("SGNN_MEASURE").is_some(),
                "{} at {recirc_gbps} Gbit/s: predicted {:.1} us, simulated {:.1} us",
                s.name(),
                predicted.time_us,
                us(&r)
            );
        }
    }
}

#[test]
fn auto_beats_host_based_and_the_paper_at_one_recirculation_port() {
    let p = plan(11, 8, 100_000_000, 128);
    let cfg = sim_cfg();
    let auto = us(&simulate(&p, Strategy::SwitchGnnAuto, cfg));
    let host = us(&simulate(&p, Strategy::HostBased, cfg));
    let paper = us(&simulate(&p, Strategy::SwitchGnn, cfg));
    let best_uniform = DELIVERY[..2]
        .iter()
        .map(|&s| us(&simulate(&p, s, cfg)))
        .fold(f64::INFINITY, f64::min);
    assert!(
        auto * 1.2 < host,
        "auto {auto:.1} us vs host-based {host:.1} us"
    );
    assert!(auto < paper, "auto {auto:.1} us vs paper {paper:.1} us");
    assert!(
        auto <= best_uniform * 1.02,
        "auto {auto:.1} us vs best uniform {best_uniform:.1} us"
    );
}

/// On a leaf-spine of real switches (lossless) the delivery strategies run: their replicas
/// and partial sources cross the leaves and spines, and every worker's sums equal the
/// reference. The one-switch cost model chooses the deliveries but predicts nothing there.
/// With loss too (recovered across the levels; `tests/real.rs` checks those sums).
#[test]
fn delivery_strategies_run_on_a_fabric_of_real_switches() {
    let p = plan(9, 8, 100_000_000, 64);
    let topo = Topology::leaf_spine(2, 2, 4, 100 * GBPS, 100 * GBPS, DELAY);
    let exact = DaemonOptions {
        verify: true,
        ..Default::default()
    };
    for s in DELIVERY {
        let r = run_strategy_with(&p, s, topo.clone(), sim_cfg(), &exact, &mut |_| {}).unwrap();
        assert!(
            r.time.is_some() && r.failure.is_none(),
            "{}: {r:?}",
            s.name()
        );
        assert_eq!(r.predicted, None, "{}", s.name());
        let lossy = DaemonOptions {
            loss: 0.01,
            fabric_loss: 0.01,
            timeout: Some(100 * sgnn_sim::net::PS_PER_US),
            verify: true,
            ..Default::default()
        };
        let r = run_strategy_with(&p, s, topo.clone(), sim_cfg(), &lossy, &mut |_| {}).unwrap();
        assert!(
            r.time.is_some() && r.failure.is_none(),
            "{} with loss: {r:?}",
            s.name()
        );
    }
}

/// ego-Facebook at 32 workers with free recirculation: many senders feed each sum, so per-edge
/// sums drain after the uplinks. The cost model's replay must see that and the hubs-first raw
/// order must recover it: auto's prediction within 2% of the daemons' simulated time, auto
/// faster than the daemons running host-based exchange and the paper's plan. (`unlimited` and
/// `supergcn` are models without the daemons' acks and block synchronisation: their times are
/// printed beside it, not compared.)
#[test]
fn auto_matches_the_per_edge_lower_bound_where_sums_drain() {
    let path = sgnn_testkit::datasets_dir().join("ego-Facebook/edges.txt.gz");
    let Some(g) = sgnn_testkit::require(
        "ego-Facebook drain test",
        sgnn_graph::load_graph(path.to_str().unwrap()),
        "put the shared datasets in ../shared/datasets or set SGNN_DATASETS",
    ) else {
        return;
    };
    let req = PlanRequest {
        config: base_config(32, 10_000_000, 128),
        graph_source: "ego-Facebook".into(),
        max_abs_value: 1.0,
    };
    let p = make_plan(g.csr, g.stats, &req, &mut |_| {}).unwrap().0;
    let mut cfg = sim_cfg();
    cfg.recirc_bps = 1_000_000 * GBPS;
    let auto = simulate(&p, Strategy::SwitchGnnAuto, cfg);
    let unlimited = us(&simulate(&p, Strategy::Unlimited, cfg));
    let supergcn = us(&simulate(&p, Strategy::SuperGcn, cfg));
    let host = us(&simulate(&p, Strategy::HostBased, cfg));
    let paper = us(&simulate(&p, Strategy::SwitchGnn, cfg));
    let predicted = auto.predicted.as_ref().unwrap();
    let t = us(&auto);
    eprintln!(
        "ego-Facebook: auto {t:.2} us (predicted {:.2}), host-based {host:.2}, paper {paper:.2}; models: unlimited {unlimited:.2}, supergcn {supergcn:.2}",
        predicted.time_us
    );
    assert!(
        t < host.min(paper),
        "auto {t:.2} us, host-based {host:.2} us, paper {paper:.2} us"
    );
    assert!(
        (predicted.time_us - t).abs() <= 0.02 * t,
        "predicted {:.2} us, simulated {t:.2} us",
        predicted.time_us
    );
    assert!(
        (predicted.time_us - t).abs() < (predicted.bound_us - t).abs(),
        "the replay sees the drain the busiest-link bound misses ({:.2} us, bound {:.2} us, simulated {t:.2} us)",
        predicted.time_us,
        predicted.bound_us
    );
}

/// A memory-tight plan recycled by live range (`--recycle`, slack 0): fewer blocks for the
/// delivery strategies, and every sum exact although the daemons do not keep the planner's
/// schedule to the vector: contributions that meet a recycled aggregator early are bypassed
/// by the switch and recovered by the daemons (counted as generation conflicts). The time is
/// printed against the plan without recycling (docs/evaluation.md).
#[test]
fn recycled_plans_take_fewer_blocks_and_keep_the_schedule_they_were_packed_for() {
    let plain = plan(11, 8, 64_000, 128);
    let recycled = plan_with(
        11,
        sgnn_plan::PlanConfig {
            recycle_slack: Some(0),
            ..base_config(8, 64_000, 128)
        },
    );
    for s in [Strategy::Partials, Strategy::SwitchGnnAuto] {
        let (a, b) = (
            simulate(&plain, s, sim_cfg()),
            simulate(&recycled, s, sim_cfg()),
        );
        let blocks = |r: &RunReport| r.predicted.as_ref().unwrap().blocks;
        assert!(
            blocks(&b) < blocks(&a),
            "{}: {} blocks recycled, {} without",
            s.name(),
            blocks(&b),
            blocks(&a)
        );
        let sw = b.switch.as_ref().unwrap();
        let predicted = b.predicted.as_ref().unwrap().time_us;
        eprintln!(
            "{}: recycled {} blocks, {:.1} us (predicted {predicted:.1}), {} generation conflicts; without: {} blocks, {:.1} us",
            s.name(),
            blocks(&b),
            us(&b),
            sw.generation_conflicts,
            blocks(&a),
            us(&a)
        );
        if sw.generation_conflicts == 0 {
            let model = b.model_traffic.as_ref().unwrap();
            let (up, down) = less_acks(&b);
            assert_eq!(up, model.per_worker_uplink, "{}", s.name());
            assert_eq!(down, model.per_worker_downlink, "{}", s.name());
        }
    }
}
