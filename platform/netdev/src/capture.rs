//! Packet captures in pcapng, the file format Wireshark and `tshark` read (with
//! `tools/wireshark/sgnn.lua` they decode the SwitchGNN header and lanes): what
//! `softswitch --pcap` and `sgnn-hostd --pcap` write, and what tests read back.
//!
//! - One pcapng interface per `(name, description)` given to [`PcapNg::create`], link type
//!   Ethernet, snap length [`SNAPLEN`], timestamps in nanoseconds (`if_tsresol` 9).
//! - Every frame is an enhanced packet block on its interface, stamped with the time it was
//!   seen (the system clock, [`now`]), its direction in the pcapng `epb_flags` option
//!   ([`Direction`]: Wireshark's `frame.packet_flags_direction`, 1 inbound, 2 outbound).
//! - Bounded: a capture never grows past `max_bytes`. The frame that would cross the bound is
//!   not written; the capture says so once on stderr, stops, and counts that frame and every
//!   later one as missed. The file stays a valid pcapng file.
//! - Writing a frame never fails: after a write error the capture says so once on stderr and
//!   counts the later frames as missed, as past the bound.
//!
//! The datapaths that capture wrap themselves only when asked to, so without a capture none of
//! this runs.

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use pcap_file::pcapng::blocks::enhanced_packet::{EnhancedPacketBlock, EnhancedPacketOption};
use pcap_file::pcapng::blocks::interface_description::{
    InterfaceDescriptionBlock, InterfaceDescriptionOption,
};
use pcap_file::pcapng::{Block, PcapNgReader, PcapNgWriter};
use pcap_file::DataLink;

use crate::Error;

/// Default bound of a capture (`--pcap-max-bytes`): 1 GiB.
pub const DEFAULT_MAX_BYTES: u64 = 1 << 30;

/// Largest frame captured whole (the pcapng snap length); longer frames are cut.
pub const SNAPLEN: u32 = 65535;

/// The counter of frames written, as the daemons' and the switch's stats name it.
pub const FRAMES_KEY: &str = "pcap_frames";
/// The counter of frames not written (past the bound or after an error).
pub const MISSED_KEY: &str = "pcap_missed";

/// Bytes of an enhanced packet block around its (padded) data: block type and the two copies
/// of the block length (12), interface, timestamp (2 words), captured and original length
/// (20), the `epb_flags` option (4 + 4) and the end-of-options marker (4).
pub const EPB_OVERHEAD: u64 = 12 + 20 + 8 + 4;

/// Which way a frame went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Received.
    Inbound,
    /// Sent.
    Outbound,
}

impl Direction {
    /// The pcapng `epb_flags` value: direction bits 0-1 (inbound = 1, outbound = 2).
    pub fn epb_flags(self) -> u32 {
        match self {
            Direction::Inbound => 0b01,
            Direction::Outbound => 0b10,
        }
    }

    /// The direction in an `epb_flags` value, if it has one.
    pub fn from_epb_flags(flags: u32) -> Option<Direction> {
        match flags & 0b11 {
            0b01 => Some(Direction::Inbound),
            0b10 => Some(Direction::Outbound),
            _ => None,
        }
    }
}

/// The current time since the Unix epoch: a captured frame's timestamp.
pub fn now() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
}

/// Bytes an enhanced packet block of a `len`-byte frame takes in the file.
pub fn block_bytes(len: usize) -> u64 {
    EPB_OVERHEAD + len.min(SNAPLEN as usize).next_multiple_of(4) as u64
}

/// A pcapng file being written, bounded in bytes, with the interfaces given at creation.
pub struct PcapNg {
    writer: Option<PcapNgWriter<BufWriter<File>>>,
    path: PathBuf,
    /// Who writes (`softswitch`, `sgnn-hostd`), for the stderr messages.
    program: &'static str,
    interfaces: u32,
    max_bytes: u64,
    written: u64,
    frames: u64,
    missed: u64,
}

