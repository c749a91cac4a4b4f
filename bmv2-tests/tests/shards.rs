//! The software switch on several threads (`softswitch::Shards`: a front and aggregator
//! shards) against the one-thread pipeline, on every differential scenario: fed one frame at a
//! time, the same frames come out in the same order, and the counters and registers end the
//! same. With 2 and 3 shards, so passes hop between shards that are not neighbours.

use sgnn_bmv2_tests::device::{model_of, program};
use sgnn_bmv2_tests::scenario;
use softswitch::{Emitted, Pipeline, Shards};

fn same_switch(name: &str, one: &Pipeline, many: &Pipeline) {
    assert_eq!(one.counters, many.counters, "{name}: counters");
    assert_eq!(one.regs, many.regs, "{name}: registers");
    assert_eq!(one.port_tx, many.port_tx, "{name}: port_tx");
    assert_eq!(
        one.aggregators_active(),
        many.aggregators_active(),
        "{name}: active aggregators"
    );
}

#[test]
fn every_scenario_emits_what_one_thread_emits_frame_for_frame() {
    let mut passes_handed = 0;
    for n in [2, 3] {
        for sc in scenario::all() {
            let prog = program(&sc).unwrap();
            let mut one = model_of(&sc, &prog);
            let mut many = Shards::new(model_of(&sc, &prog), n);
            for (i, st) in sc.steps.iter().enumerate() {
                let mut a: Vec<Emitted> = Vec::new();
                let mut b: Vec<Emitted> = Vec::new();
                one.process(st.port, &st.frame, &mut a);
                many.process(st.port, &st.frame, &mut b);
                many.flush(&mut b);
                assert_eq!(
                    a, b,
                    "{} ({n} shards), step {i} ({}): the frames differ",
                    sc.name, st.what
                );
            }
            let snap = many.snapshot(&mut Vec::new());
            same_switch(&format!("{} ({n} shards)", sc.name), &one, &snap);
            passes_handed += snap.counters.recirculated;
        }
    }
    assert!(passes_handed > 100, "the scenarios recirculate");
}

/// A whole scenario given at once (bursts cut only at BlockDones, whose effect later frames
/// wait for): passes of different packets interleave across shards, so frames come out in
/// another order, and each frame one thread emits is emitted and the switch ends in the same
/// state. Scenarios whose outcome depends on the order of packets (recycled aggregators'
/// generations, resends, sequenced frames and probes: on the hardware too, where
/// recirculation interleaves packets) are left to the one-frame-at-a-time test above.
#[test]
fn a_burst_ends_in_the_same_switch_with_the_same_frames() {
    let mut covered = 0;
    for sc in scenario::all() {
        let prog = program(&sc).unwrap();
        let mut one = model_of(&sc, &prog);
        let generations = one.tables.agg_table.iter().any(|(_, a)| match a {
            softswitch::AggAction::Aggregate(p)
            | softswitch::AggAction::Up(p)
            | softswitch::AggAction::Partials(p) => p.generation > 0,
            _ => false,
        });
        let ordered = sc.steps.iter().any(|st| {
            sgnn_wire::FrameRepr::parse(&st.frame).is_ok_and(|(r, _)| {
                r.sgnn.flags.resend
                    || sgnn_wire::recovery::seq_of(r.sgnn.dst_id).is_some()
                    || r.sgnn.dst_id == sgnn_wire::recovery::SEQ_PROBE
            })
        });
        if generations || ordered {
            continue;
        }
        covered += 1;
        let mut many = Shards::new(model_of(&sc, &prog), 2);
        let mut a = Vec::new();
        let mut b = Vec::new();
        for st in &sc.steps {
            one.process(st.port, &st.frame, &mut a);
            let sync = sgnn_wire::FrameRepr::parse(&st.frame)
                .is_ok_and(|(r, _)| r.sgnn.packet_type == sgnn_wire::PacketType::BlockDone);
            if sync {
                many.flush(&mut b);
            }
            many.process(st.port, &st.frame, &mut b);
        }
        let snap = many.snapshot(&mut b);
        let mut a: Vec<_> = a.iter().map(unordered).collect();
        let mut b: Vec<_> = b.iter().map(unordered).collect();
        a.sort();
        b.sort();
        assert_eq!(a, b, "{}: the frames differ", sc.name);
        same_switch(sc.name, &one, &snap);
    }
    assert!(covered >= 3, "{covered} scenarios in bursts");
}

/// A frame as compared when packets' passes interleave: a Result names in `src_id` the source
/// whose contribution completed it, which depends on the order; its sum, count and
/// destination do not.
fn unordered(e: &Emitted) -> (u16, u8, Vec<u8>) {
    let mut frame = e.frame.clone();
    if let Ok((mut r, lanes)) = sgnn_wire::FrameRepr::parse(&frame) {
        if r.sgnn.packet_type == sgnn_wire::PacketType::Result && !r.sgnn.flags.resend {
            r.sgnn.src_id = 0;
            r.emit(lanes.as_ref(), &mut frame).unwrap();
        }
    }
    (e.port, e.queue, frame)
}

/// A table write reaches every shard: a row rewritten after load sends its aggregate where
/// the new row says.
#[test]
fn a_control_change_reaches_every_shard() {
    let sc = scenario::all()
        .into_iter()
        .find(|s| s.name == "recirculation_and_reuse")
        .expect("scenario");
    let prog = program(&sc).unwrap();
    let mut many = Shards::new(model_of(&sc, &prog), 2);
    let mut out = Vec::new();
    many.control(
        |p| {
            let rows: Vec<_> = p.tables.agg_table.iter().map(|(k, _)| k).collect();
            for k in rows {
                p.tables.agg_table.remove(&k);
            }
        },
        &mut out,
    );
    for st in &sc.steps {
        many.process(st.port, &st.frame, &mut out);
    }
    let snap = many.snapshot(&mut out);
    assert_eq!(snap.counters.aggregated, 0, "{:?}", snap.counters);
    assert!(snap.counters.drop_no_entry > 0, "{:?}", snap.counters);
}
