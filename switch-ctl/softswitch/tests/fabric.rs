//! Two-level aggregation and block synchronisation on a leaf-spine fabric
//! (`sgnn_switch::fabric`), switch by switch: two leaves of two workers each, one spine (the
//! root). One aggregate for vertex `D` on worker 0 is split: leaf 0 adds source `A` (worker
//! 1), leaf 1 adds `B` and `C` (workers 2 and 3); each sends its share up as a partial, the
//! spine adds the partials' counts and sends the Result down through leaf 0.

use sgnn_switch::fabric::{Fabric, FabricSwitch};
use sgnn_wire::addressing::worker_ip;
use sgnn_wire::sgnn::Repr;
use sgnn_wire::{FrameRepr, PacketType, LANES};
use softswitch::{AggAction, AggregateParams, Emitted, Pipeline, SwitchConfig, Tables};

mod common;

const D: u32 = 900;
const A: u32 = 1;
const B: u32 = 2;
const C: u32 = 3;
const BASE: u32 = 5;

fn fabric() -> Fabric {
    Fabric::new(4, 2, 1).unwrap()
}

fn params(dst_id: u32, dst_worker: u16, expected: u16, seen_base: u32) -> AggregateParams {
    AggregateParams {
        agg_base: BASE,
        dst_id,
        dst_worker,
        expected,
        more: false,
        seen_base,
        generation: 0,
    }
}

fn switch(role: FabricSwitch) -> Pipeline {
    switch_of(&fabric(), role)
}

/// `role`'s switch on fabric `f` (the rows as on [`fabric`]'s, through spine 0).
fn switch_of(f: &Fabric, role: FabricSwitch) -> Pipeline {
    let f = *f;
    let mut t = Tables::for_fabric(&f, role, &Default::default());
    let up = f.spine_peer(0);
    let rows: Vec<((u16, u32, u8), AggAction)> = match role {
        FabricSwitch::Leaf(0) => vec![((0, A, 0), AggAction::Up(params(0, up, 1, 0)))],
        FabricSwitch::Leaf(_) => vec![
            ((0, B, 0), AggAction::Up(params(1, up, 2, 0))),
            ((0, C, 0), AggAction::Up(params(1, up, 2, 1))),
        ],
        FabricSwitch::Spine(_) => vec![
            ((0, 0, 0), AggAction::Partials(params(D, 0, 3, 0))),
            ((0, 1, 0), AggAction::Partials(params(D, 0, 3, 1))),
        ],
    };
    for (k, a) in rows {
        t.agg_table.insert(k, a);
    }
    let cfg = SwitchConfig {
        aggregators: 64,
        blocks_per_round: 2,
        ..SwitchConfig::default()
    };
    // for_fabric's roles, sizes and addresses, over this test's small switch.
    let fc = SwitchConfig::for_fabric(&one_block(), &f, role);
    Pipeline::new(
        SwitchConfig {
            workers: fc.workers,
            mac: fc.mac,
            ip: fc.ip,
            role: fc.role,
            ..cfg
        },
        t,
    )
}

/// A plan is only read for its sizes here.
fn one_block() -> sgnn_plan::Plan {
    common::one_block_plan("rmat:scale=6,edge_factor=4,seed=1")
}

fn lanes(src: u32) -> [i32; LANES] {
    std::array::from_fn(|l| (src as i32) * 1000 + l as i32)
}

fn data(w: u16, src: u32) -> Vec<u8> {
    let mut s = Repr::new(PacketType::Data);
    s.worker_id = w;
    s.src_id = src;
    s.count = 1;
    common::frame(w, s, Some(&lanes(src)))
}

fn block_done(w: u16) -> Vec<u8> {
    let mut s = Repr::new(PacketType::BlockDone);
    s.worker_id = w;
    common::frame(w, s, None)
}

fn run(sw: &mut Pipeline, port: u16, frame: &[u8]) -> Vec<Emitted> {
    let mut out = Vec::new();
    sw.process(port, frame, &mut out);
    out
}

fn parse(e: &Emitted) -> (FrameRepr, Option<[i32; LANES]>) {
    FrameRepr::parse(&e.frame).unwrap()
}

