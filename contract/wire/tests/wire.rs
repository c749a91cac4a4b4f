//! Byte-level tests of the SwitchGNN frame against hand-written bytes, every parser error, and
//! property tests of round trips, arbitrary input and the codec's error bound.

use proptest::prelude::*;
use sgnn_wire::codec::{accumulate, FixedPoint};
use sgnn_wire::sgnn::Repr;
use sgnn_wire::*;

fn data_repr() -> FrameRepr {
    let mut s = Repr::new(PacketType::Data);
    s.worker_id = 3;
    s.src_id = 0x0102_0304;
    s.dst_id = 0xa0b0_c0d0;
    s.block_id = 7;
    s.count = 2;
    s.round = 9;
    s.segment = 1;
    s.frac_bits = 16;
    FrameRepr {
        eth: ethernet::Repr {
            dst: [2, 0, 0, 0, 0, 0xfe],
            src: [2, 0, 0, 0, 0, 3],
            ethertype: 0x0800,
        },
        ip: ipv4::Repr {
            src: [10, 0, 0, 3],
            dst: [10, 0, 0, 254],
            ttl: 64,
            dscp: 10,
            ..Default::default()
        },
        sgnn: s,
    }
}

/// The Data frame of `data_repr()` with lanes 0..32, written out byte by byte.
fn data_bytes() -> Vec<u8> {
    let mut b = vec![
        2,
        0,
        0,
        0,
        0,
        0xfe,
        2,
        0,
        0,
        0,
        0,
        3,
        0x08,
        0x00, // Ethernet
        0x45,
        10 << 2,
        0,
        172,
        0,
        0,
        0x40,
        0,
        64,
        253,
        0x24,
        0x2d, // header checksum, computed independently
        10,
        0,
        0,
        3,
        10,
        0,
        0,
        254, // IPv4
        0x10,
        0x00,
        0,
        3, // version 1 | Data, flags, worker 3
        1,
        2,
        3,
        4, // src
        0xa0,
        0xb0,
        0xc0,
        0xd0, // dst
        0,
        7,
        0,
        2, // block 7, count 2
        0,
        9,
        0,
        1, // round 9, segment 1
        0,
        16,
        0,
        0, // pass 0, frac 16, job 0
    ];
    for i in 0..32i32 {
        b.extend_from_slice(&(i - 16).to_be_bytes());
    }
    b
}

/// What parsing returns for `r`: emit fills in the IP protocol and payload length.
fn norm(mut r: FrameRepr) -> FrameRepr {
    r.ip.protocol = IP_PROTO_SWITCHGNN;
    r.ip.payload_len = r.sgnn.buffer_len();
    r
}

fn lanes() -> [i32; LANES] {
    std::array::from_fn(|i| i as i32 - 16)
}

#[test]
fn data_frame_matches_hand_written_bytes() {
    let mut buf = [0u8; 256];
    let n = data_repr().emit(Some(&lanes()), &mut buf).unwrap();
    assert_eq!(n, DATA_FRAME_LEN);
    assert_eq!(&buf[..n], &data_bytes()[..]);
    let (r, l) = FrameRepr::parse(&data_bytes()).unwrap();
    assert_eq!(r, norm(data_repr()));
    assert_eq!(l, Some(lanes()));
}

#[test]
fn block_done_frame_matches_hand_written_bytes() {
    let mut r = data_repr();
    r.sgnn = Repr::new(PacketType::BlockDone);
    r.sgnn.worker_id = 2;
    r.sgnn.block_id = 0x0105;
    r.ip.dscp = 46;
    let mut b = vec![
        2,
        0,
        0,
        0,
        0,
        0xfe,
        2,
        0,
        0,
        0,
        0,
        3,
        0x08,
        0x00, //
        0x45,
        46 << 2,
        0,
        44,
        0,
        0,
        0x40,
        0,
        64,
        253,
        0x24,
        0x1d, // header checksum, computed independently
        10,
        0,
        0,
        3,
        10,
        0,
        0,
        254, //
        0x15,
        0x00,
        0,
        2,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        1,
        5,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
    ];
    let mut buf = [0u8; 64];
    let n = r.emit(None, &mut buf).unwrap();
    assert_eq!(n, CONTROL_FRAME_LEN);
    assert_eq!(&buf[..n], &b[..]);
    // Ethernet padding to 60 bytes is tolerated.
    b.resize(60, 0);
    assert_eq!(FrameRepr::parse(&b).unwrap(), (norm(r), None));
}

