// long: the catalogue of 34 scenarios, one function each, that bmv2 and the software switch both run; it reads as a list, and splitting it by theme would hide which ones exist.
//! Packet sequences that exercise every behaviour of the switch, each with the plan and
//! settings it runs under. The same scenarios run against bmv2 and the software switch; the
//! expected output of each step comes from the in-process model ([`softswitch::Pipeline`]).

use rand::{Rng, SeedableRng};
use sgnn_plan::model::PlanConfig;
use sgnn_plan::Plan;
use sgnn_planner::planner::{make_plan, PlanRequest};
use sgnn_wire::addressing::{worker_ip, worker_mac, SWITCH_IP, SWITCH_MAC};
use sgnn_wire::codec::FixedPoint;
use sgnn_wire::sgnn::Repr;
use sgnn_wire::{ethernet, ipv4, FrameRepr, PacketType, LANES};
use softswitch::{AggAction, AggregateParams, Pipeline, PortEnd, SwitchConfig, Tables, WorkerPort};

/// One input frame and the port it enters on.
#[derive(Debug, Clone)]
pub struct Step {
    /// Ingress port (= the sending worker for SwitchGNN frames).
    pub port: u16,
    /// The frame.
    pub frame: Vec<u8>,
    /// What the step is, for failure messages.
    pub what: String,
}

/// A named scenario.
pub struct Scenario {
    /// Name.
    pub name: &'static str,
    /// The plan whose tables the switch holds.
    pub plan: Plan,
    /// Settings (registers) the control plane sets.
    pub config: SwitchConfig,
    /// `agg_table` entries beyond the plan's (cut edges delivered to hosts).
    pub extra_entries: Vec<((u16, u32, u8), AggAction)>,
    /// The input frames, in order.
    pub steps: Vec<Step>,
    /// Ports of the plan's workers that stand for a fabric link instead (`sgnn_switch::
    /// fabric`): their `port_worker` entry is `set_port_link` (the peer: the worker id of the
    /// port), so the frames they bring are another switch's.
    pub link_ports: Vec<u16>,
}

impl Scenario {
    /// Ports of the test network: one per worker, and any port a step enters on beyond them
    /// (a port of no worker).
    pub fn ports(&self) -> usize {
        let steps = self.steps.iter().map(|s| s.port as usize + 1).max();
        (self.plan.workers() as usize).max(steps.unwrap_or(0))
    }

    /// The switch's tables for this scenario (plan, workers on ports 0..M, extras).
    pub fn tables(&self) -> Tables {
        let mut t = Tables::from_plan(&self.plan, &worker_ports(self.plan.workers()));
        for &(k, a) in &self.extra_entries {
            t.agg_table.insert(k, a);
        }
        for &p in &self.link_ports {
            t.port_worker.insert(p, PortEnd::Link(p));
        }
        t
    }

    /// A fresh model switch loaded like the device under test.
    pub fn model(&self) -> Pipeline {
        Pipeline::new(self.config.clone(), self.tables())
    }
}

/// Worker `w` on port `w` with the testbed's addresses.
pub fn worker_ports(workers: u32) -> Vec<WorkerPort> {
    (0..workers as u16)
        .map(|w| WorkerPort {
            port: w,
            mac: worker_mac(w),
            ip: worker_ip(w),
        })
        .collect()
}

/// A frame from worker `w` to the switch.
pub fn frame(w: u16, s: Repr, lanes: Option<&[i32; LANES]>) -> Vec<u8> {
    frame_to(w, SWITCH_IP, s, lanes)
}

/// A frame from worker `w` to IPv4 `dst` (through the switch).
pub fn frame_to(w: u16, dst: [u8; 4], s: Repr, lanes: Option<&[i32; LANES]>) -> Vec<u8> {
    let r = FrameRepr {
        eth: ethernet::Repr {
            dst: SWITCH_MAC,
            src: worker_mac(w),
            ethertype: ethernet::ETHERTYPE_IPV4,
        },
        ip: ipv4::Repr {
            src: worker_ip(w),
            dst,
            ttl: 64,
            dscp: 10,
            ..Default::default()
        },
        sgnn: s,
    };
    let mut buf = vec![0u8; r.frame_len()];
    r.emit(lanes, &mut buf).expect("valid test frame");
    buf
}

fn plan_for(graph: &str, workers: u32, mem: u64, feature_dim: u32, max_passes: u32) -> Plan {
    let g = sgnn_graph::load_graph(graph).expect("test graph loads");
    let req = PlanRequest {
        config: PlanConfig {
            workers,
            partitioner: sgnn_plan::Partitioner::Metis,
            switch_mem_bytes: mem,
            agg_bytes: 128,
            feature_dim,
            order: sgnn_plan::SendOrder::Gamr,
            seed: 1,
            max_passes,
            leaves: 1,
            aggregate: sgnn_plan::AggregateMode::Paper,
            recycle_slack: None,
        },
        graph_source: graph.into(),
        max_abs_value: 1.0,
    };
    let (p, _) = make_plan(g.csr, g.stats, &req, &mut |_| {}).expect("test plan");
    sgnn_plan::verify(&p).expect("test plan verifies");
    p
}

/// Cora from `../shared/datasets` when present, else an R-MAT graph of similar size.
pub fn real_graph() -> String {
    let cora = crate::repo_root().join("../shared/datasets/cora/edges.txt.gz");
    if cora.exists() {
        cora.display().to_string()
    } else {
        eprintln!("note: cora not found at {}, using R-MAT", cora.display());
        "rmat:scale=11,edge_factor=2,seed=3".into()
    }
}

fn config(plan: &Plan) -> SwitchConfig {
    SwitchConfig {
        // The P4 program's register arrays (p4/v1model/config.p4), whatever the plan uses.
        aggregators: sgnn_switch::aggregation::AGGREGATORS,
        ..SwitchConfig::for_plan(plan)
    }
}

/// Encoded random features, `enc[v][segment]`, that never saturate a sum.
fn features(plan: &Plan, seed: u64) -> Vec<Vec<[i32; LANES]>> {
    let n = plan.graph.num_vertices();
    let maxdeg = (0..n as u32)
        .map(|v| plan.graph.degree(v))
        .max()
        .unwrap_or(1) as u32;
    let fp = FixedPoint::for_sum(1.0, maxdeg.max(1)).expect("codec");
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    // One value per block source: every vertex, then every pre-aggregated partial (its sum is
    // the hosts' business; the switch only adds what arrives).
    (0..n + plan.partials.len())
        .map(|_| {
            (0..plan.manifest.segments)
                .map(|_| {
                    let x: Vec<f32> = (0..LANES).map(|_| rng.gen_range(-1.0..1.0)).collect();
                    let mut e = [0i32; LANES];
                    fp.encode(&x, &mut e);
                    e
                })
                .collect()
        })
        .collect()
}

fn data_repr(plan: &Plan, src: u32, block: u16, round: u16, segment: u16) -> Repr {
    let mut s = Repr::new(PacketType::Data);
    s.worker_id = plan.owner(src).expect("a source of the plan") as u16;
    s.src_id = src;
    s.block_id = block;
    s.round = round;
    s.segment = segment;
    s.frac_bits = 20;
    s
}

