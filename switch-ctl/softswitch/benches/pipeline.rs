//! Pipeline-only throughput: single-pass aggregations per second on one core, no I/O.
//! 4096 sources each feed one aggregator (one pass); every 8 contributions complete an
//! aggregate and emit a result, as in a block where destinations have 8 remote neighbours.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use sgnn_wire::sgnn::Repr;
use sgnn_wire::{ethernet, ipv4, FrameRepr, PacketType, LANES};
use softswitch::{AggAction, AggregateParams, Pipeline, SwitchConfig, Tables, WorkerPort};

fn bench(c: &mut Criterion) {
    const SOURCES: u32 = 4096;
    const FAN_IN: u32 = 8;
    let mut tables = Tables::for_workers(&[WorkerPort {
        port: 0,
        mac: [2, 0, 0, 0, 0, 1],
        ip: [10, 0, 0, 1],
    }]);
    for src in 0..SOURCES {
        tables.agg_table.insert(
            (0, src, 0),
            AggAction::Aggregate(AggregateParams {
                agg_base: src / FAN_IN,
                dst_id: 1_000_000 + src / FAN_IN,
                dst_worker: 0,
                expected: FAN_IN as u16,
                more: false,
                seen_base: src,
                generation: 0,
            }),
        );
    }
    let cfg = SwitchConfig {
        aggregators: SOURCES,
        workers: 1,
        ..SwitchConfig::default()
    };
    let mut sw = Pipeline::new(cfg, tables);
    let frames: Vec<Vec<u8>> = (0..SOURCES)
        .map(|src| {
            let mut s = Repr::new(PacketType::Data);
            s.src_id = src;
            let r = FrameRepr {
                eth: ethernet::Repr::default(),
                ip: ipv4::Repr {
                    ttl: 64,
                    ..Default::default()
                },
                sgnn: s,
            };
            let mut buf = vec![0u8; r.frame_len()];
            r.emit(Some(&[3; LANES]), &mut buf).unwrap();
            buf
        })
        .collect();
    let mut out = Vec::with_capacity(1024);
    let mut g = c.benchmark_group("softswitch");
    g.throughput(Throughput::Elements(SOURCES as u64));
    g.bench_function("single_pass_aggregations", |b| {
        b.iter(|| {
            out.clear();
            for f in &frames {
                sw.process(1, f, &mut out);
            }
            // The same frames again would be network duplicates (dropped by `src_seen`):
            // forget the cells they used (32 kB) so every iteration aggregates.
            sw.regs.src_seen[..SOURCES as usize].fill(0);
        })
    });
    assert_eq!(sw.counters.drop_duplicate, 0, "every frame was aggregated");
    assert_eq!(sw.counters.aggregated, sw.counters.data);
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