#[test]
fn every_error_is_reported() {
    let good = data_bytes();
    let with = |at: usize, v: u8| {
        let mut b = good.clone();
        b[at] = v;
        if (14..34).contains(&at) && at != 24 && at != 25 {
            b[24] = 0;
            b[25] = 0;
            let c = sgnn_wire::ipv4::checksum(&b[14..34]);
            b[24..26].copy_from_slice(&c.to_be_bytes());
        }
        FrameRepr::parse(&b).unwrap_err()
    };
    assert!(matches!(
        FrameRepr::parse(&good[..10]),
        Err(Error::Truncated { .. })
    ));
    assert_eq!(with(12, 0x86), Error::NotIpv4);
    assert_eq!(with(14, 0x65), Error::NotIpv4);
    assert_eq!(with(14, 0x46), Error::BadIpv4);
    assert_eq!(with(23, 6), Error::NotSwitchGnn(6));
    assert_eq!(with(24, 0xff), Error::BadChecksum);
    assert_eq!(with(34, 0x20), Error::BadVersion(2));
    assert_eq!(with(34, 0x1f), Error::BadType(15));
    assert_eq!(with(35, 0x80), Error::InconsistentFlags);
    assert_eq!(with(35, 0x01), Error::ReservedNonZero);
    assert_eq!(with(55, 31), Error::BadFracBits(31));
    // Bytes 22..24 of the header are the job value, any value parses.
    let mut g = good.clone();
    g[56] = 0x12;
    g[57] = 0x34;
    assert_eq!(FrameRepr::parse(&g).unwrap().0.sgnn.job, 0x1234);
    assert!(matches!(
        FrameRepr::parse(&good[..100]),
        Err(Error::Truncated { .. })
    ));
    let mut buf = [0u8; 100];
    assert!(matches!(
        data_repr().emit(Some(&lanes()), &mut buf),
        Err(Error::BufferTooSmall { .. })
    ));
    assert_eq!(
        data_repr().emit(None, &mut [0u8; 256]),
        Err(Error::LanesMismatch)
    );
}

fn any_type() -> impl Strategy<Value = PacketType> {
    (0u8..7).prop_map(|t| PacketType::from_u8(t).unwrap())
}

