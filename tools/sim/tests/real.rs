//! The real code in simulated time: the daemons' engines and the software switch's pipeline
//! exchange real frames over the simulator's star. Every worker's sums equal the
//! single-process reference bit for bit, with and without loss, in both modes.

use sgnn_sim::net::{NetConfig, PS_PER_US};
use sgnn_sim::strategies::{RealConfig, RealTraffic, SwitchCounters};
use sgnn_sim::{run_app, Time, Topology};
use sgnn_transport::engine::Mode;
use sgnn_transport::rate::RateConfig;

mod common;
use common::*;

fn run(p: &sgnn_plan::Plan, mode: Mode, loss: f64, recirc_gbps: u64) -> (Option<Time>, u64, u64) {
    let (t, values, drops, _) = run_with(p, mode, loss, recirc_gbps, 0);
    (t, values, drops)
}

/// A run, with `harvest` extra passes per completed aggregate; also returns the switch's
/// counters.
fn run_with(
    p: &sgnn_plan::Plan,
    mode: Mode,
    loss: f64,
    recirc_gbps: u64,
    harvest: u32,
) -> (Option<Time>, u64, u64, SwitchCounters) {
    let cfg = RealConfig {
        mode,
        rate: Some(RateConfig {
            initial_mbps: 100_000.0,
            max_mbps: 100_000.0,
            ..RateConfig::default()
        }),
        timeout: Some(200 * PS_PER_US),
        recirc_bps: recirc_gbps * GBPS,
        harvest_passes: harvest,
        loss,
        seed: 7,
        all_blocks: false,
        fabric: None,
        fabric_loss: 0.0,
        pacing: sgnn_transport::Pacing::Planned,
    };
    let mut app = RealTraffic::new(p, cfg).unwrap();
    let topo = Topology::star(p.workers(), 100 * GBPS, 2 * PS_PER_US);
    let (net, _) = run_app(&mut app, topo, NetConfig::default(), &mut |_| {}).unwrap();
    assert_eq!(app.error, None);
    let values = app.verify().unwrap();
    let drops = app.switch().counters.drop_simulated;
    let _ = net;
    let counters = app.switch_counters();
    (app.finish, values, drops, counters)
}

/// The settings of a run on `fabric` in `mode`: no rate control or recovery, 400 Gbit/s of
/// recirculation, no loss (tests change what they need).
fn on_fabric(mode: Mode, fabric: sgnn_switch::fabric::Fabric) -> RealConfig {
    RealConfig {
        mode,
        rate: None,
        timeout: None,
        recirc_bps: 400 * GBPS,
        harvest_passes: 0,
        loss: 0.0,
        seed: 7,
        all_blocks: false,
        fabric: Some(fabric),
        fabric_loss: 0.0,
        pacing: sgnn_transport::Pacing::Planned,
    }
}

/// Runs a layer under `cfg` on the leaf-spine of `cfg.fabric` (100 Gbit/s links, 1 us).
fn run_fabric(p: &sgnn_plan::Plan, cfg: RealConfig) -> RealTraffic<'_> {
    let f = cfg.fabric.expect("a fabric run");
    let mut app = RealTraffic::new(p, cfg).unwrap();
    let topo = Topology::leaf_spine(
        f.leaves,
        f.spines,
        f.workers / f.leaves,
        100 * GBPS,
        100 * GBPS,
        PS_PER_US,
    );
    assert_eq!(topo.fabric(), Some(f));
    run_app(&mut app, topo, NetConfig::default(), &mut |_| {}).unwrap();
    app
}

/// The simulated switch is given each block's `agg_table` entries as it reaches it (and keeps
/// the block before); `switch-ctl load` installs every block at once. Both switches run the
/// same layer: same finish, same sums, same counters, with several blocks, recirculation and
/// loss (retransmissions, pulls and stale frames of earlier blocks).
#[test]
fn a_switch_given_each_block_as_it_comes_runs_as_one_given_all() {
    let p = plan(9, 4, 16 * 1024, 64);
    assert!(p.blocks.len() >= 4, "the test wants several blocks");
    let run = |all_blocks: bool, loss: f64| {
        let cfg = RealConfig {
            mode: Mode::SwitchGnn,
            rate: Some(RateConfig {
                initial_mbps: 100_000.0,
                max_mbps: 100_000.0,
                ..RateConfig::default()
            }),
            timeout: Some(200 * PS_PER_US),
            recirc_bps: 10 * GBPS,
            harvest_passes: 0,
            loss,
            seed: 7,
            all_blocks,
            fabric: None,
            fabric_loss: 0.0,
            pacing: sgnn_transport::Pacing::Planned,
        };
        let mut app = RealTraffic::new(&p, cfg).unwrap();
        let topo = Topology::star(p.workers(), 100 * GBPS, 2 * PS_PER_US);
        let (net, _) = run_app(&mut app, topo, NetConfig::default(), &mut |_| {}).unwrap();
        assert_eq!(app.error, None);
        let values = app.verify().unwrap();
        (
            app.finish,
            values,
            app.switch().counters.clone(),
            net.stats.events,
        )
    };
    for loss in [0.0, 0.02] {
        let lazy = run(false, loss);
        let all = run(true, loss);
        assert!(lazy.0.is_some());
        assert_eq!(lazy, all, "loss {loss}");
    }
}

