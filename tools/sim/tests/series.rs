//! The time series of real runs (R-MAT plans through the planner): samples at the interval,
//! counts that add up to the run's counters, queues within the channels' peaks, sampling that
//! does not change the simulation, and merged series equal to series sampled coarsely.

use sgnn_plan::Plan;
use sgnn_sim::net::{PS_PER_NS, PS_PER_US, TOP_QUEUES};
use sgnn_sim::strategies::DATA_WIRE;
use sgnn_sim::{run_strategy, tx_time, NetConfig, RunReport, SimConfig, Strategy, Topology};

mod common;
use common::*;

fn simulate(p: &Plan, s: Strategy, net: NetConfig) -> RunReport {
    let topo = Topology::star(p.workers(), 100 * GBPS, 2 * PS_PER_US);
    let cfg = SimConfig {
        net,
        recirc_bps: 100 * GBPS,
        harvest_passes: 0,
    };
    run_strategy(p, s, topo, cfg, &mut |_| {}).unwrap()
}

fn sampled(every: u64, max: Option<usize>) -> NetConfig {
    NetConfig {
        sample_every: Some(every),
        max_samples: max,
        ..NetConfig::default()
    }
}

/// Everything a series must satisfy against its own run.
fn check_series(r: &RunReport) {
    let name = &r.strategy;
    let s = &r.series;
    let every = r.sample_interval.unwrap();
    assert!(s.len() >= 10, "{name}: only {} samples", s.len());
    // At the interval, the last at the end of the run.
    for (i, x) in s[..s.len() - 1].iter().enumerate() {
        assert_eq!(x.t, (i as u64 + 1) * every, "{name}: sample {i}");
        assert_eq!(x.interval, every, "{name}: sample {i}");
    }
    let last = s.last().unwrap();
    assert_eq!(
        last.t,
        r.net.end,
        "{name}: last sample at the end ({} samples, every {every})",
        s.len()
    );
    assert!(
        last.interval > 0 && last.interval <= every,
        "{name}: last interval {} of {every}",
        last.interval
    );
    assert_eq!(s.iter().map(|x| x.interval).sum::<u64>(), r.net.end);
    // Counts add up to the run's counters.
    let contributions: u64 = s.iter().map(|x| x.contributions).sum();
    let switch_contributions = r.switch.as_ref().map_or(0, |c| c.contributions);
    assert_eq!(contributions, switch_contributions, "{name}: contributions");
    let delivered: u64 = s.iter().map(|x| x.delivered_bytes).sum();
    assert_eq!(
        delivered,
        r.host_downlink.iter().sum::<u64>(),
        "{name}: nothing dropped, so every downlink byte is delivered"
    );
    // Queues: instantaneous values within the interval's peak, the peaks reach exactly the
    // largest queue any channel had.
    let max_q = r
        .links
        .iter()
        .map(|l| l.stats.max_queue_bytes)
        .max()
        .unwrap();
    for x in s {
        assert!(x.queue_max_bytes <= x.queue_peak_bytes, "{name} at {}", x.t);
        assert!(x.queue_max_bytes <= x.queue_sum_bytes, "{name} at {}", x.t);
        assert!(x.queue_peak_bytes <= max_q, "{name} at {}", x.t);
        assert!(x.top_queues.len() <= TOP_QUEUES);
        assert!(x.top_queues.windows(2).all(|w| w[0].1 >= w[1].1));
        assert_eq!(
            x.top_queues.first().map_or(0, |q| q.1),
            x.queue_max_bytes,
            "{name} at {}",
            x.t
        );
        assert!(x.top_queues.iter().map(|q| q.1).sum::<u64>() <= x.queue_sum_bytes);
        for &(c, b) in &x.top_queues {
            let l = &r.links[c as usize];
            assert!(
                l.from.starts_with('s'),
                "{name}: queue at {}->{}",
                l.from,
                l.to
            );
            assert!(b > 0 && b <= l.stats.max_queue_bytes);
        }
    }
    assert_eq!(
        s.iter().map(|x| x.queue_peak_bytes).max().unwrap(),
        max_q,
        "{name}: peak queue"
    );
    // Aggregators: within the switch's peak, all released at the end.
    let peak_aggs = r.switch.as_ref().map_or(0, |c| c.peak_aggregators);
    assert!(
        s.iter().all(|x| x.aggregators_in_use <= peak_aggs),
        "{name}"
    );
    assert_eq!(last.aggregators_in_use, 0, "{name}");
    assert_eq!(last.queue_sum_bytes, 0, "{name}");
}

