//! Generations: destination rows of one block that share their aggregators (a plan that
//! recycles aggregators by live range), numbered 0, 1, 2, ... in send order. A contribution
//! lands only in the aggregator state of its own round, block and generation; one for an older
//! generation than the aggregator holds (late, or resent) goes to the host as a Bypass and
//! leaves the aggregator alone (docs/switch-interface.md, "Generations").

use sgnn_wire::addressing::{worker_ip, worker_mac};
use sgnn_wire::sgnn::Repr;
use sgnn_wire::{FrameRepr, PacketType, LANES};
use softswitch::pipeline::agg_state;
use softswitch::{AggAction, AggregateParams, Emitted, Pipeline, SwitchConfig, Tables, WorkerPort};

mod common;

/// The aggregator both rows use.
const BASE: u32 = 10;
/// Row of generation 0: destination, its worker, its sources (each on its own worker).
const DST0: u32 = 900;
const W0: u16 = 0;
const GEN0_SOURCES: [u32; 2] = [1, 2];
/// Row of generation 1 at the same aggregator.
const DST1: u32 = 901;
const W1: u16 = 1;
const GEN1_SOURCES: [u32; 2] = [3, 4];

fn worker_ports() -> Vec<WorkerPort> {
    (0..3u16)
        .map(|w| WorkerPort {
            port: w,
            mac: worker_mac(w),
            ip: worker_ip(w),
        })
        .collect()
}

fn aggregate(base: u32, dst: u32, dst_worker: u16, more: bool, seen: u32, g: u16) -> AggAction {
    AggAction::Aggregate(AggregateParams {
        agg_base: base,
        dst_id: dst,
        dst_worker,
        expected: 2,
        more,
        seen_base: seen,
        generation: g,
    })
}

/// Two rows of block 0 at aggregator [`BASE`], generations 0 and 1, each completed by two
/// contributions.
fn switch() -> Pipeline {
    let mut t = Tables::for_workers(&worker_ports());
    for &src in &GEN0_SOURCES {
        t.agg_table
            .insert((0, src, 0), aggregate(BASE, DST0, W0, false, src, 0));
    }
    for &src in &GEN1_SOURCES {
        t.agg_table
            .insert((0, src, 0), aggregate(BASE, DST1, W1, false, src, 1));
    }
    let cfg = SwitchConfig {
        aggregators: 64,
        workers: 3,
        ..SwitchConfig::default()
    };
    Pipeline::new(cfg, t)
}

/// Source `src`'s lanes: distinct per source, so a sum shows exactly who was added.
fn lanes(src: u32) -> [i32; LANES] {
    std::array::from_fn(|l| (src as i32) * 1000 + l as i32 - 7)
}

fn sum(srcs: &[u32]) -> [i32; LANES] {
    std::array::from_fn(|l| srcs.iter().map(|&s| lanes(s)[l]).sum())
}

/// The sending worker of a source (sources sit on worker 2, away from both destinations).
const SENDER: u16 = 2;

fn data_repr(src: u32, round: u16, resend: bool) -> Repr {
    let mut s = Repr::new(PacketType::Data);
    s.worker_id = SENDER;
    s.src_id = src;
    s.round = round;
    s.frac_bits = 20;
    s.flags.resend = resend;
    s
}

fn send(sw: &mut Pipeline, src: u32, resend: bool) -> Vec<Emitted> {
    let round = sw.regs.sync_round;
    let mut out = Vec::new();
    let s = data_repr(src, round, resend);
    sw.process(
        SENDER,
        &common::frame(SENDER, s, Some(&lanes(src))),
        &mut out,
    );
    out
}

fn parse(e: &Emitted) -> (FrameRepr, [i32; LANES]) {
    let (r, l) = FrameRepr::parse(&e.frame).unwrap();
    (r, l.expect("lanes"))
}

/// `out` is one Result for `dst` on `worker`'s port holding exactly `want`.
fn assert_result(out: &[Emitted], dst: u32, worker: u16, want: [i32; LANES]) {
    assert_eq!(out.len(), 1, "one frame");
    let (r, l) = parse(&out[0]);
    assert_eq!(out[0].port, worker);
    assert_eq!(
        (
            r.sgnn.packet_type,
            r.sgnn.dst_id,
            r.sgnn.worker_id,
            r.sgnn.count
        ),
        (PacketType::Result, dst, worker, 2)
    );
    assert_eq!(l, want, "the exact sum of its own generation");
}

