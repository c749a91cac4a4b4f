//! Congestion signals and planned pacing of one engine, frame by frame (docs/host.md, "Rate
//! control" and "Planned pacing"): a receiver of ECN-marked frames notifies their senders
//! (the baseline's raw frames: their sender; a Result: every worker that contributed to it),
//! a sender halves on a notification from a peer and ignores one from outside the plan, and a
//! SwitchGNN worker sends each block at the share of line rate its plan gives it.

mod common;

use std::sync::Arc;

use sgnn_plan::Plan;
use sgnn_sim::harness::frames::to_worker as frame;
use sgnn_transport::engine::{Engine, EngineConfig, Layer, Mode};
use sgnn_transport::rate::{Pacing, RateConfig};
use sgnn_transport::WorkerView;
use sgnn_wire::addressing::{worker_ip, SWITCH_IP};
use sgnn_wire::sgnn::Repr;
use sgnn_wire::{FrameRepr, PacketType, ALL_NEIGHBOURS, CNP, LANES};

const DIM: usize = 32;
const LINE_MBPS: f64 = 100_000.0;

fn plan(workers: u32) -> Plan {
    common::plan_of(
        "rmat:scale=7,edge_factor=8,seed=3",
        common::base_config(workers, 1 << 20, DIM as u32),
        8.0,
    )
}

/// Worker `w` of `plan` in `mode`, its round 0 started at time 0 (no start-up probe or
/// barrier), at line rate with a bucket deep enough that pacing never holds a frame here.
fn engine(plan: &Plan, w: u32, mode: Mode, pacing: Pacing) -> Engine {
    let view = Arc::new(WorkerView::new(plan, w, None).unwrap());
    let cfg = EngineConfig {
        mode,
        probe: false,
        peer_barrier: false,
        pacing,
        rate: RateConfig {
            initial_mbps: LINE_MBPS,
            max_mbps: LINE_MBPS,
            burst_bytes: 1 << 30,
            ..RateConfig::default()
        },
        ..EngineConfig::default()
    };
    let n = view.num_local();
    let mut e = Engine::new(view, cfg, 0);
    e.start_round(0, Layer::forward(0), DIM, &vec![0.25; n * DIM])
        .unwrap();
    e
}

/// The congestion notifications among the frames `e` sends at `now`: (IPv4 destination,
/// target worker named in `src_id`).
fn cnps(e: &mut Engine, now: u64) -> Vec<([u8; 4], u32)> {
    let mut out = Vec::new();
    while let Some((_, f)) = e.poll_transmit(now) {
        let (r, _) = FrameRepr::parse(&f).unwrap();
        if r.sgnn.packet_type == PacketType::Ack && r.sgnn.dst_id == CNP {
            assert_eq!(r.sgnn.worker_id, e.view().worker, "a CNP names its sender");
            out.push((r.ip.dst, r.sgnn.src_id));
        }
    }
    out
}

/// A host-based raw frame of vertex `u` from worker `from` to worker `to`.
fn raw(plan: &Plan, u: u32, to: u16) -> Vec<u8> {
    let from = plan.partition[u as usize] as u16;
    let mut s = Repr::new(PacketType::Bypass);
    s.worker_id = from;
    s.src_id = u;
    s.dst_id = ALL_NEIGHBOURS;
    s.frac_bits = plan.manifest.frac_bits;
    s.count = 1;
    frame(worker_ip(from), to, s, Some(&[1; LANES]), true)
}

#[test]
fn a_marked_raw_frame_notifies_its_sender_once_per_interval() {
    let p = plan(2);
    let mut e0 = engine(&p, 0, Mode::HostBased, Pacing::Planned);
    let needs = e0.view().host_based.needs.clone();
    assert!(needs.len() >= 2, "worker 0 needs raw values from worker 1");
    let interval = RateConfig::default().decrease_interval_ns;
    let _ = cnps(&mut e0, 0);
    e0.handle_frame(10, &raw(&p, needs[0].vertex, 0));
    assert_eq!(cnps(&mut e0, 10), vec![(worker_ip(1), 1)]);
    // A second mark within the interval is not notified again; one after it is.
    e0.handle_frame(20, &raw(&p, needs[1].vertex, 0));
    assert_eq!(cnps(&mut e0, 20), vec![]);
    e0.handle_frame(10 + interval, &raw(&p, needs[1].vertex, 0));
    assert_eq!(cnps(&mut e0, 10 + interval), vec![(worker_ip(1), 1)]);
    let s = e0.stats();
    assert_eq!((s.ecn_marks, s.cnps_sent), (3, 2));
    // The receiver itself did not slow down: its own sending queued nothing.
    assert_eq!(e0.rate_mbps(), LINE_MBPS);
}

