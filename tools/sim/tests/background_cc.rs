//! Rate control of background flows (`BackgroundConfig::cc`): pacing by each host's
//! controller, congestion notifications from receivers of marked frames, and what it does to
//! the queues. Every check is a relation between runs or against the inputs.

use sgnn_sim::background::{BackgroundConfig, WithBackground, BG_FRAME_WIRE, CNP_WIRE};
use sgnn_sim::cc::CcConfig;
use sgnn_sim::net::{Net, PS_PER_US};
use sgnn_sim::{
    run_strategy_with, tx_time, DaemonOptions, NetConfig, SimConfig, Strategy, Time, Topology,
};

mod common;
use common::*;

const DELAY: Time = 2 * PS_PER_US;

/// DCQCN-like parameters at 100 Gbit/s: 55 us timer, +100 Mbit/s, 5 fast-recovery steps, at
/// most one halving per 50 us.
fn dcqcn() -> CcConfig {
    CcConfig {
        increase_bps: GBPS / 10,
        increase_interval: 55 * PS_PER_US,
        decrease_interval: 50 * PS_PER_US,
        fast_recovery_steps: 5,
        ..CcConfig::default()
    }
}

/// Background alone on a star of `hosts` 100 Gbit/s hosts; flows start until `until_us`.
fn run_idle(
    hosts: u32,
    load: f64,
    seed: u64,
    until_us: u64,
    cc: Option<CcConfig>,
    net: NetConfig,
) -> (Net, sgnn_sim::background::BackgroundReport) {
    let mut app = WithBackground::new(
        Idle,
        hosts,
        100 * GBPS,
        BackgroundConfig {
            load,
            seed,
            until: Some(until_us * PS_PER_US),
            cc,
            ..BackgroundConfig::default()
        },
    );
    let mut net = Net::new(Topology::star(hosts, 100 * GBPS, DELAY), net).unwrap();
    net.run(&mut app, &mut |_| {});
    let r = app.report();
    (net, r)
}

fn max_queue(net: &Net) -> u64 {
    net.channels
        .iter()
        .map(|c| c.stats.max_queue_bytes)
        .max()
        .unwrap()
}

fn marked(net: &Net) -> u64 {
    net.channels.iter().map(|c| c.stats.ecn_marked).sum()
}

/// Every frame and byte put in is delivered or dropped; background frames and CNPs are all
/// there is.
fn assert_conserved(net: &Net, r: &sgnn_sim::background::BackgroundReport) {
    assert_net_conserved(net);
    let n = &net.stats;
    assert_eq!(n.injected_frames, r.frames_sent + r.cnps_sent);
    let bg_bytes: u64 = r
        .flow_list
        .iter()
        .map(|&(_, size, _)| {
            let last = size - (size - 1) / BG_FRAME_WIRE as u64 * BG_FRAME_WIRE as u64;
            size - last + last.max(84)
        })
        .sum();
    assert_eq!(n.injected_bytes, bg_bytes + r.cnps_sent * CNP_WIRE as u64);
    assert_eq!(n.consumed_frames, r.frames_received + r.cnps_received);
}