/// A Tofino's lane pairs (docs/tofino.md, "Lane pairs"): every aggregate of several
/// contributions costs a harvest pass on the recirculation port before its Result leaves. The
/// sums stay exact; the passes are counted, one per such Result at least (two where the
/// completing pass went on to a next pass); with a slow recirculation port the layer takes
/// longer than the same run without them.
#[test]
fn harvest_passes_are_charged_on_the_recirculation_port() {
    let p = plan(9, 4, 64 * 1024, 64);
    let (t0, v0, _, c0) = run_with(&p, Mode::SwitchGnn, 0.0, 10, 0);
    let (t1, v1, _, c1) = run_with(&p, Mode::SwitchGnn, 0.0, 10, 1);
    let (t0, t1) = (t0.expect("completes"), t1.expect("completes"));
    assert_eq!((v0, v1), (v1, p.graph.num_vertices() as u64 * 64));
    assert_eq!(c0.harvest_passes, 0);
    assert!(
        c1.harvest_passes > 0 && c1.harvest_passes <= 2 * c1.results,
        "{} harvest passes for {} results",
        c1.harvest_passes,
        c1.results
    );
    assert_eq!(c1.recirculations, c0.recirculations + c1.harvest_passes);
    assert!(t1 > t0, "harvest passes cost time: {t1} vs {t0} ps");
    eprintln!(
        "{} results, {} harvest passes: {} -> {} us",
        c1.results,
        c1.harvest_passes,
        t0 / PS_PER_US,
        t1 / PS_PER_US
    );
}

#[test]
fn the_engines_and_the_pipeline_complete_a_layer_exactly() {
    let p = plan(9, 4, 64 * 1024, 64);
    for mode in [Mode::SwitchGnn, Mode::HostBased] {
        let (t, values, _) = run(&p, mode, 0.0, 100);
        let t = t.expect("the layer completes");
        eprintln!("{mode:?}: {} us, {values} values exact", t / PS_PER_US);
        assert_eq!(values, p.graph.num_vertices() as u64 * 64);
    }
}

#[test]
fn loss_is_recovered_by_the_real_protocol_and_sums_stay_exact() {
    let p = plan(9, 4, 64 * 1024, 64);
    for mode in [Mode::SwitchGnn, Mode::HostBased] {
        let (t, _, drops) = run(&p, mode, 0.02, 100);
        assert!(t.is_some(), "{mode:?} completes under 2% loss");
        assert!(drops > 0, "the drop simulator dropped frames");
    }
}

