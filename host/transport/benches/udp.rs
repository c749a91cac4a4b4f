//! The daemon's UDP datapath on loopback: frames per second from one `UdpDatapath` to another,
//! with UDP GSO and GRO (`gso_gro`, today's default), batched calls alone (`batched`:
//! `sendmmsg`/`recvmmsg`, `SGNN_UDP_OFFLOAD=0`), and one system call per frame (the datapath
//! before issue 32, kept here as `PerFrame`: `send` and `recv` per frame).
//!
//! A sender thread sends bursts of 32 Data-sized frames (186 bytes), at most 4,096 frames
//! ahead of what the receiver counted (so nothing is lost to a full buffer; it sleeps 50 us
//! when it is), and the receiver takes them with `recv_burst` (waiting in `ppoll` as the
//! daemon does). The time reported is the **CPU time** of the process (both threads, user and
//! system, `getrusage`) per frame received, not wall time: on a machine shared with other
//! jobs, wall time measures the scheduler, CPU time what a frame costs.
//!
//! The `af_packet` group does the same on a veth pair it creates (root only): the
//! `AF_PACKET` datapath batched (`AfPacketDatapath`) against one call per frame.
//!
//! ```sh
//! cargo bench -p sgnn-transport --bench udp -- --measurement-time 3 --warm-up-time 1
//! ```

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use std::os::fd::AsFd;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use sgnn_netdev::poll;
use sgnn_transport::datapath::{AfPacketDatapath, Datapath, UdpDatapath};

const FRAME: usize = 186;
const BURST: usize = 32;
const AHEAD: u64 = 4096;

/// A socket moved one frame per system call: the datapaths as they were before batching.
trait OneFrame: Send + 'static {
    /// Sends one frame; false if the kernel refused it.
    fn send_one(&mut self, frame: &[u8]) -> bool;
    /// Receives one frame into `buf`, waiting up to `wait` for it.
    fn recv_one(&mut self, buf: &mut [u8], wait: Duration) -> io::Result<Option<usize>>;
}

impl OneFrame for UdpSocket {
    fn send_one(&mut self, frame: &[u8]) -> bool {
        self.send(frame).is_ok()
    }

    fn recv_one(&mut self, buf: &mut [u8], wait: Duration) -> io::Result<Option<usize>> {
        for first in [true, false] {
            match self.recv(buf) {
                Ok(len) => return Ok(Some(len)),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if !first || wait.is_zero() {
                        break;
                    }
                    let mut fds = [poll::pollfd(self.as_fd(), libc::POLLIN)];
                    let _ = poll::ready(&mut fds, Some(wait));
                }
                Err(e) => return Err(e),
            }
        }
        Ok(None)
    }
}

impl OneFrame for sgnn_netdev::AfPacket {
    fn send_one(&mut self, frame: &[u8]) -> bool {
        self.send(frame).is_ok()
    }

    fn recv_one(&mut self, buf: &mut [u8], wait: Duration) -> io::Result<Option<usize>> {
        Ok(self.recv(buf, Some(wait))?)
    }
}

/// The datapath as it was: one `send` per frame, one `recv` per frame.
struct PerFrame<S> {
    sock: S,
    buf: Vec<u8>,
}

impl<S: OneFrame> PerFrame<S> {
    fn new(sock: S) -> PerFrame<S> {
        PerFrame {
            sock,
            buf: vec![0u8; sgnn_netdev::MAX_FRAME],
        }
    }
}

impl PerFrame<UdpSocket> {
    fn bind(local: SocketAddr, peer: SocketAddr) -> PerFrame<UdpSocket> {
        let socket = sgnn_netdev::bind_udp(local, 4 << 20).unwrap();
        socket.connect(peer).unwrap();
        socket.set_nonblocking(true).unwrap();
        PerFrame::new(socket)
    }
}

impl<S: OneFrame> Datapath for PerFrame<S> {
    fn send_burst(&mut self, frames: &[Vec<u8>]) -> io::Result<usize> {
        Ok(frames.iter().filter(|f| self.sock.send_one(f)).count())
    }