#[test]
fn leaves_send_partials_up_and_the_spine_sums_their_counts() {
    let f = fabric();
    let mut leaf0 = switch(FabricSwitch::Leaf(0));
    let mut leaf1 = switch(FabricSwitch::Leaf(1));
    let mut spine = switch(FabricSwitch::Spine(0));
    let (uplink, spine_ip) = (f.uplink_port(0), f.spine_addr(0).1);

    // Leaf 0: A completes its share of one; a partial (Data, count 1) up to the spine.
    let out = run(&mut leaf0, 1, &data(1, A));
    assert_eq!(out.len(), 1);
    let (r, l) = parse(&out[0]);
    assert_eq!(out[0].port, uplink);
    assert_eq!(r.ip.dst, spine_ip);
    assert_eq!(
        (
            r.sgnn.packet_type,
            r.sgnn.src_id,
            r.sgnn.count,
            r.sgnn.dst_id
        ),
        (PacketType::Data, 0, 1, 0)
    );
    assert_eq!(l, Some(lanes(A)));
    let up0 = out[0].frame.clone();
    assert!(
        run(&mut spine, 0, &up0).is_empty(),
        "one of three contributions"
    );

    // Leaf 1: B alone is not its share; C completes it, a partial of count 2.
    assert!(run(&mut leaf1, 0, &data(2, B)).is_empty());
    let out = run(&mut leaf1, 1, &data(3, C));
    assert_eq!(out.len(), 1);
    let (r, _) = parse(&out[0]);
    assert_eq!((r.sgnn.src_id, r.sgnn.count), (1, 2));

    // The spine adds the partial's count: three contributions, the Result to worker 0,
    // through leaf 0's port on the spine.
    let out = run(&mut spine, 1, &out[0].frame);
    assert_eq!(out.len(), 1);
    let (r, l) = parse(&out[0]);
    assert_eq!(out[0].port, 0, "towards leaf 0");
    assert_eq!(r.ip.dst, worker_ip(0));
    assert_eq!(
        (
            r.sgnn.packet_type,
            r.sgnn.dst_id,
            r.sgnn.count,
            r.sgnn.worker_id
        ),
        (PacketType::Result, D, 3, 0)
    );
    let want: [i32; LANES] = std::array::from_fn(|i| lanes(A)[i] + lanes(B)[i] + lanes(C)[i]);
    assert_eq!(l, Some(want));

    // Leaf 0 forwards the spine's Result to its worker, unchanged.
    let down = run(&mut leaf0, uplink, &out[0].frame);
    assert_eq!(down.len(), 1);
    assert_eq!((down[0].port, &down[0].frame), (0, &out[0].frame));

    // A duplicate partial is dropped as a duplicate contribution.
    assert!(run(&mut spine, 0, &up0).is_empty());
    assert_eq!(spine.counters.drop_duplicate, 1);
    assert_eq!(spine.counters.aggregated, 2);
}

#[test]
fn leaves_synchronise_blocks_through_the_root_spine() {
    let f = fabric();
    let mut leaves = [switch(FabricSwitch::Leaf(0)), switch(FabricSwitch::Leaf(1))];
    let mut spine = switch(FabricSwitch::Spine(0));
    let uplink = f.uplink_port(0);
    let mut advances = Vec::new();
    for (l, leaf) in leaves.iter_mut().enumerate() {
        let w0 = 2 * l as u16;
        assert!(run(leaf, 0, &block_done(w0)).is_empty());
        // The last of its workers: one BlockDone up, as the leaf's peer id at the root.
        let out = run(leaf, 1, &block_done(w0 + 1));
        assert_eq!(out.len(), 1);
        let (r, _) = parse(&out[0]);
        assert_eq!(out[0].port, uplink);
        assert_eq!(
            (r.sgnn.packet_type, r.sgnn.worker_id),
            (PacketType::BlockDone, f.leaf_peer(l as u32))
        );
        assert_eq!(leaf.regs.sync_block, 0, "a leaf waits for the root");
        advances = run(&mut spine, l as u16, &out[0].frame);
    }
    // The root heard both leaves: BlockAdvance to each.
    assert_eq!(spine.regs.sync_block, 1);
    assert_eq!(advances.len(), 2);
    for (l, leaf) in leaves.iter_mut().enumerate() {
        let a = advances.iter().find(|e| e.port == l as u16).unwrap();
        let (r, _) = parse(a);
        assert_eq!(r.ip.dst, f.leaf_addr(l as u32).1);
        let out = run(leaf, uplink, &a.frame);
        assert_eq!(leaf.regs.sync_block, 1);
        let mut ports: Vec<u16> = out.iter().map(|e| e.port).collect();
        ports.sort();
        assert_eq!(ports, vec![0, 1], "to each of its workers");
        for e in &out {
            assert_eq!(parse(e).0.sgnn.packet_type, PacketType::BlockAdvance);
        }
        // A second copy of that advance is stale.
        assert!(run(leaf, uplink, &a.frame).is_empty());
        assert_eq!(leaf.regs.sync_block, 1);
        assert_eq!(leaf.counters.drop_stale, 1);
    }
}