/// Every source of every block, every segment, then block-done from every worker.
fn whole_round(plan: &Plan, enc: &[Vec<[i32; LANES]>], round: u16) -> Vec<Step> {
    let mut steps = Vec::new();
    for (b, block) in plan.blocks.iter().enumerate() {
        for &src in &block.sources {
            for seg in 0..plan.manifest.segments as u16 {
                let s = data_repr(plan, src, b as u16, round, seg);
                steps.push(Step {
                    port: s.worker_id,
                    frame: frame(s.worker_id, s, Some(&enc[src as usize][seg as usize])),
                    what: format!("data round {round} block {b} src {src} seg {seg}"),
                });
            }
        }
        steps.extend(block_done_all(plan, b as u16, round));
    }
    steps
}

/// Worker `w`'s start-up probe: an Ack to itself (`dst_id` = `PROBE_DST`).
fn probe(w: u16) -> Step {
    let mut p = Repr::new(PacketType::Ack);
    p.worker_id = w;
    p.src_id = w as u32;
    p.dst_id = sgnn_wire::PROBE_DST;
    Step {
        port: w,
        frame: frame_to(w, worker_ip(w), p, None),
        what: format!("probe {w}->{w}"),
    }
}

fn block_done(w: u16, block: u16, round: u16) -> Step {
    let mut s = Repr::new(PacketType::BlockDone);
    s.worker_id = w;
    s.block_id = block;
    s.round = round;
    Step {
        port: w,
        frame: frame(w, s, None),
        what: format!("block-done w{w} round {round} block {block}"),
    }
}

/// A tail probe of worker `w` on `port` (its own, or another worker's): its next number
/// `next`, the NACKs it knows `known`, for `block` of round 0.
fn tail_probe_of(port: u16, w: u16, next: u16, known: u16, block: u16) -> Step {
    let mut s = Repr::new(PacketType::Ack);
    s.worker_id = w;
    s.dst_id = sgnn_wire::recovery::SEQ_PROBE;
    s.src_id = next as u32;
    s.count = known;
    s.block_id = block;
    Step {
        port,
        frame: frame(w, s, None),
        what: format!(
            "tail probe of worker {w} (next {next}, {known} NACKs known, block {block}) on port {port}"
        ),
    }
}

/// A Data frame of source `src` from worker `w` (on its port) with `lanes`, 20 fraction
/// bits, and whatever `set` changes in its header.
fn data_step(
    w: u16,
    src: u32,
    lanes: &[i32; LANES],
    what: String,
    set: impl FnOnce(&mut Repr),
) -> Step {
    let mut s = Repr::new(PacketType::Data);
    s.worker_id = w;
    s.src_id = src;
    s.frac_bits = 20;
    set(&mut s);
    Step {
        port: w,
        frame: frame(w, s, Some(lanes)),
        what,
    }
}

fn block_done_all(plan: &Plan, block: u16, round: u16) -> Vec<Step> {
    (0..plan.workers() as u16)
        .map(|w| block_done(w, block, round))
        .collect()
}

/// One block of a small real graph (cora, 4 workers, 2 segments per vertex).
pub fn one_block_real_graph() -> Scenario {
    let plan = plan_for(&real_graph(), 4, 8 << 20, 64, 256);
    assert_eq!(plan.blocks.len(), 1);
    let enc = features(&plan, 1);
    let steps = whole_round(&plan, &enc, 0);
    Scenario {
        name: "one_block_real_graph",
        config: config(&plan),
        plan,
        extra_entries: Vec::new(),
        steps,
        link_ports: Vec::new(),
    }
}

/// Several blocks with hubs feeding many aggregators each (recirculation), two rounds:
/// aggregators are reused across blocks and rounds.
pub fn recirculation_and_reuse() -> Scenario {
    let plan = plan_for("rmat:scale=8,edge_factor=8,seed=5", 3, 24 * 1024, 32, 16);
    assert!(plan.blocks.len() > 1, "several blocks");
    assert!(
        plan.blocks.iter().any(|b| b.max_passes() >= 4),
        "a source feeds at least 4 aggregators"
    );
    let enc = features(&plan, 2);
    let mut steps = whole_round(&plan, &enc, 0);
    steps.extend(whole_round(&plan, &enc, 1));
    Scenario {
        name: "recirculation_and_reuse",
        config: config(&plan),
        plan,
        extra_entries: Vec::new(),
        steps,
        link_ports: Vec::new(),
    }
}

/// Duplicates, resends (aggregator released, bypass to the host), a cut edge delivered to the
/// host, stale data, and block sync with a lost advance (the stale block-done is answered).
pub fn loss_recovery_paths() -> Scenario {
    let plan = plan_for("rmat:scale=7,edge_factor=6,seed=9", 3, 1 << 20, 32, 256);
    let enc = features(&plan, 3);
    let block = &plan.blocks[0];
    let mut steps = Vec::new();
    let src_frame = |i: usize, resend: bool, pass: u8| {
        let src = block.sources[i];
        let mut s = data_repr(&plan, src, 0, 0, 0);
        s.flags.resend = resend;
        s.pass = pass;
        Step {
            port: s.worker_id,
            frame: frame(s.worker_id, s, Some(&enc[src as usize][0])),
            what: format!("data src {src} resend {resend} pass {pass}"),
        }
    };
    let n = block.sources.len();
    // The first half of the sources, the first one twice (a network duplicate).
    for i in 0..n / 2 {
        steps.push(src_frame(i, false, 0));
    }
    steps.push(src_frame(0, false, 0));
    // A resend of the second source for its first aggregator, and for its last.
    steps.push(src_frame(1, true, 0));
    let last = block.passes(1).len() as u8 - 1;
    steps.push(src_frame(1, true, last));
    // A host sending a nonzero pass without RESEND: unexpected.
    steps.push(src_frame(2, false, 1));
    // The rest of the sources: aggregators released by the resends bypass.
    for i in n / 2..n {
        steps.push(src_frame(i, false, 0));
    }
    // Data for a later block and round: stale.
    let mut s = data_repr(&plan, block.sources[0], 0, 5, 0);
    s.round = 5;
    steps.push(Step {
        port: s.worker_id,
        frame: frame(s.worker_id, s, Some(&[1; LANES])),
        what: "data of a future round".into(),
    });
    // A cut edge: the extra `deliver` entry sends vertex 100000's value to worker 1's host.
    let mut s = data_repr(&plan, 0, 0, 0, 0);
    s.src_id = 100_000;
    s.worker_id = 0;
    steps.push(Step {
        port: 0,
        frame: frame(0, s, Some(&[7; LANES])),
        what: "cut edge (deliver)".into(),
    });
    // Block sync: worker 0 twice (duplicate), then all; then worker 2 lost the advance and
    // reports the finished block again.
    steps.push(block_done(0, 0, 0));
    steps.extend(block_done_all(&plan, 0, 0));
    steps.push(block_done(2, 0, 0));
    // A block-done for a block far ahead: stale the other way.
    steps.push(block_done(1, 9, 3));
    let extra = vec![(
        (0u16, 100_000u32, 0u8),
        AggAction::Deliver {
            dst_id: 42,
            dst_worker: 1,
            more: false,
            seen_base: 60_000,
        },
    )];
    Scenario {
        name: "loss_recovery_paths",
        config: config(&plan),
        plan,
        extra_entries: extra,
        steps,
        link_ports: Vec::new(),
    }
}

