//! The switch's ports and the loop that serves them.
//!
//! - [`UdpPorts`]: one UDP socket; each datagram carries one Ethernet frame, port `i` is the
//!   `i`-th peer address (no privileges needed, loopback).
//! - [`AfPacketPorts`]: one `AF_PACKET` socket per interface (for example the switch ends of
//!   veth pairs); port `i` is the `i`-th interface.
//! - `DpdkPorts` (cargo feature `dpdk`): one DPDK ethdev per port, in ethdev order (for
//!   example `net_memif` servers the daemons connect to, or `net_af_packet` on interfaces);
//!   frames are received in bursts and processed straight from the mbufs.
//!
//! [`serve`] moves frames between the ports and the [`Pipeline`], which it shares behind a
//! mutex with the control plane (the P4Runtime server) so tables change while traffic flows.
//!
//! The host daemon's datapaths (`sgnn_transport::datapath`) wrap the same three; both use
//! `sgnn_netdev`'s sockets, UDP setup, waiting ([`sgnn_netdev::poll`]) and frame buffer, but
//! keep their own trait: a daemon has one link and sends the engine's bursts of owned frames,
//! the switch many numbered ports, per-frame sends from its queues, and failures counted per
//! port (`sgnn_transport::datapath`'s module doc lists every difference).

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsFd;
use std::sync::Mutex;
use std::time::Duration;

use sgnn_netdev::mmsg::{self, RecvBatch};
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

    /// Waits up to `timeout` for frames and passes each available one (a burst) to `deliver`
    /// with its ingress port; returns how many. The default receives one frame into `buf`
    /// with [`Ports::recv`]; backends with bursts of their own (DPDK) override it and pass
    /// frames without copying.
    fn recv_burst(
        &mut self,
        buf: &mut [u8],
        timeout: Duration,
        deliver: &mut dyn FnMut(PortId, &[u8]),
    ) -> io::Result<usize> {
        match self.recv(buf, timeout)? {
            Some((port, n)) => {
                deliver(port, &buf[..n]);
                Ok(1)
            }
            None => Ok(0),
        }
    }

    /// Sends what [`Ports::send`] buffered (the DPDK backend sends in bursts). The default
    /// buffers nothing.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }

    /// The backend's own counters by name (per-port frames, drops), for the stats JSON.
    fn counters(&self) -> Vec<(String, u64)> {
        Vec::new()
    }

    /// [`serve`]'s own counters (queue drops, deepest queue, injected faults, failed sends),
    /// handed over whenever they change, for whoever reads them while the switch serves (the
    /// metrics, [`crate::metrics::MetricsPorts`]). A wrapper passes them on; the default
    /// keeps nothing.
    fn publish(&mut self, _stats: &DatapathStats) {}
}

/// Ports on one UDP socket.
///
/// Batched (docs/host.md, "Batched I/O"): frames arrive in `recvmmsg` calls of up to
/// [`mmsg::BATCH`] ([`Ports::recv_burst`]), and [`Ports::send`] keeps its frame (copied) until
/// [`Ports::flush`], which sends what was kept in `sendmmsg` calls, in order (or when
/// [`mmsg::BATCH`] are kept). A frame for a port with no peer fails at `send`, as before; the
/// kernel refusing a kept frame fails the flush and counts in `udp_tx_refused` (the socket
/// blocks while its buffer is full, so on loopback that does not happen), where before it
/// counted in the port's `port_tx_failed`.
pub struct UdpPorts {
    /// The socket.
    pub socket: UdpSocket,
    /// Peer of each port.
    pub peers: Vec<SocketAddr>,
    batch: Box<RecvBatch>,
    /// The receive timeout the socket has (set again only when it changes).
    read_timeout: Option<Duration>,
    /// Frames kept by `send`, back to back, and each one's peer, offset in `out` and length.
    out: Vec<u8>,
    out_frames: Vec<(SocketAddr, usize, usize)>,
    /// Kept frames the kernel refused when they were flushed.
    tx_refused: u64,
    /// The first refusal not yet reported by a flush.
    refusal: Option<io::Error>,
    /// Runs of equal frames to one peer leave as one message (UDP GSO), until refused.
    gso: bool,
    /// Datagrams of `batch` already delivered.
    taken: usize,
}