/// Loss between the levels: a leaf's BlockDone or the root's advance lost. The workers,
/// waiting, send their BlockDone again; the leaf (all its workers in) sends its own up again,
/// and the root, past that block, answers the leaf alone with its advance.
#[test]
fn a_lost_leaf_block_done_or_root_advance_is_asked_for_again() {
    let f = fabric();
    let mut leaves = [switch(FabricSwitch::Leaf(0)), switch(FabricSwitch::Leaf(1))];
    let mut spine = switch(FabricSwitch::Spine(0));
    let uplink = f.uplink_port(0);
    // Leaf 0 reports; its BlockDone is lost.
    run(&mut leaves[0], 0, &block_done(0));
    let lost = run(&mut leaves[0], 1, &block_done(1));
    assert_eq!(lost.len(), 1);
    // Leaf 1 reports and the root hears it.
    run(&mut leaves[1], 0, &block_done(2));
    let up1 = run(&mut leaves[1], 1, &block_done(3));
    assert!(run(&mut spine, 1, &up1[0].frame).is_empty());
    // Worker 0 asks again: leaf 0 sends its BlockDone up again, the same frame.
    let again = run(&mut leaves[0], 0, &block_done(0));
    assert_eq!(again.len(), 1);
    assert_eq!((again[0].port, &again[0].frame), (uplink, &lost[0].frame));
    assert_eq!(leaves[0].counters.block_done_duplicate, 1);
    // The root completes the block; the advance to leaf 1 is lost this time.
    let advances = run(&mut spine, 0, &again[0].frame);
    assert_eq!(advances.len(), 2);
    assert_eq!(spine.regs.sync_block, 1);
    let to0 = advances.iter().find(|e| e.port == 0).unwrap();
    assert_eq!(run(&mut leaves[0], uplink, &to0.frame).len(), 2);
    // Leaf 1's workers ask again; its BlockDone goes up again and the root, past block 0,
    // answers leaf 1 alone.
    let again = run(&mut leaves[1], 1, &block_done(3));
    assert_eq!(again.len(), 1);
    let answer = run(&mut spine, 1, &again[0].frame);
    assert_eq!(answer.len(), 1);
    assert_eq!(answer[0].port, 1);
    let (r, _) = parse(&answer[0]);
    assert_eq!(r.ip.dst, f.leaf_addr(1).1);
    assert_eq!(
        (r.sgnn.packet_type, r.sgnn.block_id, r.sgnn.worker_id),
        (PacketType::BlockAdvance, 0, f.leaf_peer(1))
    );
    assert_eq!(spine.counters.block_done_stale, 1);
    assert_eq!(spine.regs.sync_block, 1, "the root does not advance again");
    let down = run(&mut leaves[1], uplink, &answer[0].frame);
    assert_eq!(down.len(), 2, "leaf 1 advances, to both its workers");
    assert_eq!(leaves[1].regs.sync_block, 1);
    // A leaf not yet complete sends nothing up for a duplicate.
    let mut fresh = switch(FabricSwitch::Leaf(0));
    run(&mut fresh, 0, &block_done(0));
    assert!(run(&mut fresh, 0, &block_done(0)).is_empty());
}