/// `out` is the Bypass a resend of `src` for the gen-0 row would give: to the destination's
/// worker, with its dst_id and the source's own values.
fn assert_late_bypass(out: &[Emitted], src: u32, resend: bool) {
    assert_eq!(out.len(), 1, "one frame");
    let (r, l) = parse(&out[0]);
    assert_eq!(out[0].port, W0);
    let mut want = data_repr(src, r.sgnn.round, resend);
    want.packet_type = PacketType::Bypass;
    want.dst_id = DST0;
    assert_eq!(r.sgnn, want);
    assert_eq!(r.ip.dst, worker_ip(W0));
    assert_eq!(l, lanes(src));
}

/// The aggregator: (state, tag, generation, count, lanes).
fn slot(sw: &Pipeline) -> (u8, u32, u16, u16, [i32; LANES]) {
    let i = BASE as usize;
    let r = &sw.regs;
    (
        r.agg_state[i],
        r.agg_tag[i],
        r.agg_gen[i],
        r.agg_count[i],
        r.agg_values[i],
    )
}

#[test]
fn generation_0_completes_then_generation_1_completes() {
    let mut sw = switch();
    assert!(send(&mut sw, 1, false).is_empty());
    assert_result(&send(&mut sw, 2, false), DST0, W0, sum(&GEN0_SOURCES));
    assert_eq!(slot(&sw), (agg_state::FREE, 0, 0, 0, [0; LANES]));
    assert!(send(&mut sw, 3, false).is_empty());
    assert_eq!(slot(&sw).2, 1, "the aggregator holds generation 1");
    assert_result(&send(&mut sw, 4, false), DST1, W1, sum(&GEN1_SOURCES));
    assert_eq!(slot(&sw), (agg_state::FREE, 0, 0, 0, [0; LANES]));
    let c = &sw.counters;
    assert_eq!((c.results, c.aggregated), (2, 4));
    assert_eq!((c.reclaimed, c.bypassed, c.bypassed_late), (0, 0, 0));
}

#[test]
fn generation_1_reclaims_a_partial_of_0_and_a_later_0_contribution_is_bypassed() {
    let mut sw = switch();
    assert!(send(&mut sw, 1, false).is_empty());
    assert_eq!(slot(&sw), (agg_state::ACTIVE, 0, 0, 1, lanes(1)));
    // Generation 1 arrives while generation 0 is active: 0's partial is reclaimed.
    assert!(send(&mut sw, 3, false).is_empty());
    assert_eq!(sw.counters.reclaimed, 1);
    let held = (agg_state::ACTIVE, 0, 1, 1, lanes(3));
    assert_eq!(slot(&sw), held);
    // A later generation-0 contribution: late, to the host, the aggregator untouched.
    assert_late_bypass(&send(&mut sw, 2, false), 2, false);
    assert_eq!(sw.counters.bypassed_late, 1);
    assert_eq!(slot(&sw), held);
    // Generation 1 completes with exactly its own two contributions.
    assert_result(&send(&mut sw, 4, false), DST1, W1, sum(&GEN1_SOURCES));
    let c = &sw.counters;
    assert_eq!((c.results, c.aggregated, c.reclaimed), (1, 3, 1));
    assert_eq!((c.bypassed, c.bypassed_late), (0, 1));
    assert_eq!(slot(&sw), (agg_state::FREE, 0, 0, 0, [0; LANES]));
}

