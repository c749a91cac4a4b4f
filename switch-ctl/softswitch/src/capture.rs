//! Packet captures (`softswitch --pcap FILE`): every frame the switch receives and sends, with
//! its timestamp, in one pcapng file that Wireshark and `tshark` read (with
//! `tools/wireshark/sgnn.lua` they decode the SwitchGNN header and lanes). The file format,
//! its bound and its counters are [`sgnn_netdev::capture`]'s; this module maps the switch's
//! ports onto the capture's interfaces.
//!
//! - One pcapng interface per switch port (`port0`, `port1`, ...), plus a last one, `unknown`,
//!   for UDP datagrams from an address that is no port; each frame also carries the pcapng
//!   `epb_flags` direction (inbound or outbound), so a display filter such as
//!   `frame.interface_id == 2 && frame.packet_flags_direction == 2` shows what left port 2.
//! - Frames are written as the Ethernet frames the pipeline sees (link type Ethernet), also on
//!   the UDP datapath, where each datagram's payload is exactly one Ethernet frame: a capture
//!   reads the same over UDP, AF_PACKET and DPDK.
//!
//! Without `--pcap` nothing here runs: [`CapturePorts`] wraps the datapath only when a capture
//! is asked for, so the serving loop has no extra work.

use std::io;
use std::path::Path;
use std::time::Duration;

pub use sgnn_netdev::capture::{Direction, PcapNg, DEFAULT_MAX_BYTES};

use crate::ports::{Ports, UNKNOWN_PORT};
use crate::tables::PortId;

/// A datapath whose frames, in and out, are also written to a capture. Port `p` is capture
/// interface `p`; frames from [`UNKNOWN_PORT`] (or any port past the last) go to the last
/// interface, `unknown`. A frame is captured on the way out once the backend accepted it.
pub struct CapturePorts {
    inner: Box<dyn Ports>,
    capture: PcapNg,
    ports: u32,
}

impl CapturePorts {
    /// Creates the capture `path` (at most `max_bytes` bytes) with one interface per port of
    /// `inner`, which has `ports` ports described by `describe(port)`, then `unknown`; and
    /// wraps `inner`.
    pub fn create(
        inner: Box<dyn Ports>,
        ports: usize,
        describe: impl Fn(usize) -> String,
        path: &Path,
        max_bytes: u64,
    ) -> Result<CapturePorts, sgnn_netdev::Error> {
        let names: Vec<(String, String)> = (0..ports)
            .map(|p| (format!("port{p}"), describe(p)))
            .chain([(
                "unknown".to_string(),
                "frames from a sender that is no port".to_string(),
            )])
            .collect();
        let ifs: Vec<(&str, &str)> = names
            .iter()
            .map(|(n, d)| (n.as_str(), d.as_str()))
            .collect();
        let capture = PcapNg::create(path, max_bytes, &ifs, "softswitch")?;
        Ok(CapturePorts {
            inner,
            capture,
            ports: ports as u32,
        })
    }

    /// The capture (frames written so far).
    pub fn capture(&self) -> &PcapNg {
        &self.capture
    }
}

/// The capture interface of `port` on a switch with `ports` ports.
fn interface(ports: u32, port: PortId) -> u32 {
    if port == UNKNOWN_PORT || port as u32 >= ports {
        ports
    } else {
        port as u32
    }
}

impl Ports for CapturePorts {
    fn recv(&mut self, buf: &mut [u8], timeout: Duration) -> io::Result<Option<(PortId, usize)>> {
        let got = self.inner.recv(buf, timeout)?;
        match got {
            Some((port, n)) => {
                let i = interface(self.ports, port);
                self.capture.write_now(i, Direction::Inbound, &buf[..n]);
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
            capture.write_now(interface(ports, port), Direction::Inbound, frame);
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
        let i = interface(self.ports, port);
        self.capture.write_now(i, Direction::Outbound, frame);
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
        c.extend(self.capture.counters().map(|(k, v)| (k.to_string(), v)));
        c
    }

    fn publish(&mut self, stats: &crate::ports::DatapathStats) {
        self.inner.publish(stats)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use sgnn_netdev::capture::{read, Direction::*};

    use super::*;

    /// Ports in memory: receive what is queued, keep what is sent.
    #[derive(Default)]
    struct Memory {
        incoming: VecDeque<(PortId, Vec<u8>)>,
        sent: Vec<(PortId, Vec<u8>)>,
    }

    impl Ports for Memory {
        fn recv(&mut self, buf: &mut [u8], _: Duration) -> io::Result<Option<(PortId, usize)>> {
            Ok(self.incoming.pop_front().map(|(p, f)| {
                buf[..f.len()].copy_from_slice(&f);
                (p, f.len())
            }))
        }
        fn send(&mut self, port: PortId, frame: &[u8]) -> io::Result<()> {
            self.sent.push((port, frame.to_vec()));
            Ok(())
        }
        fn describe(&self) -> String {
            "memory".into()
        }
        fn counters(&self) -> Vec<(String, u64)> {
            vec![("memory".into(), 1)]
        }
    }

    #[test]
    fn frames_go_to_their_port_interface_with_their_direction() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sw.pcapng");
        let inner = Memory {
            incoming: [
                (1, vec![1, 2, 3]),
                (UNKNOWN_PORT, vec![5]),
                (0, vec![6; 60]),
            ]
            .into(),
            ..Default::default()
        };
        let mut p = CapturePorts::create(
            Box::new(inner),
            2,
            |p| format!("worker {p}"),
            &path,
            DEFAULT_MAX_BYTES,
        )
        .unwrap();
        let mut buf = [0u8; 2048];
        let mut got = Vec::new();
        assert_eq!(
            p.recv_burst(&mut buf, Duration::ZERO, &mut |port, f| got
                .push((port, f.to_vec())))
                .unwrap(),
            1
        );
        assert_eq!(
            p.recv(&mut buf, Duration::ZERO).unwrap(),
            Some((UNKNOWN_PORT, 1))
        );
        p.send(0, &[4; 60]).unwrap();
        assert!(p.recv(&mut buf, Duration::ZERO).unwrap().is_some());
        assert_eq!(got, [(1, vec![1, 2, 3])]);
        assert_eq!(
            p.counters(),
            [
                ("memory".to_string(), 1),
                ("pcap_frames".to_string(), 4),
                ("pcap_missed".to_string(), 0)
            ]
        );
        drop(p);
        let c = read(&path).unwrap();
        assert_eq!(c.interfaces, ["port0", "port1", "unknown"]);
        let frames: Vec<_> = c
            .frames
            .iter()
            .map(|f| (f.interface, f.direction.unwrap(), f.data.clone()))
            .collect();
        assert_eq!(
            frames,
            [
                (1, Inbound, vec![1, 2, 3]),
                (2, Inbound, vec![5]),
                (0, Outbound, vec![4; 60]),
                (0, Inbound, vec![6; 60]),
            ]
        );
    }
}
