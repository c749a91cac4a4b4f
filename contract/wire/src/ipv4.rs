//! IPv4 headers (no options): a zero-copy view and its owned representation.

use crate::{Error, IPV4_HEADER_LEN};

mod field {
    use core::ops::Range;
    //  0                   1                   2                   3
    //  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
    // +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    // |Version|  IHL  |   DSCP    |ECN|          Total Length         |
    // +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    // |         Identification        |Flags|      Fragment Offset    |
    // +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    // |  Time to Live |    Protocol   |         Header Checksum       |
    // +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    // |                       Source Address                          |
    // +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    // |                    Destination Address                        |
    // +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    pub const VER_IHL: usize = 0;
    pub const DSCP_ECN: usize = 1;
    pub const LENGTH: Range<usize> = 2..4;
    pub const IDENT: Range<usize> = 4..6;
    pub const FLG_OFF: Range<usize> = 6..8;
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    pub const CHECKSUM: Range<usize> = 10..12;
    pub const SRC: Range<usize> = 12..16;
    pub const DST: Range<usize> = 16..20;
}

/// The ECN code point "congestion experienced" (RFC 3168; `ECN_CE` of the P4 program): what a
/// congested switch or queue writes into the 2-bit ECN field. The one definition, used by the
/// switches, the simulator and the hosts.
pub const ECN_CE: u8 = 3;

/// RFC 1071 ones' complement sum of a header, with the checksum field included.
#[inline]
pub fn checksum(header: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    let words = header.chunks_exact(2);
    if let [last] = words.remainder() {
        sum += u16::from_be_bytes([*last, 0]) as u32;
    }
    for c in words {
        sum += u16::from_be_bytes([c[0], c[1]]) as u32;
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// A view over an IPv4 packet.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps without checks.
    pub fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps, checking version 4, IHL 5 (SwitchGNN frames carry no options) and that the
    /// total length fits the buffer (trailing Ethernet padding is allowed).
    pub fn new_checked(buffer: T) -> Result<Packet<T>, Error> {
        let b = buffer.as_ref();
        if b.len() < IPV4_HEADER_LEN {
            return Err(Error::Truncated {
                need: IPV4_HEADER_LEN,
                have: b.len(),
            });
        }
        if b[field::VER_IHL] >> 4 != 4 {
            return Err(Error::NotIpv4);
        }
        if b[field::VER_IHL] & 0x0f != 5 {
            return Err(Error::BadIpv4);
        }
        let p = Packet { buffer };
        let total = p.total_len() as usize;
        if total < IPV4_HEADER_LEN {
            return Err(Error::BadIpv4);
        }
        if total > p.buffer.as_ref().len() {
            return Err(Error::Truncated {
                need: total,
                have: p.buffer.as_ref().len(),
            });
        }
        Ok(p)
    }

    /// DSCP (6 bits).
    pub fn dscp(&self) -> u8 {
        self.buffer.as_ref()[field::DSCP_ECN] >> 2
    }
    /// ECN (2 bits).
    pub fn ecn(&self) -> u8 {
        self.buffer.as_ref()[field::DSCP_ECN] & 3
    }
    /// Total length.
    pub fn total_len(&self) -> u16 {
        let b = &self.buffer.as_ref()[field::LENGTH];
        u16::from_be_bytes([b[0], b[1]])
    }
    /// Identification.
    pub fn ident(&self) -> u16 {
        let b = &self.buffer.as_ref()[field::IDENT];
        u16::from_be_bytes([b[0], b[1]])
    }
    /// More Fragments flag.
    pub fn more_frags(&self) -> bool {
        self.buffer.as_ref()[field::FLG_OFF.start] & 0x20 != 0
    }
    /// Fragment offset, in 8-byte units.
    pub fn frag_offset(&self) -> u16 {
        let b = &self.buffer.as_ref()[field::FLG_OFF];
        u16::from_be_bytes([b[0], b[1]]) & 0x1fff
    }
    /// Time to live.
    pub fn ttl(&self) -> u8 {
        self.buffer.as_ref()[field::TTL]
    }
    /// Protocol.
    pub fn protocol(&self) -> u8 {
        self.buffer.as_ref()[field::PROTOCOL]
    }
    /// Source address.
    pub fn src(&self) -> [u8; 4] {
        self.buffer.as_ref()[field::SRC].try_into().unwrap()
    }
    /// Destination address.
    pub fn dst(&self) -> [u8; 4] {
        self.buffer.as_ref()[field::DST].try_into().unwrap()
    }
    /// True when the header checksum verifies.
    pub fn verify_checksum(&self) -> bool {
        checksum(&self.buffer.as_ref()[..IPV4_HEADER_LEN]) == 0
    }
    /// The payload, up to the total length (Ethernet padding excluded).
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[IPV4_HEADER_LEN..self.total_len() as usize]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets DSCP and ECN.
    pub fn set_dscp_ecn(&mut self, dscp: u8, ecn: u8) {
        self.buffer.as_mut()[field::DSCP_ECN] = (dscp << 2) | (ecn & 3);
    }
    /// Recomputes the header checksum.
    pub fn fill_checksum(&mut self) {
        self.buffer.as_mut()[field::CHECKSUM].copy_from_slice(&[0, 0]);
        let c = checksum(&self.buffer.as_ref()[..IPV4_HEADER_LEN]);
        self.buffer.as_mut()[field::CHECKSUM].copy_from_slice(&c.to_be_bytes());
    }
    /// Mutable payload.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = self.total_len() as usize;
        &mut self.buffer.as_mut()[IPV4_HEADER_LEN..end]
    }
}