impl UdpPorts {
    /// Binds `listen`; port `i` is `peers[i]`.
    pub fn bind(listen: SocketAddr, peers: Vec<SocketAddr>) -> io::Result<UdpPorts> {
        // Every worker sends to this one socket: the kernel's default buffer (about 200 KB)
        // overflows in a burst. Root may exceed rmem_max (FORCE); others get what it allows.
        let socket = sgnn_netdev::bind_udp(listen, 16 << 20)?;
        // UDP GSO and GRO (sgnn_netdev::mmsg): trains of frames cross the kernel whole.
        let offload = mmsg::offload_enabled();
        Ok(UdpPorts {
            batch: Box::new(RecvBatch::for_socket(socket.as_fd(), offload)),
            socket,
            peers,
            gso: offload,
            taken: 0,
            read_timeout: None,
            out: Vec::with_capacity(mmsg::BATCH * 256),
            out_frames: Vec::with_capacity(mmsg::BATCH),
            tx_refused: 0,
            refusal: None,
        })
    }

    /// The port of a datagram from `from`.
    fn port_of(&self, from: Option<SocketAddr>) -> PortId {
        from.and_then(|f| self.peers.iter().position(|&p| p == f))
            .map_or(UNKNOWN_PORT, |p| p as PortId)
    }

    /// Waits up to `timeout` (at least 1 ms) on the next receive.
    fn set_timeout(&mut self, timeout: Duration) -> io::Result<()> {
        let t = Some(timeout.max(Duration::from_millis(1)));
        if self.read_timeout != t {
            self.socket.set_read_timeout(t)?;
            self.read_timeout = t;
        }
        Ok(())
    }

    /// Receives the next batch (up to `max` messages; waits up to `timeout` for the first):
    /// how many datagrams, 0 when none came.
    fn fill(&mut self, timeout: Duration, max: usize) -> io::Result<usize> {
        self.set_timeout(timeout)?;
        self.taken = 0;
        match self.batch.recv(self.socket.as_fd(), max, true) {
            Ok(k) => Ok(k),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                Ok(0)
            }
            Err(e) => Err(e),
        }
    }

    /// Sends the kept frames, in `sendmmsg` calls; a frame the kernel refuses is counted and
    /// skipped, and the first refusal kept for [`Ports::flush`] to return.
    fn send_kept(&mut self) {
        let mut refs: [&[u8]; mmsg::BATCH] = [&[]; mmsg::BATCH];
        let mut to = [SocketAddr::from(([0, 0, 0, 0], 0)); mmsg::BATCH];
        let mut next = 0;
        // Each peer's frames together, in their order (by peer, then by where `send` put them
        // in `out`): runs to one peer can leave as one GSO message. Frames to different peers
        // have no order to keep.
        if self.gso {
            self.out_frames
                .sort_unstable_by_key(|&(peer, at, _)| (peer, at));
        }
        while next < self.out_frames.len() {
            let n = (self.out_frames.len() - next).min(mmsg::BATCH);
            for i in 0..n {
                let (peer, at, len) = self.out_frames[next + i];
                refs[i] = &self.out[at..at + len];
                to[i] = peer;
            }
            match mmsg::send_batch(self.socket.as_fd(), &refs[..n], Some(&to[..n]), self.gso) {
                // The route does not take GSO: without, from now on.
                Err(e) if self.gso && mmsg::gso_refused(&e) => self.gso = false,
                Ok(k) if k > 0 => next += k,
                Ok(_) => unreachable!("sendmmsg sends at least one datagram or fails"),
                Err(e) => {
                    self.tx_refused += 1;
                    self.refusal.get_or_insert(e);
                    next += 1;
                }
            }
        }
        self.out.clear();
        self.out_frames.clear();
    }
}

