//! The software switch pipeline fed real SwitchGNN frames built from a real plan.

use std::collections::HashMap;

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use sgnn_plan::model::PlanConfig;
use sgnn_plan::Plan;
use sgnn_planner::planner::{make_plan, PlanRequest};
use sgnn_wire::addressing::{worker_ip, worker_mac};
use sgnn_wire::codec::{accumulate, FixedPoint};
use sgnn_wire::sgnn::Repr;
use sgnn_wire::{FrameRepr, PacketType, LANES};
use softswitch::pipeline::agg_state;
use softswitch::{Emitted, Pipeline, SwitchConfig, Tables, WorkerPort};

mod common;

/// A frame from the worker named in the header.
fn frame(s: Repr, lanes: Option<&[i32; LANES]>) -> Vec<u8> {
    common::frame(s.worker_id, s, lanes)
}

/// The port of the worker a frame names: where the switch admits it
/// (`sgnn_switch::admission`; worker w is on port w here).
fn own_port(f: &[u8]) -> u16 {
    u16::from_be_bytes([f[36], f[37]])
}

const WORKERS: u32 = 4;

fn plan(feature_dim: u32, mem: u64) -> Plan {
    let spec =
        match sgnn_testkit::dataset("cora", "pipeline tests on cora (they run on R-MAT instead)") {
            Some(dir) => dir.join("edges.txt.gz").display().to_string(),
            None => "rmat:scale=11,edge_factor=4".to_string(),
        };
    let g = sgnn_graph::load_graph(&spec).unwrap();
    let req = PlanRequest {
        config: PlanConfig {
            workers: WORKERS,
            partitioner: sgnn_plan::Partitioner::Metis,
            switch_mem_bytes: mem,
            agg_bytes: 128,
            feature_dim,
            order: sgnn_plan::SendOrder::Gamr,
            seed: 1,
            max_passes: 8,
            leaves: 1,
            aggregate: sgnn_plan::AggregateMode::Paper,
            recycle_slack: None,
        },
        graph_source: spec,
        max_abs_value: 1.0,
    };
    let (p, _) = make_plan(g.csr, g.stats, &req, &mut |_| {}).unwrap();
    sgnn_plan::verify(&p).unwrap();
    p
}

fn worker_ports() -> Vec<WorkerPort> {
    (0..WORKERS as u16)
        .map(|w| WorkerPort {
            port: w,
            mac: worker_mac(w),
            ip: worker_ip(w),
        })
        .collect()
}

fn switch(plan: &Plan) -> Pipeline {
    let cfg = SwitchConfig::for_plan(plan);
    assert_eq!(cfg.workers as u32, WORKERS);
    Pipeline::new(cfg, Tables::from_plan(plan, &worker_ports()))
}

fn data(
    worker: u32,
    src: u32,
    block: u16,
    round: u16,
    segment: u16,
    lanes: &[i32; LANES],
) -> Vec<u8> {
    let mut s = Repr::new(PacketType::Data);
    s.worker_id = worker as u16;
    s.src_id = src;
    s.block_id = block;
    s.round = round;
    s.segment = segment;
    frame(s, Some(lanes))
}

fn block_done(worker: u16, block: u16, round: u16) -> Vec<u8> {
    let mut s = Repr::new(PacketType::BlockDone);
    s.worker_id = worker;
    s.block_id = block;
    s.round = round;
    frame(s, None)
}

/// Encoded features: `enc[v][segment]`.
fn features(plan: &Plan, seed: u64) -> Vec<Vec<[i32; LANES]>> {
    let segs = plan.manifest.segments as usize;
    let n = plan.graph.num_vertices();
    let maxdeg = (0..n as u32).map(|v| plan.graph.degree(v)).max().unwrap() as u32;
    let fp = FixedPoint::for_sum(1.0, maxdeg).unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            (0..segs)
                .map(|_| {
                    let x: Vec<f32> = (0..LANES).map(|_| rng.gen_range(-1.0..1.0)).collect();
                    let mut e = [0i32; LANES];
                    assert_eq!(fp.encode(&x, &mut e), 0);
                    e
                })
                .collect()
        })
        .collect()
}