    fn recv_burst(
        &mut self,
        timeout: Duration,
        deliver: &mut dyn FnMut(&[u8]),
    ) -> io::Result<usize> {
        let mut n = 0;
        let mut wait = timeout;
        while n < sgnn_transport::datapath::RECV_BURST {
            match self.sock.recv_one(&mut self.buf, wait)? {
                Some(len) => {
                    deliver(&self.buf[..len]);
                    n += 1;
                    wait = Duration::ZERO;
                }
                None => break,
            }
        }
        Ok(n)
    }
}

fn addrs() -> (SocketAddr, SocketAddr) {
    let a = UdpSocket::bind("127.0.0.1:0").unwrap();
    let b = UdpSocket::bind("127.0.0.1:0").unwrap();
    (a.local_addr().unwrap(), b.local_addr().unwrap())
}

/// CPU time of this process so far (every thread, user and system).
fn cpu_time() -> Duration {
    Duration::from_secs_f64(sgnn_netdev::cpu::process_cpu_seconds())
}

/// Moves `frames` frames from `tx` to `rx` (receiving on another thread); returns the CPU
/// time it took.
fn run<D: Datapath + Send + 'static>(tx: &mut D, rx: D, frames: u64) -> (Duration, D) {
    let got = Arc::new(AtomicU64::new(0));
    let g = got.clone();
    let receiver = std::thread::spawn(move || {
        let mut rx = rx;
        let mut n = 0u64;
        while n < frames {
            n += rx
                .recv_burst(Duration::from_millis(1), &mut |f| {
                    assert_eq!(f.len(), FRAME);
                })
                .unwrap() as u64;
            g.store(n, Ordering::Release);
        }
        rx
    });
    let burst: Vec<Vec<u8>> = (0..BURST).map(|i| vec![i as u8; FRAME]).collect();
    let started = cpu_time();
    let mut sent = 0u64;
    while sent < frames {
        if sent - got.load(Ordering::Acquire) > AHEAD {
            std::thread::sleep(Duration::from_micros(50));
            continue;
        }
        let k = (frames - sent).min(BURST as u64) as usize;
        sent += tx.send_burst(&burst[..k]).unwrap() as u64;
    }
    let rx = receiver.join().unwrap();
    (cpu_time() - started, rx)
}

/// The AF_PACKET datapath on a veth pair made here (root only; SKIPPED otherwise): batched
/// (`AfPacketDatapath`, `sendmmsg`/`recvmmsg`) against one system call per frame.
fn af_packet(c: &mut Criterion) {
    if let Err(e) = sgnn_netdev::can_create_namespaces() {
        eprintln!("SKIPPED af_packet benches ({e})");
        return;
    }
    let _veth = sgnn_netdev::Veth::create("sgnnbench0", None, "sgnnbench1", None).unwrap();
    let mut g = c.benchmark_group("af_packet");
    g.throughput(Throughput::Elements(1));
    g.bench_function("batched", |b| {
        b.iter_custom(|iters| {
            let mut tx = AfPacketDatapath::open("sgnnbench0").unwrap();
            let rx = AfPacketDatapath::open("sgnnbench1").unwrap();
            run(&mut tx, rx, iters).0
        })
    });
    g.bench_function("per_frame", |b| {
        b.iter_custom(|iters| {
            let open = |i: &str| PerFrame::new(sgnn_netdev::AfPacket::open(i).unwrap());
            let mut tx = open("sgnnbench0");
            run(&mut tx, open("sgnnbench1"), iters).0
        })
    });
    g.finish();
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("udp");
    g.throughput(Throughput::Elements(1));
    for (name, offload) in [("gso_gro", true), ("batched", false)] {
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let (ta, ra) = addrs();
                let mut tx = UdpDatapath::bind_with(ta, ra, 4 << 20, offload).unwrap();
                let rx = UdpDatapath::bind_with(ra, ta, 4 << 20, offload).unwrap();
                let (t, rx) = run(&mut tx, rx, iters);
                assert_eq!(tx.send_errors + rx.send_errors, 0);
                t
            })
        });
    }
    g.bench_function("per_frame", |b| {
        b.iter_custom(|iters| {
            let (ta, ra) = addrs();
            let mut tx = PerFrame::bind(ta, ra);
            let rx = PerFrame::bind(ra, ta);
            run(&mut tx, rx, iters).0
        })
    });
    g.finish();
}

criterion_group!(benches, bench, af_packet);
criterion_main!(benches);
