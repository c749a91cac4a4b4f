//! Whole SwitchGNN frames: Ethernet + IPv4 + SwitchGNN header + lanes, emitted and parsed in
//! one call ([`FrameRepr`]), or read and patched in place through one typed view ([`Frame`]).
//! Hosts, the software switch, the simulator and tests build and read frames through this
//! module; no caller outside this crate computes a header's offset.

use crate::ethernet::{self, ETHERTYPE_IPV4};
use crate::ipv4::{self, ECN_CE};
use crate::recovery::SEQ_VALID;
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

/// A zero-copy view over a whole frame: its Ethernet, IPv4 and SwitchGNN headers (and lanes)
/// at their fixed offsets, as one typed view (a SwitchGNN frame's IPv4 header has no options;
/// there is no UDP header: SwitchGNN is IP protocol [`IP_PROTO_SWITCHGNN`]). Reading or
/// patching a field of a frame already built or checked needs no parse and no offset:
/// [`Frame::set_seq`] numbers a Data frame as it leaves, [`Frame::set_ecn_ce`] marks
/// congestion and fixes the IPv4 checksum up, [`Frame::sgnn_mut`] rewrites header fields.
#[derive(Debug, Clone)]
pub struct Frame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Frame<T> {
    /// Wraps without checks: for a frame this process built (or checked) itself. The header
    /// views panic on a buffer too short for them.
    #[inline]
    pub fn new_unchecked(buffer: T) -> Frame<T> {
        Frame { buffer }
    }

    /// Wraps an IPv4 frame of any protocol, checking the Ethernet header (EtherType IPv4) and
    /// the IPv4 header ([`ipv4::Packet::new_checked`]: version 4, no options, its total length
    /// within the buffer). The SwitchGNN header is not checked: [`Frame::is_switchgnn`] says
    /// whether one follows, and [`parse`] checks a whole SwitchGNN frame.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Frame<T>, Error> {
        let eth = ethernet::Frame::new_checked(buffer.as_ref())?;
        if eth.ethertype() != ETHERTYPE_IPV4 {
            return Err(Error::NotIpv4);
        }
        ipv4::Packet::new_checked(eth.payload()).map_err(|e| e.offset_by(ETHERNET_HEADER_LEN))?;
        Ok(Frame { buffer })
    }

    /// The underlying buffer.
    #[inline]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The Ethernet header.
    #[inline]
    pub fn ethernet(&self) -> ethernet::Frame<&[u8]> {
        ethernet::Frame::new_unchecked(self.buffer.as_ref())
    }

    /// The IPv4 header (and what follows it).
    #[inline]
    pub fn ipv4(&self) -> ipv4::Packet<&[u8]> {
        ipv4::Packet::new_unchecked(&self.buffer.as_ref()[ETHERNET_HEADER_LEN..])
    }

    /// Whether the IPv4 header says a SwitchGNN header follows (protocol
    /// [`IP_PROTO_SWITCHGNN`]).
    #[inline]
    pub fn is_switchgnn(&self) -> bool {
        self.ipv4().protocol() == IP_PROTO_SWITCHGNN
    }

    /// The SwitchGNN header (and lanes).
    #[inline]
    pub fn sgnn(&self) -> sgnn::Packet<&[u8]> {
        sgnn::Packet::new_unchecked(&self.buffer.as_ref()[SGNN_AT..])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Frame<T> {
    /// The IPv4 header, to rewrite (a change of its fields needs
    /// [`ipv4::Packet::fill_checksum`], as [`Frame::set_ecn_ce`] does).
    #[inline]
    pub fn ipv4_mut(&mut self) -> ipv4::Packet<&mut [u8]> {
        ipv4::Packet::new_unchecked(&mut self.buffer.as_mut()[ETHERNET_HEADER_LEN..])
    }

    /// The SwitchGNN header (and lanes), to rewrite (no checksum covers it).
    #[inline]
    pub fn sgnn_mut(&mut self) -> sgnn::Packet<&mut [u8]> {
        sgnn::Packet::new_unchecked(&mut self.buffer.as_mut()[SGNN_AT..])
    }

    /// Congestion experienced: IPv4 ECN [`ECN_CE`], the DSCP kept, the header checksum fixed
    /// up.
    #[inline]
    pub fn set_ecn_ce(&mut self) {
        let mut ip = self.ipv4_mut();
        let dscp = ip.dscp();
        ip.set_dscp_ecn(dscp, ECN_CE);
        ip.fill_checksum();
    }

    /// Numbers a Data frame as it leaves: transmission number `n` in `dst_id`, with
    /// [`SEQ_VALID`] (`crate::recovery`).
    #[inline]
    pub fn set_seq(&mut self, n: u16) {
        self.sgnn_mut().set_dst_id(SEQ_VALID | n as u32);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PacketType;

    fn data_frame() -> Vec<u8> {
        let mut s = sgnn::Repr::new(PacketType::Data);
        s.src_id = 7;
        s.dst_id = SEQ_VALID;
        let r = FrameRepr {
            eth: ethernet::Repr::default(),
            ip: ipv4::Repr {
                ttl: 64,
                dscp: 10,
                ..Default::default()
            },
            sgnn: s,
        };
        let mut buf = vec![0u8; r.frame_len()];
        r.emit(Some(&[1; LANES]), &mut buf).unwrap();
        buf
    }

    /// The view reads and patches what `parse` reads, at the same places.
    #[test]
    fn the_frame_view_patches_what_parse_reads() {
        let mut buf = data_frame();
        let mut f = Frame::new_checked(&mut buf[..]).unwrap();
        assert!(f.is_switchgnn());
        assert_eq!(f.sgnn().src_id(), 7);
        f.set_seq(5);
        f.set_ecn_ce();
        f.sgnn_mut().set_round(3);
        let (r, lanes) = parse(&buf).unwrap();
        assert_eq!(r.sgnn.dst_id, SEQ_VALID | 5);
        assert_eq!(r.sgnn.round, 3);
        assert_eq!((r.ip.dscp, r.ip.ecn), (10, ECN_CE));
        assert_eq!(lanes, Some([1; LANES]));
        let f = Frame::new_checked(&buf[..]).unwrap();
        assert!(f.ipv4().verify_checksum());
        assert_eq!(f.ethernet().ethertype(), ETHERTYPE_IPV4);
    }

    /// A checked view needs Ethernet with EtherType IPv4 and a sound IPv4 header.
    #[test]
    fn a_checked_frame_view_is_ipv4() {
        let buf = data_frame();
        assert!(Frame::new_checked(&buf[..10]).is_err());
        let mut other = buf.clone();
        other[12] = 0x86;
        assert_eq!(Frame::new_checked(&other[..]).unwrap_err(), Error::NotIpv4);
        assert!(Frame::new_checked(&buf[..ETHERNET_HEADER_LEN + 10]).is_err());
    }
}