/// Loss recovery (docs/host.md, "Loss recovery"): numbered Data frames in order, a gap (the
/// frame that reveals it becomes the NACK), a late frame and a late duplicate, tail probes (a
/// new gap, the last gap repeated, one from another worker's port), retransmissions, pulls of
/// empty, partial, complete-and-kept and released aggregates, a pull of no row and one of
/// another round, a first copy for a kept aggregate, and the clean probes that end in the
/// all-sent notice.
pub fn numbered_frames_nacks_and_pulls() -> Scenario {
    use sgnn_wire::recovery::SEQ_VALID;
    let plan = plan_for("rmat:scale=7,edge_factor=6,seed=9", 3, 1 << 20, 32, 256);
    let enc = features(&plan, 5);
    let block = &plan.blocks[0];
    let segs = plan.manifest.segments as u16;
    let numbered = |src: u32, seg: u16, n: u16, what: &str| {
        let mut s = data_repr(&plan, src, 0, 0, seg);
        s.dst_id = SEQ_VALID | n as u32;
        Step {
            port: s.worker_id,
            frame: frame(s.worker_id, s, Some(&enc[src as usize][seg as usize])),
            what: format!("{what}: src {src} seg {seg} number {n}"),
        }
    };
    let tail_probe = |port: u16, w: u16, next: u16| tail_probe_of(port, w, next, 0, 0);
    // The rows of block 0 by their agg_table key, sorted (the table is a map).
    let tables = Tables::from_plan(&plan, &worker_ports(plan.workers()));
    let mut rows: Vec<(u16, u32, u8)> = tables
        .agg_table
        .iter()
        .filter(|(k, a)| k.0 == 0 && matches!(a, AggAction::Aggregate(_)))
        .map(|(k, _)| k)
        .collect();
    rows.sort_unstable();
    let pull = |key: (u16, u32, u8), round: u16, what: &str| {
        let mut s = Repr::new(PacketType::FetchReq);
        s.worker_id = 1;
        s.block_id = key.0;
        s.src_id = key.1;
        s.pass = key.2;
        s.round = round;
        s.frac_bits = 20;
        Step {
            port: 1,
            frame: frame(1, s, None),
            what: format!("pull ({what}) of row {key:?} round {round}"),
        }
    };
    let pulled: Vec<(u16, u32, u8)> = rows.iter().step_by(rows.len() / 4 + 1).copied().collect();
    // Every worker's (source, segment) pairs of block 0, in the plan's order.
    let mut frames: Vec<Vec<(u32, u16)>> = vec![Vec::new(); plan.workers() as usize];
    for &src in &block.sources {
        for g in 0..segs {
            frames[plan.owner(src).unwrap() as usize].push((src, g));
        }
    }
    let w0 = &frames[0];
    assert!(w0.len() >= 6, "worker 0 needs six frames in block 0");
    let mut steps = vec![
        // Nothing yet.
        pull(pulled[0], 0, "empty"),
        // Worker 0: #0, #1, (#2 lost), #3 reveals the gap 2..=3 and becomes the NACK; #2
        // late, #1 again (late and a duplicate), #4 in order.
        numbered(w0[0].0, w0[0].1, 0, "in order"),
        numbered(w0[1].0, w0[1].1, 1, "in order"),
        numbered(w0[3].0, w0[3].1, 3, "after a gap"),
        numbered(w0[2].0, w0[2].1, 2, "late"),
        numbered(w0[1].0, w0[1].1, 1, "late duplicate"),
        numbered(w0[4].0, w0[4].1, 4, "in order"),
    ];
    // Partial aggregates.
    for &k in &pulled {
        steps.push(pull(k, 0, "partial or empty"));
    }
    // Tail probes: #5 never arrived (a new gap), then the last gap again; one claiming worker
    // 0 from worker 1's port is refused.
    steps.push(tail_probe(0, 0, 6));
    steps.push(tail_probe(0, 0, 6));
    steps.push(tail_probe(1, 0, 6));
    // Worker 0 retransmits the NACKed frames (#2's copy is a duplicate) and sends the rest;
    // the others send theirs, numbered from 0.
    let mut n = 6u16;
    for &(src, g) in [w0[3], w0[2], w0[5]].iter().chain(w0[6..].iter()) {
        steps.push(numbered(src, g, n, "retransmission or rest"));
        n += 1;
    }
    for (w, fs) in frames.iter().enumerate().skip(1) {
        for (i, &(src, g)) in fs.iter().enumerate() {
            steps.push(numbered(src, g, i as u16, &format!("worker {w}")));
        }
    }
    // Complete and kept: pulled whole; a first copy for a kept aggregate is a duplicate.
    for &k in &pulled {
        steps.push(pull(k, 0, "complete"));
    }
    steps.push(numbered(
        w0[0].0,
        w0[0].1,
        n,
        "first copy for a kept aggregate",
    ));
    // A RESEND releases the first pulled row's aggregator: the pull then says gone.
    let mut s = data_repr(&plan, pulled[0].1, 0, 0, 0);
    s.flags.resend = true;
    s.pass = pulled[0].2;
    steps.push(Step {
        port: s.worker_id,
        frame: frame(s.worker_id, s, Some(&enc[pulled[0].1 as usize][0])),
        what: format!("resend src {} pass {}", pulled[0].1, pulled[0].2),
    });
    steps.push(pull(pulled[0], 0, "released"));
    steps.push(pull((0, 99_999, 0), 0, "no such row"));
    steps.push(pull(pulled[1], 3, "another round"));
    // All sent: worker 0 took numbers up to n and heard of 2 NACKs. A probe that knows only
    // one is not clean; one for another block is not counted; worker 1 probes twice (counted
    // once); worker 2's clean probe completes the count and becomes the all-sent notice to
    // every worker; a probe after it is answered as any.
    steps.push(tail_probe_of(0, 0, n + 1, 1, 0));
    steps.push(tail_probe_of(0, 0, n + 1, 2, 1));
    steps.push(tail_probe_of(0, 0, n + 1, 2, 0));
    let next_of = |w: usize| frames[w].len() as u16;
    steps.push(tail_probe_of(1, 1, next_of(1), 0, 0));
    steps.push(tail_probe_of(1, 1, next_of(1), 0, 0));
    steps.push(tail_probe_of(2, 2, next_of(2), 0, 0));
    steps.push(tail_probe_of(2, 2, next_of(2), 0, 0));
    steps.extend(block_done_all(&plan, 0, 0));
    Scenario {
        name: "numbered_frames_nacks_and_pulls",
        config: config(&plan),
        plan,
        extra_entries: Vec::new(),
        steps,
        link_ports: Vec::new(),
    }
}