impl Ports for UdpPorts {
    fn recv(&mut self, buf: &mut [u8], timeout: Duration) -> io::Result<Option<(PortId, usize)>> {
        // Through the batch (with GRO one message may hold a train): one datagram at a time.
        if self.taken >= self.batch.len() && self.fill(timeout, 1)? == 0 {
            return Ok(None);
        }
        let f = self.batch.datagram(self.taken);
        let n = f.len().min(buf.len());
        buf[..n].copy_from_slice(&f[..n]);
        let port = self.port_of(self.batch.sender(self.taken));
        self.taken += 1;
        Ok(Some((port, n)))
    }

    fn recv_burst(
        &mut self,
        _buf: &mut [u8],
        timeout: Duration,
        deliver: &mut dyn FnMut(PortId, &[u8]),
    ) -> io::Result<usize> {
        // Waits (up to the timeout) for the first datagram, then takes what is there; what
        // `recv` left of the last batch first.
        if self.taken >= self.batch.len() && self.fill(timeout, mmsg::BATCH)? == 0 {
            return Ok(0);
        }
        let k = self.batch.len() - self.taken;
        for i in self.taken..self.batch.len() {
            let port = self.port_of(self.batch.sender(i));
            deliver(port, self.batch.datagram(i));
        }
        self.taken = self.batch.len();
        Ok(k)
    }

