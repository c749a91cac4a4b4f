//! Whole SwitchGNN frames: Ethernet + IPv4 + SwitchGNN header + lanes, emitted and parsed in
//! one call. Hosts, the software switch and tests build and read frames through this module.

use crate::ethernet::{self, ETHERTYPE_IPV4};
use crate::ipv4;
use crate::sgnn;
use crate::{Error, ETHERNET_HEADER_LEN, IPV4_HEADER_LEN, IP_PROTO_SWITCHGNN, LANES};

/// Offset of the SwitchGNN header in a frame.
const SGNN_AT: usize = ETHERNET_HEADER_LEN + IPV4_HEADER_LEN;

/// The meaning of a whole SwitchGNN frame (lanes travel separately).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameRepr {
    /// Ethernet header (its EtherType is always IPv4 on emit).
    pub eth: ethernet::Repr,
    /// IPv4 header (protocol and payload length are set on emit).
    pub ip: ipv4::Repr,
    /// SwitchGNN header.
    pub sgnn: sgnn::Repr,
}

impl FrameRepr {
    /// Frame length without FCS.
    pub fn frame_len(&self) -> usize {
        ETHERNET_HEADER_LEN + IPV4_HEADER_LEN + self.sgnn.buffer_len()
    }

    /// Writes the frame into `buf`; `lanes` must be given exactly when the packet type
    /// carries values. Returns the frame length.
    pub fn emit(&self, lanes: Option<&[i32; LANES]>, buf: &mut [u8]) -> Result<usize, Error> {
        self.sgnn.check()?;
        if lanes.is_some() != self.sgnn.packet_type.has_lanes() {
            return Err(Error::LanesMismatch);
        }
        let len = self.frame_len();
        if buf.len() < len {
            return Err(Error::BufferTooSmall {
                need: len,
                have: buf.len(),
            });
        }
        let buf = &mut buf[..len];
        let mut eth = ethernet::Frame::new_unchecked(&mut *buf);
        ethernet::Repr {
            ethertype: ETHERTYPE_IPV4,
            ..self.eth
        }
        .emit(&mut eth);
        let ip = ipv4::Repr {
            protocol: IP_PROTO_SWITCHGNN,
            payload_len: self.sgnn.buffer_len(),
            ..self.ip
        };
        ip.emit(&mut buf[ETHERNET_HEADER_LEN..])?;
        let mut p = sgnn::Packet::new_unchecked(&mut buf[ETHERNET_HEADER_LEN + IPV4_HEADER_LEN..]);
        self.sgnn.emit(&mut p);
        if let Some(l) = lanes {
            p.copy_lanes_from(l);
        }
        Ok(len)
    }

    /// Parses a frame; the same as [`parse`].
    #[inline]
    pub fn parse(buf: &[u8]) -> Result<(FrameRepr, Option<[i32; LANES]>), Error> {
        parse(buf)
    }
}

/// Parses a frame, never panicking on any input. Truncation errors count bytes from the
/// start of the frame. The IPv4 payload must be exactly the SwitchGNN packet its type implies
/// (so emit(parse(x)) reproduces x's meaning); Ethernet padding after it is ignored.
#[inline]
pub fn parse(buf: &[u8]) -> Result<(FrameRepr, Option<[i32; LANES]>), Error> {
    let eth = ethernet::Frame::new_checked(buf)?;
    if eth.ethertype() != ETHERTYPE_IPV4 {
        return Err(Error::NotIpv4);
    }
    let eth_repr = ethernet::Repr::parse(&eth);
    let ip =
        ipv4::Packet::new_checked(eth.payload()).map_err(|e| e.offset_by(ETHERNET_HEADER_LEN))?;
    if ip.protocol() != IP_PROTO_SWITCHGNN {
        return Err(Error::NotSwitchGnn(ip.protocol()));
    }
    let ip_repr = ipv4::Repr::parse(&ip)?;
    let p = sgnn::Packet::new_checked(ip.payload()).map_err(|e| e.offset_by(SGNN_AT))?;
    let s = sgnn::Repr::parse(&p).map_err(|e| e.offset_by(SGNN_AT))?;
    if ip_repr.payload_len != s.buffer_len() {
        return Err(Error::LengthMismatch {
            ip_payload: ip_repr.payload_len,
            expected: s.buffer_len(),
            packet_type: s.packet_type,
        });
    }
    let lanes = s.packet_type.has_lanes().then(|| p.lanes());
    Ok((
        FrameRepr {
            eth: eth_repr,
            ip: ip_repr,
            sgnn: s,
        },
        lanes,
    ))
}
