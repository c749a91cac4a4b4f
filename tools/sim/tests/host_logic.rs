//! Host logic: loss recovery under drops, rate control against queues, and the background
//! traffic generator. Every check is a relation between runs or against the inputs (the
//! requested load, the published CDF), not a recorded number.

use sgnn_plan::Plan;
use sgnn_sim::background::{
    BackgroundConfig, FlowGen, WithBackground, BG_FRAME_WIRE, HADOOP_CDF, HADOOP_MEAN_BYTES,
};
use sgnn_sim::net::{Net, PS_PER_S, PS_PER_US};
use sgnn_sim::{
    run_strategy_with, tx_time, DaemonOptions, NetConfig, RunReport, SimConfig, Strategy, Time,
    Topology,
};

mod common;
use common::*;

const DELAY: Time = 2 * PS_PER_US;

/// The strategies whose hosts recover losses and (switchgnn) control their rate; the other
/// baselines model loss-free exchanges.
const WITH_HOST_LOGIC: [Strategy; 3] = [
    Strategy::HostBased,
    Strategy::SwitchGnn,
    Strategy::SwitchGnnNoCc,
];

fn simulate(p: &Plan, s: Strategy, cfg: SimConfig, opts: &DaemonOptions) -> RunReport {
    let topo = Topology::star(p.workers(), 100 * GBPS, DELAY);
    run_strategy_with(p, s, topo, cfg, opts, &mut |_| {}).unwrap()
}

fn max_queue(r: &RunReport) -> u64 {
    r.links
        .iter()
        .map(|l| l.stats.max_queue_bytes)
        .max()
        .unwrap()
}

#[test]
fn layers_complete_under_drops_and_count_their_recovery_traffic() {
    // Several blocks (tight memory) and a buffer of a few frames per port: frames drop.
    let p = plan(10, 4, 64 * 128 * 2, 64);
    assert!(p.blocks.len() > 1);
    let cfg = SimConfig {
        net: NetConfig {
            buffer_bytes: 1_000,
            ..NetConfig::default()
        },
        recirc_bps: 400 * GBPS,
        harvest_passes: 0,
    };
    let opts = DaemonOptions {
        timeout: Some(20 * PS_PER_US),
        ..DaemonOptions::default()
    };
    for s in WITH_HOST_LOGIC {
        let r = simulate(&p, s, cfg, &opts);
        assert!(
            r.net.dropped_frames > 0,
            "{}: the buffer must drop",
            s.name()
        );
        assert!(
            r.time.is_some(),
            "{} did not complete under drops",
            s.name()
        );
        assert_run_conserved(&r);
        let h = &r.hosts;
        assert!(h.fetch_timeouts > 0, "{}: {h:?}", s.name());
        // The baseline fetches from peers; SwitchGNN pulls lost Results from the switch (and
        // fetches raw only what the switch no longer holds).
        assert!(
            (h.fetch_requests > 0 && h.fetch_replies > 0) || h.pulls > 0,
            "{}: {h:?}",
            s.name()
        );
        assert!(h.recovery_frames() > 0);
        // Fetch replies can be lost too, but no more are answered than asked for.
        assert!(h.fetch_replies <= h.fetch_requests);
        assert!(h.fetched_new <= h.fetch_replies);
        if s != Strategy::HostBased {
            // Lost Results are pulled from the aggregators that keep them, lost contributions
            // NACKed and sent again; only an aggregate that is gone completes from fetched raw
            // values (docs/host.md, "Loss recovery").
            let sw = r.switch.as_ref().unwrap();
            assert!(
                h.pulls > 0
                    || h.retransmissions > 0
                    || h.cells_by_raw > 0
                    || sw.released > 0
                    || h.cells_by_fetch > 0,
                "{}: {sw:?} {h:?}",
                s.name()
            );
        }
        // Without recovery the same drops leave the layer incomplete.
        let none = simulate(
            &p,
            s,
            cfg,
            &DaemonOptions {
                timeout: None,
                ..opts
            },
        );
        assert!(none.net.dropped_frames > 0);
        assert!(
            none.time.is_none(),
            "{} completed without recovery",
            s.name()
        );
        assert_eq!(none.hosts.recovery_frames(), 0);
    }
}