/// The exact per-(vertex, segment) sum of remote neighbours' encoded features.
fn host_reference(plan: &Plan, enc: &[Vec<[i32; LANES]>]) -> HashMap<(u32, u16), [i32; LANES]> {
    let mut out = HashMap::new();
    for v in 0..plan.graph.num_vertices() as u32 {
        for &u in plan.graph.neighbors(v) {
            if plan.partition[u as usize] != plan.partition[v as usize] {
                for (s, lanes) in enc[u as usize].iter().enumerate() {
                    accumulate(out.entry((v, s as u16)).or_insert([0; LANES]), lanes);
                }
            }
        }
    }
    out
}

fn parse(e: &Emitted) -> (FrameRepr, Option<[i32; LANES]>) {
    FrameRepr::parse(&e.frame).unwrap()
}

/// Runs one round (every block, every worker) through the switch, with the sends of each block
/// shuffled when `shuffle` is set, and returns the per-(dst, segment) sums of the results.
fn run_round(
    plan: &Plan,
    sw: &mut Pipeline,
    enc: &[Vec<[i32; LANES]>],
    round: u16,
    shuffle: Option<u64>,
) -> HashMap<(u32, u16), [i32; LANES]> {
    let segs = plan.manifest.segments as u16;
    let mut got: HashMap<(u32, u16), [i32; LANES]> = HashMap::new();
    for (b, block) in plan.blocks.iter().enumerate() {
        let mut frames: Vec<Vec<u8>> = Vec::new();
        for &src in &block.sources {
            for s in 0..segs {
                let w = plan.partition[src as usize];
                frames.push(data(
                    w,
                    src,
                    b as u16,
                    round,
                    s,
                    &enc[src as usize][s as usize],
                ));
            }
        }
        if let Some(seed) = shuffle {
            // Every frame twice (a network that duplicates), in random order.
            let copies = frames.clone();
            frames.extend(copies);
            frames.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ b as u64));
        }
        let mut out = Vec::new();
        for f in &frames {
            sw.process(own_port(f), f, &mut out);
        }
        for e in &out {
            let (r, lanes) = parse(e);
            assert_eq!(r.sgnn.packet_type, PacketType::Result);
            assert_eq!(r.sgnn.block_id as usize, b);
            let dst_worker = plan.partition[r.sgnn.dst_id as usize];
            assert_eq!(
                e.port as u32, dst_worker,
                "result goes to the destination's worker"
            );
            assert_eq!(r.ip.dst, worker_ip(dst_worker as u16));
            accumulate(
                got.entry((r.sgnn.dst_id, r.sgnn.segment))
                    .or_insert([0; LANES]),
                &lanes.unwrap(),
            );
        }
        assert_eq!(
            out.len(),
            block.aggregators.len() * segs as usize,
            "one result per destination and segment"
        );
        assert_eq!(
            sw.busy_aggregators(),
            0,
            "block {b} leaves no aggregator busy"
        );
        // Block sync.
        let mut out = Vec::new();
        for w in 0..WORKERS as u16 {
            sw.process(w, &block_done(w, b as u16, round), &mut out);
        }
        assert_eq!(out.len(), WORKERS as usize);
        let mut ports: Vec<u16> = out.iter().map(|e| e.port).collect();
        ports.sort_unstable();
        assert_eq!(ports, vec![0, 1, 2, 3]);
        for e in &out {
            let (r, _) = parse(e);
            assert_eq!(
                (r.sgnn.packet_type, r.sgnn.block_id, r.sgnn.round),
                (PacketType::BlockAdvance, b as u16, round)
            );
        }
    }
    got
}

