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
        // Every worker sends to this one socket: the kernel's default buffer (about 200 KB)
        // overflows in a burst. Root may exceed rmem_max (FORCE); others get what it allows.
        let size: libc::c_int = 16 << 20;
        for (force, plain) in [
            (libc::SO_RCVBUFFORCE, libc::SO_RCVBUF),
            (libc::SO_SNDBUFFORCE, libc::SO_SNDBUF),
        ] {
            for opt in [force, plain] {
                // SAFETY: setsockopt on an open socket with a c_int value.
                let r = unsafe {
                    libc::setsockopt(
                        socket.as_raw_fd(),
                        libc::SOL_SOCKET,
                        opt,
                        &size as *const _ as *const libc::c_void,
                        std::mem::size_of::<libc::c_int>() as u32,
                    )
                };
                if r == 0 {
                    break;
                }
            }
        }
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

/// Faults the datapath injects on frames leaving the switch, for loss tests over UDP where
/// `tc netem` cannot reach (the drop simulator covers frames entering the pipeline).
#[derive(Debug, Clone)]
pub struct EgressFaults {
    /// Probability of dropping a frame.
    pub loss: f64,
    /// Probability of sending a frame twice.
    pub duplicate: f64,
    /// Probability of holding a frame back until the next frame to the same port has left.
    pub reorder: f64,
    rng: rand_chacha::ChaCha8Rng,
    held: Vec<Option<Vec<u8>>>,
}

impl EgressFaults {
    /// Faults with these probabilities (each in 0..=1) and seed.
    pub fn new(loss: f64, duplicate: f64, reorder: f64, seed: u64) -> EgressFaults {
        use rand::SeedableRng;
        EgressFaults {
            loss,
            duplicate,
            reorder,
            rng: rand_chacha::ChaCha8Rng::seed_from_u64(seed),
            held: Vec::new(),
        }
    }

    /// No faults.
    pub fn none() -> EgressFaults {
        EgressFaults::new(0.0, 0.0, 0.0, 0)
    }

    fn active(&self) -> bool {
        self.loss > 0.0 || self.duplicate > 0.0 || self.reorder > 0.0
    }

    /// The frames to send in place of `frame` (none, one, two, or a held one and this one).
    fn apply(&mut self, port: PortId, frame: &[u8], stats: &mut DatapathStats) -> Vec<Vec<u8>> {
        use rand::Rng;
        if self.rng.gen::<f64>() < self.loss {
            stats.fault_dropped += 1;
            return Vec::new();
        }
        let mut out = Vec::with_capacity(2);
        if self.held.len() <= port as usize {
            self.held.resize(port as usize + 1, None);
        }
        if self.rng.gen::<f64>() < self.reorder && self.held[port as usize].is_none() {
            stats.fault_reordered += 1;
            self.held[port as usize] = Some(frame.to_vec());
            return out;
        }
        out.push(frame.to_vec());
        if self.rng.gen::<f64>() < self.duplicate {
            stats.fault_duplicated += 1;
            out.push(frame.to_vec());
        }
        if let Some(h) = self.held[port as usize].take() {
            out.push(h);
        }
        out
    }

    /// Frames still held back (sent when the switch stops).
    fn flush(&mut self) -> Vec<(PortId, Vec<u8>)> {
        self.held
            .iter_mut()
            .enumerate()
            .filter_map(|(p, h)| h.take().map(|f| (p as PortId, f)))
            .collect()
    }
}

/// Frames the datapath could not send.
#[derive(Debug, Default, Clone, Copy)]
pub struct DatapathStats {
    /// Frames dropped by [`EgressFaults`].
    pub fault_dropped: u64,
    /// Frames sent twice by [`EgressFaults`].
    pub fault_duplicated: u64,
    /// Frames held back by [`EgressFaults`].
    pub fault_reordered: u64,
    /// Sends that failed (no such port, or a socket error).
    pub tx_errors: u64,
    /// Frames dropped because their egress queue was full.
    pub queue_drops: u64,
    /// Deepest egress queue seen (frames).
    pub max_queue_depth: u32,
}

/// Output queues: per-port FIFOs drained at a fixed rate, like a switch port slower than its
/// senders. Their depth is what the pipeline's ECN marking sees (`enq_qdepth` in bmv2).
#[derive(Debug, Clone)]
pub struct EgressQueues {
    /// Frames per second each port drains; `None` sends at once (no queueing).
    pub rate_pps: Option<f64>,
    /// Frames a queue holds; more are dropped (tail drop).
    pub capacity: usize,
    queues: Vec<std::collections::VecDeque<Vec<u8>>>,
    tokens: Vec<f64>,
    last: std::time::Instant,
}

