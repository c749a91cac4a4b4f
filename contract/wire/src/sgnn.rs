//! The SwitchGNN header and its value lanes.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-------+-------+-+-+-+-+-------+-------------------------------+
//! |Version| Type  |A|F|E|R| rsvd  |           Worker_id           |
//! +-------+-------+-+-+-+-+-------+-------------------------------+
//! |                            Src_id                             |
//! +---------------------------------------------------------------+
//! |                            Dst_id                             |
//! +-------------------------------+-------------------------------+
//! |           Block_id            |             Count             |
//! +-------------------------------+-------------------------------+
//! |             Round             |            Segment            |
//! +---------------+---------------+-------------------------------+
//! |     Pass      |   Frac_bits   |              Job              |
//! +---------------+---------------+-------------------------------+
//! |            Lane 0 .. Lane 31 (int32 each, Data/Result/Bypass) |
//! +---------------------------------------------------------------+
//! A = IS_ACK, F = IS_FETCH, E = ECN, R = RESEND
//! Job = the value the switch was loaded with, in every frame (see [`Repr::job`])
//! ```

use crate::{Error, HEADER_LEN, LANES, LANE_BYTES, PAYLOAD_LEN, VERSION};

mod field {
    use core::ops::Range;
    pub const VER_TYPE: usize = 0;
    pub const FLAGS: usize = 1;
    pub const WORKER: Range<usize> = 2..4;
    pub const SRC: Range<usize> = 4..8;
    pub const DST: Range<usize> = 8..12;
    pub const BLOCK: Range<usize> = 12..14;
    pub const COUNT: Range<usize> = 14..16;
    pub const ROUND: Range<usize> = 16..18;
    pub const SEGMENT: Range<usize> = 18..20;
    pub const PASS: usize = 20;
    pub const FRAC: usize = 21;
    pub const JOB: Range<usize> = 22..24;
    pub const LANES: usize = 24;
}

/// What a packet is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum PacketType {
    /// A feature segment from a worker to the switch, to be multicast into aggregators.
    Data = 0,
    /// A completed aggregate from the switch to the destination vertex's worker.
    Result = 1,
    /// A worker tells the sources' workers that a destination's contributions arrived.
    Ack = 2,
    /// A worker asks a source's owner to resend a feature after a timeout.
    FetchReq = 3,
    /// An un-aggregated feature for host-side aggregation (fetch replies, resent data, cut
    /// edges and overflow).
    Bypass = 4,
    /// Worker -> switch: this worker finished this block.
    BlockDone = 5,
    /// Switch -> all workers: every worker finished this block.
    BlockAdvance = 6,
}

impl PacketType {
    /// Decodes the type nibble.
    pub fn from_u8(x: u8) -> Result<PacketType, Error> {
        Ok(match x {
            0 => PacketType::Data,
            1 => PacketType::Result,
            2 => PacketType::Ack,
            3 => PacketType::FetchReq,
            4 => PacketType::Bypass,
            5 => PacketType::BlockDone,
            6 => PacketType::BlockAdvance,
            t => return Err(Error::BadType(t)),
        })
    }

    /// True for the types that carry value lanes.
    pub const fn has_lanes(self) -> bool {
        matches!(
            self,
            PacketType::Data | PacketType::Result | PacketType::Bypass
        )
    }

    /// SwitchGNN bytes (header plus lanes, if any) of a packet of this type.
    pub const fn packet_len(self) -> usize {
        if self.has_lanes() {
            HEADER_LEN + PAYLOAD_LEN
        } else {
            HEADER_LEN
        }
    }
}

/// The one-bit fields of the paper's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Flags {
    /// Is_ACK: set exactly on Ack packets.
    pub ack: bool,
    /// Is_Fetch: set exactly on FetchReq packets.
    pub fetch: bool,
    /// ECN: the switch saw its queue over the threshold (sticky through aggregation).
    pub ecn: bool,
    /// Resend: a retransmission; the switch releases the aggregator and bypasses it.
    pub resend: bool,
}

impl Flags {
    const ACK: u8 = 0x80;
    const FETCH: u8 = 0x40;
    const ECN: u8 = 0x20;
    const RESEND: u8 = 0x10;
    const RESERVED: u8 = 0x0f;