#[test]
fn background_rate_control_paces_every_host_and_wakes_it_without_busy_looping() {
    // No marks (threshold above any queue): the controller stays at its 10 Gbit/s ceiling,
    // below the 30 Gbit/s each host is offered, so the backlog drains at 10 Gbit/s.
    let calm = NetConfig {
        ecn_threshold_bytes: u64::MAX,
        ..NetConfig::default()
    };
    let cc = CcConfig {
        max_bps: Some(10 * GBPS),
        ..dcqcn()
    };
    let hosts = 3;
    let (open_net, open) = run_idle(hosts, 0.3, 4, 1_000, None, calm);
    let (net, r) = run_idle(hosts, 0.3, 4, 1_000, Some(cc), calm);
    assert_eq!(open.flow_list.len(), r.flow_list.len(), "same flows");
    assert!(r.flows > 10, "{} flows", r.flows);
    assert_eq!(r.completed, r.flows, "no flow may be left behind");
    assert_eq!((r.cnps_sent, r.rate_decreases, r.ecn_marked), (0, 0, 0));
    assert_eq!(r.rates.len(), hosts as usize);
    assert!(r.rates.iter().all(|s| s == &[(0, 10 * GBPS)]));
    assert_conserved(&net, &r);
    // Each host's bytes need at least their time at 10 Gbit/s (all but one frame paced).
    for h in 0..hosts {
        let up = net
            .channels
            .iter()
            .find(|c| c.from == h)
            .unwrap()
            .stats
            .bytes;
        assert!(net.stats.end >= tx_time(up - BG_FRAME_WIRE as u64, 10 * GBPS));
    }
    assert!(net.stats.end > 2 * open_net.stats.end);
    // Every flow too (they share the controller, so often much more); a single flow can
    // finish sooner than open loop (less queueing at its receiver), the mean cannot.
    for &(_, size, fct) in &r.flow_list {
        assert!(fct.unwrap() >= tx_time(size.saturating_sub(BG_FRAME_WIRE as u64), 10 * GBPS));
    }
    assert!(r.fct_mean > open.fct_mean);
    // No busy loop: per frame two hops of (end of transmission, arrival) and at most one
    // wake-up of its host, plus the arrival timers.
    let frames = r.frames_sent;
    assert!(
        net.stats.events <= 5 * frames + 2 * r.flows + 16,
        "{} events for {frames} frames",
        net.stats.events
    );
}

#[test]
fn marked_background_frames_make_cnps_that_halve_the_source_and_shorten_queues() {
    let net = NetConfig::default();
    let (hosts, load, seed, until) = (8, 0.7, 11, 2_000);
    let (open_net, open) = run_idle(hosts, load, seed, until, None, net);
    let (cc_net, cc) = run_idle(hosts, load, seed, until, Some(dcqcn()), net);
    assert_eq!(open.flow_list.len(), cc.flow_list.len(), "same flows");
    // Open loop: queues cross the ECN threshold, nobody is told.
    assert!(open.ecn_marked > 0 && marked(&open_net) == open.ecn_marked);
    assert_eq!(
        (open.cnps_sent, open.cnps_received, open.rate_decreases),
        (0, 0, 0)
    );
    assert!(!open.cc && cc.cc);
    // With rate control: marks make CNPs (at most one per marked frame), every CNP arrives
    // (nothing is dropped with the default buffer) and sources halve.
    assert_eq!(cc_net.stats.dropped_frames, 0);
    assert!(cc.cnps_sent > 0 && cc.cnps_sent <= cc.ecn_marked);
    assert_eq!(cc.cnps_received, cc.cnps_sent);
    assert!(cc.rate_decreases > 0 && cc.rate_decreases <= cc.cnps_received);
    assert_eq!(
        cc.rate_decreases,
        cc.rates
            .iter()
            .map(|s| s.windows(2).filter(|w| w[1].1 < w[0].1).count() as u64)
            .sum::<u64>()
    );
    assert_eq!(cc.completed, cc.flows);
    assert_conserved(&open_net, &open);
    assert_conserved(&cc_net, &cc);
    // The point: the senders back off, the queues stay shorter and fewer frames are marked.
    assert!(
        max_queue(&cc_net) < max_queue(&open_net) / 2,
        "peak queue {} B with CC, {} B open loop",
        max_queue(&cc_net),
        max_queue(&open_net)
    );
    assert!(cc.ecn_marked < open.ecn_marked);
}

