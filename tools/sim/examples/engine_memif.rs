//! The daemon's receive path over a real DPDK port (issue 32): the transport engine taking
//! worker 0's frames of a round from `net_memif`, one core per side, against the same port
//! only receiving the same frames, in one run.
//!
//! Two processes, as in `sgnn-dpdk`'s `memif_perf`:
//! - the **replayer** stands for the switch: it holds what worker 0 received in round 0 of
//!   an in-memory run of the four engines and the software switch's pipeline (the workload of
//!   `benches/engine.rs`: the README's graph and plan) and, each time the other side asks,
//!   sends the whole of it as fast as the port takes it (copied into mbufs, as `Port::tx_burst`
//!   does for the daemons and the switch);
//! - the **receiver** stands for the daemon. Each round it prepares a fresh engine that has
//!   started the round and sent its own frames (not timed), asks for the round and polls its
//!   port. Rounds take turns: one only touches each frame (`rx only`: the port's own cost);
//!   one hands each frame to `Engine::handle_frame` stamped with a clock reading of its own
//!   and drains what it sends (what `sgnn-hostd --datapath dpdk` did per frame before); one
//!   does the same with the daemon's `BurstClock` (a reading per receive call and every 16
//!   frames, what `Session` does now). Time runs from the round's first frame to its last.
//!
//! ```sh
//! cargo run --release -p sgnn-sim --features dpdk --example engine_memif -- \
//!     [--case auto|host-based|switchgnn] [--rounds 600] [--pin]
//! ```
//!
//! `--case`: `auto` (the `auto` plan: Results and multicast replicas; the default),
//! `host-based` (the baseline's Bypass frames), `switchgnn` (the paper plan's first block of
//! Results). `--pin`: the receiver on CPU 0, the replayer on CPU 1. It prints one line per
//! mode with frames per second and Gbit/s at the receiver, the ratio to the port's, and what
//! one reading of the system clock costs on this machine.
//! Needs DPDK (`--features dpdk`); no hugepages (`--no-huge`), no NIC (`--no-pci`).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sgnn_dpdk::{Eal, Mempool, Port, PortConfig, BURST, MBUF_DATA_ROOM};
use sgnn_netdev::dpdk_args::{eal_args, memif_vdev};
use sgnn_plan::AggregateMode;
use sgnn_transport::engine::Mode;
use sgnn_transport::session::BurstClock;

// Only some of the shared workload's helpers are used here.
#[allow(dead_code)]
#[path = "../benches/common/case.rs"]
mod case;
use case::{plan, Case};

/// The receiver's request for the next round: one frame of this many bytes. No frame of a
/// round is this short, so the replayer cannot take a stray one for it.
const ASK_LEN: usize = 20;
/// A side waits this long for the other before it gives up and says so.
const PATIENCE: Duration = Duration::from_secs(20);

fn eal(role: &str, sock: &str) -> Eal {
    let vdev = memif_vdev(0, role, std::path::Path::new(sock));
    let prefix = format!("engine-memif-{role}-{}", std::process::id());
    let mut args = eal_args(&prefix, 256, &[vdev]);
    if std::env::args().any(|a| a == "--pin") {
        args.extend(["-l".into(), if role == "server" { "0" } else { "1" }.into()]);
    }
    Eal::init(args).unwrap_or_else(|e| panic!("DPDK EAL ({role}): {e}"))
}

fn open(eal: &Eal) -> Port {
    let pool = Mempool::new(eal, "replay", 16383, MBUF_DATA_ROOM).expect("mbuf pool");
    let cfg = PortConfig {
        tx_wait: Duration::from_secs(1),
        ..PortConfig::default()
    };
    let port = Port::open(eal, eal.ports()[0], pool, &cfg).expect("memif port");
    assert!(
        port.wait_link_up(PATIENCE),
        "the memif link did not come up"
    );
    port
}

fn workload(name: &str) -> Case {
    match name {
        "auto" => Case::new(&plan(AggregateMode::Auto), Mode::SwitchGnn),
        "host-based" => Case::new(&plan(AggregateMode::Paper), Mode::HostBased),
        "switchgnn" => Case::new(&plan(AggregateMode::Paper), Mode::SwitchGnn),
        other => panic!("--case {other}: expected auto, host-based or switchgnn"),
    }
}

/// Frames, bytes and seconds of one mode over its rounds.
#[derive(Default)]
struct Tally {
    frames: u64,
    bytes: u64,
    secs: f64,
}

impl Tally {
    fn line(&self, what: &str) -> String {
        format!(
            "{what}: {} frames in {:.3} s: {:.2} M frames/s, {:.2} Gbit/s",
            self.frames,
            self.secs,
            self.frames as f64 / self.secs / 1e6,
            self.bytes as f64 * 8.0 / self.secs / 1e9
        )
    }
    fn rate(&self) -> f64 {
        self.frames as f64 / self.secs
    }
}