#[test]
fn a_resend_for_generation_0_while_1_is_active_is_bypassed_untouched() {
    let mut sw = switch();
    assert!(send(&mut sw, 3, false).is_empty());
    let held = (agg_state::ACTIVE, 0, 1, 1, lanes(3));
    assert_eq!(slot(&sw), held);
    // A RESEND of a generation-0 source: late (not a release of generation 1's aggregator).
    assert_late_bypass(&send(&mut sw, 1, true), 1, true);
    let c = &sw.counters;
    assert_eq!((c.bypassed_late, c.bypassed, c.reclaimed), (1, 0, 0));
    assert_eq!(slot(&sw), held);
    assert_result(&send(&mut sw, 4, false), DST1, W1, sum(&GEN1_SOURCES));
    // A RESEND of generation 1 releases its aggregator as before (bypassed state).
    let out = send(&mut sw, 3, true);
    assert_eq!(out.len(), 1);
    assert_eq!(parse(&out[0]).0.sgnn.dst_id, DST1);
    assert_eq!(sw.counters.bypassed, 1);
    assert_eq!(slot(&sw), (agg_state::BYPASSED, 0, 1, 0, [0; LANES]));
    // ... and a generation-0 contribution to that bypassed state is late as well.
    assert_late_bypass(&send(&mut sw, 2, false), 2, false);
    assert_eq!(sw.counters.bypassed_late, 2);
    assert_eq!(slot(&sw), (agg_state::BYPASSED, 0, 1, 0, [0; LANES]));
}

#[test]
fn a_late_contribution_still_goes_on_to_its_sources_next_pass() {
    let mut sw = switch();
    // Source 5 feeds generation 0's row at pass 0, then a lone aggregator at pass 1.
    sw.tables
        .agg_table
        .insert((0, 5, 0), aggregate(BASE, DST0, W0, true, 5, 0));
    sw.tables.agg_table.insert(
        (0, 5, 1),
        AggAction::Aggregate(AggregateParams {
            agg_base: 20,
            dst_id: 902,
            dst_worker: W1,
            expected: 1,
            more: false,
            seen_base: 5,
            generation: 0,
        }),
    );
    assert!(send(&mut sw, 3, false).is_empty());
    let out = send(&mut sw, 5, false);
    assert_eq!(out.len(), 2, "the late Bypass and pass 1's Result");
    assert_late_bypass(&out[..1], 5, false);
    let (r, l) = parse(&out[1]);
    assert_eq!(
        (r.sgnn.packet_type, r.sgnn.dst_id),
        (PacketType::Result, 902)
    );
    assert_eq!(l, lanes(5));
    assert_eq!(
        (sw.counters.bypassed_late, sw.counters.recirculated),
        (1, 1)
    );
}

#[test]
fn state_of_another_round_is_reclaimed_whatever_its_generation() {
    let mut sw = switch();
    assert!(send(&mut sw, 3, false).is_empty());
    // The next round: generation 1's leftover is not newer state of this round.
    sw.regs.sync_round = 1;
    assert!(send(&mut sw, 1, false).is_empty());
    assert_eq!((sw.counters.reclaimed, sw.counters.bypassed_late), (1, 0));
    assert_eq!(slot(&sw), (agg_state::ACTIVE, 1 << 16, 0, 1, lanes(1)));
    assert_result(&send(&mut sw, 2, false), DST0, W0, sum(&GEN0_SOURCES));
}

#[test]
fn tables_from_a_plan_carry_each_rows_generation() {
    let mut plan = common::one_block_plan("rmat:scale=6,edge_factor=4,seed=4");
    let b = &mut plan.blocks[0];
    assert!(b.aggregators.len() >= 2);
    // Row 1 recycles row 0's aggregators.
    b.aggregators[1].base = b.aggregators[0].base;
    b.aggregators[1].generation = 1;
    let t = Tables::from_plan(&plan, &worker_ports());
    let b = &plan.blocks[0];
    let mut seen = [0; 2];
    for (i, &src) in b.sources.iter().enumerate() {
        for (p, &row) in b.passes(i).iter().enumerate() {
            let Some(AggAction::Aggregate(a)) = t.agg_table.get(&(0, src, p as u8)) else {
                panic!("an aggregate entry for source {src} pass {p}");
            };
            let slot = b.aggregators[row as usize];
            assert_eq!(
                (a.agg_base, a.generation as u32),
                (slot.base, slot.generation)
            );
            if row < 2 {
                seen[row as usize] += 1;
            }
        }
    }
    assert!(
        seen[0] > 0 && seen[1] > 0,
        "both rows have feeders: {seen:?}"
    );
}