/// Host-to-host traffic (ack, fetch, bypass, plain UDP) forwarded untouched; frames with no
/// route, not IPv4, or malformed SwitchGNN dropped and counted; the drop simulator.
pub fn forwarding_and_malformed() -> Scenario {
    let plan = plan_for("rmat:scale=6,edge_factor=4,seed=4", 2, 1 << 20, 32, 256);
    let mut steps = Vec::new();
    let mut push = |port: u16, frame: Vec<u8>, what: &str| {
        steps.push(Step {
            port,
            frame,
            what: what.into(),
        })
    };
    let mut ack = Repr::new(PacketType::Ack);
    ack.worker_id = 0;
    ack.src_id = 3;
    ack.dst_id = 4;
    push(0, frame_to(0, worker_ip(1), ack, None), "ack 0->1");
    // A daemon's start-up probe: an Ack to itself, answered with the plan tag in src_id.
    let p = probe(1);
    push(p.port, p.frame, &p.what);
    let mut fetch = Repr::new(PacketType::FetchReq);
    fetch.worker_id = 1;
    fetch.src_id = 5;
    push(1, frame_to(1, worker_ip(0), fetch, None), "fetch 1->0");
    let mut byp = Repr::new(PacketType::Bypass);
    byp.worker_id = 0;
    byp.src_id = 5;
    byp.dst_id = 6;
    push(
        0,
        frame_to(0, worker_ip(1), byp, Some(&[3; LANES])),
        "bypass 0->1",
    );
    // Plain UDP to worker 1.
    let mut udp = frame(0, Repr::new(PacketType::BlockDone), None);
    udp[14 + 9] = 17;
    udp[14 + 16..14 + 20].copy_from_slice(&worker_ip(1));
    fix_ipv4_checksum(&mut udp);
    push(0, udp.clone(), "plain UDP 0->1");
    // No route.
    let mut lost = udp.clone();
    lost[14 + 16..14 + 20].copy_from_slice(&[192, 168, 9, 9]);
    fix_ipv4_checksum(&mut lost);
    push(0, lost, "UDP with no route");
    // Not IPv4.
    let mut arp = udp.clone();
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    push(0, arp, "ARP");
    // Malformed SwitchGNN frames.
    let good = frame(0, Repr::new(PacketType::BlockDone), None);
    let mut bad = good.clone();
    bad[24] ^= 0xff;
    push(0, bad, "bad IPv4 checksum");
    let mut bad = good.clone();
    bad[34] = 0x25; // version 2, block-done
    push(0, bad, "bad version");
    let mut bad = good.clone();
    bad[34] = 0x1f; // version 1, type 15
    push(0, bad, "unknown type");
    let mut bad = good.clone();
    bad[34 + 22] = 1;
    push(
        0,
        bad,
        "another job's frame (job 256; bytes 22..24 were reserved)",
    );
    let mut bad = good.clone();
    bad[34 + 1] = 0x80;
    push(0, bad, "ACK flag on block-done");
    let mut bad = good.clone();
    bad[34 + 21] = 31;
    push(0, bad, "frac_bits 31");
    let d = data_repr(&plan, 0, 0, 0, 0);
    let good_data = frame(d.worker_id, d, Some(&[0; LANES]));
    push(0, good_data[..100].to_vec(), "truncated data");
    let mut r = Repr::new(PacketType::Result);
    r.worker_id = 1;
    push(1, frame(1, r, Some(&[0; LANES])), "result from a host");
    let mut adv = Repr::new(PacketType::BlockAdvance);
    adv.worker_id = 1;
    push(1, frame(1, adv, None), "advance from a host");
    push(0, block_done(77, 0, 0).frame, "unknown worker's block-done");
    Scenario {
        name: "forwarding_and_malformed",
        config: config(&plan),
        plan,
        extra_entries: Vec::new(),
        steps,
        link_ports: Vec::new(),
    }
}

/// The drop simulator dropping every third SwitchGNN frame of a block.
pub fn drop_simulator() -> Scenario {
    let plan = plan_for("rmat:scale=6,edge_factor=4,seed=4", 2, 1 << 20, 32, 256);
    let enc = features(&plan, 4);
    let steps = whole_round(&plan, &enc, 0);
    let mut config = config(&plan);
    config.drop_every = 3;
    Scenario {
        name: "drop_simulator",
        config,
        plan,
        extra_entries: Vec::new(),
        steps,
        link_ports: Vec::new(),
    }
}

/// Control frames are accepted only from the port of the worker they name, and a daemon's
/// start-up probe learns the block the switch is at: a BlockDone for worker 1 entering on
/// worker 0's port (and one for worker 0 on worker 1's) is dropped and counted
/// `drop_wrong_port` without touching the synchronisation, before and after a block; a
/// probe answered at round 0 block 0, then again once the switch has moved on.
pub fn control_frames_from_their_ports() -> Scenario {
    let plan = plan_for("rmat:scale=6,edge_factor=4,seed=4", 2, 2 * 1024, 32, 256);
    assert!(plan.blocks.len() > 1, "several blocks");
    let enc = features(&plan, 5);
    let forged = |w: u16, port: u16, block: u16, round: u16| {
        let mut st = block_done(w, block, round);
        st.port = port;
        st.what = format!("block-done w{w} round {round} block {block} on port {port}");
        st
    };
    let mut steps = vec![probe(0), forged(1, 0, 0, 0), forged(0, 1, 0, 0)];
    let mut round = whole_round(&plan, &enc, 0);
    // Forged completions of block 0 before the real ones: the switch must not advance.
    let first_done = round
        .iter()
        .position(|s| s.what.starts_with("block-done"))
        .expect("a block-done");
    round.insert(first_done, forged(1, 0, 0, 0));
    steps.extend(round);
    // A stale block-done on the wrong port is not answered either; on its own port it is.
    steps.push(forged(0, 1, 0, 0));
    steps.push(block_done(0, 0, 0));
    steps.push(probe(1));
    Scenario {
        name: "control_frames_from_their_ports",
        config: config(&plan),
        plan,
        extra_entries: Vec::new(),
        steps,
        link_ports: Vec::new(),
    }
}

/// The job value [`admission_of_every_type`] loads the switch with.
pub const ADMISSION_JOB: u16 = 0x5a5a;

