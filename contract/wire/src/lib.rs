//! The SwitchGNN wire protocol (documented in `docs/protocol.md`).
//!
//! A SwitchGNN frame is Ethernet II / IPv4 (protocol [`IP_PROTO_SWITCHGNN`]) / the 24-byte
//! SwitchGNN header / (for packet types that carry values) 32 int32 value lanes. This crate owns
//! those bytes: zero-copy packet views with checked constructors ([`ethernet`], [`ipv4`],
//! [`sgnn`]), owned representations (`Repr`) for protocol logic, whole-frame helpers
//! ([`frame`]), and the fixed-point codec that turns f32 features into int32 lanes a switch can
//! add ([`codec`]). Parsers never panic: malformed input is an [`Error`].

pub mod codec;
pub mod ethernet;
pub mod frame;
pub mod ipv4;
pub mod sgnn;

pub use frame::FrameRepr;
pub use sgnn::{Flags, PacketType};

/// IP protocol number of SwitchGNN: 253, reserved for experimentation by RFC 3692.
pub const IP_PROTO_SWITCHGNN: u8 = 253;
/// Protocol version carried in the header's high nibble.
pub const VERSION: u8 = 1;
/// `dst_id` of a daemon's start-up probe: an Ack a worker addresses to itself through the
/// switch. The switch forwards it and writes the tag of the plan its tables hold
/// (`switch_config`'s `plan_tag`, 0 if none) into its `src_id`, so the daemon can refuse to
/// run against a switch loaded with another plan (docs/switch-interface.md, "Plan tag").
pub const PROBE_DST: u32 = u32::MAX;
/// `dst_id` of a daemon's start barrier hello: an Ack to a peer worker (forwarded by IP like
/// any Ack), `segment` 0 for a hello, 1 for the answer. A daemon sends no data before it heard
/// from every peer, so no frame of round 0 goes to a daemon whose port is not up yet.
pub const PEER_HELLO: u32 = u32::MAX - 1;
/// `dst_id` of a congestion notification (a CNP, as RoCE's DCQCN names it): an Ack from a
/// worker to a peer (forwarded by IP like any Ack) that says frames the peer sent, or sums it
/// contributed to, reached this worker ECN-marked. The peer's rate control halves its rate on
/// it (`docs/host.md`, "Rate control"). `worker_id` is the notifying worker.
pub const CNP: u32 = u32::MAX - 4;
/// `dst_id` of a raw feature frame meant for every neighbour of its `src_id` on the receiving
/// worker: the host-based baseline's frames, and the switch's replicas of a replicated raw
/// vertex (`replicate` action, docs/switch-interface.md).
pub const ALL_NEIGHBOURS: u32 = u32::MAX;
/// `segment` of an Ack that acknowledges every segment of its destination at once: a
/// receiver acks a destination vertex once, when all its segments are done, instead of once
/// per segment.
pub const ACK_ALL_SEGMENTS: u16 = u16::MAX;

/// Loss recovery (docs/host.md, "Loss recovery"): the code points the daemons and the switch
/// agree on beyond the frame layout. No field moves and no type is added; these give values
/// of existing fields a meaning, as [`PROBE_DST`] and [`PEER_HELLO`] do.
pub mod recovery {
    /// In a Data frame's `dst_id` (unused by Data otherwise): the frame carries its sender's
    /// transmission number in the low 16 bits. The switch checks the numbers of each worker's
    /// Data frames arrive in order, answers a gap with a NACK, and keeps the aggregates such
    /// frames complete readable (state DONE) for a pull. A Data frame without it (`dst_id` 0,
    /// as older senders send) gets neither.
    pub const SEQ_VALID: u32 = 1 << 31;
    /// `dst_id` of a daemon's tail probe: an Ack to the switch carrying in `src_id` the
    /// number its next Data frame will take and in `count` the NACKs it has received (mod
    /// 2^16). The switch answers with a NACK frame (below) that says which of this worker's
    /// frames it is missing, if any, and counts a clean probe towards [`SEND_DONE`].
    pub const SEQ_PROBE: u32 = u32::MAX - 2;
    /// `dst_id` of the switch's all-sent notice: an Ack from the switch to every worker (the
    /// advance multicast group), sent once per block when every worker's tail probe found
    /// nothing missing (`sgnn_switch::recovery`). A receiver holding it knows each Result it
    /// still misses was lost on the way down, and pulls it at once instead of waiting for a
    /// timeout.
    pub const SEND_DONE: u32 = u32::MAX - 3;
    /// `src_id` of a pull's answer (a Result with RESEND and `count` 0) when another
    /// generation of the same round and block holds the aggregator, or a RESEND released it:
    /// the aggregate is gone and the receiver must fetch its sources raw. (An answer with
    /// `count` 0 and `src_id` 0 means no contribution arrived yet.)
    pub const PULL_GONE: u32 = u32::MAX;
    /// Largest gap a seq check treats as a gap: a number `d` ahead of the expected one with
    /// `0 < d < SEQ_WINDOW` (mod 2^16) is a gap, with `d >= SEQ_WINDOW` a late frame.
    pub const SEQ_WINDOW: u16 = 1 << 15;