/// A pull on a leaf of an aggregate the leaf does not hold whole (its share of a split row,
/// or a row only a spine has) is answered `PULL_GONE` to the requester, who takes the raw
/// path; a leaf counts no clean probe and sends no all-sent notice.
#[test]
fn a_leaf_answers_pulls_of_split_rows_gone_and_sends_no_notice() {
    use sgnn_wire::recovery::{PULL_GONE, SEQ_PROBE};
    let f = fabric();
    let mut leaf = switch(FabricSwitch::Leaf(0));
    let leaf_ip = f.leaf_addr(0).1;
    for (src, why) in [(A, "the leaf's share"), (B, "no row on this leaf")] {
        let mut s = Repr::new(PacketType::FetchReq);
        s.flags.fetch = true;
        s.worker_id = 0;
        s.src_id = src;
        s.dst_id = D;
        s.segment = 0;
        let out = run(&mut leaf, 0, &common::frame_to(0, leaf_ip, s, None));
        assert_eq!(out.len(), 1, "{why}");
        let (r, l) = parse(&out[0]);
        assert_eq!(out[0].port, 0, "{why}: to the requester");
        assert_eq!(
            (
                r.sgnn.packet_type,
                r.sgnn.flags.resend,
                r.sgnn.src_id,
                r.sgnn.dst_id,
                r.sgnn.count,
                r.sgnn.worker_id
            ),
            (PacketType::Result, true, PULL_GONE, D, 0, 0),
            "{why}"
        );
        assert_eq!(l, Some([0; LANES]));
    }
    assert_eq!(leaf.counters.pulled, 2);
    // Both workers probe clean: each gets its NACK-frame answer, no notice.
    for w in 0..2u16 {
        let mut p = Repr::new(PacketType::Ack);
        p.flags.ack = true;
        p.worker_id = w;
        p.dst_id = SEQ_PROBE;
        let out = run(&mut leaf, w, &common::frame(w, p, None));
        assert_eq!(out.len(), 1);
        let (r, _) = parse(&out[0]);
        assert_eq!((out[0].port, r.sgnn.dst_id == SEQ_PROBE), (w, false));
        assert!(r.sgnn.flags.resend, "a NACK frame");
    }
    assert_eq!(leaf.counters.all_sent, 0);
}