/// The admission rule (docs/host.md, "Threat model"; `p4/v1model/admission.p4`): each packet
/// type a host sends (Data, Bypass, Ack, FetchReq, BlockDone, a tail probe), refused from a
/// port of no worker (port 2 of a 2-worker plan), from worker 0's port naming worker 1, with
/// worker 1's IPv4 source on worker 0's port, and with another job; then the same frame from
/// its own port, address and job, admitted. The start-up probe is admitted whatever its job.
pub fn admission_of_every_type() -> Scenario {
    let plan = plan_for("rmat:scale=6,edge_factor=4,seed=4", 2, 1 << 20, 32, 256);
    let src = *plan.blocks[0]
        .sources
        .iter()
        .find(|&&v| plan.owner(v) == Some(0))
        .expect("a source of worker 0 in block 0");
    let mut cfg = config(&plan);
    cfg.job = ADMISSION_JOB;
    let lanes = [7i32; LANES];
    // (what, header from worker 0, destination address, lanes)
    type Kind = (&'static str, Repr, [u8; 4], Option<[i32; LANES]>);
    let mut kinds: Vec<Kind> = Vec::new();
    kinds.push((
        "data",
        data_repr(&plan, src, 0, 0, 0),
        SWITCH_IP,
        Some(lanes),
    ));
    let mut byp = Repr::new(PacketType::Bypass);
    byp.src_id = src;
    byp.dst_id = sgnn_wire::ALL_NEIGHBOURS;
    kinds.push(("bypass", byp, worker_ip(1), Some(lanes)));
    let mut ack = Repr::new(PacketType::Ack);
    ack.src_id = 3;
    ack.dst_id = 4;
    kinds.push(("ack", ack, worker_ip(1), None));
    let mut fetch = Repr::new(PacketType::FetchReq);
    fetch.src_id = 5;
    kinds.push(("fetch", fetch, worker_ip(1), None));
    kinds.push((
        "block-done",
        Repr::new(PacketType::BlockDone),
        SWITCH_IP,
        None,
    ));
    let mut tail = Repr::new(PacketType::Ack);
    tail.dst_id = sgnn_wire::recovery::SEQ_PROBE;
    kinds.push(("tail probe", tail, SWITCH_IP, None));
    let build = |mut s: Repr, w: u16, job: u16, dst: [u8; 4], l: &Option<[i32; LANES]>| {
        s.worker_id = w;
        s.job = job;
        frame_to(w, dst, s, l.as_ref())
    };
    let mut steps = Vec::new();
    let mut p = probe(0);
    p.what = "probe of worker 0 with job 0 (admitted: it learns the job)".into();
    steps.push(p);
    for (what, s, dst, l) in &kinds {
        let job = ADMISSION_JOB;
        steps.push(Step {
            port: 2,
            frame: build(*s, 0, job, *dst, l),
            what: format!("{what} as worker 0 on port 2, a port of no worker"),
        });
        steps.push(Step {
            port: 0,
            frame: build(*s, 1, job, *dst, l),
            what: format!("{what} naming worker 1 on worker 0's port"),
        });
        let mut spoofed = build(*s, 0, job, *dst, l);
        spoofed[26..30].copy_from_slice(&worker_ip(1));
        fix_ipv4_checksum(&mut spoofed);
        steps.push(Step {
            port: 0,
            frame: spoofed,
            what: format!("{what} from worker 0 with worker 1's IPv4 source"),
        });
        steps.push(Step {
            port: 0,
            frame: build(*s, 0, job ^ 1, *dst, l),
            what: format!("{what} from worker 0 with another job"),
        });
        steps.push(Step {
            port: 0,
            frame: build(*s, 0, job, *dst, l),
            what: format!("{what} from worker 0, its port, address and job"),
        });
    }
    Scenario {
        name: "admission_of_every_type",
        config: cfg,
        plan,
        extra_entries: Vec::new(),
        steps,
        link_ports: Vec::new(),
    }
}

/// An `agg_table` entry beyond the plan's: `src` of block 0, pass 0, into a fresh aggregator.
fn extra_aggregate(
    src: u32,
    agg_base: u32,
    dst: u32,
    dst_worker: u16,
    expected: u16,
    seen: u32,
) -> ((u16, u32, u8), AggAction) {
    (
        (0, src, 0),
        AggAction::Aggregate(AggregateParams {
            agg_base,
            dst_id: dst,
            dst_worker,
            expected,
            more: false,
            seen_base: seen,
            generation: 0,
        }),
    )
}

/// Sources of [`recycled_generations`]: `(src, generation, agg_base, dst, dst_worker)`, each
/// row completed by two contributions (the rows of one base share its aggregator).
pub const RECYCLED_ROWS: [(u32, u16, u32, u32, u16); 16] = [
    // (a) generation 0 completes, then generation 1.
    (100_000, 0, 60_000, 900, 0),
    (100_001, 0, 60_000, 900, 0),
    (100_002, 1, 60_000, 901, 1),
    (100_003, 1, 60_000, 901, 1),
    // (b) generation 1 reclaims a partial of 0; later contributions of 0 are late.
    (100_010, 0, 60_010, 910, 0),
    (100_011, 0, 60_010, 910, 0),
    (100_012, 1, 60_010, 911, 1),
    (100_013, 1, 60_010, 911, 1),
    (100_014, 0, 60_010, 910, 0), // and at pass 1 a lone aggregator (60_020, dst 912)
    // (c) a RESEND for generation 0 while 1 is active.
    (100_030, 0, 60_030, 930, 0),
    (100_031, 0, 60_030, 930, 0),
    (100_032, 1, 60_030, 931, 1),
    (100_033, 1, 60_030, 931, 1),
    // (d) generation 1 left active by round 0, reclaimed by generation 0 of round 1.
    (100_040, 0, 60_040, 940, 0),
    (100_041, 0, 60_040, 940, 0),
    (100_042, 1, 60_040, 941, 1),
];

/// Lanes of [`recycled_generations`]' source `src`: distinct per source, so a sum shows who
/// was added.
pub fn recycled_lanes(src: u32) -> [i32; LANES] {
    std::array::from_fn(|l| (src - 100_000) as i32 * 1000 - l as i32)
}

/// Aggregator recycling (a plan's rows sharing `agg_base`, numbered by `generation`): (a)
/// generation 0 completes, then 1, both exact; (b) generation 1 arrives while 0 is active
/// (0's partial reclaimed), later contributions of 0 are late (`bypassed_late`: a Bypass to
/// 0's destination, the aggregator untouched), one of them recirculating to its next pass,
/// and 1 completes with its own sum; (c) a RESEND for 0 while 1 is active is late too, a
/// RESEND for 1 releases the aggregator as before, and 0 is late against that bypassed
/// state; (d) state of another round is reclaimed whatever its generation. The rows are
/// `agg_table` entries beyond the plan's, in aggregators it does not use.
pub fn recycled_generations() -> Scenario {
    let plan = plan_for("rmat:scale=6,edge_factor=4,seed=4", 3, 1 << 20, 32, 256);
    assert_eq!(
        plan.blocks.len(),
        1,
        "one block: its BlockDones start round 1"
    );
    let mut extra: Vec<((u16, u32, u8), AggAction)> = RECYCLED_ROWS
        .iter()
        .map(|&(src, generation, agg_base, dst_id, dst_worker)| {
            (
                (0, src, 0),
                AggAction::Aggregate(AggregateParams {
                    agg_base,
                    dst_id,
                    dst_worker,
                    expected: 2,
                    more: src == 100_014,
                    seen_base: 200_000 + (src - 100_000),
                    generation,
                }),
            )
        })
        .collect();
    extra.push(extra_aggregate(100_014, 60_020, 912, 2, 1, 200_014));
    extra.last_mut().expect("pushed").0 .2 = 1; // pass 1
    let data = |src: u32, round: u16, resend: bool| {
        let what = format!("data src {src} round {round} resend {resend}");
        data_step((src % 3) as u16, src, &recycled_lanes(src), what, |s| {
            s.round = round;
            s.flags.resend = resend;
        })
    };
    let mut steps = vec![
        // (a)
        data(100_000, 0, false),
        data(100_001, 0, false),
        data(100_002, 0, false),
        data(100_003, 0, false),
        // (b)
        data(100_010, 0, false),
        data(100_012, 0, false),
        data(100_011, 0, false),
        data(100_014, 0, false),
        data(100_013, 0, false),
        // (c)
        data(100_032, 0, false),
        data(100_030, 0, true),
        data(100_033, 0, false),
        data(100_032, 0, true),
        data(100_031, 0, false),
        // (d)
        data(100_042, 0, false),
    ];
    steps.extend(block_done_all(&plan, 0, 0));
    steps.extend([
        data(100_040, 1, false),
        data(100_041, 1, false),
        // Left active at the end: the registers compared hold a generation.
        data(100_012, 1, false),
    ]);
    Scenario {
        name: "recycled_generations",
        config: config(&plan),
        plan,
        extra_entries: extra,
        steps,
        link_ports: Vec::new(),
    }
}

/// Lanes that saturate both ways (counted `saturated` once per contribution, every lane
/// clamped, not wrapped), and frames with Ethernet padding: switch frames leave at their exact
/// length, forwarded ones keep their padding. (Ported from the deleted Python checker's
/// `saturation` and `padding`.)
pub fn saturation_and_padding() -> Scenario {
    let plan = plan_for("rmat:scale=6,edge_factor=4,seed=4", 3, 1 << 20, 32, 256);
    let base = 60_000; // aggregators beyond the plan's
    let extra = vec![
        extra_aggregate(100_000, base, 950, 0, 3, 200_000),
        extra_aggregate(100_001, base, 950, 0, 3, 200_001),
        extra_aggregate(100_002, base, 950, 0, 3, 200_002),
        extra_aggregate(100_010, base + 1, 990, 1, 1, 200_010),
        (
            (0, 100_011, 0),
            AggAction::Deliver {
                dst_id: 991,
                dst_worker: 2,
                more: false,
                seen_base: 200_011,
            },
        ),
    ];
    let data = |w: u16, src: u32, lanes: [i32; LANES], pad: usize, what: &str| {
        let mut s = Repr::new(PacketType::Data);
        s.worker_id = w;
        s.src_id = src;
        s.frac_bits = 20;
        let mut f = frame(w, s, Some(&lanes));
        f.extend(std::iter::repeat_n(0xee, pad));
        Step {
            port: w,
            frame: f,
            what: what.into(),
        }
    };
    let lanes_of = |head: [i32; 4], rest: i32| {
        let mut l = [rest; LANES];
        l[..4].copy_from_slice(&head);
        l
    };
    let mut steps = vec![
        data(
            0,
            100_000,
            lanes_of([i32::MAX - 5, i32::MIN + 5, 1 << 30, -(1 << 30)], 7),
            0,
            "saturating contribution 1",
        ),
        data(
            1,
            100_001,
            lanes_of([10, -10, 1 << 30, -(1 << 30) - 1], -7),
            0,
            "saturating contribution 2",
        ),
        data(
            2,
            100_002,
            lanes_of([20, -20, 5, -5], 0),
            0,
            "contribution 3 (completes, saturating again)",
        ),
        data(
            0,
            100_010,
            [30; LANES],
            7,
            "data with 7 bytes of padding (result)",
        ),
        data(
            0,
            100_011,
            [31; LANES],
            3,
            "data with 3 bytes of padding (deliver)",
        ),
    ];
    for w in 0..3u16 {
        let mut st = block_done(w, 0, 0);
        st.frame.extend([0, 0]);
        st.what += " with 2 bytes of padding";
        steps.push(st);
    }
    let mut st = block_done(1, 0, 0);
    st.frame.extend([0; 6]);
    st.what += " (stale: answered) with 6 bytes of padding";
    steps.push(st);
    let mut ack = Repr::new(PacketType::Ack);
    ack.worker_id = 1;
    let mut f = frame_to(1, worker_ip(0), ack, None);
    f.extend([0; 6]);
    steps.push(Step {
        port: 1,
        frame: f,
        what: "ack 1->0 with 6 bytes of padding".into(),
    });
    Scenario {
        name: "saturation_and_padding",
        config: config(&plan),
        plan,
        extra_entries: extra,
        steps,
        link_ports: Vec::new(),
    }
}

/// A seeded random mix over a 3-block plan: valid, stale, resent, duplicated, padded,
/// truncated and bit-flipped frames of every type from every port, with the drop simulator on
/// (ported from the deleted Python checker's `random`).
pub fn random_mix() -> Scenario {
    let plan = plan_for("rmat:scale=6,edge_factor=4,seed=4", 3, 1024, 32, 256);
    assert!(
        plan.blocks.len() >= 3,
        "several blocks: {}",
        plan.blocks.len()
    );
    let enc = features(&plan, 6);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2026);
    let mut steps: Vec<Step> = Vec::new();
    let workers = plan.workers() as u16;
    let blocks = plan.blocks.len() as u16;
    let mut last_data: Option<Step> = None;
    let lanes = |rng: &mut rand_chacha::ChaCha8Rng| {
        let mut l = [0i32; LANES];
        for x in &mut l {
            *x = if rng.gen::<f64>() < 0.1 {
                [i32::MAX, i32::MIN, 1 << 30, -(1 << 30), rng.gen()][rng.gen_range(0..5)]
            } else {
                rng.gen_range(-1_000_000..1_000_000)
            };
        }
        l
    };
    for i in 0..300 {
        let x: f64 = rng.gen();
        let (round, block) = (rng.gen_range(0..2u16), rng.gen_range(0..blocks));
        let st = if x < 0.05 && last_data.is_some() {
            let mut d = last_data.clone().expect("checked");
            d.what = format!("random {i}: a network duplicate of the last data");
            d
        } else if x < 0.55 {
            let b = &plan.blocks[block as usize];
            let k = rng.gen_range(0..b.sources.len());
            let src = b.sources[k];
            let mut s = data_repr(
                &plan,
                src,
                block,
                round,
                rng.gen_range(0..plan.manifest.segments as u16),
            );
            s.flags.resend = rng.gen::<f64>() < 0.12;
            let passes = b.passes(k).len().max(1) as u8;
            s.pass = if s.flags.resend {
                rng.gen_range(0..passes)
            } else {
                u8::from(rng.gen::<f64>() < 0.03)
            };
            s.flags.ecn = rng.gen::<f64>() < 0.1;
            let l = if rng.gen::<f64>() < 0.5 {
                enc[src as usize][s.segment as usize]
            } else {
                lanes(&mut rng)
            };
            let st = Step {
                port: s.worker_id,
                frame: frame(s.worker_id, s, Some(&l)),
                what: format!("random {i}: data src {src} block {block} round {round}"),
            };
            last_data = Some(st.clone());
            st
        } else if x < 0.68 {
            let w = rng.gen_range(0..workers);
            let mut st = block_done(w, block, round);
            // Sometimes on another worker's port.
            if rng.gen::<f64>() < 0.15 {
                st.port = (w + 1) % workers;
            }
            st.what = format!("random {i}: {} on port {}", st.what, st.port);
            st
        } else if x < 0.80 {
            let w = rng.gen_range(0..workers);
            let t =
                [PacketType::Ack, PacketType::FetchReq, PacketType::Bypass][rng.gen_range(0..3)];
            let mut s = Repr::new(t);
            s.worker_id = w;
            s.src_id = rng.gen_range(0..9999);
            s.dst_id = rng.gen_range(0..9999);
            let l = lanes(&mut rng);
            let mut f = frame_to(
                w,
                worker_ip(rng.gen_range(0..workers)),
                s,
                (t == PacketType::Bypass).then_some(&l),
            );
            if rng.gen::<f64>() < 0.3 {
                f.extend(std::iter::repeat_n(0, rng.gen_range(1..20)));
            }
            Step {
                port: w,
                frame: f,
                what: format!("random {i}: {t:?} from {w}"),
            }
        } else {
            // A mutated SwitchGNN frame: a flipped bit (checksum fixed or not), truncated, or
            // padded.
            let b = &plan.blocks[block as usize];
            let src = b.sources[rng.gen_range(0..b.sources.len())];
            let s = data_repr(&plan, src, block, round, 0);
            let mut f = frame(s.worker_id, s, Some(&lanes(&mut rng)));
            let kind: f64 = rng.gen();
            if kind < 0.6 {
                let pos = rng.gen_range(12..58);
                f[pos] ^= 1 << rng.gen_range(0..8);
                if rng.gen::<f64>() < 0.7 && pos != 24 && pos != 25 {
                    fix_ipv4_checksum(&mut f);
                }
            } else if kind < 0.8 {
                f.truncate(rng.gen_range(14..f.len()));
            } else {
                f.extend(std::iter::repeat_n(0x5a, rng.gen_range(1..30)));
            }
            Step {
                port: s.worker_id,
                frame: f,
                what: format!("random {i}: mutated ({kind:.2})"),
            }
        };
        steps.push(st);
    }
    let mut config = config(&plan);
    config.drop_every = 17;
    Scenario {
        name: "random_mix",
        config,
        plan,
        extra_entries: Vec::new(),
        steps,
        link_ports: Vec::new(),
    }
}

