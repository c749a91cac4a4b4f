//! The real code in simulated time: the daemons' engines and the software switch's pipeline
//! exchange real frames over the simulator's star. Every worker's sums equal the
//! single-process reference bit for bit, with and without loss, in both modes.

use sgnn_sim::net::{NetConfig, PS_PER_US};
use sgnn_sim::strategies::{RealConfig, RealExchange};
use sgnn_sim::{run_app, Time, Topology};
use sgnn_transport::engine::Mode;
use sgnn_transport::rate::RateConfig;

mod common;
use common::*;

fn run(p: &sgnn_plan::Plan, mode: Mode, loss: f64, recirc_gbps: u64) -> (Option<Time>, u64, u64) {
    let cfg = RealConfig {
        mode,
        rate: Some(RateConfig {
            initial_mbps: 100_000.0,
            max_mbps: 100_000.0,
            ..RateConfig::default()
        }),
        timeout: Some(200 * PS_PER_US),
        recirc_bps: recirc_gbps * GBPS,
        loss,
        seed: 7,
    };
    let mut app = RealExchange::new(p, cfg).unwrap();
    let topo = Topology::star(p.workers(), 100 * GBPS, 2 * PS_PER_US);
    let (net, _) = run_app(&mut app, topo, NetConfig::default(), &mut |_| {}).unwrap();
    assert_eq!(app.error, None);
    let values = app.verify().unwrap();
    let drops = app.switch().counters.drop_simulated;
    let _ = net;
    (app.finish, values, drops)
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