impl PcapNg {
    /// Creates `path` with one Ethernet interface per `(name, description)`; the file never
    /// grows past `max_bytes`. `program` starts the messages the capture prints on stderr.
    /// Fails if the file cannot be written or `max_bytes` cannot hold its headers.
    pub fn create(
        path: &Path,
        max_bytes: u64,
        interfaces: &[(&str, &str)],
        program: &'static str,
    ) -> Result<PcapNg, Error> {
        let what = || format!("cannot write the capture {}", path.display());
        let pcap_err = |source| Error::Pcap {
            what: what(),
            source,
        };
        let file = File::create(path).map_err(crate::io_err(what()))?;
        let mut writer = PcapNgWriter::new(BufWriter::new(file)).map_err(pcap_err)?;
        // The section header's size: what `PcapNgWriter::new` wrote.
        let mut sizer = CountingSink(0);
        PcapNgWriter::new(&mut sizer).map_err(pcap_err)?;
        let mut written = sizer.0;
        for &(name, description) in interfaces {
            let idb = InterfaceDescriptionBlock {
                linktype: DataLink::ETHERNET,
                snaplen: SNAPLEN,
                options: vec![
                    InterfaceDescriptionOption::IfName(Cow::Borrowed(name)),
                    InterfaceDescriptionOption::IfDescription(Cow::Borrowed(description)),
                    // Timestamps are written in nanoseconds.
                    InterfaceDescriptionOption::IfTsResol(9),
                ],
            };
            written += writer.write_pcapng_block(idb).map_err(pcap_err)? as u64;
        }
        if written > max_bytes {
            return Err(Error::CaptureTooSmall {
                max: max_bytes,
                need: written,
            });
        }
        writer.get_mut().flush().map_err(crate::io_err(what()))?;
        Ok(PcapNg {
            writer: Some(writer),
            path: path.to_owned(),
            program,
            interfaces: interfaces.len() as u32,
            max_bytes,
            written,
            frames: 0,
            missed: 0,
        })
    }

    /// Appends `frame`, seen on `interface` going `direction` at `timestamp` (since the Unix
    /// epoch; [`now`] for the current time). An interface past the last is written as the
    /// last, so the file stays valid. Never fails: past the bound, or after a write error,
    /// the frame is counted as missed and the reason printed once on stderr.
    pub fn write(
        &mut self,
        interface: u32,
        direction: Direction,
        timestamp: Duration,
        frame: &[u8],
    ) {
        let Some(writer) = self.writer.as_mut() else {
            self.missed += 1;
            return;
        };
        let size = block_bytes(frame.len());
        if self.written + size > self.max_bytes {
            eprintln!(
                "{}: capture {} reached --pcap-max-bytes {} after {} frames; not capturing any more",
                self.program,
                self.path.display(),
                self.max_bytes,
                self.frames
            );
            self.flush();
            self.writer = None;
            self.missed += 1;
            return;
        }
        let epb = EnhancedPacketBlock {
            interface_id: interface.min(self.interfaces.saturating_sub(1)),
            timestamp,
            original_len: frame.len() as u32,
            data: Cow::Borrowed(&frame[..frame.len().min(SNAPLEN as usize)]),
            options: vec![EnhancedPacketOption::Flags(direction.epb_flags())],
        };
        match writer.write_pcapng_block(epb) {
            Ok(n) => {
                self.written += n as u64;
                self.frames += 1;
            }
            Err(e) => {
                self.failed(&e);
                self.missed += 1;
            }
        }
    }

    /// [`PcapNg::write`] stamped with the current time.
    pub fn write_now(&mut self, interface: u32, direction: Direction, frame: &[u8]) {
        self.write(interface, direction, now(), frame);
    }

    /// Writes buffered frames to the file, so a reader sees them while the capture runs (the
    /// datapaths call this when idle).
    pub fn flush(&mut self) {
        if let Some(w) = self.writer.as_mut() {
            if let Err(e) = w.get_mut().flush() {
                self.failed(&e);
            }
        }
    }