/// A small graph re-planned with delivery `mode` (`switch-ctl plan --aggregate MODE`).
fn delivery_plan(mode: sgnn_plan::AggregateMode, workers: u32, mem: u64) -> Plan {
    let paper = plan_for("rmat:scale=8,edge_factor=8,seed=5", workers, mem, 32, 256);
    let prof = sgnn_plan::profile::SwitchProfile::named("default").expect("profile");
    // The round-robin layout: the recording (bmv2's frames) was made from these plans before
    // the planner spread its lists for planned pacing; the send order is not what the
    // scenarios check.
    let (plan, _) = sgnn_delivery::lower::deliver_laid_out(
        &paper,
        mode,
        &prof,
        sgnn_delivery::Layout::RoundRobin,
    )
    .expect("lowered");
    sgnn_plan::verify(&plan).expect("delivery plan verifies");
    plan
}

/// A multicast plan (`--aggregate multicast`): every source is a raw vertex whose first pass
/// replicates it to its multicast group (several groups of 1 to 3 of the 4 workers), over two
/// rounds.
pub fn replicate_to_groups() -> Scenario {
    let plan = delivery_plan(sgnn_plan::AggregateMode::Multicast, 4, 64 * 1024);
    assert!(
        plan.replica_groups().sets.iter().any(|s| s.len() >= 2),
        "a vertex replicated to several workers"
    );
    let enc = features(&plan, 4);
    let mut steps = whole_round(&plan, &enc, 0);
    steps.extend(whole_round(&plan, &enc, 1));
    Scenario {
        name: "replicate_to_groups",
        config: config(&plan),
        plan,
        extra_entries: Vec::new(),
        steps,
        link_ports: Vec::new(),
    }
}

