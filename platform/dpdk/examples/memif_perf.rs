//! Frames per second through `net_memif` with one core per side: a source process
//! transmits `--frames` frames of `--size` bytes (each copied into an mbuf, as
//! `Port::tx_burst` does for the daemons) and a sink process receives them (zero copy, as the
//! daemons and the switch do) and counts. Both poll without pause.
//!
//! ```sh
//! cargo run --release -p sgnn-dpdk --example memif_perf -- --frames 5000000 --size 64 [--pin]
//! ```
//!
//! Prints the sink's rate from its first to its last frame, and what the source's device
//! refused (ring full: the sink was slower).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sgnn_dpdk::{Eal, Mempool, Port, PortConfig, BURST, MBUF_DATA_ROOM};

fn eal(role: &str, sock: &str) -> Eal {
    // --pin: the sink on CPU 0, the source on CPU 1 (default: one lcore each, not pinned).
    let pin: Vec<String> = if std::env::args().any(|a| a == "--pin") {
        vec!["-l".into(), if role == "server" { "0" } else { "1" }.into()]
    } else {
        vec![]
    };
    let args = [
        "--no-huge".to_string(),
        "-m".into(),
        "256".into(),
        "--no-pci".into(),
        "--no-shconf".into(),
        "--no-telemetry".into(),
        "--log-level=lib.eal:warning".into(),
        format!("--vdev=net_memif0,role={role},id=0,socket={sock},socket-abstract=no"),
    ]
    .into_iter()
    .chain(pin);
    Eal::init(args).expect("EAL")
}

fn open(eal: &Eal) -> Port {
    let pool = Mempool::new(eal, "perf", 16383, MBUF_DATA_ROOM).expect("pool");
    let cfg = PortConfig {
        tx_wait: Duration::from_secs(1),
        ..PortConfig::default()
    };
    let port = Port::open(eal, eal.ports()[0], pool, &cfg).expect("port");
    assert!(port.wait_link_up(Duration::from_secs(20)), "memif link");
    port
}

fn sink(sock: &str, frames: u64) {
    let eal = eal("server", sock);
    let mut port = open(&eal);
    let (mut n, mut bytes, mut sum) = (0u64, 0u64, 0u64);
    let mut first: Option<Instant> = None;
    let mut last = Instant::now();
    while n < frames {
        let k = port.rx_burst(BURST * 4, |f| {
            bytes += f.len() as u64;
            sum = sum.wrapping_add(f[f.len() - 1] as u64); // touch the data
        });
        if k > 0 {
            first.get_or_insert_with(Instant::now);
            last = Instant::now();
            n += k as u64;
        } else if first.is_some_and(|_| last.elapsed() > Duration::from_secs(2)) {
            break;
        }
    }
    let secs = last.duration_since(first.unwrap_or(last)).as_secs_f64();
    println!(
        "sink: {n} frames, {bytes} bytes in {secs:.3} s: {:.2} Mframes/s, {:.2} Gbit/s (checksum {sum})",
        n as f64 / secs / 1e6,
        bytes as f64 * 8.0 / secs / 1e9
    );
}

fn source(sock: &str, frames: u64, size: usize) {
    let eal = eal("client", sock);
    let mut port = open(&eal);
    let frame: Vec<u8> = (0..size).map(|i| i as u8).collect();
    let burst: Vec<&[u8]> = vec![&frame[..]; BURST];
    let t = Instant::now();
    let mut sent = 0u64;
    while sent < frames {
        let k = (frames - sent).min(BURST as u64) as usize;
        let took = port.tx_burst(&burst[..k]);
        sent += took as u64;
        if took < k {
            break; // the sink stopped taking frames
        }
    }
    let s = port.stats().unwrap();
    println!(
        "source: {sent} frames taken in {:.3} s, {} refused",
        t.elapsed().as_secs_f64(),
        s.tx_dropped
    );
    std::thread::sleep(Duration::from_millis(500));
}

fn arg(name: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map_or(default, |v| v.parse().expect("a number"))
}

fn main() {
    let frames = arg("--frames", 2_000_000);
    let size = arg("--size", 64) as usize;
    if let Ok(role) = std::env::var("MEMIF_PERF_ROLE") {
        let sock = std::env::var("MEMIF_PERF_SOCK").unwrap();
        match role.as_str() {
            "sink" => sink(&sock, frames),
            _ => source(&sock, frames, size),
        }
        return;
    }
    let dir = std::env::temp_dir().join(format!("memif-perf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sock = dir.join("perf.sock").to_string_lossy().into_owned();
    let me = std::env::current_exe().unwrap();
    let run = |role: &str| {
        Command::new(&me)
            .args(std::env::args().skip(1))
            .env("MEMIF_PERF_ROLE", role)
            .env("MEMIF_PERF_SOCK", &sock)
            .stdout(Stdio::inherit())
            .spawn()
            .unwrap()
    };
    let mut sink = run("sink");
    let t = Instant::now();
    while !std::path::Path::new(&sock).exists() && t.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut source = run("source");
    source.wait().unwrap();
    sink.wait().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