#[test]
fn switch_sums_equal_host_sums_exactly_in_order_and_duplicated_and_shuffled() {
    let plan = plan(64, 16 * 1024);
    assert!(plan.blocks.len() > 1 && plan.blocks.iter().any(|b| b.max_passes() > 1));
    let enc = features(&plan, 7);
    let want = host_reference(&plan, &enc);
    let mut sw = switch(&plan);
    let got = run_round(&plan, &mut sw, &enc, 0, None);
    assert_eq!(got, want);
    let segs = plan.manifest.segments as u64;
    let contributions: u64 = plan.blocks.iter().map(|b| b.num_contributions()).sum();
    let passes_extra: u64 = plan
        .blocks
        .iter()
        .map(|b| b.num_contributions() - b.sources.len() as u64)
        .sum();
    assert_eq!(sw.counters.aggregated, contributions * segs);
    assert_eq!(sw.counters.recirculated, passes_extra * segs);
    assert_eq!(sw.counters.saturated, 0);
    // Round 1, every block's sends duplicated and shuffled: the same sums.
    let got = run_round(&plan, &mut sw, &enc, 1, Some(99));
    assert_eq!(got, want);
    let sent: u64 = plan.blocks.iter().map(|b| b.sources.len() as u64).sum();
    assert_eq!(sw.counters.drop_duplicate, sent * segs);
    assert_eq!(
        sw.counters.drop_stale + sw.counters.drop_malformed + sw.counters.drop_no_entry,
        0
    );
}

#[test]
fn a_resend_releases_the_aggregator_and_bypasses_to_the_host() {
    let plan = plan(32, 64 * 1024);
    let enc = features(&plan, 3);
    let mut sw = switch(&plan);
    let b0 = &plan.blocks[0];
    // A destination with at least three contributors in block 0.
    let row = b0.aggregators.iter().position(|a| a.expected >= 3).unwrap() as u32;
    let slot = b0.aggregators[row as usize];
    let feeders: Vec<(u32, u8)> = (0..b0.sources.len())
        .filter_map(|i| {
            b0.passes(i)
                .iter()
                .position(|&r| r == row)
                .map(|p| (b0.sources[i], p as u8))
        })
        .collect();
    let (first, first_pass) = feeders[0];
    let w = |v: u32| plan.partition[v as usize];
    let mut out = Vec::new();
    sw.process(
        w(first) as u16,
        &data(w(first), first, 0, 0, 0, &enc[first as usize][0]),
        &mut out,
    );
    let i = slot.base as usize;
    assert_eq!(sw.regs.agg_count[i], 1);
    // The resend names its pass; the aggregator is released and the values bypass to the host.
    let mut s = Repr::new(PacketType::Data);
    s.worker_id = w(first) as u16;
    s.src_id = first;
    s.pass = first_pass;
    s.flags.resend = true;
    let mut out = Vec::new();
    sw.process(
        s.worker_id,
        &frame(s, Some(&enc[first as usize][0])),
        &mut out,
    );
    assert_eq!(out.len(), 1);
    let (r, lanes) = parse(&out[0]);
    assert_eq!(
        (r.sgnn.packet_type, r.sgnn.dst_id, r.sgnn.src_id),
        (PacketType::Bypass, slot.dst, first)
    );
    assert_eq!(lanes.unwrap(), enc[first as usize][0]);
    assert_eq!(out[0].port as u32, w(slot.dst));
    assert_eq!(
        (sw.regs.agg_count[i], sw.regs.agg_state[i]),
        (0, agg_state::BYPASSED)
    );
    // The other contributors to that destination bypass too; nothing is summed twice and no
    // result is produced for it.
    for &(src, _) in &feeders[1..] {
        let mut out = Vec::new();
        sw.process(
            w(src) as u16,
            &data(w(src), src, 0, 0, 0, &enc[src as usize][0]),
            &mut out,
        );
        let bypass: Vec<_> = out
            .iter()
            .map(parse)
            .filter(|(r, _)| r.sgnn.dst_id == slot.dst)
            .collect();
        assert_eq!(bypass.len(), 1);
        assert_eq!(bypass[0].0.sgnn.packet_type, PacketType::Bypass);
        assert_eq!(bypass[0].1.unwrap(), enc[src as usize][0]);
    }
    assert_eq!(sw.counters.bypassed as usize, feeders.len());
    assert_eq!(sw.regs.agg_count[i], 0);
}