    fn send(&mut self, port: PortId, frame: &[u8]) -> io::Result<()> {
        let peer = *self.peers.get(port as usize).ok_or_else(|| {
            io::Error::new(io::ErrorKind::NotFound, format!("no peer for port {port}"))
        })?;
        self.out_frames.push((peer, self.out.len(), frame.len()));
        self.out.extend_from_slice(frame);
        if self.out_frames.len() >= mmsg::BATCH {
            self.send_kept();
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        if !self.out_frames.is_empty() {
            self.send_kept();
        }
        match self.refusal.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
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

    fn counters(&self) -> Vec<(String, u64)> {
        // Only when it happened: a UDP switch's counters had no `datapath` entry before.
        if self.tx_refused == 0 {
            return Vec::new();
        }
        vec![("udp_tx_refused".to_string(), self.tx_refused)]
    }
}

/// Ports on network interfaces, one `AF_PACKET` socket each.
///
/// Batched (docs/host.md, "Batched I/O"): a port's frames arrive in `recvmmsg` calls (a burst
/// takes what every port has queued, starting with the port after the last one served), and
/// [`Ports::send`] keeps a port's frames (copied) until [`Ports::flush`] or until
/// [`mmsg::BATCH`] are kept for it, then sends them in one `sendmmsg`, in order.
pub struct AfPacketPorts {
    socks: Vec<AfPacket>,
    next: usize,
    batch: Box<RecvBatch>,
    /// Frames kept for each port, and how many of each port's buffers hold one.
    out: Vec<Vec<Vec<u8>>>,
    kept: Vec<usize>,
}

impl AfPacketPorts {
    /// Opens `ifaces[i]` as port `i`.
    pub fn open(ifaces: &[String]) -> Result<AfPacketPorts, sgnn_netdev::Error> {
        let socks: Vec<AfPacket> = ifaces
            .iter()
            .map(|i| AfPacket::open(i))
            .collect::<Result<_, _>>()?;
        let n = socks.len();
        Ok(AfPacketPorts {
            socks,
            next: 0,
            batch: Box::new(RecvBatch::new()),
            out: vec![Vec::new(); n],
            kept: vec![0; n],
        })
    }

    /// Sends the frames kept for port `i`.
    fn send_kept(&mut self, i: usize) -> io::Result<()> {
        let k = std::mem::take(&mut self.kept[i]);
        if k == 0 {
            return Ok(());
        }
        Ok(self.socks[i].send_burst(&self.out[i][..k])?)
    }
}

impl Ports for AfPacketPorts {
    fn recv(&mut self, buf: &mut [u8], timeout: Duration) -> io::Result<Option<(PortId, usize)>> {
        // Round-robin over ports that have frames, so one busy port cannot starve the others.
        for _ in 0..2 {
            for k in 0..self.socks.len() {
                let i = (self.next + k) % self.socks.len();
                if let Some(n) = self.socks[i].try_recv(buf)? {
                    self.next = (i + 1) % self.socks.len();
                    return Ok(Some((i as PortId, n)));
                }
            }
            if !AfPacket::wait_any(&self.socks, libc::POLLIN, Some(timeout))? {
                return Ok(None);
            }
        }
        Ok(None)
    }

    fn recv_burst(
        &mut self,
        _buf: &mut [u8],
        timeout: Duration,
        deliver: &mut dyn FnMut(PortId, &[u8]),
    ) -> io::Result<usize> {
        // Every port's queued frames, one recvmmsg each, from the port after the last served
        // (no port starves another); if none had any, wait for one and go round once more.
        let m = self.socks.len();
        for _ in 0..2 {
            let mut got = 0;
            for k in 0..m {
                let i = (self.next + k) % m;
                let n = self.socks[i].recv_batch(&mut self.batch, Some(Duration::ZERO))?;
                for f in 0..n {
                    deliver(i as PortId, self.batch.datagram(f));
                }
                got += n;
            }
            self.next = (self.next + 1) % m.max(1);
            if got > 0 || !AfPacket::wait_any(&self.socks, libc::POLLIN, Some(timeout))? {
                return Ok(got);
            }
        }
        Ok(0)
    }

    fn send(&mut self, port: PortId, frame: &[u8]) -> io::Result<()> {
        let i = port as usize;
        if i >= self.socks.len() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("no interface for port {port}"),
            ));
        }
        let k = self.kept[i];
        match self.out[i].get_mut(k) {
            Some(b) => {
                b.clear();
                b.extend_from_slice(frame);
            }
            None => self.out[i].push(frame.to_vec()),
        }
        self.kept[i] = k + 1;
        if self.kept[i] >= mmsg::BATCH {
            self.send_kept(i)?;
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        let mut first = Ok(());
        for i in 0..self.socks.len() {
            if let Err(e) = self.send_kept(i) {
                if first.is_ok() {
                    first = Err(e);
                }
            }
        }
        first
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
#[derive(Debug, Default, Clone)]
pub struct DatapathStats {
    /// Frames dropped by [`EgressFaults`].
    pub fault_dropped: u64,
    /// Frames sent twice by [`EgressFaults`].
    pub fault_duplicated: u64,
    /// Frames held back by [`EgressFaults`].
    pub fault_reordered: u64,
    /// Sends that failed (no such port, or a socket error), and flushes that failed.
    pub tx_errors: u64,
    /// Sends that failed and not yet handed to the pipeline's `port_tx_failed` (port,
    /// bytes): [`serve`] moves them there once per burst.
    pub failed: Vec<(PortId, usize)>,
    /// Frames dropped because their egress queue was full.
    pub queue_drops: u64,
    /// Deepest egress queue seen (frames).
    pub max_queue_depth: u32,
    /// Deepest egress queue seen (bytes on the wire).
    pub max_queue_bytes: u64,
    /// Frames marked ECN CE at egress because their queue held at least
    /// [`EgressQueues::ecn_bytes`] (`--ecn-threshold-bytes`).
    pub ecn_marked: u64,
    /// The process's CPU seconds when the first frame arrived (tables loaded, the exchange
    /// starting): what the exchange cost is the CPU seconds at exit minus these.
    pub cpu_at_first_frame: Option<f64>,
}

impl DatapathStats {
    fn send_failed(&mut self, port: PortId, bytes: usize) {
        self.tx_errors += 1;
        self.failed.push((port, bytes));
    }

    /// Moves the failed sends into the pipeline's per-port counts and publishes the other
    /// counters through the ports ([`Ports::publish`], read by the metrics); locks only when
    /// something changed.
    fn settle(&mut self, pipeline: &Mutex<Pipeline>, ports: &mut dyn Ports, published: &mut u64) {
        let sig = self.tx_errors
            + self.queue_drops
            + self.max_queue_depth as u64
            + self.ecn_marked
            + self.fault_dropped
            + self.fault_duplicated
            + self.fault_reordered;
        if self.failed.is_empty() && sig == *published {
            return;
        }
        *published = sig;
        let mut p = pipeline.lock().expect("pipeline lock");
        for (port, bytes) in self.failed.drain(..) {
            p.transmit_failed(port, bytes);
        }
        ports.publish(&DatapathStats {
            failed: Vec::new(),
            ..self.clone()
        });
    }
}

/// How fast an egress port drains.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PortRate {
    /// Frames per second, whatever their size (`--port-rate`).
    Pps(f64),
    /// Bit/s of bytes on the wire ([`sgnn_wire::wire_bytes`]: FCS, preamble and gap counted),
    /// as a link of that speed (`--port-rate-mbps`).
    Bps(f64),
}

/// Output queues: per-port FIFOs drained at a fixed rate, like a switch port slower than its
/// senders. Their depth in frames is what the pipeline's ECN marking sees (`enq_qdepth` in
/// bmv2, `--ecn-threshold`); their depth in bytes marks every frame at egress, as a switch's
/// queue does (`--ecn-threshold-bytes`, the simulator's and DCQCN's marking).
#[derive(Debug, Clone)]
pub struct EgressQueues {
    /// How fast each port drains; `None` sends at once (no queueing).
    pub rate: Option<PortRate>,
    /// Frames a queue holds; more are dropped (tail drop).
    pub capacity: usize,
    /// Mark ECN CE in the IPv4 header of a frame that finds at least this many bytes (on the
    /// wire) queued ahead of it; `None`: no egress marking.
    pub ecn_bytes: Option<u64>,
    queues: Vec<std::collections::VecDeque<Vec<u8>>>,
    /// Bytes on the wire queued per port.
    queued: Vec<u64>,
    tokens: Vec<f64>,
    last: std::time::Instant,
}

impl EgressQueues {
    /// Queues for `ports` ports draining `rate_pps` frames per second each (`None`: none).
    pub fn new(ports: usize, rate_pps: Option<f64>, capacity: usize) -> EgressQueues {
        EgressQueues::with_rate(ports, rate_pps.map(PortRate::Pps), capacity, None)
    }