    /// The transmission number of a Data frame's `dst_id`, if it carries one.
    pub fn seq_of(dst_id: u32) -> Option<u16> {
        (dst_id & SEQ_VALID != 0).then_some(dst_id as u16)
    }

    /// A range of transmission numbers `lo..=hi` (mod 2^16) as a NACK carries it:
    /// `lo << 16 | hi`.
    pub fn pack_range(lo: u16, hi: u16) -> u32 {
        ((lo as u32) << 16) | hi as u32
    }

    /// The `(lo, hi)` of a packed range.
    pub fn unpack_range(r: u32) -> (u16, u16) {
        ((r >> 16) as u16, r as u16)
    }
}
/// Bytes of the SwitchGNN header.
pub const HEADER_LEN: usize = 24;
/// Value lanes per packet: one aggregator's worth (the paper's 128-byte aggregator).
pub const LANES: usize = 32;
/// Bytes per lane (int32).
pub const LANE_BYTES: usize = 4;
/// Bytes of the value lanes.
pub const PAYLOAD_LEN: usize = LANES * LANE_BYTES;
/// Ethernet II header bytes.
pub const ETHERNET_HEADER_LEN: usize = 14;
/// IPv4 header bytes (no options: SwitchGNN frames always use IHL 5).
pub const IPV4_HEADER_LEN: usize = 20;
/// A frame that carries values (Data, Result, Bypass), without FCS: 186 bytes.
pub const DATA_FRAME_LEN: usize = ETHERNET_HEADER_LEN + IPV4_HEADER_LEN + HEADER_LEN + PAYLOAD_LEN;
/// A frame without values (Ack, FetchReq, BlockDone, BlockAdvance), without FCS: 58 bytes.
pub const CONTROL_FRAME_LEN: usize = ETHERNET_HEADER_LEN + IPV4_HEADER_LEN + HEADER_LEN;
/// Smallest Ethernet frame on the wire, FCS included.
pub const ETHERNET_MIN_FRAME: usize = 64;
/// Frame check sequence bytes.
pub const FCS_LEN: usize = 4;
/// Preamble (7), start-of-frame delimiter (1) and inter-frame gap (12) every frame costs.
pub const PREAMBLE_SFD_IFG: usize = 20;

/// Bytes a frame of `frame_len` bytes (without FCS) occupies on a link: padded to the minimum
/// frame, plus FCS, preamble, SFD and inter-frame gap. A data frame costs 210, a control
/// frame 84.
pub const fn wire_bytes(frame_len: usize) -> u64 {
    let with_fcs = frame_len + FCS_LEN;
    let padded = if with_fcs < ETHERNET_MIN_FRAME {
        ETHERNET_MIN_FRAME
    } else {
        with_fcs
    };
    (padded + PREAMBLE_SFD_IFG) as u64
}

/// Why a buffer is not a valid SwitchGNN frame (receivers drop it and count the reason).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The buffer ends before the structure does.
    #[error("truncated: need {need} bytes, have {have}")]
    Truncated {
        /// Bytes required.
        need: usize,
        /// Bytes present.
        have: usize,
    },
    /// Not IPv4 (ethertype or IP version).
    #[error("not an IPv4 packet")]
    NotIpv4,
    /// IPv4 header with options or a bad length field (on emit: a field too wide).
    #[error("malformed IPv4 header")]
    BadIpv4,
    /// An IPv4 fragment; SwitchGNN packets are never fragmented.
    #[error("IPv4 fragment")]
    Fragmented,
    /// IPv4 header checksum mismatch.
    #[error("bad IPv4 header checksum")]
    BadChecksum,
    /// IPv4 but not SwitchGNN.
    #[error("IP protocol {0} is not SwitchGNN ({IP_PROTO_SWITCHGNN})")]
    NotSwitchGnn(u8),
    /// Unknown protocol version.
    #[error("unsupported SwitchGNN version {0}")]
    BadVersion(u8),
    /// Unknown packet type.
    #[error("unknown SwitchGNN packet type {0}")]
    BadType(u8),
    /// IS_ACK / IS_FETCH disagree with the packet type.
    #[error("flags inconsistent with packet type")]
    InconsistentFlags,
    /// Reserved bits are set.
    #[error("reserved bits set")]
    ReservedNonZero,
    /// frac_bits above 30.
    #[error("fraction bits {0} above 30")]
    BadFracBits(u8),
    /// A buffer is too small to emit into.
    #[error("buffer too small: need {need} bytes, have {have}")]
    BufferTooSmall {
        /// Bytes required.
        need: usize,
        /// Bytes present.
        have: usize,
    },
    /// The IPv4 payload is not exactly the SwitchGNN packet its type implies.
    #[error(
        "IPv4 payload of {ip_payload} bytes, but a {packet_type:?} packet is {expected} bytes"
    )]
    LengthMismatch {
        /// IPv4 total length minus its header.
        ip_payload: usize,
        /// Length the packet type implies.
        expected: usize,
        /// The packet type.
        packet_type: sgnn::PacketType,
    },
    /// Lanes given for a type without lanes, or missing for one with.
    #[error("value lanes do not match the packet type")]
    LanesMismatch,
}