    /// Encodes into the flags byte.
    pub const fn bits(self) -> u8 {
        (if self.ack { Self::ACK } else { 0 })
            | (if self.fetch { Self::FETCH } else { 0 })
            | (if self.ecn { Self::ECN } else { 0 })
            | (if self.resend { Self::RESEND } else { 0 })
    }

    /// Decodes the flags byte (reserved bits must be zero).
    pub fn from_bits(b: u8) -> Result<Flags, Error> {
        if b & Self::RESERVED != 0 {
            return Err(Error::ReservedNonZero);
        }
        Ok(Flags {
            ack: b & Self::ACK != 0,
            fetch: b & Self::FETCH != 0,
            ecn: b & Self::ECN != 0,
            resend: b & Self::RESEND != 0,
        })
    }
}

/// A zero-copy view over a SwitchGNN header and its lanes.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

macro_rules! get_be {
    ($name:ident, $t:ty, $f:expr, $doc:expr) => {
        #[doc = $doc]
        #[inline]
        pub fn $name(&self) -> $t {
            <$t>::from_be_bytes(self.buffer.as_ref()[$f].try_into().unwrap())
        }
    };
}

macro_rules! set_be {
    ($name:ident, $t:ty, $f:expr, $doc:expr) => {
        #[doc = $doc]
        #[inline]
        pub fn $name(&mut self, v: $t) {
            self.buffer.as_mut()[$f].copy_from_slice(&v.to_be_bytes());
        }
    };
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps without checks (getters may panic on a short buffer).
    pub fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps, checking the buffer holds the header and, for types with values, the lanes.
    pub fn new_checked(buffer: T) -> Result<Packet<T>, Error> {
        let have = buffer.as_ref().len();
        if have < HEADER_LEN {
            return Err(Error::Truncated {
                need: HEADER_LEN,
                have,
            });
        }
        let p = Packet { buffer };
        if let Ok(t) = PacketType::from_u8(p.type_nibble()) {
            if have < t.packet_len() {
                return Err(Error::Truncated {
                    need: t.packet_len(),
                    have,
                });
            }
        }
        Ok(p)
    }

    /// The underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Version nibble.
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VER_TYPE] >> 4
    }
    /// Type nibble, undecoded.
    pub fn type_nibble(&self) -> u8 {
        self.buffer.as_ref()[field::VER_TYPE] & 0x0f
    }
    /// Flags byte, undecoded.
    pub fn flags_byte(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS]
    }
    get_be!(worker_id, u16, field::WORKER, "Worker id.");
    get_be!(src_id, u32, field::SRC, "Source vertex.");
    get_be!(dst_id, u32, field::DST, "Destination vertex.");
    get_be!(block_id, u16, field::BLOCK, "Block id.");
    get_be!(count, u16, field::COUNT, "Count.");
    get_be!(round, u16, field::ROUND, "Round (layer) tag.");
    get_be!(
        segment,
        u16,
        field::SEGMENT,
        "Segment of the feature vector."
    );
    get_be!(job, u16, field::JOB, "Job value (`Repr::job`).");
    /// Recirculation pass.
    pub fn pass(&self) -> u8 {
        self.buffer.as_ref()[field::PASS]
    }
    /// Fixed-point fraction bits of the lanes.
    pub fn frac_bits(&self) -> u8 {
        self.buffer.as_ref()[field::FRAC]
    }
    /// Lane `i` (0..32).
    #[inline]
    pub fn lane(&self, i: usize) -> i32 {
        let at = field::LANES + i * LANE_BYTES;
        i32::from_be_bytes(self.buffer.as_ref()[at..at + 4].try_into().unwrap())
    }
    /// All 32 lanes.
    #[inline]
    pub fn lanes(&self) -> [i32; LANES] {
        let b = &self.buffer.as_ref()[field::LANES..field::LANES + PAYLOAD_LEN];
        lanes_from_be(b.try_into().expect("the lanes are PAYLOAD_LEN bytes"))
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets version and type.
    pub fn set_version_type(&mut self, version: u8, t: PacketType) {
        self.buffer.as_mut()[field::VER_TYPE] = (version << 4) | t as u8;
    }
    /// Sets the flags byte.
    pub fn set_flags(&mut self, f: Flags) {
        self.buffer.as_mut()[field::FLAGS] = f.bits();
    }
    set_be!(set_worker_id, u16, field::WORKER, "Sets the worker id.");
    set_be!(set_src_id, u32, field::SRC, "Sets the source vertex.");
    set_be!(set_dst_id, u32, field::DST, "Sets the destination vertex.");
    set_be!(set_block_id, u16, field::BLOCK, "Sets the block id.");
    set_be!(set_count, u16, field::COUNT, "Sets the count.");
    set_be!(set_round, u16, field::ROUND, "Sets the round tag.");
    set_be!(set_segment, u16, field::SEGMENT, "Sets the segment.");
    set_be!(set_job, u16, field::JOB, "Sets the job value.");
    /// Sets the pass.
    pub fn set_pass(&mut self, p: u8) {
        self.buffer.as_mut()[field::PASS] = p;
    }
    /// Sets the fraction bits.
    pub fn set_frac_bits(&mut self, f: u8) {
        self.buffer.as_mut()[field::FRAC] = f;
    }
    /// Sets lane `i`.
    #[inline]
    pub fn set_lane(&mut self, i: usize, v: i32) {
        let at = field::LANES + i * LANE_BYTES;
        self.buffer.as_mut()[at..at + 4].copy_from_slice(&v.to_be_bytes());
    }
    /// Writes all 32 lanes.
    #[inline]
    pub fn copy_lanes_from(&mut self, lanes: &[i32; LANES]) {
        let b = &mut self.buffer.as_mut()[field::LANES..field::LANES + PAYLOAD_LEN];
        for (c, v) in b.chunks_exact_mut(4).zip(lanes) {
            c.copy_from_slice(&v.to_be_bytes());
        }
    }
}

