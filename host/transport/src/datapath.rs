//! Datapaths: how Ethernet frames leave and enter the host.
//!
//! The protocol ([`crate::engine::Engine`]) only sees frames. A datapath moves bursts of
//! them:
//!
//! - [`UdpDatapath`] carries one Ethernet frame per UDP datagram to and from the software
//!   switch (unprivileged, works on loopback);
//! - [`AfPacketDatapath`] sends and receives raw frames on a network interface (a veth or a
//!   NIC cabled to the switch) through the kernel's `AF_PACKET` sockets (root);
//! - `DpdkDatapath` (cargo feature `dpdk`) drives a DPDK ethdev from user space: a NIC, or a
//!   virtual device such as `net_memif` (shared memory to a DPDK software switch) or
//!   `net_af_packet` (an interface).

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::Duration;

/// Sends and receives bursts of Ethernet frames.
pub trait Datapath {
    /// Sends `frames` (each a whole Ethernet frame); returns how many were handed to the
    /// device. Frames that could not be sent are lost, as on a congested link.
    fn send_burst(&mut self, frames: &[Vec<u8>]) -> io::Result<usize>;

    /// Waits up to `timeout` for at least one frame, then passes every frame available (up to
    /// a burst) to `deliver`. Returns how many were delivered (0 on timeout).
    fn recv_burst(
        &mut self,
        timeout: Duration,
        deliver: &mut dyn FnMut(&[u8]),
    ) -> io::Result<usize>;

    /// The datapath's own counters (frames the device refused, and so on) by name, for the
    /// daemon's statistics. None by default.
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
}

#[cfg(feature = "dpdk")]
mod dpdk;
#[cfg(feature = "dpdk")]
pub use dpdk::{DpdkConfig, DpdkDatapath};

/// Frames received per [`Datapath::recv_burst`] at most.
pub const RECV_BURST: usize = 256;

/// Kernel UDP: one Ethernet frame per datagram, exchanged with the switch's UDP address.
#[derive(Debug)]
pub struct UdpDatapath {
    socket: UdpSocket,
    buf: Vec<u8>,
    /// Datagrams the kernel refused (buffer full).
    pub send_errors: u64,
}

impl UdpDatapath {
    /// Binds `local` and connects to the switch at `switch` (only its datagrams are
    /// received). Socket buffers are enlarged to `buffer_bytes` where the kernel allows.
    pub fn bind(local: SocketAddr, switch: SocketAddr, buffer_bytes: usize) -> io::Result<Self> {
        let socket = UdpSocket::bind(local)?;
        socket.connect(switch)?;
        socket.set_nonblocking(true)?;
        sgnn_netdev::set_socket_buffers(&socket, buffer_bytes);
        Ok(UdpDatapath {
            socket,
            buf: vec![0u8; 9216],
            send_errors: 0,
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.socket.local_addr()
    }
}

fn wait_readable(s: &UdpSocket, timeout: Duration) -> io::Result<bool> {
    let mut pfd = libc::pollfd {
        fd: s.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: `pfd` is a local pollfd and the count passed is 1, so ppoll reads and writes
    // only it; its fd is `s`'s, open while `s` is borrowed; `ts` is a local timespec, read
    // during the call; a null signal mask means none is installed. No pointer is kept.
    let r = unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok(false);
        }
        return Err(e);
    }
    Ok(r > 0)
}

impl Datapath for UdpDatapath {
    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![("send_errors", self.send_errors)]
    }

    fn send_burst(&mut self, frames: &[Vec<u8>]) -> io::Result<usize> {
        let mut sent = 0;
        for f in frames {
            match self.socket.send(f) {
                Ok(_) => sent += 1,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::ConnectionRefused
                    ) || e.raw_os_error() == Some(libc::ENOBUFS) =>
                {
                    // Full buffer, or the switch's port is not open (yet): lost frame.
                    self.send_errors += 1
                }
                Err(e) => return Err(e),
            }
        }
        Ok(sent)
    }

    fn recv_burst(
        &mut self,
        timeout: Duration,
        deliver: &mut dyn FnMut(&[u8]),
    ) -> io::Result<usize> {
        let mut n = 0;
        while n < RECV_BURST {
            match self.socket.recv(&mut self.buf) {
                Ok(len) => {
                    deliver(&self.buf[..len]);
                    n += 1;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if n > 0 || timeout.is_zero() || !wait_readable(&self.socket, timeout)? {
                        break;
                    }
                }
                // An ICMP port-unreachable from an earlier send: the switch is not there.
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                    if n > 0 {
                        break;
                    }
                    std::thread::sleep(timeout.min(Duration::from_millis(10)));
                    break;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(n)
    }
}

/// Raw Ethernet frames on one interface through an `AF_PACKET` socket (needs root or
/// `CAP_NET_RAW`). The interface leads to the switch: every frame sent goes there.
#[derive(Debug)]
pub struct AfPacketDatapath {
    sock: sgnn_netdev::AfPacket,
    buf: Vec<u8>,
    /// Frames sent.
    pub sent: u64,
    /// Frames received.
    pub received: u64,
}

impl AfPacketDatapath {
    /// Opens a raw socket on `iface` (in this thread's network namespace).
    pub fn open(iface: &str) -> Result<Self, sgnn_netdev::Error> {
        Ok(AfPacketDatapath {
            sock: sgnn_netdev::AfPacket::open(iface)?,
            buf: vec![0u8; 9216],
            sent: 0,
            received: 0,
        })
    }

    /// The interface.
    pub fn ifname(&self) -> &str {
        self.sock.ifname()
    }
}

fn netdev_io(e: sgnn_netdev::Error) -> io::Error {
    match e {
        sgnn_netdev::Error::Io { what, source } => {
            io::Error::new(source.kind(), format!("{what}: {source}"))
        }
        other => io::Error::other(other.to_string()),
    }
}

impl Datapath for AfPacketDatapath {
    fn send_burst(&mut self, frames: &[Vec<u8>]) -> io::Result<usize> {
        for f in frames {
            // Blocks (briefly) while the socket's buffer is full: back-pressure, not loss.
            self.sock.send(f).map_err(netdev_io)?;
        }
        self.sent += frames.len() as u64;
        Ok(frames.len())
    }

    fn recv_burst(
        &mut self,
        timeout: Duration,
        deliver: &mut dyn FnMut(&[u8]),
    ) -> io::Result<usize> {
        let mut n = 0;
        let mut wait = Some(timeout);
        while n < RECV_BURST {
            match self.sock.recv(&mut self.buf, wait).map_err(netdev_io)? {
                Some(len) => {
                    deliver(&self.buf[..len]);
                    n += 1;
                    wait = Some(Duration::ZERO);
                }
                None => break,
            }
        }
        self.received += n as u64;
        Ok(n)
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![("sent", self.sent), ("received", self.received)]
    }
}