/// A partials plan (`switch-ctl plan --aggregate partials`): every source is a host
/// pre-aggregated partial with its virtual id, summed in its destination's aggregator in the
/// arrival pass (never recirculated), over several blocks and two rounds.
pub fn partials_in_one_pass() -> Scenario {
    let plan = delivery_plan(sgnn_plan::AggregateMode::Partials, 3, 8 * 1024);
    assert!(plan.blocks.len() > 1, "several blocks");
    let enc = features(&plan, 3);
    let mut steps = whole_round(&plan, &enc, 0);
    steps.extend(whole_round(&plan, &enc, 1));
    Scenario {
        name: "partials_in_one_pass",
        config: config(&plan),
        plan,
        extra_entries: Vec::new(),
        steps,
        link_ports: Vec::new(),
    }
}

/// The leaf-spine fabric's two `agg_table` actions (`sgnn_switch::fabric`) on one switch:
/// `aggregate_up` rows whose completed share leaves as a partial (a Data frame counting the
/// contributions it holds) to the worker id `dst_worker` names, and `aggregate_partials` rows
/// that add each partial's count, so the Result counts contributions. Also: a duplicate
/// partial, a partial that saturates, a resend on an up row (bypassed to where the row's
/// sum goes) and a pull of a partials row (a fabric row is not pulled).
pub fn fabric_partials() -> Scenario {
    let plan = plan_for("rmat:scale=6,edge_factor=4,seed=4", 3, 1 << 20, 32, 256);
    let base = 61_000; // aggregators beyond the plan's
    let p = |agg_base, dst_id, dst_worker, expected, seen_base| AggregateParams {
        agg_base,
        dst_id,
        dst_worker,
        expected,
        more: false,
        seen_base,
        generation: 0,
    };
    // Leaf share: sources 100_100 and 100_101 (workers 0 and 1) up as partial 7 to worker 2.
    // Spine sum: partials 500_000 and 500_001 (from worker 2) for vertex 995 on worker 1,
    // five contributions in all.
    let extra = vec![
        ((0, 100_100, 0), AggAction::Up(p(base, 7, 2, 2, 200_100))),
        ((0, 100_101, 0), AggAction::Up(p(base, 7, 2, 2, 200_101))),
        (
            (0, 500_000, 0),
            AggAction::Partials(p(base + 1, 995, 1, 5, 200_110)),
        ),
        (
            (0, 500_001, 0),
            AggAction::Partials(p(base + 1, 995, 1, 5, 200_111)),
        ),
        (
            (0, 500_002, 0),
            AggAction::Partials(p(base + 2, 996, 0, 4, 200_112)),
        ),
    ];
    let data = |w: u16, src: u32, count: u16, lanes: [i32; LANES], resend: bool, what: &str| {
        data_step(w, src, &lanes, what.into(), |s| {
            s.count = count;
            s.flags.resend = resend;
        })
    };
    let ramp = |k: i32| std::array::from_fn::<i32, LANES, _>(|l| k * 100 + l as i32);
    let mut sat = [3; LANES];
    sat[0] = i32::MAX - 1;
    let mut pull = Repr::new(PacketType::FetchReq);
    pull.worker_id = 1;
    pull.src_id = 500_000;
    pull.frac_bits = 20;
    let steps = vec![
        data(
            0,
            100_100,
            1,
            ramp(1),
            false,
            "up row: first of the leaf's share",
        ),
        data(
            1,
            100_101,
            1,
            ramp(2),
            false,
            "up row: completes, a partial of 2 to worker 2",
        ),
        data(
            1,
            100_101,
            1,
            ramp(2),
            false,
            "up row: a duplicate first copy",
        ),
        data(
            2,
            500_000,
            2,
            ramp(3),
            false,
            "partials row: a partial of 2",
        ),
        data(
            2,
            500_000,
            2,
            ramp(3),
            false,
            "partials row: the same partial again",
        ),
        data(
            2,
            500_001,
            3,
            ramp(4),
            false,
            "partials row: a partial of 3 completes 5",
        ),
        data(
            2,
            500_002,
            3,
            sat,
            false,
            "partials row: a partial of 3 of 4",
        ),
        data(
            0,
            500_002,
            1,
            sat,
            true,
            "partials row: a resend releases and bypasses",
        ),
        data(
            0,
            100_100,
            1,
            ramp(5),
            true,
            "up row: a resend, bypassed to the up address",
        ),
        Step {
            port: 1,
            frame: frame(1, pull, None),
            what: "a pull of a partials row".into(),
        },
    ];
    Scenario {
        name: "fabric_partials",
        config: config(&plan),
        plan,
        extra_entries: extra,
        steps,
        link_ports: Vec::new(),
    }
}