proptest! {
    #[test]
    fn random_headers_round_trip(
        t in any_type(), ecn: bool, resend: bool, worker: u16, src: u32, dst: u32, block: u16,
        count: u16, round: u16, segment: u16, pass: u8, frac in 0u8..=30, dscp in 0u8..64,
        lane_seed: i32,
    ) {
        let mut r = data_repr();
        r.ip.dscp = dscp;
        r.sgnn = Repr { packet_type: t, worker_id: worker, src_id: src, dst_id: dst,
            block_id: block, count, round, segment, pass, frac_bits: frac, ..Repr::new(t) };
        r.sgnn.flags.ecn = ecn;
        r.sgnn.flags.resend = resend;
        let l: [i32; LANES] = std::array::from_fn(|i| lane_seed.wrapping_mul(i as i32 + 1));
        let mut buf = [0u8; 256];
        let n = r.emit(t.has_lanes().then_some(&l), &mut buf).unwrap();
        let (back, lanes) = FrameRepr::parse(&buf[..n]).unwrap();
        prop_assert_eq!(back, norm(r));
        prop_assert_eq!(lanes, t.has_lanes().then_some(l));
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = FrameRepr::parse(&bytes);
    }

    #[test]
    fn mutated_valid_frames_never_panic(at in 0usize..186, v: u8, cut in 0usize..200) {
        let mut b = data_bytes();
        b[at] = v;
        b.truncate(cut);
        let _ = FrameRepr::parse(&b);
    }

    /// decode(sum(encode(x_i))) is within error_bound(n) of the exact sum, per lane, and the
    /// integer sum alone is within the rounding part n * 2^-(f+1). With `positive`, every
    /// term rounds the same way, so a biased rounding (truncation, floor) exceeds the
    /// rounding part after a few hundred terms.
    #[test]
    fn codec_sum_is_within_the_error_bound(
        max_abs in 0.01f32..100.0,
        positive: bool,
        xs in proptest::collection::vec(proptest::collection::vec(-1.0f32..1.0, LANES), 1..1500),
    ) {
        let n = xs.len() as u32;
        let f = FixedPoint::for_sum(max_abs, n).unwrap();
        let unit = 1.0 / f.scale() as f64;
        let mut acc = [0i32; LANES];
        let mut exact = [0f64; LANES];
        let mut abs_sum = [0f64; LANES];
        for x in &xs {
            let x: Vec<f32> = x
                .iter()
                .map(|v| if positive { v.abs() } else { *v } * max_abs)
                .collect();
            let mut e = [0i32; LANES];
            prop_assert_eq!(f.encode(&x, &mut e), 0);
            prop_assert_eq!(accumulate(&mut acc, &e), 0);
            for ((s, a), v) in exact.iter_mut().zip(abs_sum.iter_mut()).zip(&x) {
                *s += *v as f64;
                *a += v.abs() as f64;
            }
        }
        let mut out = [0f32; LANES];
        f.decode(&acc, &mut out);
        let bound = f.error_bound(n) as f64;
        let rounding = n as f64 * unit / 2.0;
        for l in 0..LANES {
            // Slack for the f64 reference sum itself (many orders below the bound).
            let slack = n as f64 * abs_sum[l] * f64::EPSILON;
            let int_err = (acc[l] as f64 * unit - exact[l]).abs();
            prop_assert!(int_err <= rounding + slack, "lane {}: integer sum off by {} > {}", l, int_err, rounding);
            let err = (out[l] as f64 - exact[l]).abs();
            prop_assert!(err <= bound + slack, "lane {}: {} vs {} bound {}", l, out[l], exact[l], bound);
        }
    }

    /// for_sum picks the largest safe scale: f is safe, and f + 1 (if allowed) is not.
    #[test]
    fn for_sum_picks_the_largest_safe_scale(max_abs in 1e-6f32..1e6, n in 1u32..100_000) {
        match FixedPoint::for_sum(max_abs, n) {
            Ok(f) => {
                let q = |fb: u8| (max_abs as f64 * 2f64.powi(fb as i32)).round() * n as f64;
                prop_assert!(q(f.frac_bits) <= i32::MAX as f64);
                prop_assert!(f.frac_bits == 30 || q(f.frac_bits + 1) > i32::MAX as f64);
                prop_assert!(f.limit as i64 * n as i64 <= i32::MAX as i64);
            }
            Err(_) => prop_assert!((max_abs as f64).round() * n as f64 > i32::MAX as f64),
        }
    }

    /// Every clamped or NaN value is counted, and nothing else is.
    #[test]
    fn saturation_is_reported(
        max_abs in 0.01f32..100.0,
        n in 1u32..10_000,
        xs in proptest::collection::vec(
            prop_oneof![
                4 => -1e3f32..1e3,
                1 => Just(f32::NAN),
                1 => Just(f32::INFINITY),
                1 => Just(f32::NEG_INFINITY),
                1 => any::<f32>(),
            ],
            0..200,
        ),
    ) {
        let f = FixedPoint::for_sum(max_abs, n).unwrap();
        let mut out = vec![0i32; xs.len()];
        let got = f.encode(&xs, &mut out);
        let mut want = 0;
        for (x, o) in xs.iter().zip(&out) {
            let y = *x as f64 * f.scale() as f64;
            if x.is_nan() {
                want += 1;
                prop_assert_eq!(*o, 0);
            } else if y.abs() > f.limit as f64 {
                want += 1;
                prop_assert_eq!(*o, if y > 0.0 { f.limit } else { -f.limit });
            } else {
                prop_assert_eq!(*o as f64, y.round(), "x = {}", x);
            }
        }
        prop_assert_eq!(got, want);
    }

    /// accumulate is the clamped exact sum, and counts exactly the lanes that overflowed.
    #[test]
    fn accumulate_matches_wide_arithmetic(
        ab in proptest::collection::vec(
            (
                prop_oneof![any::<i32>(), Just(i32::MAX), Just(i32::MIN)],
                prop_oneof![any::<i32>(), -3i32..3],
            ),
            0..100,
        ),
    ) {
        let (mut acc, x): (Vec<i32>, Vec<i32>) = ab.iter().copied().unzip();
        let got = accumulate(&mut acc, &x);
        let mut want = 0;
        for ((a, b), r) in ab.iter().zip(&acc) {
            let wide = *a as i64 + *b as i64;
            let clamped = wide.clamp(i32::MIN as i64, i32::MAX as i64);
            want += (wide != clamped) as usize;
            prop_assert_eq!(*r as i64, clamped);
        }
        prop_assert_eq!(got, want);
    }
}