/// The 32 big-endian lanes as integers. A receiver reads them from every frame with values,
/// so on x86-64 CPUs with AVX2 (checked once at run time) the byte swaps run 8 lanes per
/// instruction; without it one lane at a time. The result is the same.
#[inline]
fn lanes_from_be(b: &[u8; PAYLOAD_LEN]) -> [i32; LANES] {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: `lanes_from_be_avx2` only needs the AVX2 instructions, which the CPU was
        // just found to have; it reads nothing but the array it is given.
        return unsafe { lanes_from_be_avx2(b) };
    }
    lanes_from_be_loop(b)
}

/// [`lanes_from_be`]'s loop compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn lanes_from_be_avx2(b: &[u8; PAYLOAD_LEN]) -> [i32; LANES] {
    lanes_from_be_loop(b)
}

#[inline(always)]
fn lanes_from_be_loop(b: &[u8; PAYLOAD_LEN]) -> [i32; LANES] {
    let mut out = [0i32; LANES];
    for (i, o) in out.iter_mut().enumerate() {
        let at = i * LANE_BYTES;
        *o = i32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
    }
    out
}

/// The parsed meaning of a SwitchGNN header (lanes are read through the view).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    /// Packet type.
    pub packet_type: PacketType,
    /// The paper's one-bit fields (ECN and RESEND are free; ACK/FETCH follow the type).
    pub flags: Flags,
    /// Worker id.
    pub worker_id: u16,
    /// Source vertex (Src_id).
    pub src_id: u32,
    /// Destination vertex (Dst_id).
    pub dst_id: u32,
    /// Block id (Block_id).
    pub block_id: u16,
    /// Count.
    pub count: u16,
    /// Round (layer) tag.
    pub round: u16,
    /// Segment.
    pub segment: u16,
    /// Recirculation pass.
    pub pass: u8,
    /// Fixed-point fraction bits.
    pub frac_bits: u8,
    /// The job value: chosen when the switch is loaded (`set_config`'s `job`), learned by a
    /// daemon from the answer to its start-up probe, carried in every frame and checked by
    /// the switch and the daemons, so frames of a stale or foreign job never mix into this
    /// one's sums (docs/host.md, "Threat model"). Bytes 22..24, reserved (zero) in protocol
    /// drafts before it.
    pub job: u16,
}

