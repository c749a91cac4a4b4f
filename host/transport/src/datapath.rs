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
//!
//! The software switch's ports (`softswitch::ports::Ports`) move the same frames over the
//! same three and share with these what is the same on both sides: the sockets and devices
//! (`sgnn_netdev::AfPacket`, `sgnn_dpdk::Port`), the UDP socket's setup and buffers
//! (`sgnn_netdev::bind_udp`), the waiting (`sgnn_netdev::poll`: `ppoll` on sockets, spin then
//! sleep on DPDK) and the frame buffer (`sgnn_netdev::MAX_FRAME`). The two traits stay apart
//! where the two sides differ:
//!
//! - one link against many ports: a daemon's frames all go to and come from the switch, so
//!   they carry no port number; the switch's each have one, and it takes turns among ports
//!   with frames so one busy port cannot starve the others;
//! - addressing: the daemon's UDP socket is connected (the kernel drops other senders'
//!   datagrams, sends need no address), its DPDK datapath is one ethdev whose link it waits
//!   for; the switch's one UDP socket finds a frame's port by the sender's address (strangers
//!   arrive on `UNKNOWN_PORT`), and its DPDK ports share one mempool and come up when each
//!   daemon connects;
//! - sending and who owns the frames: the engine hands a burst of its own `Vec<u8>` frames
//!   that goes out in one call (`tx_burst` on DPDK); the switch sends borrowed frames one by
//!   one as its pipeline, egress queues and fault injection release them, then flushes;
//! - failures: here a full buffer or an absent switch is loss, counted by the datapath, and
//!   anything else ends the run (AF_PACKET waits for room: back-pressure); the switch never
//!   stops for a failed send but counts it against its port (`tx_errors`, `port_tx_failed`);
//! - receiving: here the datapath owns the buffer, waits for a first frame and drains up to
//!   [`RECV_BURST`]; the switch's caller passes the buffer and takes one frame per call on
//!   UDP and AF_PACKET;
//! - dispatch: `Session` is generic over [`Datapath`] (monomorphised into the engine's loop);
//!   the switch picks its backend at run time and stacks capture and metrics wrappers on a
//!   `Box<dyn Ports>`.
//!
//! One trait over both would give the daemon a port it never uses and per-frame errors it
//! does not want, and the switch a burst-of-owned-frames send that does not fit its queues.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsFd;
use std::time::Duration;

use sgnn_netdev::mmsg::{self, RecvBatch};
use sgnn_netdev::poll;

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
///
/// Batched (docs/host.md, "Batched I/O"): a burst leaves in `sendmmsg` calls of up to
/// [`sgnn_netdev::mmsg::BATCH`] datagrams and arrives in `recvmmsg` calls, with the same
/// per-frame meaning as one `send` or `recv` per frame.
#[derive(Debug)]
pub struct UdpDatapath {
    socket: UdpSocket,
    batch: Box<RecvBatch>,
    /// Runs of equal frames leave as one message (UDP GSO), until the route refuses it.
    gso: bool,
    /// Datagrams the kernel refused (buffer full).
    pub send_errors: u64,
}

impl UdpDatapath {
    /// Binds `local` and connects to the switch at `switch` (only its datagrams are
    /// received). Socket buffers are enlarged to `buffer_bytes` where the kernel allows.
    /// Runs of equal-sized frames leave as one message (UDP GSO) and trains arrive whole
    /// (UDP GRO) unless `SGNN_UDP_OFFLOAD=0` ([`mmsg::offload_enabled`]).
    pub fn bind(local: SocketAddr, switch: SocketAddr, buffer_bytes: usize) -> io::Result<Self> {
        Self::bind_with(local, switch, buffer_bytes, mmsg::offload_enabled())
    }

    /// [`UdpDatapath::bind`], with UDP GSO and GRO (`offload`) or without.
    pub fn bind_with(
        local: SocketAddr,
        switch: SocketAddr,
        buffer_bytes: usize,
        offload: bool,
    ) -> io::Result<Self> {
        let socket = sgnn_netdev::bind_udp(local, buffer_bytes)?;
        socket.connect(switch)?;
        socket.set_nonblocking(true)?;
        Ok(UdpDatapath {
            batch: Box::new(RecvBatch::for_socket(socket.as_fd(), offload)),
            socket,
            gso: offload,
            send_errors: 0,
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.socket.local_addr()
    }
}

/// Waits up to `timeout` for a datagram; false on timeout or a signal.
fn wait_readable(s: &UdpSocket, timeout: Duration) -> io::Result<bool> {
    match poll::ready(&mut [poll::pollfd(s.as_fd(), libc::POLLIN)], Some(timeout)) {
        Ok(n) => Ok(n > 0),
        Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(false),
        Err(e) => Err(e),
    }
}

impl Datapath for UdpDatapath {
    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![("send_errors", self.send_errors)]
    }

    fn send_burst(&mut self, frames: &[Vec<u8>]) -> io::Result<usize> {
        let mut sent = 0;
        let mut next = 0;
        while next < frames.len() {
            // Up to the first frame the kernel refused; that one's error comes back alone.
            match mmsg::send_batch(self.socket.as_fd(), &frames[next..], None, self.gso) {
                // The route does not take GSO (no checksum offload): without, from now on.
                Err(e) if self.gso && mmsg::gso_refused(&e) => self.gso = false,
                Ok(k) if k > 0 => {
                    sent += k;
                    next += k;
                }
                Ok(_) => unreachable!("sendmmsg sends at least one datagram or fails"),
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::ConnectionRefused
                    ) || e.raw_os_error() == Some(libc::ENOBUFS) =>
                {
                    // Full buffer, or the switch's port is not open (yet): lost frame.
                    self.send_errors += 1;
                    next += 1;
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
            match self.batch.recv(self.socket.as_fd(), RECV_BURST - n, false) {
                Ok(k) => {
                    for i in 0..k {
                        deliver(self.batch.datagram(i));
                    }
                    n += k;
                    if k == 0 {
                        break;
                    }
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
    batch: Box<RecvBatch>,
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
            batch: Box::new(RecvBatch::new()),
            sent: 0,
            received: 0,
        })
    }

    /// The interface.
    pub fn ifname(&self) -> &str {
        self.sock.ifname()
    }
}

impl Datapath for AfPacketDatapath {
    fn send_burst(&mut self, frames: &[Vec<u8>]) -> io::Result<usize> {
        // In sendmmsg calls (docs/host.md, "Batched I/O"); blocks (briefly) while the
        // socket's buffer is full: back-pressure, not loss.
        self.sock.send_burst(frames)?;
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
            let k = self.sock.recv_batch(&mut self.batch, wait)?;
            if k == 0 {
                break;
            }
            for i in 0..k {
                deliver(self.batch.datagram(i));
            }
            n += k;
            wait = Some(Duration::ZERO);
        }
        self.received += n as u64;
        Ok(n)
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![("sent", self.sent), ("received", self.received)]
    }
}
