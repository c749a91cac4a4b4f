//! Per-core rates of the transport engine (`sgnn-transport`) with a null datapath (issue 32):
//! no socket, no clock, one core. Here, beside the simulator's harness, because it plans with
//! the planner and loads the software switch: the transport itself depends on nothing of
//! switch-ctl's, even for benches. Frames the engine emits are counted and dropped; frames fed to it were
//! built beforehand.
//!
//! The graph is the README's main command's (R-MAT 2^12, edge factor 8, 4 workers, 64 values
//! per vertex: 2 segments), planned with 4 MB of switch memory (the testbed's default). Worker 0 is measured.
//!
//! - `send/*`: a fresh engine that has started a round gives every frame it wants to send
//!   (`poll_transmit` until it has none): build (header and lanes into a frame), number
//!   (`SEQ_VALID | n`), pace (the rate controller, set far above any rate reached here so it
//!   never holds a frame back) and queue. `switchgnn-data`: the paper plan's Data frames of
//!   its first block (then the engine waits for the switch) and the block's tail probe;
//!   `host-based-bypass`: the baseline's Bypass frames. Starting the round (encoding the
//!   features, summing local neighbours) is set-up, not timed.
//! - `receive/*`: a fresh engine that has started the round and sent its frames (set-up, not
//!   timed) takes every frame worker 0 received in that round of an in-memory run of the
//!   four engines and the software switch's pipeline (captured once, below): parse, route,
//!   accumulate into the cells, bitmaps, complete the round (decode the sums). What it sends
//!   meanwhile (BlockDone, the barrier) is taken and dropped, timed. A plan of several blocks
//!   is fed its first block's frames up to its BlockAdvance (so no Data is sent in the timed
//!   part; the round's end, decoding the sums, is then not in it). `switchgnn-result`: the
//!   paper plan's first block (every remote sum a Result, plus the switch's control frames);
//!   `auto-result-and-replica`: the `auto` plan (Results, and multicast replicas: Bypass
//!   frames carrying a peer's Data); `host-based-bypass`: the baseline.
//!
//! Throughput is frames; `ns per frame` is the time over the frames.
//!
//! ```sh
//! cargo bench -p sgnn-sim --bench engine -- --measurement-time 3 --warm-up-time 1
//! ```

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use sgnn_plan::AggregateMode;
use sgnn_transport::engine::Mode;
use sgnn_wire::PacketType;

#[path = "common/case.rs"]
mod case;
use case::{plan, Case};

fn send(c: &mut Criterion, name: &str, case: &Case, t: PacketType) {
    let (all, of) = case.sends(t);
    eprintln!("send/{name}: {all} frames, {of} of them {t:?}");
    assert!(of * 10 >= all * 9, "mostly {t:?}");
    let mut g = c.benchmark_group("send");
    g.throughput(Throughput::Elements(all));
    g.bench_function(name, |b| {
        b.iter_batched(
            || case.started(),
            |mut e| {
                let mut n = 0u64;
                while let Some((_, f)) = e.poll_transmit(0) {
                    black_box(&f);
                    n += 1;
                    // As `Session` does once the datapath sent it.
                    e.recycle(f);
                }
                assert_eq!(n, all);
                e
            },
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

fn receive(c: &mut Criterion, name: &str, case: &Case, types: &[PacketType]) {
    let all = case.received.len();
    let counts: Vec<String> = types
        .iter()
        .map(|&t| format!("{} {t:?}", case.received_of(t)))
        .collect();
    eprintln!(
        "receive/{name}: {all} frames ({}), {}",
        if case.whole_round {
            "the whole round"
        } else {
            "block 0 of the round"
        },
        counts.join(", ")
    );
    let of: usize = types.iter().map(|&t| case.received_of(t)).sum();
    assert!(of * 10 >= all * 9, "mostly {types:?}");
    let mut g = c.benchmark_group("receive");
    g.throughput(Throughput::Elements(all as u64));
    g.bench_function(name, |b| {
        b.iter_batched(
            || case.sent(),
            |mut e| {
                for f in &case.received {
                    e.handle_frame(0, f);
                    while let Some(f) = e.poll_transmit(0) {
                        black_box(&f);
                    }
                }
                if case.whole_round {
                    assert!(e.take_sums().is_some(), "the round completed");
                } else {
                    assert_eq!(e.block(), Some(1), "block 0 advanced");
                }
                e
            },
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

fn bench(c: &mut Criterion) {
    let paper = plan(AggregateMode::Paper);
    let auto = plan(AggregateMode::Auto);
    let sg = Case::new(&paper, Mode::SwitchGnn);
    let hb = Case::new(&paper, Mode::HostBased);
    let au = Case::new(&auto, Mode::SwitchGnn);
    send(c, "switchgnn-data", &sg, PacketType::Data);
    send(c, "host-based-bypass", &hb, PacketType::Bypass);
    receive(c, "switchgnn-result", &sg, &[PacketType::Result]);
    receive(
        c,
        "auto-result-and-replica",
        &au,
        &[PacketType::Result, PacketType::Bypass],
    );
    receive(c, "host-based-bypass", &hb, &[PacketType::Bypass]);
}

criterion_group!(benches, bench);
criterion_main!(benches);