/// Issue 31, item 1 ("nobody can forge a sum"): on a fabric only the ports the plan cables to
/// another switch are trusted links. A stranger on a leaf's spare port (port 3: past its two
/// workers and its uplink) cannot forward a Bypass, move its block or have a Result passed
/// down; on a spine's spare port (past its two leaves) it cannot add a partial or report for
/// a leaf. Each is refused as a stranger's (`drop_wrong_port`), while the same frames on the
/// cabled links still flow.
#[test]
fn a_spare_port_of_a_leaf_or_a_spine_is_a_strangers() {
    let f = fabric();
    let mut leaf = switch(FabricSwitch::Leaf(0));
    let (uplink, spare) = (f.uplink_port(0), f.uplink_port(0) + 1);
    let leaf_ip = f.leaf_addr(0).1;
    // A Bypass "from worker 1" to worker 0, the root's BlockAdvance to this leaf and a
    // spine's Result for worker 0: what only the spine may bring down.
    let mut s = Repr::new(PacketType::Bypass);
    s.worker_id = 1;
    s.src_id = A;
    s.dst_id = D;
    let bypass = common::frame_to(1, worker_ip(0), s, Some(&lanes(A)));
    let mut s = Repr::new(PacketType::BlockAdvance);
    s.worker_id = f.leaf_peer(0);
    let advance = common::frame_to(2, leaf_ip, s, None);
    let mut s = Repr::new(PacketType::Result);
    s.worker_id = 0;
    s.dst_id = D;
    s.count = 3;
    let result = common::frame_to(2, worker_ip(0), s, Some(&lanes(B)));
    for (what, frame) in [
        ("a Bypass", &bypass),
        ("a BlockAdvance", &advance),
        ("a Result", &result),
    ] {
        assert!(
            run(&mut leaf, spare, frame).is_empty(),
            "{what} on a spare port"
        );
    }
    assert_eq!(leaf.counters.drop_wrong_port, 3);
    assert_eq!(leaf.counters.forwarded, 0);
    assert_eq!(leaf.regs.sync_block, 0, "no stranger moves the block");
    // The same frames on the uplink: the spine's, trusted.
    let out = run(&mut leaf, uplink, &bypass);
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].port, &out[0].frame), (0, &bypass));
    assert_eq!(run(&mut leaf, uplink, &advance).len(), 2, "to both workers");
    assert_eq!(leaf.regs.sync_block, 1);
    let out = run(&mut leaf, uplink, &result);
    assert_eq!((out.len(), out[0].port), (1, 0));
    assert_eq!(leaf.counters.drop_wrong_port, 3);

    // The spine: a partial of count 3 (the whole aggregate) and leaf 0's BlockDone on port 2,
    // which no leaf is cabled to, are a stranger's; the partial on leaf 1's link is added.
    let mut spine = switch(FabricSwitch::Spine(0));
    let spare = f.leaves as u16;
    let mut s = Repr::new(PacketType::Data);
    s.worker_id = f.spine_peer(0);
    s.src_id = 1;
    s.count = 3;
    let partial = common::frame_to(2, f.spine_addr(0).1, s, Some(&lanes(C)));
    let mut s = Repr::new(PacketType::BlockDone);
    s.worker_id = f.leaf_peer(0);
    let done = common::frame_to(2, f.spine_addr(0).1, s, None);
    assert!(run(&mut spine, spare, &partial).is_empty());
    assert!(run(&mut spine, spare, &done).is_empty());
    assert_eq!(spine.counters.drop_wrong_port, 2);
    assert_eq!(
        (spine.counters.aggregated, spine.counters.block_done),
        (0, 0)
    );
    let out = run(&mut spine, 1, &partial);
    assert_eq!(out.len(), 1, "the partial completes the aggregate");
    assert_eq!(parse(&out[0]).0.sgnn.packet_type, PacketType::Result);
}

/// Issue 31: on a fabric of two spines, only the root spine (spine 0) synchronises blocks.
/// Leaf 0's link to spine 1 is a cabled link (its Bypass and Result still flow), but a
/// BlockAdvance on it (spine 1's, or a device's spliced into that link) is refused
/// (`drop_wrong_port`) and the block does not move; the root's advance on its own link still
/// advances the leaf and goes to both workers.
#[test]
fn a_leaf_takes_block_advance_from_the_root_spines_link_only() {
    let f = Fabric::new(4, 2, 2).unwrap();
    let mut leaf = switch_of(&f, FabricSwitch::Leaf(0));
    let (root, other) = (f.uplink_port(0), f.uplink_port(1));
    let mut s = Repr::new(PacketType::BlockAdvance);
    s.worker_id = f.leaf_peer(0);
    let advance = common::frame_to(2, f.leaf_addr(0).1, s, None);
    assert!(run(&mut leaf, other, &advance).is_empty());
    assert_eq!(leaf.counters.drop_wrong_port, 1);
    assert_eq!(leaf.counters.block_advance, 0);
    assert_eq!(leaf.regs.sync_block, 0, "spine 1 does not move the block");
    // Spine 1's link is still a link: a spine's Result for worker 0 comes down it.
    let mut s = Repr::new(PacketType::Result);
    s.worker_id = 0;
    s.dst_id = D;
    s.count = 3;
    let result = common::frame_to(2, worker_ip(0), s, Some(&lanes(B)));
    let out = run(&mut leaf, other, &result);
    assert_eq!((out.len(), out[0].port), (1, 0));
    // The root's advance, on the root's link.
    let out = run(&mut leaf, root, &advance);
    assert_eq!(out.len(), 2, "to both workers");
    assert_eq!(leaf.regs.sync_block, 1);
    assert_eq!(leaf.counters.drop_wrong_port, 1);
}