/// A leaf of a leaf-spine fabric (`sgnn_switch::fabric`, `set_config`'s role): workers 0 and 1
/// are its own; port 2 is its uplink to the root spine (worker id 2 in its tables, a
/// `set_port_link` entry). Its workers' BlockDone become one BlockDone up (as worker 7); the
/// root's BlockAdvance for its block advances it and goes to its workers, another copy is
/// stale; a spine's Result is forwarded down, a worker's is not. Loss recovery on a leaf: a
/// worker's BlockDone again once all are in sends the leaf's up again; clean tail probes are
/// answered but never counted (no all-sent notice); a pull of a row the leaf does not have,
/// or of its share of a split row (`aggregate_up`), is answered `PULL_GONE` to the requester,
/// while a pull of one of its own rows is answered as on a star.
pub fn fabric_leaf() -> Scenario {
    let plan = plan_for("rmat:scale=6,edge_factor=4,seed=4", 3, 1 << 20, 32, 256);
    let config = SwitchConfig {
        workers: 2,
        role: softswitch::FabricRole::Leaf {
            first_worker: 0,
            id: 7,
            root: 2,
        },
        ..config(&plan)
    };
    let advance = |port: u16, round: u16, block: u16, what: &str| {
        let mut s = Repr::new(PacketType::BlockAdvance);
        s.round = round;
        s.block_id = block;
        Step {
            port,
            frame: frame(port, s, None),
            what: what.into(),
        }
    };
    let result = |port: u16, to: u16, what: &str| {
        let mut s = Repr::new(PacketType::Result);
        s.worker_id = to;
        s.dst_id = 5;
        s.count = 3;
        s.frac_bits = 20;
        Step {
            port,
            frame: frame_to(port, worker_ip(to), s, Some(&[9; LANES])),
            what: what.into(),
        }
    };
    let pull = |w: u16, src: u32, what: &str| {
        let mut s = Repr::new(PacketType::FetchReq);
        s.worker_id = w;
        s.src_id = src;
        s.dst_id = 4_242;
        s.segment = 0;
        s.frac_bits = 20;
        Step {
            port: w,
            frame: frame(w, s, None),
            what: format!("pull of {what}"),
        }
    };
    // One of the plan's own rows of block 0 (plain `aggregate` on this leaf).
    let own = Tables::from_plan(&plan, &worker_ports(plan.workers()))
        .agg_table
        .iter()
        .filter(|(k, a)| k.0 == 0 && k.2 == 0 && matches!(a, AggAction::Aggregate(_)))
        .map(|(k, _)| k.1)
        .min()
        .expect("block 0 has aggregate rows");
    let up = AggregateParams {
        agg_base: 61_000,
        dst_id: 3,
        dst_worker: 2,
        expected: 2,
        more: false,
        seen_base: 200_100,
        generation: 0,
    };
    let extra = vec![((0, 100_100, 0), AggAction::Up(up))];
    let steps = vec![
        block_done(0, 0, 0),
        block_done(1, 0, 0),
        block_done(1, 0, 0),
        // Clean tail probes: answered, not counted.
        tail_probe_of(0, 0, 0, 0, 0),
        tail_probe_of(1, 1, 0, 0, 0),
        pull(1, 9_999_999, "a row this leaf has not (gone, to worker 1)"),
        pull(
            0,
            100_100,
            "the leaf's share of a split row (gone, to worker 0)",
        ),
        pull(1, own, "one of the leaf's own rows (as on a star)"),
        advance(0, 0, 0, "BlockAdvance from a worker's port (unexpected)"),
        advance(
            2,
            0,
            0,
            "the root's BlockAdvance (advances, to each worker)",
        ),
        advance(2, 0, 0, "the root's BlockAdvance again (stale)"),
        block_done(0, 0, 0),
        result(2, 0, "a spine's Result for worker 0 (forwarded)"),
        result(
            0,
            1,
            "a Result naming worker 1 on worker 0's port (wrong port)",
        ),
        block_done(2, 0, 0),
    ];
    Scenario {
        name: "fabric_leaf",
        config,
        plan,
        extra_entries: extra,
        steps,
        link_ports: vec![2],
    }
}

/// The root spine of a leaf-spine fabric (`set_config`'s role): its block synchronisation
/// counts the leaves, worker ids 1 and 2 (from `sync_base` 1; worker 0 is none of them) on
/// their links (ports 1 and 2, `set_port_link`), and advances them; it adds partials whatever
/// block they name.
pub fn fabric_spine() -> Scenario {
    let plan = plan_for("rmat:scale=6,edge_factor=4,seed=4", 3, 1 << 20, 32, 256);
    let config = SwitchConfig {
        workers: 2,
        role: softswitch::FabricRole::Spine { first_peer: 1 },
        ..config(&plan)
    };
    let p = AggregateParams {
        agg_base: 61_500,
        dst_id: 997,
        dst_worker: 0,
        expected: 5,
        more: false,
        seen_base: 200_200,
        generation: 0,
    };
    let extra = vec![
        ((9, 500_000, 0), AggAction::Partials(p)),
        (
            (9, 500_001, 0),
            AggAction::Partials(AggregateParams {
                seen_base: 200_201,
                ..p
            }),
        ),
    ];
    let partial = |w: u16, src: u32, count: u16, what: &str| {
        data_step(w, src, &[w as i32 + 1; LANES], what.into(), |s| {
            s.count = count;
            s.block_id = 9;
            s.round = 3;
        })
    };
    let steps = vec![
        block_done(1, 0, 0),
        block_done(0, 0, 0),
        block_done(2, 0, 0),
        block_done(2, 0, 0),
        partial(1, 500_000, 2, "a partial of block 9 of round 3 (not gated)"),
        partial(2, 500_001, 3, "the partial that completes it"),
    ];
    Scenario {
        name: "fabric_spine",
        config,
        plan,
        extra_entries: extra,
        steps,
        link_ports: vec![1, 2],
    }
}

/// Every scenario.
pub fn all() -> Vec<Scenario> {
    vec![
        one_block_real_graph(),
        recirculation_and_reuse(),
        partials_in_one_pass(),
        replicate_to_groups(),
        loss_recovery_paths(),
        numbered_frames_nacks_and_pulls(),
        forwarding_and_malformed(),
        drop_simulator(),
        control_frames_from_their_ports(),
        admission_of_every_type(),
        saturation_and_padding(),
        random_mix(),
        recycled_generations(),
        fabric_partials(),
        fabric_leaf(),
        fabric_spine(),
    ]
}

/// Recomputes the IPv4 header checksum of an Ethernet frame (after a test edits the header).
pub fn fix_ipv4_checksum(frame: &mut [u8]) {
    ipv4::Packet::new_unchecked(&mut frame[14..34]).fill_checksum();
}