#[test]
fn series_of_real_runs_add_up_to_their_counters() {
    // Tight memory: several blocks, so aggregators fill and empty many times.
    let p = plan(10, 4, 64 * 128 * 2, 64);
    assert!(p.blocks.len() > 1);
    for s in [
        Strategy::HostBased,
        Strategy::SwitchGnn,
        Strategy::SwitchGnnNoCc,
    ] {
        let plain = simulate(&p, s, NetConfig::default());
        assert!(plain.series.is_empty() && plain.sample_interval.is_none());
        let r = simulate(&p, s, sampled(500 * PS_PER_NS, None));
        assert!(r.time.is_some() && r.net.dropped_frames == 0);
        // Sampling observes, it does not change the run.
        assert_eq!(r.time, plain.time, "{}", s.name());
        assert_eq!(r.net, plain.net, "{}", s.name());
        assert_eq!(r.links, plain.links, "{}", s.name());
        assert_eq!(r.sample_interval, Some(500 * PS_PER_NS));
        check_series(&r);
        match s {
            Strategy::SwitchGnn | Strategy::SwitchGnnNoCc => {
                assert!(r.series.iter().any(|x| x.aggregators_in_use > 0));
                assert!(r.series.iter().any(|x| x.contributions > 0));
                // Contributions are counted when their pass happens: in an interval, at most
                // the data frames the uplinks can bring (pass 0) plus the passes the
                // recirculation path can make.
                let frame = tx_time(DATA_WIRE as u64, 100 * GBPS);
                for x in &r.series {
                    let bound =
                        p.workers() as u64 * (x.interval / frame + 1) + x.interval / frame + 1;
                    assert!(x.contributions <= bound, "{x:?}: bound {bound}");
                }
            }
            _ => {
                assert!(r.series.iter().all(|x| x.aggregators_in_use == 0));
                // All-to-all at line rate: most intervals deliver something.
                let busy = r.series.iter().filter(|x| x.delivered_bytes > 0).count();
                assert!(busy * 2 > r.series.len(), "{busy} of {}", r.series.len());
                // All-to-all through one switch: some downlink queues up.
                assert!(r.series.iter().any(|x| x.queue_peak_bytes > 0));
            }
        }
    }
}

#[test]
fn a_bounded_series_merges_into_the_series_of_a_coarser_interval() {
    let p = plan(10, 4, 64 * 128 * 2, 64);
    for s in [Strategy::HostBased, Strategy::SwitchGnn] {
        let first = 100 * PS_PER_NS;
        let bounded = simulate(&p, s, sampled(first, Some(64)));
        let every = bounded.sample_interval.unwrap();
        assert!(
            every > first,
            "{}: the run is long enough to merge",
            s.name()
        );
        assert!((every / first).is_power_of_two());
        let n = bounded.series.len();
        assert!((32..=64).contains(&n), "{}: {n} samples", s.name());
        check_series(&bounded);
        // Exactly what sampling at the final interval from the start gives.
        let direct = simulate(&p, s, sampled(every, None));
        assert_eq!(bounded.series, direct.series, "{}", s.name());
    }
}

#[test]
fn strawman_and_unlimited_report_their_aggregators_over_time() {
    // Tight memory: the strawman's aggregators fill up; unlimited holds every destination.
    let p = plan(10, 4, 64 * 128 * 2, 64);
    for s in [Strategy::Strawman, Strategy::Unlimited] {
        let r = simulate(&p, s, sampled(500 * PS_PER_NS, None));
        assert!(r.time.is_some(), "{}", s.name());
        check_series(&r);
        let peak = r.series.iter().map(|x| x.aggregators_in_use).max().unwrap();
        assert!(peak > 0, "{}: occupancy over time", s.name());
        assert!(
            peak <= r.switch.as_ref().unwrap().peak_aggregators,
            "{}: sampled occupancy within the counted peak",
            s.name()
        );
    }
}

#[test]
fn an_aggregator_counts_until_its_last_recirculation_pass() {
    // A slow recirculation path: every frame has arrived long before the passes that add it
    // to its later aggregators, so occupancy must last until those passes, not until the
    // arrival of the last frame.
    let p = plan(10, 4, 64 * 128 * 2, 64);
    for s in [Strategy::SwitchGnnNoCc, Strategy::Strawman] {
        let topo = Topology::star(p.workers(), 100 * GBPS, 2 * PS_PER_US);
        let cfg = SimConfig {
            net: sampled(500 * PS_PER_NS, None),
            recirc_bps: GBPS,
            harvest_passes: 0,
        };
        let r = run_strategy(&p, s, topo, cfg, &mut |_| {}).unwrap();
        assert!(r.time.is_some(), "{}", s.name());
        let c = r.switch.as_ref().unwrap();
        assert!(c.max_recirc_backlog > 0 && c.recirculations > 0);
        // Passes on both sides of a sample (blocks are separated by a sync round trip of
        // several intervals without any): some aggregator is in use at it. The model books an
        // aggregator from the arrival of its first frame; the switch's pipeline from its first
        // contribution's pass, so a sum of one contribution is never seen in use, and between
        // two such passes nothing may be: there, most such samples.
        let mut checked = 0;
        let mut in_use = 0;
        for w in r.series.windows(2) {
            if w[0].contributions > 0 && w[1].contributions > 0 {
                checked += 1;
                in_use += (w[0].aggregators_in_use > 0) as u64;
                assert!(
                    w[0].aggregators_in_use > 0 || s != Strategy::Strawman,
                    "{}: passes in ({}, {}] but no aggregator in use at {}",
                    s.name(),
                    w[0].t,
                    w[1].t,
                    w[0].t
                );
            }
        }
        assert!(
            in_use * 10 >= checked * 9,
            "{}: aggregators in use at {in_use} of {checked} samples between passes",
            s.name()
        );
        assert!(checked > 10, "{}: {checked} samples checked", s.name());
        let peak = r.series.iter().map(|x| x.aggregators_in_use).max().unwrap();
        assert!(peak <= c.peak_aggregators, "{}", s.name());
    }
}