impl Repr {
    /// A header of `packet_type` with every other field zero and ACK/FETCH set as the type
    /// requires.
    pub fn new(packet_type: PacketType) -> Repr {
        Repr {
            packet_type,
            flags: Flags {
                ack: packet_type == PacketType::Ack,
                fetch: packet_type == PacketType::FetchReq,
                ..Flags::default()
            },
            worker_id: 0,
            src_id: 0,
            dst_id: 0,
            block_id: 0,
            count: 0,
            round: 0,
            segment: 0,
            pass: 0,
            frac_bits: 0,
            job: 0,
        }
    }

    /// Parses and validates a view: version, type, length for the type, reserved flag bits,
    /// IS_ACK / IS_FETCH against the type, and `frac_bits`. Never panics, even on an
    /// unchecked view.
    #[inline]
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr, Error> {
        let have = p.buffer.as_ref().len();
        if have < HEADER_LEN {
            return Err(Error::Truncated {
                need: HEADER_LEN,
                have,
            });
        }
        if p.version() != VERSION {
            return Err(Error::BadVersion(p.version()));
        }
        let packet_type = PacketType::from_u8(p.type_nibble())?;
        if have < packet_type.packet_len() {
            return Err(Error::Truncated {
                need: packet_type.packet_len(),
                have,
            });
        }
        let flags = Flags::from_bits(p.flags_byte())?;
        let repr = Repr {
            packet_type,
            flags,
            worker_id: p.worker_id(),
            src_id: p.src_id(),
            dst_id: p.dst_id(),
            block_id: p.block_id(),
            count: p.count(),
            round: p.round(),
            segment: p.segment(),
            pass: p.pass(),
            frac_bits: p.frac_bits(),
            job: p.job(),
        };
        repr.check()?;
        Ok(repr)
    }

    /// Checks what the parser checks beyond bytes: IS_ACK set iff the type is Ack, IS_FETCH
    /// set iff it is FetchReq, and `frac_bits <= 30`. [`crate::FrameRepr::emit`] calls it so
    /// nothing is emitted that a receiver would reject.
    #[inline]
    pub fn check(&self) -> Result<(), Error> {
        if self.flags.ack != (self.packet_type == PacketType::Ack)
            || self.flags.fetch != (self.packet_type == PacketType::FetchReq)
        {
            return Err(Error::InconsistentFlags);
        }
        if self.frac_bits > crate::codec::FixedPoint::MAX_FRAC_BITS {
            return Err(Error::BadFracBits(self.frac_bits));
        }
        Ok(())
    }

    /// Writes the header (not the lanes).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) {
        p.set_version_type(VERSION, self.packet_type);
        p.set_flags(self.flags);
        p.set_worker_id(self.worker_id);
        p.set_src_id(self.src_id);
        p.set_dst_id(self.dst_id);
        p.set_block_id(self.block_id);
        p.set_count(self.count);
        p.set_round(self.round);
        p.set_segment(self.segment);
        p.set_pass(self.pass);
        p.set_frac_bits(self.frac_bits);
        p.set_job(self.job);
    }

    /// A daemon's start-up probe, or the switch's answer to it: an Ack to
    /// [`crate::PROBE_DST`].
    pub fn is_probe(&self) -> bool {
        self.packet_type == PacketType::Ack && self.dst_id == crate::PROBE_DST
    }

    /// SwitchGNN bytes this header needs (header plus lanes if the type has them).
    pub fn buffer_len(&self) -> usize {
        self.packet_type.packet_len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The vectorised byte swaps (AVX2 where the CPU has it) against the loop and against
    /// reading one lane at a time.
    #[test]
    fn all_lanes_read_as_each_lane_reads() {
        let mut buf = [0u8; field::LANES + PAYLOAD_LEN];
        let mut z = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..200 {
            for byte in buf[field::LANES..].iter_mut() {
                z ^= z << 13;
                z ^= z >> 7;
                z ^= z << 17;
                *byte = z as u8;
            }
            let p = Packet::new_unchecked(&buf[..]);
            let all = p.lanes();
            for (i, &v) in all.iter().enumerate() {
                assert_eq!(v, p.lane(i), "lane {i}");
            }
            let b: &[u8; PAYLOAD_LEN] = buf[field::LANES..].try_into().unwrap();
            assert_eq!(lanes_from_be_loop(b), all);
        }
    }
}
