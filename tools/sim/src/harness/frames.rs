//! Frames built by hand: what the switch (or a peer through it) sends a worker, and control
//! frames as anyone on the network could forge them.

use sgnn_wire::addressing::{worker_ip, worker_mac, SWITCH_IP, SWITCH_MAC};
use sgnn_wire::sgnn::Repr;
use sgnn_wire::{ethernet, ipv4, FrameRepr, PacketType, LANES};

use super::To;

/// A frame to worker `to` through the switch from IPv4 `src` (the switch, or a peer it
/// forwards), ECN CE in its IPv4 header if `marked`.
pub fn to_worker(
    src: [u8; 4],
    to: u16,
    s: Repr,
    lanes: Option<&[i32; LANES]>,
    marked: bool,
) -> Vec<u8> {
    let repr = FrameRepr {
        eth: ethernet::Repr {
            dst: worker_mac(to),
            src: SWITCH_MAC,
            ethertype: ethernet::ETHERTYPE_IPV4,
        },
        ip: ipv4::Repr {
            src,
            dst: worker_ip(to),
            ttl: 64,
            ecn: if marked { 3 } else { 0 },
            ..Default::default()
        },
        sgnn: s,
    };
    let mut buf = vec![0u8; repr.frame_len()];
    repr.emit(lanes, &mut buf).unwrap();
    buf
}

/// A frame from the switch to worker `w`.
pub fn from_switch(w: u16, s: Repr, lanes: Option<&[i32; LANES]>) -> Vec<u8> {
    to_worker(SWITCH_IP, w, s, lanes, false)
}

/// A control frame of type `t` as anyone on the network could send it (from a stranger's
/// addresses, lanes of ones if the type carries lanes), and where it goes.
pub fn forged(t: PacketType, worker: u16, round: u16, block: u16, to: To) -> (To, Vec<u8>) {
    let mut s = Repr::new(t);
    s.worker_id = worker;
    s.round = round;
    s.block_id = block;
    let (dst_mac, dst_ip) = match to {
        To::Switch(_) => (SWITCH_MAC, SWITCH_IP),
        To::Host(w) => (worker_mac(w), worker_ip(w)),
    };
    let r = FrameRepr {
        eth: ethernet::Repr {
            dst: dst_mac,
            src: [2, 0, 0, 0, 0x66, 0x66],
            ethertype: ethernet::ETHERTYPE_IPV4,
        },
        ip: ipv4::Repr {
            src: [10, 66, 66, 66],
            dst: dst_ip,
            protocol: sgnn_wire::IP_PROTO_SWITCHGNN,
            payload_len: 0,
            ttl: 64,
            dscp: 0,
            ecn: 0,
            ident: 0,
        },
        sgnn: s,
    };
    let mut buf = vec![0u8; r.frame_len()];
    let lanes = t.has_lanes().then_some(&[1i32; LANES]);
    r.emit(lanes, &mut buf).unwrap();
    (to, buf)
}
