//! Frame building shared by the softswitch tests (testbed addressing convention).

use sgnn_wire::addressing::{worker_ip, worker_mac, SWITCH_IP, SWITCH_MAC};
use sgnn_wire::sgnn::Repr;
use sgnn_wire::{ethernet, ipv4, FrameRepr, LANES};

/// A frame from worker `w` to the switch.
pub fn frame(w: u16, s: Repr, lanes: Option<&[i32; LANES]>) -> Vec<u8> {
    frame_to(w, SWITCH_IP, s, lanes)
}

/// A frame from worker `w` to the IPv4 address `dst` (through the switch).
#[allow(dead_code)] // not every test file addresses hosts
pub fn frame_to(w: u16, dst: [u8; 4], s: Repr, lanes: Option<&[i32; LANES]>) -> Vec<u8> {
    let r = FrameRepr {
        eth: ethernet::Repr {
            dst: SWITCH_MAC,
            src: worker_mac(w),
            ethertype: 0x0800,
        },
        ip: ipv4::Repr {
            src: worker_ip(w),
            dst,
            ttl: 64,
            ..Default::default()
        },
        sgnn: s,
    };
    let mut buf = vec![0u8; r.frame_len()];
    r.emit(lanes, &mut buf).unwrap();
    buf
}