/// Sets the IPv4 total length of a frame and recomputes the header checksum.
fn set_total_len(b: &mut [u8], total: u16) {
    b[16..18].copy_from_slice(&total.to_be_bytes());
    refresh_checksum(b);
}

fn refresh_checksum(b: &mut [u8]) {
    b[24] = 0;
    b[25] = 0;
    let c = sgnn_wire::ipv4::checksum(&b[14..34]);
    b[24..26].copy_from_slice(&c.to_be_bytes());
}

#[test]
fn length_errors_count_from_the_frame_start() {
    let good = data_bytes();
    let parse = sgnn_wire::frame::parse;
    assert_eq!(
        parse(&good[..10]),
        Err(Error::Truncated { need: 14, have: 10 })
    );
    assert_eq!(
        parse(&good[..30]),
        Err(Error::Truncated { need: 34, have: 30 })
    );
    // IPv4 says 172 bytes, the buffer ends early.
    assert_eq!(
        parse(&good[..100]),
        Err(Error::Truncated {
            need: 186,
            have: 100
        })
    );
    // IPv4 says 44 bytes: a Data header without its lanes.
    let mut b = good.clone();
    set_total_len(&mut b, 44);
    assert_eq!(
        parse(&b),
        Err(Error::Truncated {
            need: 186,
            have: 58
        })
    );
    // IPv4 says 16 bytes: shorter than its own header.
    let mut b = good.clone();
    set_total_len(&mut b, 16);
    assert_eq!(parse(&b), Err(Error::BadIpv4));
}

#[test]
fn ip_payload_must_be_exactly_the_packet() {
    let mut b = data_bytes();
    b.extend_from_slice(&[0; 4]);
    set_total_len(&mut b, 176);
    assert_eq!(
        FrameRepr::parse(&b),
        Err(Error::LengthMismatch {
            ip_payload: 156,
            expected: 152,
            packet_type: PacketType::Data
        })
    );
    // A BlockDone header followed by lanes' worth of bytes.
    let mut b = data_bytes();
    b[34] = 0x15;
    refresh_checksum(&mut b);
    assert!(matches!(
        FrameRepr::parse(&b),
        Err(Error::LengthMismatch {
            packet_type: PacketType::BlockDone,
            ..
        })
    ));
    // Ethernet padding after the IPv4 total length is not payload.
    let mut b = data_bytes();
    b.extend_from_slice(&[0xee; 20]);
    assert!(FrameRepr::parse(&b).is_ok());
}