    fn failed(&mut self, e: &dyn std::fmt::Display) {
        eprintln!(
            "{}: capture {}: {e}; not capturing any more",
            self.program,
            self.path.display()
        );
        self.writer = None;
    }

    /// The capture file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Frames written.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Frames not written (past the bound or after an error).
    pub fn missed(&self) -> u64 {
        self.missed
    }

    /// Bytes in the file (once flushed).
    pub fn bytes(&self) -> u64 {
        self.written
    }

    /// The capture's counters for a stats report: [`FRAMES_KEY`] and [`MISSED_KEY`].
    pub fn counters(&self) -> [(&'static str, u64); 2] {
        [(FRAMES_KEY, self.frames), (MISSED_KEY, self.missed)]
    }
}

impl Drop for PcapNg {
    fn drop(&mut self) {
        self.flush();
    }
}

/// Counts bytes written (to size the section header).
struct CountingSink(u64);

impl Write for CountingSink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A pcapng file read back: its interfaces' names, in order, and its frames.
#[derive(Debug, Clone, Default)]
pub struct Capture {
    /// `if_name` of every interface (empty if it has none).
    pub interfaces: Vec<String>,
    /// Every enhanced packet block, in file order.
    pub frames: Vec<Frame>,
}

/// One captured frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// Its interface.
    pub interface: u32,
    /// Its direction, if the block has `epb_flags` with one.
    pub direction: Option<Direction>,
    /// When it was seen (since the Unix epoch, for files written by [`PcapNg`]).
    pub timestamp: Duration,
    /// Its bytes as captured.
    pub data: Vec<u8>,
}

impl Capture {
    /// Frames on `interface` going `direction`.
    pub fn count(&self, interface: u32, direction: Direction) -> usize {
        self.frames
            .iter()
            .filter(|f| f.interface == interface && f.direction == Some(direction))
            .count()
    }
}