#[test]
fn background_rate_control_composes_with_switchgnn_and_conserves_bytes() {
    let p = plan(10, 4, 64 * 128 * 2, 64);
    let cfg = SimConfig {
        net: NetConfig {
            ecn_threshold_bytes: 20_000,
            ..NetConfig::default()
        },
        ..sim_cfg()
    };
    let topo = || Topology::star(p.workers(), 100 * GBPS, DELAY);
    let opts = |cc: Option<CcConfig>| DaemonOptions {
        cc: dcqcn(),
        background: BackgroundConfig {
            load: 0.6,
            seed: 5,
            until: None,
            cc,
            ..BackgroundConfig::default()
        },
        ..DaemonOptions::default()
    };
    let open = run_strategy_with(
        &p,
        Strategy::SwitchGnn,
        topo(),
        cfg,
        &opts(None),
        &mut |_| {},
    )
    .unwrap();
    let with = run_strategy_with(
        &p,
        Strategy::SwitchGnn,
        topo(),
        cfg,
        &opts(Some(dcqcn())),
        &mut |_| {},
    )
    .unwrap();
    for r in [&open, &with] {
        assert!(r.time.is_some(), "the layer completes");
        assert_run_conserved(r);
    }
    let b = with.background.as_ref().unwrap();
    assert!(b.cc && b.flows > 0);
    assert!(b.cnps_received <= b.cnps_sent);
    assert_eq!(open.background.as_ref().unwrap().cnps_sent, 0);
    // The CSV row carries the counters in their named columns.
    let row = sgnn_sim::report::csv_row(&with, &sgnn_sim::report::Epoch::default());
    let col = |name: &str| {
        let i = sgnn_sim::report::CSV_HEADER
            .split(',')
            .position(|c| c == name)
            .unwrap_or_else(|| panic!("no column {name}"));
        row.split(',').nth(i).unwrap().to_string()
    };
    assert_eq!(col("bg_rate_decreases"), b.rate_decreases.to_string());
    assert_eq!(col("bg_cnps_received"), b.cnps_received.to_string());
    assert_eq!(col("bg_cnps_sent"), b.cnps_sent.to_string());
    assert_eq!(
        row.split(',').count(),
        sgnn_sim::report::CSV_HEADER.split(',').count()
    );
    // rates.csv holds the background controllers under their own name, one row per sample.
    let rates = sgnn_sim::report::rates_csv(std::slice::from_ref(&with));
    let bg_rows = rates
        .lines()
        .filter(|l| l.starts_with("switchgnn/background,"))
        .count();
    assert_eq!(bg_rows, b.rates.iter().map(Vec::len).sum::<usize>());
    assert!(bg_rows >= p.workers() as usize);
    let open_rates = sgnn_sim::report::rates_csv(std::slice::from_ref(&open));
    assert!(!open_rates.contains("/background"));
}

#[test]
fn background_frames_in_the_results_queue_delay_switchgnn_and_in_their_own_do_not_overtake() {
    // Open-loop background at load 0.6 on SwitchGNN without host rate control: in their own
    // low queue the background frames wait behind every Result; in the Results' queue they
    // are served in arrival order with them, so Results wait behind background bytes.
    let p = plan(10, 4, 64 * 128 * 2, 64);
    let run = |prio: u8| {
        let opts = DaemonOptions {
            background: BackgroundConfig {
                load: 0.6,
                seed: 5,
                prio,
                ..BackgroundConfig::default()
            },
            ..DaemonOptions::default()
        };
        let topo = Topology::star(p.workers(), 100 * GBPS, DELAY);
        run_strategy_with(
            &p,
            Strategy::SwitchGnnNoCc,
            topo,
            sim_cfg(),
            &opts,
            &mut |_| {},
        )
        .unwrap()
    };
    let low = run(sgnn_sim::background::PRIO_BACKGROUND);
    let shared = run(sgnn_sim::strategies::PRIO_RESULT);
    for r in [&low, &shared] {
        assert!(r.time.is_some());
        assert!(r.background.as_ref().unwrap().flows > 0);
    }
    assert!(
        shared.time.unwrap() > low.time.unwrap(),
        "sharing the Results' queue must delay the layer: {:?} vs {:?}",
        shared.time,
        low.time
    );
}