impl Error {
    /// Shifts the byte counts of a length error by `offset`, so an error found in an inner
    /// layer reports positions in the whole frame.
    pub(crate) fn offset_by(self, offset: usize) -> Error {
        match self {
            Error::Truncated { need, have } => Error::Truncated {
                need: need + offset,
                have: have + offset,
            },
            e => e,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_sizes() {
        assert_eq!(DATA_FRAME_LEN, 186);
        assert_eq!(CONTROL_FRAME_LEN, 58);
        assert_eq!(wire_bytes(DATA_FRAME_LEN), 210);
        assert_eq!(wire_bytes(CONTROL_FRAME_LEN), 84);
    }
}

/// The testbed's addressing convention, shared by the switch and the hosts: worker `w` has MAC
/// `02:00:00:00:hi:lo` and IPv4 `10.1.hi.lo` (hi, lo = the bytes of `w`); the switch is
/// `02:00:00:00:ff:fe` / `10.0.0.254`.
pub mod addressing {
    /// The switch's MAC address.
    pub const SWITCH_MAC: [u8; 6] = [2, 0, 0, 0, 0xff, 0xfe];
    /// The switch's IPv4 address.
    pub const SWITCH_IP: [u8; 4] = [10, 0, 0, 254];

    /// MAC address of worker `w`.
    pub const fn worker_mac(w: u16) -> [u8; 6] {
        [2, 0, 0, 0, (w >> 8) as u8, w as u8]
    }

    /// IPv4 address of worker `w`.
    pub const fn worker_ip(w: u16) -> [u8; 4] {
        [10, 1, (w >> 8) as u8, w as u8]
    }
}

/// DSCP traffic classes: hosts mark every frame with its class, the switch maps each class to a
/// priority queue (`dscp_priority`), so block control and results are served before bulk data.
///
/// | class | DSCP | switch queue (7 first) | frames |
/// |---|---|---|---|
/// | block control | 46 (EF) | 7 | BlockDone, BlockAdvance |
/// | results and acks | 34 (AF41) | 5 | Result, Ack |
/// | recovery | 26 (AF31) | 4 | FetchReq, Bypass (host to host and switch bypass) |
/// | feature data | 10 (AF11) | 2 | Data, host-based baseline exchange |
/// | background | 8 (CS1, lower effort) | 0 | everything else |
///
/// Like Hermod, the classes that unblock others (control, results) go first; unlike Hermod
/// there is no per-flow priority inside a class. A frame the switch builds keeps the DSCP of
/// the frame that caused it (a Result carries the completing Data frame's DSCP); hosts re-mark
/// by class when they send.
pub mod dscp {
    use crate::PacketType;

    /// Block control.
    pub const BLOCK_CONTROL: u8 = 46;
    /// Results and acks.
    pub const RESULT_ACK: u8 = 34;
    /// Fetch and bypass.
    pub const RECOVERY: u8 = 26;
    /// Feature data.
    pub const DATA: u8 = 10;
    /// Background (CS1, "lower effort").
    pub const BACKGROUND: u8 = 8;

    /// (name, DSCP, switch priority queue) of every class, control first.
    pub const CLASSES: [(&str, u8, u8); 5] = [
        ("block control", BLOCK_CONTROL, 7),
        ("results and acks", RESULT_ACK, 5),
        ("recovery", RECOVERY, 4),
        ("feature data", DATA, 2),
        ("background", BACKGROUND, 0),
    ];

    /// The class a host marks a SwitchGNN frame of `t` with.
    pub const fn for_type(t: PacketType) -> u8 {
        match t {
            PacketType::BlockDone | PacketType::BlockAdvance => BLOCK_CONTROL,
            PacketType::Result | PacketType::Ack => RESULT_ACK,
            PacketType::FetchReq | PacketType::Bypass => RECOVERY,
            PacketType::Data => DATA,
        }
    }
}