#[test]
fn no_drops_means_no_recovery_traffic_and_the_modelled_bytes() {
    let p = plan(10, 4, 64 * 128 * 2, 64);
    let cfg = sim_cfg();
    let model = sgnn_delivery::traffic::model(&p);
    for s in WITH_HOST_LOGIC {
        let r = simulate(&p, s, cfg, &DaemonOptions::default());
        assert_eq!(r.net.dropped_frames, 0);
        assert!(r.time.is_some());
        assert_eq!(r.hosts.recovery_frames(), 0, "{}: {:?}", s.name(), r.hosts);
        // The daemons' acks come on top of the model's bytes.
        let acks = r.overhead.as_ref().map_or(0, |o| o.total());
        assert_eq!(r.total_bytes(), model[s.model_name()].total + acks);
    }
}

#[test]
fn rate_control_keeps_queues_shorter_than_no_rate_control() {
    // Many blocks (tight memory) and a fast recirculation path: result bursts at block ends
    // queue at the downlinks; marks start at a small queue.
    let p = plan(11, 8, 50_000, 128);
    let cfg = SimConfig {
        net: NetConfig {
            ecn_threshold_bytes: 2_000,
            ..NetConfig::default()
        },
        recirc_bps: 1_600 * GBPS,
        harvest_passes: 0,
    };
    let opts = DaemonOptions::default();
    let cc = simulate(&p, Strategy::SwitchGnn, cfg, &opts);
    let no = simulate(&p, Strategy::SwitchGnnNoCc, cfg, &opts);
    assert!(cc.time.is_some() && no.time.is_some());
    assert!(
        no.ecn_marked() > 0,
        "the no-CC run must cross the threshold"
    );
    assert!(cc.hosts.rate_decreases > 0 && cc.hosts.ecn_signals > 0);
    assert_eq!(no.hosts.rate_decreases, 0);
    assert!(
        max_queue(&cc) < max_queue(&no),
        "CC {} B vs no CC {} B",
        max_queue(&cc),
        max_queue(&no)
    );
    assert!(cc.ecn_marked() < no.ecn_marked());
    // Slower sending is what it costs.
    assert!(cc.time.unwrap() > no.time.unwrap());
    // The rate record: every host starts at the link rate, some went down.
    assert_eq!(cc.rates.len(), p.workers() as usize);
    assert!(cc.rates.iter().all(|r| r[0] == (0, 100 * GBPS)));
    assert!(cc
        .rates
        .iter()
        .flatten()
        .any(|&(t, bps)| t > 0 && bps < 100 * GBPS));
    assert!(no.rates.iter().all(|r| r.is_empty()));
    // Without marks (threshold above any queue) rate control changes nothing.
    let calm = SimConfig {
        net: NetConfig {
            ecn_threshold_bytes: u64::MAX,
            ..cfg.net
        },
        ..cfg
    };
    let a = simulate(&p, Strategy::SwitchGnn, calm, &opts);
    let b = simulate(&p, Strategy::SwitchGnnNoCc, calm, &opts);
    assert_eq!(a.time, b.time);
    assert_eq!(max_queue(&a), max_queue(&b));
}