/// The meaning of an IPv4 header as SwitchGNN uses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Repr {
    /// Source address.
    pub src: [u8; 4],
    /// Destination address.
    pub dst: [u8; 4],
    /// Protocol.
    pub protocol: u8,
    /// Bytes after the IPv4 header.
    pub payload_len: usize,
    /// Time to live.
    pub ttl: u8,
    /// DSCP (traffic class, for the switch's priority queues).
    pub dscp: u8,
    /// ECN codepoint.
    pub ecn: u8,
    /// Identification.
    pub ident: u16,
}

impl Repr {
    /// Parses a checked packet, verifying the checksum and rejecting fragments: a
    /// SwitchGNN packet is far below any MTU, so a fragment is never one of ours, and its
    /// first piece would otherwise be misread as a short packet.
    #[inline]
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr, Error> {
        let have = p.buffer.as_ref().len();
        if have < IPV4_HEADER_LEN {
            return Err(Error::Truncated {
                need: IPV4_HEADER_LEN,
                have,
            });
        }
        if !p.verify_checksum() {
            return Err(Error::BadChecksum);
        }
        if p.more_frags() || p.frag_offset() != 0 {
            return Err(Error::Fragmented);
        }
        Ok(Repr {
            src: p.src(),
            dst: p.dst(),
            protocol: p.protocol(),
            payload_len: p.total_len() as usize - IPV4_HEADER_LEN,
            ttl: p.ttl(),
            dscp: p.dscp(),
            ecn: p.ecn(),
            ident: p.ident(),
        })
    }

    /// Writes the header (with DF set and the checksum) into the first 20 bytes of `buf`.
    /// A field too wide for the wire (DSCP > 63, ECN > 3, total length > 65535) is
    /// [`Error::BadIpv4`] rather than silently truncated.
    pub fn emit(&self, buf: &mut [u8]) -> Result<(), Error> {
        if self.dscp > 63 || self.ecn > 3 || self.payload_len > 65535 - IPV4_HEADER_LEN {
            return Err(Error::BadIpv4);
        }
        if buf.len() < IPV4_HEADER_LEN {
            return Err(Error::BufferTooSmall {
                need: IPV4_HEADER_LEN,
                have: buf.len(),
            });
        }
        let total = (IPV4_HEADER_LEN + self.payload_len) as u16;
        let b = &mut buf[..IPV4_HEADER_LEN];
        b[field::VER_IHL] = 0x45;
        b[field::DSCP_ECN] = (self.dscp << 2) | (self.ecn & 3);
        b[field::LENGTH].copy_from_slice(&total.to_be_bytes());
        b[field::IDENT].copy_from_slice(&self.ident.to_be_bytes());
        b[field::FLG_OFF].copy_from_slice(&0x4000u16.to_be_bytes()); // DF
        b[field::TTL] = self.ttl;
        b[field::PROTOCOL] = self.protocol;
        b[field::SRC].copy_from_slice(&self.src);
        b[field::DST].copy_from_slice(&self.dst);
        b[field::CHECKSUM].copy_from_slice(&[0, 0]);
        let c = checksum(b);
        b[field::CHECKSUM].copy_from_slice(&c.to_be_bytes());
        Ok(())
    }

    /// Header length.
    pub const fn buffer_len(&self) -> usize {
        IPV4_HEADER_LEN
    }
}