fn receiver(sock: &str, name: &str, rounds: u64) {
    let eal = eal("server", sock);
    let mut port = open(&eal);
    let case = workload(name);
    let per_round = case.received.len();
    let ask = [0u8; ASK_LEN];
    // [rx only, engine with a clock reading per frame, engine with the daemon's BurstClock]
    let mut tally: [Tally; 3] = Default::default();
    let mut touched = 0u64;
    let start = Instant::now();
    let stamps = BurstClock::new(start);
    for r in 0..rounds {
        let mode = (r % 3) as usize;
        // Set-up, not timed: worker 0 at the start of the round, its frames sent.
        let mut e = (mode > 0).then(|| case.sent());
        while port.tx_burst(&[&ask[..]]) == 0 {}
        let (mut n, mut bytes) = (0usize, 0u64);
        let mut first: Option<Instant> = None;
        let waiting = Instant::now();
        while n < per_round {
            stamps.new_call();
            let k = port.rx_burst(BURST, |f| {
                bytes += f.len() as u64;
                let Some(e) = e.as_mut() else {
                    touched = touched.wrapping_add(f[f.len() - 1] as u64);
                    return;
                };
                let now = if mode == 1 {
                    start.elapsed().as_nanos() as u64
                } else {
                    stamps.frame()
                };
                e.handle_frame(now, f);
                while let Some(out) = e.poll_transmit(now) {
                    std::hint::black_box(&out);
                }
            });
            if k > 0 {
                first.get_or_insert_with(Instant::now);
                n += k;
            } else if waiting.elapsed() > PATIENCE {
                panic!("round {r}: {n} of {per_round} frames arrived in {PATIENCE:?}");
            }
        }
        let secs = first.map_or(0.0, |t| t.elapsed().as_secs_f64());
        if let Some(e) = e.as_mut() {
            if case.whole_round {
                assert!(e.take_sums().is_some(), "round {r} did not complete");
            } else {
                assert_eq!(e.block(), Some(1), "round {r}: block 0 did not advance");
            }
        }
        let t = &mut tally[mode];
        t.frames += n as u64;
        t.bytes += bytes;
        t.secs += secs;
    }
    println!(
        "case {name}: {per_round} frames per round, {rounds} rounds in turn (checksum {touched})"
    );
    println!(
        "a clock reading (Instant::elapsed): {:.1} ns",
        clock_read_ns()
    );
    println!("{}", tally[0].line("rx only (the port)"));
    println!(
        "{}",
        tally[1].line("rx + engine, a clock reading per frame")
    );
    println!("{}", tally[2].line("rx + engine, the daemon's BurstClock"));
    println!(
        "engine over DPDK memif: {:.2} M frames/s per core ({:.2} with a clock reading per frame), {:.2}x of the port's rate on the same frames",
        tally[2].rate() / 1e6,
        tally[1].rate() / 1e6,
        tally[2].rate() / tally[0].rate()
    );
}

/// What one reading of the system clock costs here, the per-frame cost `BurstClock` saves:
/// the mean of a million `Instant::elapsed` calls.
fn clock_read_ns() -> f64 {
    const N: u32 = 1_000_000;
    let start = Instant::now();
    let t = Instant::now();
    let mut sum = 0u128;
    for _ in 0..N {
        sum = sum.wrapping_add(std::hint::black_box(start.elapsed()).as_nanos());
    }
    std::hint::black_box(sum);
    t.elapsed().as_nanos() as f64 / N as f64
}

fn replayer(sock: &str, name: &str, rounds: u64) {
    let eal = eal("client", sock);
    let mut port = open(&eal);
    let case = workload(name);
    for r in 0..rounds {
        let mut asked = false;
        let waiting = Instant::now();
        while !asked {
            port.rx_burst(BURST, |f| asked |= f.len() == ASK_LEN);
            assert!(
                waiting.elapsed() < PATIENCE,
                "round {r}: no request from the receiver in {PATIENCE:?}"
            );
        }
        let mut sent = 0;
        while sent < case.received.len() {
            let end = (sent + BURST).min(case.received.len());
            sent += port.tx_burst(&case.received[sent..end]);
            assert!(
                waiting.elapsed() < PATIENCE,
                "round {r}: the receiver took {sent} frames in {PATIENCE:?}"
            );
        }
    }
    // Let the last frames drain before the port closes.
    std::thread::sleep(Duration::from_millis(300));
}

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    let i = args.iter().position(|a| a == name)?;
    Some(
        args.get(i + 1)
            .unwrap_or_else(|| panic!("{name} needs a value"))
            .clone(),
    )
}

fn main() {
    let name = arg("--case").unwrap_or_else(|| "auto".into());
    let rounds: u64 = arg("--rounds").map_or(600, |v| v.parse().expect("--rounds: a number"));
    if let Ok(role) = std::env::var("ENGINE_MEMIF_ROLE") {
        let sock = std::env::var("ENGINE_MEMIF_SOCK").expect("ENGINE_MEMIF_SOCK");
        match role.as_str() {
            "receiver" => receiver(&sock, &name, rounds),
            _ => replayer(&sock, &name, rounds),
        }
        return;
    }
    let dir = std::env::temp_dir().join(format!("engine-memif-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let sock = dir.join("replay.sock").to_string_lossy().into_owned();
    let me = std::env::current_exe().expect("this program's path");
    let run = |role: &str| {
        Command::new(&me)
            .args(std::env::args().skip(1))
            .env("ENGINE_MEMIF_ROLE", role)
            .env("ENGINE_MEMIF_SOCK", &sock)
            .stdout(Stdio::inherit())
            .spawn()
            .expect("start a side")
    };
    let mut receiver = run("receiver");
    let t = Instant::now();
    while !std::path::Path::new(&sock).exists() && t.elapsed() < PATIENCE {
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut replayer = run("replayer");
    let a = replayer.wait().expect("the replayer");
    let b = receiver.wait().expect("the receiver");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(a.success() && b.success(), "a side failed: {a}, {b}");
}