#[test]
fn background_generator_offers_the_requested_load_with_hadoop_sizes() {
    let (hosts, bps, load) = (16u32, 100 * GBPS, 0.3);
    let window: Time = PS_PER_S / 2;
    let mut g = FlowGen::new(hosts, bps, load, 42);
    let mut sizes = Vec::new();
    for h in 0..hosts {
        let mut t = g.gap();
        while t < window {
            sizes.push(g.size());
            let d = g.dst(h);
            assert!(d != h && d < hosts);
            t += g.gap();
        }
    }
    let offered: u64 = sizes.iter().sum();
    let capacity = window as f64 / PS_PER_S as f64 * hosts as f64 * bps as f64 / 8.0;
    let measured = offered as f64 / capacity;
    assert!(
        (measured - load).abs() < 0.03 * load,
        "offered {measured} of the links, asked {load}"
    );
    // Flow count: Poisson with the mean the load implies.
    let expect_flows = capacity * load / HADOOP_MEAN_BYTES;
    assert!((sizes.len() as f64 - expect_flows).abs() < 0.01 * expect_flows);
    // Sizes follow the CDF: the median lies in the (600, 700] bucket (40% -> 50%), and the
    // fraction at or below each CDF point is within one percentage point of it.
    sizes.sort_unstable();
    let median = sizes[sizes.len() / 2];
    assert!(600 < median && median <= 700, "median {median}");
    for &(x, pct) in &HADOOP_CDF[1..] {
        let below = sizes.partition_point(|&s| s <= x) as f64 / sizes.len() as f64 * 100.0;
        assert!(
            (below - pct).abs() < 1.0,
            "P(size <= {x}) = {below}%, CDF {pct}%"
        );
    }
}

#[test]
fn background_flows_cross_the_network_and_report_completion_times() {
    let (hosts, bps) = (4u32, 100 * GBPS);
    let until = 2_000 * PS_PER_US;
    let mut app = WithBackground::new(
        Idle,
        hosts,
        bps,
        BackgroundConfig {
            load: 0.3,
            seed: 3,
            until: Some(until),
            ..BackgroundConfig::default()
        },
    );
    let mut net = Net::new(Topology::star(hosts, bps, DELAY), NetConfig::default()).unwrap();
    net.run(&mut app, &mut |_| {});
    let r = app.report();
    assert!(r.flows > 10, "{} flows", r.flows);
    assert!(r.last_arrival < until);
    // Nothing dropped with the default buffer: every flow completes, every frame arrives.
    assert_eq!(net.stats.dropped_frames, 0);
    assert_eq!(r.completed, r.flows);
    assert_eq!(r.frames_received, r.frames_sent);
    assert_eq!(net.stats.injected_frames, r.frames_sent);
    let frames: u64 = r
        .flow_list
        .iter()
        .map(|f| f.1.div_ceil(BG_FRAME_WIRE as u64))
        .sum();
    assert_eq!(frames, r.frames_sent);
    // Each flow takes at least its serialisation plus two propagation delays.
    for &(_, size, fct) in &r.flow_list {
        assert!(fct.unwrap() >= tx_time(size, bps) + 2 * DELAY);
    }
    assert!(r.fct_mean > 0 && r.fct_p99 >= r.fct_mean);
}

#[test]
fn background_composes_with_a_strategy_and_slows_it() {
    // Long enough a layer (about 100 us) for several background flows to meet it.
    let p = plan(11, 8, 64 * 128 * 2, 128);
    let cfg = sim_cfg();
    for s in [Strategy::HostBased, Strategy::SwitchGnnNoCc] {
        let quiet = simulate(&p, s, cfg, &DaemonOptions::default());
        let busy = simulate(
            &p,
            s,
            cfg,
            &DaemonOptions {
                background: BackgroundConfig {
                    load: 0.5,
                    seed: 5,
                    until: None,
                    ..BackgroundConfig::default()
                },
                ..DaemonOptions::default()
            },
        );
        let bg = busy.background.as_ref().expect("background report");
        assert!(bg.flows > 0);
        assert!(busy.time.is_some());
        assert!(
            busy.time.unwrap() > quiet.time.unwrap(),
            "{}: background must cost time",
            s.name()
        );
        // Background flows start only while the strategy runs.
        assert!(bg.last_arrival <= busy.time.unwrap());
        assert_run_conserved(&busy);
    }
}
