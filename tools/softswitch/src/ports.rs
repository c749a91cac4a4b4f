//! The switch's ports and the loop that serves them.
//!
//! - [`UdpPorts`]: one UDP socket; each datagram carries one Ethernet frame, port `i` is the
//!   `i`-th peer address (no privileges needed, loopback).
//! - [`AfPacketPorts`]: one `AF_PACKET` socket per interface (for example the switch ends of
//!   veth pairs); port `i` is the `i`-th interface.
//!
//! [`serve`] moves frames between the ports and the [`Pipeline`], which it shares behind a
//! mutex with the control plane (the P4Runtime server) so tables change while traffic flows.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::Mutex;
use std::time::Duration;

use sgnn_netdev::AfPacket;

use crate::pipeline::{Emitted, Pipeline};
use crate::tables::PortId;

/// Ingress port of a frame whose sender is not one of the ports (UDP from a stranger).
pub const UNKNOWN_PORT: PortId = PortId::MAX;

/// A set of numbered ports.
pub trait Ports {
    /// Waits up to `timeout` for a frame; returns its ingress port and length.
    fn recv(&mut self, buf: &mut [u8], timeout: Duration) -> io::Result<Option<(PortId, usize)>>;
    /// Sends `frame` out of `port`.
    fn send(&mut self, port: PortId, frame: &[u8]) -> io::Result<()>;
    /// A human-readable description (printed at start).
    fn describe(&self) -> String;
}

/// Ports on one UDP socket.
pub struct UdpPorts {
    /// The socket.
    pub socket: UdpSocket,
    /// Peer of each port.
    pub peers: Vec<SocketAddr>,
}

impl UdpPorts {
    /// Binds `listen`; port `i` is `peers[i]`.
    pub fn bind(listen: SocketAddr, peers: Vec<SocketAddr>) -> io::Result<UdpPorts> {
        let socket = UdpSocket::bind(listen)?;
        Ok(UdpPorts { socket, peers })
    }
}

impl Ports for UdpPorts {
    fn recv(&mut self, buf: &mut [u8], timeout: Duration) -> io::Result<Option<(PortId, usize)>> {
        self.socket
            .set_read_timeout(Some(timeout.max(Duration::from_millis(1))))?;
        match self.socket.recv_from(buf) {
            Ok((n, from)) => {
                let port = self
                    .peers
                    .iter()
                    .position(|&p| p == from)
                    .map_or(UNKNOWN_PORT, |p| p as PortId);
                Ok(Some((port, n)))
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    fn send(&mut self, port: PortId, frame: &[u8]) -> io::Result<()> {
        let peer = self.peers.get(port as usize).ok_or_else(|| {
            io::Error::new(io::ErrorKind::NotFound, format!("no peer for port {port}"))
        })?;
        self.socket.send_to(frame, peer).map(|_| ())
    }

    fn describe(&self) -> String {
        format!(
            "udp {} -> {} ports",
            self.socket
                .local_addr()
                .map_or("?".into(), |a| a.to_string()),
            self.peers.len()
        )
    }
}

/// Ports on network interfaces, one `AF_PACKET` socket each.
pub struct AfPacketPorts {
    socks: Vec<AfPacket>,
    next: usize,
}

impl AfPacketPorts {
    /// Opens `ifaces[i]` as port `i`.
    pub fn open(ifaces: &[String]) -> Result<AfPacketPorts, sgnn_netdev::Error> {
        let socks = ifaces
            .iter()
            .map(|i| AfPacket::open(i))
            .collect::<Result<_, _>>()?;
        Ok(AfPacketPorts { socks, next: 0 })
    }
}

impl Ports for AfPacketPorts {
    fn recv(&mut self, buf: &mut [u8], timeout: Duration) -> io::Result<Option<(PortId, usize)>> {
        let to_io = |e: sgnn_netdev::Error| io::Error::other(e.to_string());
        // Round-robin over ports that have frames, so one busy port cannot starve the others.
        for _ in 0..2 {
            for k in 0..self.socks.len() {
                let i = (self.next + k) % self.socks.len();
                if let Some(n) = self.socks[i].try_recv(buf).map_err(to_io)? {
                    self.next = (i + 1) % self.socks.len();
                    return Ok(Some((i as PortId, n)));
                }
            }
            let mut fds: Vec<libc::pollfd> = self
                .socks
                .iter()
                .map(|s| libc::pollfd {
                    fd: s.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                })
                .collect();
            let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
            // SAFETY: fds is a valid array of pollfd for the duration of the call.
            let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
            if r < 0 {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(e);
                }
            } else if r == 0 {
                return Ok(None);
            }
        }
        Ok(None)
    }

    fn send(&mut self, port: PortId, frame: &[u8]) -> io::Result<()> {
        let s = self.socks.get(port as usize).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("no interface for port {port}"),
            )
        })?;
        s.send(frame).map_err(|e| io::Error::other(e.to_string()))
    }

    fn describe(&self) -> String {
        let names: Vec<&str> = self.socks.iter().map(|s| s.ifname()).collect();
        format!("af_packet on {}", names.join(", "))
    }
}

/// Frames the datapath could not send.
#[derive(Debug, Default, Clone, Copy)]
pub struct DatapathStats {
    /// Sends that failed (no such port, or a socket error).
    pub tx_errors: u64,
}

/// Serves `ports` until `stop` returns true (checked at least every 50 ms), processing each
/// frame with `pipeline`.
pub fn serve(
    ports: &mut dyn Ports,
    pipeline: &Mutex<Pipeline>,
    mut stop: impl FnMut(&Pipeline) -> bool,
) -> io::Result<DatapathStats> {
    let mut stats = DatapathStats::default();
    let mut buf = vec![0u8; 9216];
    let mut out: Vec<Emitted> = Vec::with_capacity(64);
    loop {
        if stop(&pipeline.lock().expect("pipeline lock")) {
            return Ok(stats);
        }
        let Some((port, n)) = ports.recv(&mut buf, Duration::from_millis(50))? else {
            continue;
        };
        out.clear();
        pipeline
            .lock()
            .expect("pipeline lock")
            .process(port, &buf[..n], &mut out);
        for e in &out {
            if ports.send(e.port, &e.frame).is_err() {
                stats.tx_errors += 1;
            }
        }
    }
}