    /// Queues for `ports` ports draining at `rate`, marking at `ecn_bytes`.
    pub fn with_rate(
        ports: usize,
        rate: Option<PortRate>,
        capacity: usize,
        ecn_bytes: Option<u64>,
    ) -> EgressQueues {
        EgressQueues {
            rate,
            capacity: capacity.max(1),
            ecn_bytes,
            queues: vec![Default::default(); ports],
            queued: vec![0; ports],
            tokens: vec![rate.map_or(0.0, Self::burst); ports],
            last: std::time::Instant::now(),
        }
    }

    /// What a frame of `len` bytes costs of a port's tokens, and a port's tokens per second.
    fn cost(rate: PortRate, len: usize) -> f64 {
        match rate {
            PortRate::Pps(_) => 1.0,
            PortRate::Bps(_) => sgnn_wire::wire_bytes(len) as f64,
        }
    }

    fn per_second(rate: PortRate) -> f64 {
        match rate {
            PortRate::Pps(r) => r,
            PortRate::Bps(b) => b / 8.0,
        }
    }

    /// Tokens a port may hold: one frame (pps), one full-size frame (bytes).
    fn burst(rate: PortRate) -> f64 {
        Self::cost(rate, sgnn_netdev::MAX_FRAME)
    }

    /// Current depth of every port's queue.
    pub fn depths(&self) -> Vec<u32> {
        self.queues.iter().map(|q| q.len() as u32).collect()
    }