#[test]
fn a_notification_from_a_peer_halves_and_one_from_outside_is_ignored() {
    let p = plan(2);
    let mut e1 = engine(&p, 1, Mode::HostBased, Pacing::Planned);
    let cnp = |from: u16, target: u32| {
        let mut a = Repr::new(PacketType::Ack);
        a.worker_id = from;
        a.dst_id = CNP;
        a.src_id = target;
        frame(worker_ip(from), 1, a, None, false)
    };
    // From a worker the plan does not have, or naming another target: ignored.
    e1.handle_frame(5, &cnp(7, 1));
    e1.handle_frame(6, &cnp(0, 0));
    assert_eq!(e1.rate_mbps(), LINE_MBPS);
    assert_eq!(e1.stats().cnps_received, 0);
    e1.handle_frame(10, &cnp(0, 1));
    assert_eq!(e1.rate_mbps(), LINE_MBPS / 2.0);
    let s = e1.stats();
    assert_eq!((s.cnps_received, s.rate_decreases), (1, 1));
}

#[test]
fn a_marked_result_notifies_every_worker_that_contributed() {
    let p = plan(4);
    // A destination of worker 0 in block 0 with contributions from other workers.
    let e = engine(&p, 0, Mode::SwitchGnn, Pacing::Off);
    let view = e.view().clone();
    let (b, d) = (0..view.blocks.len())
        .find_map(|b| (!view.blocks[b].dests.is_empty()).then_some((b, 0usize)))
        .expect("worker 0 receives a sum");
    let mut want: Vec<u32> = view.blocks[b]
        .sources_of(d)
        .iter()
        .map(|r| r.worker as u32)
        .filter(|&w| w != 0)
        .collect();
    want.sort_unstable();
    want.dedup();
    assert!(!want.is_empty());
    let mut e = e;
    let _ = cnps(&mut e, 0);
    let dest = &view.blocks[b].dests[d];
    let mut s = Repr::new(PacketType::Result);
    s.block_id = b as u16;
    s.dst_id = dest.vertex;
    s.count = dest.expected as u16;
    s.frac_bits = p.manifest.frac_bits;
    e.handle_frame(10, &frame(SWITCH_IP, 0, s, Some(&[0; LANES]), true));
    let mut got: Vec<u32> = cnps(&mut e, 10).into_iter().map(|(_, w)| w).collect();
    got.sort_unstable();
    assert_eq!(got, want);
    assert_eq!(
        e.rate_mbps(),
        LINE_MBPS,
        "the receiver of a sum does not halve"
    );
    // The switch's own Acks name no sender: nobody is notified.
    let mut a = Repr::new(PacketType::Ack);
    a.dst_id = sgnn_wire::recovery::SEND_DONE;
    e.handle_frame(1_000_000, &frame(SWITCH_IP, 0, a, None, true));
    assert_eq!(cnps(&mut e, 1_000_000), vec![]);
}

#[test]
fn planned_pacing_sends_each_block_at_the_plans_share_of_line_rate() {
    let p = plan(4);
    let loads = sgnn_plan::traffic::block_loads(&p);
    for w in 0..4 {
        let share = loads[0].share(w as usize);
        assert!(share > 0.0 && share <= 1.0);
        let paced = engine(&p, w, Mode::SwitchGnn, Pacing::Planned);
        assert!(
            (paced.rate_mbps() - share * LINE_MBPS).abs() < 1e-6,
            "worker {w}: {} Mbit/s, share {share}",
            paced.rate_mbps()
        );
        let free = engine(&p, w, Mode::SwitchGnn, Pacing::Off);
        assert_eq!(free.rate_mbps(), LINE_MBPS);
    }
    // The busiest uplink of the block sends at line rate unless a downlink is busier.
    let l = &loads[0];
    let up = *l.up.iter().max().unwrap() as f64;
    let down = *l.down.iter().max().unwrap() as f64;
    let busiest = l.up.iter().position(|&k| k as f64 == up).unwrap();
    let want = (up / up.max(down * sgnn_plan::traffic::PACE_HEADROOM)).min(1.0);
    assert!((l.share(busiest) - want).abs() < 1e-12);
}