#[test]
fn fragments_are_rejected() {
    for (at, v) in [(20, 0x20), (20, 0x60), (21, 1), (20, 0x1f)] {
        let mut b = data_bytes();
        b[at] = v;
        refresh_checksum(&mut b);
        assert_eq!(
            FrameRepr::parse(&b),
            Err(Error::Fragmented),
            "byte {at} = {v:#x}"
        );
    }
    // DF alone (what emit writes) and no flags at all are both fine.
    let mut b = data_bytes();
    b[20] = 0;
    refresh_checksum(&mut b);
    assert!(FrameRepr::parse(&b).is_ok());
}

#[test]
fn emit_refuses_what_parse_would_reject() {
    let mut buf = [0u8; 256];
    let l = lanes();
    let mut r = data_repr();
    r.sgnn.flags.ack = true;
    assert_eq!(r.emit(Some(&l), &mut buf), Err(Error::InconsistentFlags));
    let mut r = data_repr();
    r.sgnn = Repr::new(PacketType::FetchReq);
    r.sgnn.flags.fetch = false;
    assert_eq!(r.emit(None, &mut buf), Err(Error::InconsistentFlags));
    let mut r = data_repr();
    r.sgnn.frac_bits = 31;
    assert_eq!(r.emit(Some(&l), &mut buf), Err(Error::BadFracBits(31)));
    let mut r = data_repr();
    r.ip.dscp = 64;
    assert_eq!(r.emit(Some(&l), &mut buf), Err(Error::BadIpv4));
    let mut r = data_repr();
    r.ip.ecn = 4;
    assert_eq!(r.emit(Some(&l), &mut buf), Err(Error::BadIpv4));
    let mut r = data_repr();
    r.sgnn = Repr::new(PacketType::BlockAdvance);
    assert_eq!(r.emit(Some(&l), &mut buf), Err(Error::LanesMismatch));
    assert_eq!(
        r.emit(None, &mut [0u8; 57]),
        Err(Error::BufferTooSmall { need: 58, have: 57 })
    );
}

#[test]
fn foreign_packets_are_named() {
    // ARP
    let mut b = data_bytes();
    b[12] = 0x08;
    b[13] = 0x06;
    assert_eq!(FrameRepr::parse(&b), Err(Error::NotIpv4));
    // UDP
    let mut b = data_bytes();
    b[23] = 17;
    refresh_checksum(&mut b);
    assert_eq!(FrameRepr::parse(&b), Err(Error::NotSwitchGnn(17)));
}

#[test]
fn unchecked_views_do_not_panic_in_parse() {
    let empty: &[u8] = &[];
    assert_eq!(
        Repr::parse(&sgnn::Packet::new_unchecked(empty)),
        Err(Error::Truncated { need: 24, have: 0 })
    );
    assert_eq!(
        ipv4::Repr::parse(&ipv4::Packet::new_unchecked(&[0x45u8; 5][..])),
        Err(Error::Truncated { need: 20, have: 5 })
    );
    // A Data header without lanes, through an unchecked view.
    let b = data_bytes();
    assert_eq!(
        Repr::parse(&sgnn::Packet::new_unchecked(&b[34..58])),
        Err(Error::Truncated {
            need: 152,
            have: 24
        })
    );
}

#[test]
fn every_type_round_trips_with_its_flags() {
    for t in 0..7 {
        let t = PacketType::from_u8(t).unwrap();
        let mut r = data_repr();
        r.sgnn = Repr::new(t);
        r.sgnn.flags.ecn = true;
        let l = lanes();
        let mut buf = [0u8; 256];
        let n = r.emit(t.has_lanes().then_some(&l), &mut buf).unwrap();
        assert_eq!(
            n,
            if t.has_lanes() {
                DATA_FRAME_LEN
            } else {
                CONTROL_FRAME_LEN
            }
        );
        let want_flags = match t {
            PacketType::Ack => 0xa0,
            PacketType::FetchReq => 0x60,
            _ => 0x20,
        };
        assert_eq!(buf[35], want_flags, "{t:?}");
        assert_eq!(buf[34], 0x10 | t as u8);
        assert_eq!(
            FrameRepr::parse(&buf[..n]).unwrap(),
            (norm(r), t.has_lanes().then_some(l))
        );
    }
}