    fn refill(&mut self) {
        let now = std::time::Instant::now();
        let dt = now.duration_since(self.last).as_secs_f64();
        self.last = now;
        if let Some(r) = self.rate {
            for t in &mut self.tokens {
                // A burst of at most one frame beyond the rate.
                *t = (*t + dt * Self::per_second(r)).min(Self::burst(r));
            }
        }
    }

    /// Sends what the rate allows; returns how long until the next frame may go.
    fn drain(&mut self, ports: &mut dyn Ports, stats: &mut DatapathStats) -> Option<Duration> {
        self.refill();
        let rate = self.rate?;
        let mut wait: Option<Duration> = None;
        for (p, q) in self.queues.iter_mut().enumerate() {
            while let Some(len) = q.front().map(|f| f.len()) {
                let cost = Self::cost(rate, len);
                if self.tokens[p] < cost {
                    break;
                }
                self.tokens[p] -= cost;
                self.queued[p] -= sgnn_wire::wire_bytes(len);
                let f = q.pop_front().expect("not empty");
                if ports.send(p as PortId, &f).is_err() {
                    stats.send_failed(p as PortId, f.len());
                }
            }
            if let Some(f) = q.front() {
                let missing = Self::cost(rate, f.len()) - self.tokens[p];
                let w = Duration::from_secs_f64((missing / Self::per_second(rate)).max(0.0));
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
        if self.rate.is_none() || port as usize >= self.queues.len() {
            if ports.send(port, frame).is_err() {
                stats.send_failed(port, frame.len());
            }
            return;
        }
        let q = &mut self.queues[port as usize];
        if q.len() >= self.capacity {
            stats.queue_drops += 1;
            return;
        }
        let mut f = frame.to_vec();
        let ahead = self.queued[port as usize];
        if self.ecn_bytes.is_some_and(|t| ahead >= t) && mark_ce(&mut f) {
            stats.ecn_marked += 1;
        }
        self.queued[port as usize] += sgnn_wire::wire_bytes(f.len());
        q.push_back(f);
        stats.max_queue_depth = stats.max_queue_depth.max(q.len() as u32);
        stats.max_queue_bytes = stats.max_queue_bytes.max(self.queued[port as usize]);
    }
}

/// Sets ECN CE in `frame`'s IPv4 header (its DSCP kept, the checksum recomputed); false for
/// a frame that is not IPv4.
fn mark_ce(frame: &mut [u8]) -> bool {
    let Ok(mut f) = sgnn_wire::frame::Frame::new_checked(frame) else {
        return false;
    };
    f.set_ecn_ce();
    true
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
    let mut published = 0u64;
    let mut buf = vec![0u8; sgnn_netdev::MAX_FRAME];
    let mut out: Vec<Emitted> = Vec::with_capacity(64);
    loop {
        if stop(&pipeline.lock().expect("pipeline lock")) {
            for (port, f) in faults.flush() {
                queues.push(port, &f, ports, &mut stats);
            }
            // Let the queues empty at their rate: the last frames (block-advance) matter.
            while let Some(w) = queues.drain(ports, &mut stats) {
                let _ = ports.flush();
                std::thread::sleep(w);
            }
            if ports.flush().is_err() {
                stats.tx_errors += 1;
            }
            stats.settle(pipeline, ports, &mut published);
            return Ok(stats);
        }
        let wait = queues.drain(ports, &mut stats);
        if ports.flush().is_err() {
            stats.tx_errors += 1;
        }
        let wait = wait.map_or(Duration::from_millis(50), |w| {
            w.min(Duration::from_millis(50))
        });
        out.clear();
        {
            // Locked only once frames are there, and once per burst.
            let mut locked: Option<std::sync::MutexGuard<'_, Pipeline>> = None;
            let depths = queues.rate.map(|_| queues.depths());
            ports.recv_burst(&mut buf, wait, &mut |port, frame| {
                let p = locked.get_or_insert_with(|| pipeline.lock().expect("pipeline lock"));
                if let Some(d) = &depths {
                    p.queue_depth.clone_from(d);
                }
                p.process(port, frame, &mut out);
            })?;
            if locked.is_some() && stats.cpu_at_first_frame.is_none() {
                stats.cpu_at_first_frame = Some(sgnn_netdev::cpu::process_cpu_seconds());
            }
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
        if ports.flush().is_err() {
            stats.tx_errors += 1;
        }
        stats.settle(pipeline, ports, &mut published);
    }
}

#[cfg(feature = "dpdk")]
pub use dpdk_ports::{DpdkPorts, DpdkPortsConfig};

#[cfg(feature = "dpdk")]
mod dpdk_ports {
    use std::io;
    use std::time::{Duration, Instant};

    use sgnn_dpdk::{Eal, Mempool, Port, PortConfig, MBUF_DATA_ROOM};
    use sgnn_netdev::poll::IdlePoll;

    use super::Ports;
    use crate::tables::PortId;

    /// How [`DpdkPorts::open`] sets up DPDK.
    #[derive(Debug, Clone)]
    pub struct DpdkPortsConfig {
        /// Receive and transmit descriptors per port.
        pub queue_size: u16,
        /// Packet buffers per port in the shared pool.
        pub mbufs_per_port: u32,
        /// When no port has frames, poll without pause for this long, then sleep
        /// [`DpdkPortsConfig::idle_sleep`] between polls.
        pub spin: Duration,
        /// Pause between idle polls after the spin; zero: poll without pause (one core).
        pub idle_sleep: Duration,
    }

    impl Default for DpdkPortsConfig {
        fn default() -> Self {
            DpdkPortsConfig {
                queue_size: 1024,
                mbufs_per_port: 4096,
                spin: Duration::from_micros(100),
                idle_sleep: Duration::from_micros(50),
            }
        }
    }

    /// The switch's ports on DPDK ethdevs: port `i` is the `i`-th ethdev. Frames are
    /// received in bursts and handed to the pipeline from the mbufs; frames sent are queued
    /// per port and transmitted in bursts by [`Ports::flush`].
    pub struct DpdkPorts {
        ports: Vec<Port>,
        next: usize,
        /// How an empty poll waits ([`DpdkPortsConfig::spin`], [`DpdkPortsConfig::idle_sleep`]).
        idle: IdlePoll,
    }

    impl DpdkPorts {
        /// Initialises DPDK's EAL with `eal_args` and opens its ethdevs as ports
        /// `0..nports`; it must have exactly `nports` (one per worker, in order). Links are
        /// not waited for: memif clients connect when their daemons start.
        pub fn open(
            eal_args: &[String],
            nports: usize,
            cfg: &DpdkPortsConfig,
        ) -> Result<DpdkPorts, sgnn_dpdk::Error> {
            let eal = Eal::init(eal_args)?;
            let ids = eal.ports();
            if ids.len() != nports {
                return Err(sgnn_dpdk::Error {
                    what: "opening the switch's DPDK ports".into(),
                    reason: format!(
                        "the plan has {nports} workers but DPDK has {} ethdevs; give the EAL \
                         one device per worker, in order (e.g. --vdev=net_memif0,role=server,\
                         socket=/tmp/sw0.sock,socket-abstract=no --vdev=net_memif1,...)",
                        ids.len()
                    ),
                });
            }
            let pool = Mempool::new(
                &eal,
                "softswitch",
                (cfg.mbufs_per_port * nports as u32).max(1023),
                MBUF_DATA_ROOM,
            )?;
            let pcfg = PortConfig {
                rx_queue_size: cfg.queue_size,
                tx_queue_size: cfg.queue_size,
                ..PortConfig::default()
            };
            let ports = ids
                .iter()
                .map(|&id| Port::open(&eal, id, pool.clone(), &pcfg))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(DpdkPorts {
                ports,
                next: 0,
                idle: IdlePoll {
                    spin: cfg.spin,
                    idle_sleep: cfg.idle_sleep,
                },
            })
        }

        /// The ethdevs, port by port.
        pub fn ports(&self) -> &[Port] {
            &self.ports
        }
    }

    impl Ports for DpdkPorts {
        fn recv(
            &mut self,
            buf: &mut [u8],
            timeout: Duration,
        ) -> io::Result<Option<(PortId, usize)>> {
            let mut got = None;
            let n = buf.len();
            let mut one = |p: PortId, f: &[u8]| {
                let k = f.len().min(n);
                buf[..k].copy_from_slice(&f[..k]);
                got = Some((p, k));
            };
            // One frame at a time: poll each port for at most one.
            let start = Instant::now();
            loop {
                for k in 0..self.ports.len() {
                    let i = (self.next + k) % self.ports.len();
                    if self.ports[i].rx_burst(1, |f| one(i as PortId, f)) > 0 {
                        self.next = (i + 1) % self.ports.len();
                        return Ok(got);
                    }
                }
                if !self.idle.pause(start, timeout) {
                    return Ok(None);
                }
            }
        }

        fn recv_burst(
            &mut self,
            _buf: &mut [u8],
            timeout: Duration,
            deliver: &mut dyn FnMut(PortId, &[u8]),
        ) -> io::Result<usize> {
            let start = Instant::now();
            loop {
                let mut total = 0;
                // Every port gets one burst per round, starting after last round's first.
                for k in 0..self.ports.len() {
                    let i = (self.next + k) % self.ports.len();
                    total += self.ports[i].rx_burst(sgnn_dpdk::BURST, |f| deliver(i as PortId, f));
                }
                self.next = (self.next + 1) % self.ports.len().max(1);
                if total > 0 {
                    return Ok(total);
                }
                if !self.idle.pause(start, timeout) {
                    return Ok(0);
                }
            }
        }

        fn send(&mut self, port: PortId, frame: &[u8]) -> io::Result<()> {
            let p = self.ports.get_mut(port as usize).ok_or_else(|| {
                io::Error::new(io::ErrorKind::NotFound, format!("no DPDK port {port}"))
            })?;
            if p.tx_queue(frame) {
                Ok(())
            } else {
                Err(io::Error::other("no mbuf for the frame"))
            }
        }

        fn flush(&mut self) -> io::Result<()> {
            for p in &mut self.ports {
                p.tx_flush();
            }
            Ok(())
        }

        fn describe(&self) -> String {
            let names: Vec<String> = self
                .ports
                .iter()
                .map(|p| format!("{} ({})", p.name(), p.driver()))
                .collect();
            format!("dpdk on {}", names.join(", "))
        }

        fn counters(&self) -> Vec<(String, u64)> {
            let mut out = Vec::new();
            for (i, p) in self.ports.iter().enumerate() {
                if let Ok(s) = p.stats() {
                    for (k, v) in [
                        ("rx_frames", s.rx_frames),
                        ("tx_frames", s.tx_frames),
                        ("tx_dropped", s.tx_dropped),
                        ("tx_nombuf", s.tx_nombuf),
                        ("dev_imissed", s.imissed),
                    ] {
                        out.push((format!("port{i}_{k}"), v));
                    }
                }
            }
            out
        }
    }
}
