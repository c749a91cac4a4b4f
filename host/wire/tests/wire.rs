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
        0,
        0,
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
        0, // pass 0, frac 16, reserved
    ];
    let c = sgnn_wire::ipv4::checksum(&b[14..34]);
    b[24..26].copy_from_slice(&c.to_be_bytes());
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
        0,
        0,
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
    let c = sgnn_wire::ipv4::checksum(&b[14..34]);
    b[24..26].copy_from_slice(&c.to_be_bytes());
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
    assert_eq!(with(56, 1), Error::ReservedNonZero);
    assert_eq!(with(55, 31), Error::BadFracBits(31));
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

    #[test]
    fn codec_sum_is_within_the_error_bound(
        max_abs in 0.01f32..100.0,
        xs in proptest::collection::vec(proptest::collection::vec(-1.0f32..1.0, LANES), 1..64),
    ) {
        let n = xs.len() as u32;
        let f = FixedPoint::for_sum(max_abs, n).unwrap();
        let mut acc = [0i32; LANES];
        let mut exact = [0f64; LANES];
        for x in &xs {
            let x: Vec<f32> = x.iter().map(|v| v * max_abs).collect();
            let mut e = [0i32; LANES];
            prop_assert_eq!(f.encode(&x, &mut e), 0);
            prop_assert_eq!(accumulate(&mut acc, &e), 0);
            for (s, v) in exact.iter_mut().zip(&x) {
                *s += *v as f64;
            }
        }
        let mut out = [0f32; LANES];
        f.decode(&acc, &mut out);
        let bound = f.error_bound(n);
        for (o, s) in out.iter().zip(&exact) {
            prop_assert!((*o as f64 - s).abs() <= bound, "{} vs {} bound {}", o, s, bound);
        }
    }
}
