//! Ethernet II frames: a zero-copy view and its owned representation.

use crate::{Error, ETHERNET_HEADER_LEN};

/// EtherType of IPv4.
pub const ETHERTYPE_IPV4: u16 = 0x0800;

mod field {
    use core::ops::Range;
    //  0                   1                   2                   3
    //  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
    // +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    // |                    Destination MAC (6 bytes)                  |
    // +                               +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    // |                               |                               |
    // +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+      Source MAC (6 bytes)     +
    // |                                                               |
    // +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    // |           EtherType           |   Payload (IPv4) ...
    // +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    pub const DST: Range<usize> = 0..6;
    pub const SRC: Range<usize> = 6..12;
    pub const ETHERTYPE: Range<usize> = 12..14;
    pub const PAYLOAD: usize = 14;
}

/// A view over an Ethernet II frame.
#[derive(Debug, Clone)]
pub struct Frame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Frame<T> {
    /// Wraps a buffer without checks.
    pub fn new_unchecked(buffer: T) -> Frame<T> {
        Frame { buffer }
    }

    /// Wraps a buffer, checking it holds a header.
    pub fn new_checked(buffer: T) -> Result<Frame<T>, Error> {
        let have = buffer.as_ref().len();
        if have < ETHERNET_HEADER_LEN {
            return Err(Error::Truncated {
                need: ETHERNET_HEADER_LEN,
                have,
            });
        }
        Ok(Frame { buffer })
    }

    /// Destination MAC.
    pub fn dst(&self) -> [u8; 6] {
        self.buffer.as_ref()[field::DST].try_into().unwrap()
    }

    /// Source MAC.
    pub fn src(&self) -> [u8; 6] {
        self.buffer.as_ref()[field::SRC].try_into().unwrap()
    }

    /// EtherType.
    pub fn ethertype(&self) -> u16 {
        let b = &self.buffer.as_ref()[field::ETHERTYPE];
        u16::from_be_bytes([b[0], b[1]])
    }

    /// Bytes after the header.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PAYLOAD..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Frame<T> {
    /// Sets the destination MAC.
    pub fn set_dst(&mut self, mac: [u8; 6]) {
        self.buffer.as_mut()[field::DST].copy_from_slice(&mac);
    }
    /// Sets the source MAC.
    pub fn set_src(&mut self, mac: [u8; 6]) {
        self.buffer.as_mut()[field::SRC].copy_from_slice(&mac);
    }
    /// Sets the EtherType.
    pub fn set_ethertype(&mut self, t: u16) {
        self.buffer.as_mut()[field::ETHERTYPE].copy_from_slice(&t.to_be_bytes());
    }
    /// Mutable bytes after the header.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD..]
    }
}

/// The meaning of an Ethernet header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Repr {
    /// Destination MAC.
    pub dst: [u8; 6],
    /// Source MAC.
    pub src: [u8; 6],
    /// EtherType.
    pub ethertype: u16,
}

impl Repr {
    /// Parses a checked frame.
    pub fn parse<T: AsRef<[u8]>>(f: &Frame<T>) -> Repr {
        Repr {
            dst: f.dst(),
            src: f.src(),
            ethertype: f.ethertype(),
        }
    }
    /// Writes the header.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, f: &mut Frame<T>) {
        f.set_dst(self.dst);
        f.set_src(self.src);
        f.set_ethertype(self.ethertype);
    }
    /// Header length.
    pub const fn buffer_len(&self) -> usize {
        ETHERNET_HEADER_LEN
    }
}
