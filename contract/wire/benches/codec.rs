//! Codec and frame throughput (GB/s per core of f32 input), recorded in docs/benchmarks-wire.md.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use sgnn_wire::codec::{accumulate, FixedPoint};
use sgnn_wire::sgnn::Repr;
use sgnn_wire::{ethernet, ipv4, FrameRepr, PacketType, LANES};

fn codec(c: &mut Criterion) {
    let n = 1 << 18; // 1 MiB of f32
    let x: Vec<f32> = (0..n)
        .map(|i| ((i % 1000) as f32 - 500.0) / 100.0)
        .collect();
    let f = FixedPoint::for_sum(8.0, 1024).unwrap();
    let mut e = vec![0i32; n];
    let mut d = vec![0f32; n];
    let mut g = c.benchmark_group("codec");
    g.throughput(Throughput::Bytes((n * 4) as u64));
    g.bench_function("encode", |b| b.iter(|| f.encode(black_box(&x), &mut e)));
    f.encode(&x, &mut e);
    g.bench_function("decode", |b| b.iter(|| f.decode(black_box(&e), &mut d)));
    let mut acc = vec![0i32; n];
    g.bench_function("accumulate", |b| {
        b.iter(|| accumulate(&mut acc, black_box(&e)))
    });
    g.finish();

    let mut r = FrameRepr {
        eth: ethernet::Repr::default(),
        ip: ipv4::Repr {
            ttl: 64,
            ..Default::default()
        },
        sgnn: Repr::new(PacketType::Data),
    };
    r.sgnn.src_id = 42;
    let lanes = [7i32; LANES];
    let mut buf = [0u8; 256];
    let mut g = c.benchmark_group("frame");
    g.throughput(Throughput::Elements(1));
    g.bench_function("emit_data", |b| {
        b.iter(|| r.emit(Some(black_box(&lanes)), &mut buf).unwrap())
    });
    let len = r.emit(Some(&lanes), &mut buf).unwrap();
    g.bench_function("parse_data", |b| {
        b.iter(|| FrameRepr::parse(black_box(&buf[..len])).unwrap())
    });
    g.finish();
}

criterion_group!(benches, codec);
criterion_main!(benches);
