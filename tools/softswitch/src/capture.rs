//! Packet captures (`softswitch --pcap FILE`): every frame the switch receives and sends, with
//! its timestamp, in one pcapng file that Wireshark and `tshark` read (with
//! `tools/wireshark/sgnn.lua` they decode the SwitchGNN header and lanes).
//!
//! - One pcapng interface per switch port (`port0`, `port1`, ...), plus a last one, `unknown`,
//!   for UDP datagrams from an address that is no port; each frame also carries the pcapng
//!   `epb_flags` direction (inbound or outbound), so a display filter such as
//!   `frame.interface_id == 2 && frame.packet_flags_direction == 2` shows what left port 2.
//! - Frames are written as the Ethernet frames the pipeline sees (link type Ethernet), also on
//!   the UDP datapath, where each datagram's payload is exactly one Ethernet frame: a capture
//!   reads the same over UDP, AF_PACKET and DPDK.
//! - Bounded: after `max_bytes` (file size) the capture stops and says so once on stderr; the
//!   file stays a valid pcapng file.
//!
//! Without `--pcap` nothing here runs: [`CapturePorts`] wraps the datapath only when a capture
//! is asked for, so the serving loop has no extra work.

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use pcap_file::pcapng::blocks::enhanced_packet::{EnhancedPacketBlock, EnhancedPacketOption};
use pcap_file::pcapng::blocks::interface_description::{
    InterfaceDescriptionBlock, InterfaceDescriptionOption,
};
use pcap_file::pcapng::PcapNgWriter;
use pcap_file::DataLink;

use crate::ports::{Ports, UNKNOWN_PORT};
use crate::tables::PortId;

/// Default `--pcap-max-bytes`: 1 GiB.
pub const DEFAULT_MAX_BYTES: u64 = 1 << 30;

/// Largest frame captured whole (the pcapng snap length); longer frames are cut.
pub const SNAPLEN: u32 = 65535;

/// pcapng `epb_flags` direction bits (inbound = 1, outbound = 2).
const FLAG_INBOUND: u32 = 0b01;
const FLAG_OUTBOUND: u32 = 0b10;

/// Bytes of an enhanced packet block around its (padded) data: block type and the two copies
/// of the block length (12), interface, timestamp (2 words), captured and original length
/// (20), the `epb_flags` option (4 + 4) and the end-of-options marker (4).
const EPB_OVERHEAD: u64 = 12 + 20 + 8 + 4;

/// Why a capture could not start.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// The file could not be created or its header written.
    #[error("cannot write the capture {path}: {source}")]
    Io {
        /// The capture file.
        path: PathBuf,
        /// What failed.
        source: io::Error,
    },
    /// The pcapng writer refused a header block.
    #[error("cannot write the capture {path}: {source}")]
    Pcap {
        /// The capture file.
        path: PathBuf,
        /// What failed.
        source: pcap_file::PcapError,
    },
    /// `--pcap-max-bytes` is too small to hold the file's headers.
    #[error("--pcap-max-bytes {max} cannot hold the capture's headers ({need} bytes)")]
    TooSmall {
        /// The bound.
        max: u64,
        /// Bytes of the section and interface headers.
        need: u64,
    },
}

/// Which way a frame went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Received.
    Inbound,
    /// Sent.
    Outbound,
}

/// A pcapng file being written, with one interface per name given at creation.
pub struct PcapCapture {
    writer: Option<PcapNgWriter<BufWriter<File>>>,
    path: PathBuf,
    /// Who writes (`softswitch`, `sgnn-hostd`), for the stderr messages.
    tool: &'static str,
    interfaces: u32,
    max_bytes: u64,
    written: u64,
    frames: u64,
    /// Frames not written because of the bound or an error.
    missed: u64,
}

impl PcapCapture {
    /// Creates `path` with one Ethernet interface per `(name, description)`, timestamps in
    /// nanoseconds; writes at most `max_bytes` bytes in all.
    pub fn create(
        path: &Path,
        interfaces: &[(String, String)],
        max_bytes: u64,
        tool: &'static str,
    ) -> Result<PcapCapture, CaptureError> {
        let io_err = |source| CaptureError::Io {
            path: path.to_owned(),
            source,
        };
        let pcap_err = |source| CaptureError::Pcap {
            path: path.to_owned(),
            source,
        };
        let file = File::create(path).map_err(io_err)?;
        let mut counter = CountingSink(0);
        let mut writer = PcapNgWriter::new(BufWriter::new(file)).map_err(pcap_err)?;
        // The section header's size: what `PcapNgWriter::new` wrote.
        PcapNgWriter::new(&mut counter).map_err(pcap_err)?;
        let mut written = counter.0;
        for (name, description) in interfaces {
            let idb = InterfaceDescriptionBlock {
                linktype: DataLink::ETHERNET,
                snaplen: SNAPLEN,
                options: vec![
                    InterfaceDescriptionOption::IfName(Cow::Owned(name.clone())),
                    InterfaceDescriptionOption::IfDescription(Cow::Owned(description.clone())),
                    // Timestamps are written in nanoseconds.
                    InterfaceDescriptionOption::IfTsResol(9),
                ],
            };
            written += writer.write_pcapng_block(idb).map_err(pcap_err)? as u64;
        }
        if written > max_bytes {
            return Err(CaptureError::TooSmall {
                max: max_bytes,
                need: written,
            });
        }
        writer.get_mut().flush().map_err(io_err)?;
        Ok(PcapCapture {
            writer: Some(writer),
            path: path.to_owned(),
            tool,
            interfaces: interfaces.len() as u32,
            max_bytes,
            written,
            frames: 0,
            missed: 0,
        })
    }