#[test]
fn block_sync_counts_each_worker_once_and_answers_stale_reports() {
    let plan = plan(32, 64 * 1024);
    let mut sw = switch(&plan);
    let mut out = Vec::new();
    sw.process(0, &block_done(0, 0, 0), &mut out);
    sw.process(0, &block_done(0, 0, 0), &mut out);
    sw.process(1, &block_done(1, 0, 0), &mut out);
    sw.process(2, &block_done(2, 0, 0), &mut out);
    assert!(out.is_empty(), "three of four workers: no advance");
    assert_eq!(sw.counters.block_done_duplicate, 1);
    sw.process(3, &block_done(3, 0, 0), &mut out);
    assert_eq!(out.len(), 4, "advance multicast to all workers");
    assert_eq!(sw.regs.sync_block, 1);
    // Worker 2 lost the advance and reports block 0 again: only it is answered.
    let mut out = Vec::new();
    sw.process(2, &block_done(2, 0, 0), &mut out);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].port, 2);
    let (r, _) = parse(&out[0]);
    assert_eq!(
        (r.sgnn.packet_type, r.sgnn.block_id),
        (PacketType::BlockAdvance, 0)
    );
    assert_eq!(sw.counters.block_done_stale, 1);
    // A data packet of the finished block is stale now.
    let mut out = Vec::new();
    let src = plan.blocks[0].sources[0];
    sw.process(
        0,
        &data(plan.partition[src as usize], src, 0, 0, 0, &[1; LANES]),
        &mut out,
    );
    assert!(out.is_empty());
    assert_eq!(sw.counters.drop_stale, 1);
}

#[test]
fn foreign_and_malformed_frames_are_forwarded_or_dropped_and_counted() {
    let plan = plan(32, 64 * 1024);
    let mut sw = switch(&plan);
    let mut out = Vec::new();
    // Plain UDP to worker 2's address: forwarded untouched to port 2.
    let mut udp = frame(Repr::new(PacketType::BlockDone), None);
    udp[14 + 9] = 17; // protocol UDP
    udp[14 + 16..14 + 20].copy_from_slice(&worker_ip(2));
    sw.process(0, &udp, &mut out);
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].port, &out[0].frame), (2, &udp));
    // ARP: dropped as not IPv4.
    let mut arp = udp.clone();
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    sw.process(0, &arp, &mut out);
    // SwitchGNN with a bad checksum, with a bad type, truncated: malformed.
    let mut bad = block_done(0, 0, 0);
    bad[24] ^= 0xff;
    sw.process(0, &bad, &mut out);
    let mut bad = block_done(0, 0, 0);
    bad[34] = 0x1f;
    sw.process(0, &bad, &mut out);
    let good = data(0, 1, 0, 0, 0, &[0; LANES]);
    sw.process(0, &good[..100], &mut out);
    // A Result from a host (on its own port) is not accepted.
    let mut r = Repr::new(PacketType::Result);
    r.worker_id = 1;
    sw.process(1, &frame(r, Some(&[0; LANES])), &mut out);
    // An unknown worker's block-done, on worker 0's port.
    sw.process(0, &block_done(77, 0, 0), &mut out);
    assert_eq!(out.len(), 1, "nothing else was emitted");
    let c = &sw.counters;
    assert_eq!(
        (
            c.forwarded,
            c.drop_not_ipv4,
            c.drop_malformed,
            c.drop_unexpected,
            c.drop_wrong_port
        ),
        (1, 1, 3, 1, 1)
    );
    assert_eq!(sw.busy_aggregators(), 0);
}

#[test]
fn drop_simulator_and_ecn_marking() {
    let plan = plan(32, 64 * 1024);
    let mut sw = switch(&plan);
    sw.config.drop_every = 2;
    let mut out = Vec::new();
    for w in 0..WORKERS as u16 {
        sw.process(w, &block_done(w, 0, 0), &mut out);
    }
    assert_eq!(sw.counters.drop_simulated, 2);
    assert_eq!(sw.counters.block_done, 2);
    // ECN: worker 1's port has a long queue; its block-advance is marked, others are not.
    let mut sw = switch(&plan);
    sw.config.ecn_threshold = 10;
    sw.queue_depth = vec![0, 50, 0, 0];
    let mut out = Vec::new();
    for w in 0..WORKERS as u16 {
        sw.process(w, &block_done(w, 0, 0), &mut out);
    }
    for e in &out {
        let (r, _) = parse(e);
        assert_eq!(r.sgnn.flags.ecn, e.port == 1, "port {}", e.port);
        assert_eq!(r.ip.ecn == 3, e.port == 1);
    }
    assert_eq!(sw.counters.ecn_marked, 1);
}