/// A leaf-spine fabric of real switches (`sgnn_switch::fabric`): leaves add their workers'
/// contributions and send a partial up where an aggregate spans leaves, a spine adds the
/// partials and sends the Result down, the leaves synchronise blocks through the root spine.
/// Every worker's sums equal the reference bit for bit; every aggregate is completed once,
/// by a leaf or a spine; every partial reaches its spine; blocks installed as each switch
/// reaches them run as with every block installed.
#[test]
fn a_fabric_of_real_switches_sums_exactly_in_two_levels() {
    let p = plan(10, 8, 32 * 1024, 64);
    assert!(p.blocks.len() >= 3, "the test wants several blocks");
    for (leaves, spines) in [(2, 2), (4, 3), (8, 1)] {
        let fabric = sgnn_switch::fabric::Fabric::new(8, leaves, spines).unwrap();
        let mut runs = Vec::new();
        for all_blocks in [false, true] {
            let cfg = RealConfig {
                all_blocks,
                ..on_fabric(Mode::SwitchGnn, fabric)
            };
            let mut app = run_fabric(&p, cfg);
            assert_eq!(app.error, None, "{leaves}x{spines}");
            assert!(app.verify().unwrap() > 0);
            let c = app.switch_counters();
            let h = app.host_counters();
            assert_eq!(
                c.leaf_results + c.spine_results,
                h.cells_by_result,
                "{leaves}x{spines}"
            );
            assert_eq!(h.cells_by_raw, 0);
            assert_eq!(
                c.leaf_partials, c.spine_partials,
                "every partial reaches its spine"
            );
            assert!(
                c.spine_results > 0 && c.leaf_partials > c.spine_results,
                "{c:?}"
            );
            assert_eq!(c.stale, 0);
            // Every leaf reported every block to the root, which advanced once per block.
            let blocks = p.blocks.len() as u64;
            let advances: Vec<u64> = app.switches().map(|s| s.counters.block_advance).collect();
            assert_eq!(
                advances[..leaves as usize],
                vec![blocks; leaves as usize][..]
            );
            assert_eq!(advances[leaves as usize], blocks, "the root spine");
            assert!(advances[leaves as usize + 1..].iter().all(|&a| a == 0));
            runs.push((app.finish, c));
        }
        assert_eq!(runs[0], runs[1], "{leaves}x{spines}");
    }
}

/// The host-based baseline on a fabric of real switches: they only forward.
#[test]
fn the_baseline_crosses_a_fabric_of_real_switches() {
    let p = plan(9, 8, 16 * 1024, 64);
    let fabric = sgnn_switch::fabric::Fabric::new(8, 2, 2).unwrap();
    let cfg = RealConfig {
        recirc_bps: 100 * GBPS,
        ..on_fabric(Mode::HostBased, fabric)
    };
    let app = run_fabric(&p, cfg);
    assert_eq!(app.error, None);
    assert!(app.verify().unwrap() > 0);
    assert!(app
        .switches()
        .all(|s| s.counters.aggregated == 0 && s.counters.forwarded > 0));
}

/// Loss on a fabric of real switches: leaves drop their workers' frames (`loss`, as a star's
/// switch does) and every switch drops frames from other switches (`fabric_loss`: partials,
/// Results, BlockDone and advances, forwarded acks). The leaves' seq check repairs
/// their workers' Data; a lost partial or Result is pulled from the leaf, answered gone and
/// taken from the sources' raw values; a lost leaf BlockDone or root advance is asked for
/// again. Sums stay bit for bit exact and every layer completes, in both modes.
#[test]
fn loss_on_a_fabric_is_recovered_and_sums_stay_exact() {
    let p = plan(10, 8, 32 * 1024, 64);
    for (leaves, spines) in [(2, 2), (4, 3)] {
        let fabric = sgnn_switch::fabric::Fabric::new(8, leaves, spines).unwrap();
        for mode in [Mode::SwitchGnn, Mode::HostBased] {
            for (loss, fabric_loss) in [(0.01, 0.0), (0.01, 0.01), (0.05, 0.05)] {
                let cfg = RealConfig {
                    timeout: Some(200 * PS_PER_US),
                    loss,
                    fabric_loss,
                    ..on_fabric(mode, fabric)
                };
                let mut app = run_fabric(&p, cfg);
                let case = format!("{mode:?} {leaves}x{spines} at {loss}, {fabric_loss}");
                assert_eq!(app.error, None, "{case}");
                assert!(app.finish.is_some(), "{case}: the layer completes");
                assert!(app.verify().unwrap() > 0, "{case}");
                let dropped: Vec<u64> = app.switches().map(|s| s.counters.drop_simulated).collect();
                // Leaves drop their workers' frames; spines only what other switches send.
                let (on_leaves, on_spines) = dropped.split_at(leaves as usize);
                assert!(on_leaves.iter().all(|&d| d > 0), "{case}: {dropped:?}");
                assert_eq!(
                    on_spines.iter().all(|&d| d > 0),
                    fabric_loss > 0.0,
                    "{case}: {dropped:?}"
                );
                if mode == Mode::SwitchGnn && fabric_loss > 0.0 {
                    let h = app.host_counters();
                    let c = app.switch_counters();
                    eprintln!("{case}: {h:?}\n{c:?}");
                    assert!(c.leaf_partials > c.spine_partials, "{case}: partials lost");
                    assert!(h.cells_by_raw > 0, "{case}: some cells taken raw");
                }
            }
        }
    }
}