    /// Appends `frame`, seen on `interface` going `dir`, stamped with the current time. Never
    /// fails: past the bound, or after a write error, frames are counted as missed and the
    /// reason is printed once on stderr.
    pub fn write(&mut self, interface: u32, dir: Direction, frame: &[u8]) {
        let timestamp = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO);
        self.write_at(interface, dir, frame, timestamp);
    }

    /// [`PcapCapture::write`] with a given timestamp (since the Unix epoch).
    pub fn write_at(&mut self, interface: u32, dir: Direction, frame: &[u8], timestamp: Duration) {
        let Some(writer) = self.writer.as_mut() else {
            self.missed += 1;
            return;
        };
        let data = &frame[..frame.len().min(SNAPLEN as usize)];
        let size = EPB_OVERHEAD + data.len().next_multiple_of(4) as u64;
        if self.written + size > self.max_bytes {
            eprintln!(
                "{}: capture {} reached --pcap-max-bytes {} after {} frames; not capturing any more",
                self.tool,
                self.path.display(),
                self.max_bytes,
                self.frames
            );
            self.stop();
            self.missed += 1;
            return;
        }
        let flags = match dir {
            Direction::Inbound => FLAG_INBOUND,
            Direction::Outbound => FLAG_OUTBOUND,
        };
        let epb = EnhancedPacketBlock {
            interface_id: interface.min(self.interfaces.saturating_sub(1)),
            timestamp,
            original_len: frame.len() as u32,
            data: Cow::Borrowed(data),
            options: vec![EnhancedPacketOption::Flags(flags)],
        };
        match writer.write_pcapng_block(epb) {
            Ok(n) => {
                self.written += n as u64;
                self.frames += 1;
            }
            Err(e) => {
                eprintln!(
                    "{}: capture {}: {e}; not capturing any more",
                    self.tool,
                    self.path.display()
                );
                self.writer = None;
                self.missed += 1;
            }
        }
    }

    /// Writes buffered frames to the file (so a reader sees them while the capture runs).
    pub fn flush(&mut self) {
        if let Some(w) = self.writer.as_mut() {
            if let Err(e) = w.get_mut().flush() {
                eprintln!(
                    "{}: capture {}: {e}; not capturing any more",
                    self.tool,
                    self.path.display()
                );
                self.writer = None;
            }
        }
    }

    /// Flushes and closes the file; later frames are missed.
    fn stop(&mut self) {
        self.flush();
        self.writer = None;
    }

    /// Frames written.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Bytes in the file.
    pub fn bytes(&self) -> u64 {
        self.written
    }

    /// Frames not written (past the bound or after an error).
    pub fn missed(&self) -> u64 {
        self.missed
    }
}

impl Drop for PcapCapture {
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

/// A datapath whose frames, in and out, are also written to a capture. Port `p` is capture
/// interface `p`; frames from [`UNKNOWN_PORT`] (or any port past the last) go to the last
/// interface. A frame is captured on the way out once the backend accepted it.
pub struct CapturePorts {
    inner: Box<dyn Ports>,
    capture: PcapCapture,
    ports: u32,
}

impl CapturePorts {
    /// Wraps `inner`, which has `ports` ports; `capture` must have `ports + 1` interfaces (see
    /// [`CapturePorts::interfaces`]).
    pub fn new(inner: Box<dyn Ports>, capture: PcapCapture, ports: usize) -> CapturePorts {
        CapturePorts {
            inner,
            capture,
            ports: ports as u32,
        }
    }

    /// The capture interfaces for ports described by `describe(port)`: `port0..portN-1`
    /// then `unknown`.
    pub fn interfaces(ports: usize, describe: impl Fn(usize) -> String) -> Vec<(String, String)> {
        (0..ports)
            .map(|p| (format!("port{p}"), describe(p)))
            .chain([(
                "unknown".to_string(),
                "frames from a sender that is no port".to_string(),
            )])
            .collect()
    }

    /// The capture (frames written so far).
    pub fn capture(&self) -> &PcapCapture {
        &self.capture
    }