/// Reads a pcapng file (one section).
pub fn read(path: &Path) -> Result<Capture, Error> {
    let what = || format!("reading the capture {}", path.display());
    let pcap_err = |source| Error::Pcap {
        what: what(),
        source,
    };
    let file = File::open(path).map_err(crate::io_err(what()))?;
    let mut r = PcapNgReader::new(io::BufReader::new(file)).map_err(pcap_err)?;
    let mut c = Capture::default();
    while let Some(b) = r.next_block() {
        match b.map_err(pcap_err)? {
            Block::InterfaceDescription(i) => c.interfaces.push(
                i.options
                    .iter()
                    .find_map(|o| match o {
                        InterfaceDescriptionOption::IfName(n) => Some(n.to_string()),
                        _ => None,
                    })
                    .unwrap_or_default(),
            ),
            Block::EnhancedPacket(p) => c.frames.push(Frame {
                interface: p.interface_id,
                direction: p.options.iter().find_map(|o| match o {
                    EnhancedPacketOption::Flags(f) => Direction::from_epb_flags(*f),
                    _ => None,
                }),
                timestamp: p.timestamp,
                data: p.data.into_owned(),
            }),
            _ => {}
        }
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Direction::{Inbound, Outbound};

    const IFS: [(&str, &str); 3] = [
        ("port0", "worker 0"),
        ("port1", "worker 1"),
        ("unknown", "others"),
    ];

    #[test]
    fn frames_keep_their_interface_direction_and_timestamp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.pcapng");
        let mut c = PcapNg::create(&path, DEFAULT_MAX_BYTES, &IFS, "test").unwrap();
        let t = Duration::new(1_700_000_000, 123_456_789);
        c.write(1, Inbound, t, &[1, 2, 3]);
        c.write(0, Outbound, t + Duration::from_nanos(1), &[4; 60]);
        c.write(7, Inbound, t, &[5]); // past the last: the last interface
        c.write_now(2, Outbound, &[6; 7]);
        assert_eq!(c.counters(), [("pcap_frames", 4), ("pcap_missed", 0)]);
        let bytes = c.bytes();
        drop(c);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), bytes);
        let got = read(&path).unwrap();
        assert_eq!(got.interfaces, ["port0", "port1", "unknown"]);
        let frame = |interface, direction, timestamp, data: Vec<u8>| Frame {
            interface,
            direction: Some(direction),
            timestamp,
            data,
        };
        assert_eq!(
            got.frames[..3],
            [
                frame(1, Inbound, t, vec![1, 2, 3]),
                frame(0, Outbound, t + Duration::from_nanos(1), vec![4; 60]),
                frame(2, Inbound, t, vec![5]),
            ]
        );
        let last = &got.frames[3];
        assert_eq!((last.interface, last.direction), (2, Some(Outbound)));
        assert!(last.timestamp > t, "the current time, to the nanosecond");
        assert_eq!((got.count(2, Inbound), got.count(2, Outbound)), (1, 1));
    }

    #[test]
    fn the_bound_is_exact_and_leaves_a_valid_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.pcapng");
        let headers = PcapNg::create(&path, u64::MAX, &IFS[..1], "test")
            .unwrap()
            .bytes();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), headers);
        // Room for exactly three 186-byte frames (188 bytes padded).
        let max = headers + 3 * block_bytes(186);
        assert_eq!(block_bytes(186), EPB_OVERHEAD + 188);
        let mut c = PcapNg::create(&path, max, &IFS[..1], "test").unwrap();
        for i in 0..10u8 {
            c.write_now(0, Outbound, &[i; 186]);
        }
        assert_eq!((c.frames(), c.missed()), (3, 7));
        assert_eq!(c.bytes(), max, "the block size estimate is exact");
        drop(c);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), max);
        let got = read(&path).unwrap();
        assert_eq!(got.frames.len(), 3);
        assert_eq!(got.frames[2].data, vec![2u8; 186]);
        // One byte less: two frames.
        let mut c = PcapNg::create(&path, max - 1, &IFS[..1], "test").unwrap();
        for i in 0..3u8 {
            c.write_now(0, Inbound, &[i; 186]);
        }
        assert_eq!((c.frames(), c.missed()), (2, 1));
        // Headers alone: exactly fit, one byte less does not.
        assert!(PcapNg::create(&path, headers, &IFS[..1], "test").is_ok());
        assert!(matches!(
            PcapNg::create(&path, headers - 1, &IFS[..1], "test"),
            Err(Error::CaptureTooSmall { max, need }) if max == headers - 1 && need == headers
        ));
    }

    #[test]
    fn long_frames_are_cut_at_the_snap_length() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.pcapng");
        let mut c = PcapNg::create(&path, DEFAULT_MAX_BYTES, &IFS[..1], "test").unwrap();
        let before = c.bytes();
        c.write_now(0, Inbound, &vec![9u8; SNAPLEN as usize + 10]);
        assert_eq!(c.bytes() - before, block_bytes(SNAPLEN as usize + 10));
        drop(c);
        let got = read(&path).unwrap();
        assert_eq!(got.frames[0].data.len(), SNAPLEN as usize);
    }

    #[test]
    fn an_unwritable_path_is_an_error_naming_it() {
        let e = PcapNg::create(
            Path::new("/nonexistent-dir/c.pcapng"),
            DEFAULT_MAX_BYTES,
            &IFS,
            "test",
        )
        .err()
        .unwrap();
        assert!(
            e.to_string()
                .starts_with("cannot write the capture /nonexistent-dir/c.pcapng: "),
            "{e}"
        );
    }

    #[test]
    fn directions_round_trip_through_epb_flags() {
        for d in [Inbound, Outbound] {
            assert_eq!(Direction::from_epb_flags(d.epb_flags()), Some(d));
        }
        assert_eq!(Inbound.epb_flags(), 1);
        assert_eq!(Outbound.epb_flags(), 2);
        assert_eq!(Direction::from_epb_flags(0), None);
    }
}
