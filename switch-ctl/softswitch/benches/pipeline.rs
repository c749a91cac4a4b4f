//! Pipeline-only throughput, no I/O: Data frames per second through one thread
//! (`Pipeline::process`) and through a front and one aggregator shard on a second thread
//! (`Shards`), in the same run.
//! - `single_pass`: 4096 sources each feed one aggregator (one pass); every 8 contributions
//!   complete an aggregate and emit a result, as in a block where destinations have 8 remote
//!   neighbours;
//! - `four_passes`: each source feeds four aggregators (passes 0..3, recirculated), as a
//!   source with four remote destinations in a plan.
//!
//! Run: `cargo bench -p softswitch --bench pipeline` (docs/benchmarks.md, "The software switch
//! on two cores").

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use sgnn_wire::sgnn::Repr;
use sgnn_wire::{ethernet, ipv4, FrameRepr, PacketType, LANES};
use softswitch::{AggAction, AggregateParams, Pipeline, Shards, SwitchConfig, Tables, WorkerPort};

const SOURCES: u32 = 4096;
const FAN_IN: u32 = 8;

/// A switch whose every source feeds `passes` aggregators, and one Data frame per source.
fn workload(passes: u8) -> (Pipeline, Vec<Vec<u8>>) {
    let mut tables = Tables::for_workers(&[WorkerPort {
        port: 0,
        mac: [2, 0, 0, 0, 0, 1],
        ip: [10, 0, 0, 1],
    }]);
    let rows = SOURCES / FAN_IN;
    for src in 0..SOURCES {
        for pass in 0..passes {
            // Pass p of source s adds into the aggregator of destination group (s / 8 + p *
            // rows / passes) mod rows: 8 contributions per aggregator and pass.
            let row = (src / FAN_IN + pass as u32 * (rows / passes as u32)) % rows;
            tables.agg_table.insert(
                (0, src, pass),
                AggAction::Aggregate(AggregateParams {
                    agg_base: row + pass as u32 * rows,
                    dst_id: 1_000_000 + row + pass as u32 * rows,
                    dst_worker: 0,
                    expected: FAN_IN as u16,
                    more: pass + 1 < passes,
                    seen_base: src,
                    generation: 0,
                }),
            );
        }
    }
    let cfg = SwitchConfig {
        aggregators: rows * passes as u32,
        workers: 1,
        ..SwitchConfig::default()
    };
    let sw = Pipeline::new(cfg, tables);
    let frames = (0..SOURCES)
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
    (sw, frames)
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("softswitch");
    g.throughput(Throughput::Elements(SOURCES as u64));
    for (name, passes) in [("single_pass", 1u8), ("four_passes", 4)] {
        let (mut sw, frames) = workload(passes);
        let mut out = Vec::with_capacity(4096);
        g.bench_function(format!("{name}/one_thread"), |b| {
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
        assert_eq!(sw.counters.aggregated, sw.counters.data * passes as u64);

        let (sw, frames) = workload(passes);
        let mut sh = Shards::new(sw, 1);
        g.bench_function(format!("{name}/front_and_one_shard"), |b| {
            b.iter(|| {
                out.clear();
                for (i, f) in frames.iter().enumerate() {
                    sh.process(1, f, &mut out);
                    // A receive burst's worth per hand-off, as the datapath's loop does.
                    if i % 32 == 31 {
                        sh.dispatch();
                        sh.collect(&mut out);
                    }
                }
                sh.flush(&mut out);
                sh.control(|p| p.regs.src_seen[..SOURCES as usize].fill(0), &mut out);
            })
        });
        let snap = sh.snapshot(&mut out);
        assert_eq!(
            snap.counters.drop_duplicate, 0,
            "every frame was aggregated"
        );
        assert_eq!(snap.counters.aggregated, snap.counters.data * passes as u64);
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