    fn interface(&self, port: PortId) -> u32 {
        if port == UNKNOWN_PORT || port as u32 >= self.ports {
            self.ports
        } else {
            port as u32
        }
    }
}

impl Ports for CapturePorts {
    fn recv(&mut self, buf: &mut [u8], timeout: Duration) -> io::Result<Option<(PortId, usize)>> {
        let got = self.inner.recv(buf, timeout)?;
        match got {
            Some((port, n)) => {
                let i = self.interface(port);
                self.capture.write(i, Direction::Inbound, &buf[..n]);
            }
            None => self.capture.flush(),
        }
        Ok(got)
    }

    fn recv_burst(
        &mut self,
        buf: &mut [u8],
        timeout: Duration,
        deliver: &mut dyn FnMut(PortId, &[u8]),
    ) -> io::Result<usize> {
        let CapturePorts {
            inner,
            capture,
            ports,
        } = self;
        let ports = *ports;
        let n = inner.recv_burst(buf, timeout, &mut |port, frame| {
            let i = if port == UNKNOWN_PORT || port as u32 >= ports {
                ports
            } else {
                port as u32
            };
            capture.write(i, Direction::Inbound, frame);
            deliver(port, frame);
        })?;
        if n == 0 {
            // Idle: let a reader of the file see what was captured so far.
            capture.flush();
        }
        Ok(n)
    }

    fn send(&mut self, port: PortId, frame: &[u8]) -> io::Result<()> {
        self.inner.send(port, frame)?;
        let i = self.interface(port);
        self.capture.write(i, Direction::Outbound, frame);
        Ok(())
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }

    /// The backend's counters, then `pcap_frames` (frames written to the capture) and
    /// `pcap_missed` (frames not written: past the bound, or after a write error).
    fn counters(&self) -> Vec<(String, u64)> {
        let mut c = self.inner.counters();
        c.push(("pcap_frames".into(), self.capture.frames()));
        c.push(("pcap_missed".into(), self.capture.missed()));
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pcap_file::pcapng::{Block, PcapNgReader};

    /// A captured frame: interface, `epb_flags`, bytes.
    type Frame = (u32, u32, Vec<u8>);

    fn read(path: &Path) -> (Vec<String>, Vec<Frame>) {
        let mut r = PcapNgReader::new(File::open(path).unwrap()).unwrap();
        let mut names = Vec::new();
        let mut frames = Vec::new();
        while let Some(b) = r.next_block() {
            match b.unwrap() {
                Block::InterfaceDescription(i) => {
                    for o in &i.options {
                        if let InterfaceDescriptionOption::IfName(n) = o {
                            names.push(n.to_string());
                        }
                    }
                }
                Block::EnhancedPacket(p) => {
                    let flags = p
                        .options
                        .iter()
                        .find_map(|o| match o {
                            EnhancedPacketOption::Flags(f) => Some(*f),
                            _ => None,
                        })
                        .unwrap();
                    frames.push((p.interface_id, flags, p.data.to_vec()));
                }
                _ => {}
            }
        }
        (names, frames)
    }

    #[test]
    fn frames_go_to_their_interface_with_their_direction() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.pcapng");
        let ifs = CapturePorts::interfaces(2, |p| format!("worker {p}"));
        let mut c = PcapCapture::create(&path, &ifs, DEFAULT_MAX_BYTES, "test").unwrap();
        c.write(1, Direction::Inbound, &[1, 2, 3]);
        c.write(0, Direction::Outbound, &[4; 60]);
        c.write(7, Direction::Inbound, &[5]); // past the last: the last interface
        let bytes = c.bytes();
        drop(c);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), bytes);
        let (names, frames) = read(&path);
        assert_eq!(names, ["port0", "port1", "unknown"]);
        assert_eq!(
            frames,
            [
                (1, FLAG_INBOUND, vec![1, 2, 3]),
                (0, FLAG_OUTBOUND, vec![4; 60]),
                (2, FLAG_INBOUND, vec![5]),
            ]
        );
    }

    #[test]
    fn the_bound_stops_the_capture_and_keeps_the_file_valid() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.pcapng");
        let ifs = CapturePorts::interfaces(1, |_| String::new());
        let headers = PcapCapture::create(&path, &ifs, DEFAULT_MAX_BYTES, "test")
            .unwrap()
            .bytes();
        // Room for exactly three 186-byte frames.
        let max = headers + 3 * (EPB_OVERHEAD + 188);
        let mut c = PcapCapture::create(&path, &ifs, max, "test").unwrap();
        for i in 0..10u8 {
            c.write(0, Direction::Inbound, &[i; 186]);
        }
        assert_eq!((c.frames(), c.missed()), (3, 7));
        assert_eq!(c.bytes(), max, "the block size estimate is exact");
        drop(c);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), max);
        let (_, frames) = read(&path);
        assert_eq!(frames.len(), 3);
        assert_eq!(frames[2].2, vec![2u8; 186]);
        assert!(matches!(
            PcapCapture::create(&path, &ifs, headers - 1, "test"),
            Err(CaptureError::TooSmall { .. })
        ));
    }
}