#[test]
fn block_advance_follows_the_multicast_group_and_egress_addresses() {
    let plan = plan(32, 64 * 1024);
    let mut sw = switch(&plan);
    // The control plane left worker 3 out of the group and never gave worker 2 addresses.
    sw.tables
        .multicast_groups
        .get_mut(&softswitch::ADVANCE_GROUP)
        .unwrap()
        .retain(|r| r.rid != 3);
    sw.tables.worker_addr.remove(&2);
    let mut out = Vec::new();
    for w in 0..WORKERS as u16 {
        sw.process(w, &block_done(w, 0, 0), &mut out);
    }
    assert_eq!(sw.counters.block_advance, 1);
    let got: Vec<(u16, u16, [u8; 4])> = out
        .iter()
        .map(|e| {
            let (r, _) = parse(e);
            assert_eq!(r.sgnn.packet_type, PacketType::BlockAdvance);
            (e.port, r.sgnn.worker_id, r.ip.dst)
        })
        .collect();
    assert_eq!(got, vec![(0, 0, worker_ip(0)), (1, 1, worker_ip(1))]);
    assert_eq!(sw.counters.drop_unknown_worker, 1);
    assert_eq!(sw.counters.tx, 2);
    // Port counters: one block-done in on each port, one advance out on ports 0 and 1.
    for w in 0..WORKERS as usize {
        assert_eq!(sw.port_rx[w].packets, 1);
        assert_eq!(sw.port_rx[w].bytes, sgnn_wire::CONTROL_FRAME_LEN as u64);
        assert_eq!(sw.port_tx[w].packets, (w < 2) as u64);
    }
}

#[test]
fn counters_array_follows_the_p4_event_indices() {
    let c = softswitch::Counters {
        rx: 1,
        drop_malformed: 7,
        saturated: 9,
        ..Default::default()
    };
    let a = c.to_array();
    let at = |name: &str| {
        a[softswitch::Counters::NAMES
            .iter()
            .position(|n| *n == name)
            .unwrap()]
    };
    assert_eq!(at("rx"), 1);
    assert_eq!(at("drop_malformed"), 7);
    assert_eq!(at("saturated"), 9);
    assert_eq!(a.iter().sum::<u64>(), 17);
    assert_eq!(a.len(), softswitch::Counters::NAMES.len());
    // The serde names are the P4 names, in the same order.
    let v = serde_json::to_value(&c).unwrap();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(|k| k.as_str()).collect();
    let mut names = softswitch::Counters::NAMES.to_vec();
    let mut sorted_keys = keys.clone();
    names.sort();
    sorted_keys.sort();
    assert_eq!(sorted_keys, names);
}

#[test]
fn a_start_up_probe_comes_back_with_the_plan_tag() {
    let plan = plan(32, 64 * 1024);
    let mut sw = switch(&plan);
    sw.config.plan_tag = plan.tag();
    assert_ne!(plan.tag(), 0);
    let mut probe = Repr::new(PacketType::Ack);
    probe.worker_id = 1;
    probe.src_id = 1;
    probe.dst_id = sgnn_wire::PROBE_DST;
    let mut out = Vec::new();
    sw.process(1, &common::frame_to(1, worker_ip(1), probe, None), &mut out);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].port, 1, "back to the worker that sent it");
    let (r, _) = FrameRepr::parse(&out[0].frame).unwrap();
    assert_eq!(r.sgnn.src_id, plan.tag());
    assert_eq!(r.sgnn.dst_id, sgnn_wire::PROBE_DST);
    // An ordinary Ack keeps its src_id: forwarded byte for byte.
    let mut ack = Repr::new(PacketType::Ack);
    ack.worker_id = 0;
    ack.src_id = 7;
    ack.dst_id = 9;
    let f = common::frame_to(0, worker_ip(2), ack, None);
    out.clear();
    sw.process(0, &f, &mut out);
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].port, &out[0].frame), (2, &f));
}