impl EgressQueues {
    /// Queues for `ports` ports.
    pub fn new(ports: usize, rate_pps: Option<f64>, capacity: usize) -> EgressQueues {
        EgressQueues {
            rate_pps,
            capacity: capacity.max(1),
            queues: vec![Default::default(); ports],
            tokens: vec![1.0; ports],
            last: std::time::Instant::now(),
        }
    }

    /// Current depth of every port's queue.
    pub fn depths(&self) -> Vec<u32> {
        self.queues.iter().map(|q| q.len() as u32).collect()
    }

    fn refill(&mut self) {
        let now = std::time::Instant::now();
        let dt = now.duration_since(self.last).as_secs_f64();
        self.last = now;
        if let Some(r) = self.rate_pps {
            for t in &mut self.tokens {
                // A burst of at most one frame beyond the rate.
                *t = (*t + dt * r).min(1.0);
            }
        }
    }

    /// Sends what the rate allows; returns how long until the next frame may go.
    fn drain(&mut self, ports: &mut dyn Ports, stats: &mut DatapathStats) -> Option<Duration> {
        self.refill();
        let rate = self.rate_pps?;
        let mut wait: Option<Duration> = None;
        for (p, q) in self.queues.iter_mut().enumerate() {
            while !q.is_empty() && self.tokens[p] >= 1.0 {
                self.tokens[p] -= 1.0;
                let f = q.pop_front().expect("not empty");
                if ports.send(p as PortId, &f).is_err() {
                    stats.tx_errors += 1;
                }
            }
            if !q.is_empty() {
                let w = Duration::from_secs_f64(((1.0 - self.tokens[p]) / rate).max(0.0));
                wait = Some(wait.map_or(w, |x| x.min(w)));
            }
        }
        wait
    }

    fn push(
        &mut self,
        port: PortId,
        frame: &[u8],
        ports: &mut dyn Ports,
        stats: &mut DatapathStats,
    ) {
        if self.rate_pps.is_none() || port as usize >= self.queues.len() {
            if ports.send(port, frame).is_err() {
                stats.tx_errors += 1;
            }
            return;
        }
        let q = &mut self.queues[port as usize];
        if q.len() >= self.capacity {
            stats.queue_drops += 1;
            return;
        }
        q.push_back(frame.to_vec());
        stats.max_queue_depth = stats.max_queue_depth.max(q.len() as u32);
    }
}

/// Serves `ports` until `stop` returns true (checked at least every 50 ms), processing each
/// frame with `pipeline` and sending what it emits through `queues`.
pub fn serve(
    ports: &mut dyn Ports,
    pipeline: &Mutex<Pipeline>,
    queues: &mut EgressQueues,
    faults: &mut EgressFaults,
    mut stop: impl FnMut(&Pipeline) -> bool,
) -> io::Result<DatapathStats> {
    let mut stats = DatapathStats::default();
    let mut buf = vec![0u8; 9216];
    let mut out: Vec<Emitted> = Vec::with_capacity(64);
    loop {
        if stop(&pipeline.lock().expect("pipeline lock")) {
            for (port, f) in faults.flush() {
                queues.push(port, &f, ports, &mut stats);
            }
            // Let the queues empty at their rate: the last frames (block-advance) matter.
            while let Some(w) = queues.drain(ports, &mut stats) {
                std::thread::sleep(w);
            }
            return Ok(stats);
        }
        let wait = queues
            .drain(ports, &mut stats)
            .map_or(Duration::from_millis(50), |w| {
                w.min(Duration::from_millis(50))
            });
        let Some((port, n)) = ports.recv(&mut buf, wait)? else {
            continue;
        };
        out.clear();
        {
            let mut p = pipeline.lock().expect("pipeline lock");
            if queues.rate_pps.is_some() {
                p.queue_depth = queues.depths();
            }
            p.process(port, &buf[..n], &mut out);
        }
        for e in &out {
            if faults.active() {
                for f in faults.apply(e.port, &e.frame, &mut stats) {
                    queues.push(e.port, &f, ports, &mut stats);
                }
            } else {
                queues.push(e.port, &e.frame, ports, &mut stats);
            }
        }
    }
}
