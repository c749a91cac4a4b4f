//! The safe API on real DPDK ports, each case in child processes (EAL takes a process and
//! initialises once): `harness = false`, `main` re-executes this binary with
//! `SGNN_DPDK_CHILD=<role>` and judges the children's output and exit status.
//!
//! - ring: a `net_ring` loopback port; 5000 frames of 60..1499 bytes out and back, contents,
//!   counts, bytes, port counters, every mbuf back in the pool; EAL refuses a second init;
//!   ports resolve by name and number.
//! - memif: two processes joined by `net_memif` (server echoes, client checks), DPDK to
//!   DPDK with no kernel in the path; counts and bytes on both sides.

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use sgnn_dpdk::{Eal, Mempool, Port, PortConfig, MBUF_DATA_ROOM};

const EAL_BASE: [&str; 7] = [
    "--no-huge",
    "-m",
    "64",
    "--no-pci",
    "--no-shconf",
    "--no-telemetry",
    "--log-level=lib.eal:warning",
];

fn frame(i: usize) -> Vec<u8> {
    let len = 60 + (i * 37) % 1440;
    let mut f: Vec<u8> = (0..len).map(|k| (i * 11 + k * 3) as u8).collect();
    f[..8].copy_from_slice(&(i as u64).to_le_bytes());
    f
}

fn eal(extra: &[String]) -> Eal {
    let args: Vec<String> = EAL_BASE
        .iter()
        .map(|s| s.to_string())
        .chain(extra.iter().cloned())
        .collect();
    Eal::init(&args).unwrap_or_else(|e| die(&e.to_string()))
}

fn die(msg: &str) -> ! {
    eprintln!("child failed: {msg}");
    std::process::exit(1)
}

fn ring_child() {
    let eal = eal(&["--vdev=net_ring0".into()]);
    if Eal::init(["--no-huge"]).is_ok() {
        die("a second Eal::init must fail");
    }
    let id = eal
        .port_by_name("net_ring0")
        .unwrap_or_else(|e| die(&e.to_string()));
    assert_eq!(eal.resolve("0").unwrap(), id);
    if eal.resolve("7").is_ok() {
        die("port 7 does not exist");
    }
    let pool = Mempool::new(&eal, "ring_pool", 4095, MBUF_DATA_ROOM).unwrap();
    let mut port = Port::open(&eal, id, pool.clone(), &PortConfig::default())
        .unwrap_or_else(|e| die(&e.to_string()));
    assert_eq!(port.driver(), "net_ring");
    const N: usize = 5000;
    let (mut got, mut bytes) = (0usize, 0u64);
    for start in (0..N).step_by(100) {
        let frames: Vec<Vec<u8>> = (start..start + 100).map(frame).collect();
        if port.tx_burst(&frames) != 100 {
            die("net_ring did not take a burst of 100");
        }
        let n = port.rx_burst(1000, |f| {
            if f != frame(got).as_slice() {
                die(&format!("frame {got} came back different"));
            }
            got += 1;
            bytes += f.len() as u64;
        });
        if n != 100 {
            die(&format!("received {n} of 100"));
        }
    }
    let st = port.stats().unwrap();
    if st.opackets != N as u64
        || st.ipackets != N as u64
        || st.tx_dropped != 0
        || st.rx_frames != N as u64
        || st.tx_frames != N as u64
        || st.rx_bytes != bytes
        || st.tx_bytes != bytes
    {
        die(&format!("counters {st:?}"));
    }
    if pool.in_use() != 0 {
        die(&format!("{} mbufs not returned", pool.in_use()));
    }
    // Too large for an mbuf: dropped and counted, the rest of the burst still goes.
    let big = vec![vec![0u8; 4000], frame(1)];
    if port.tx_burst(&big) != 1 || port.stats().unwrap().tx_nombuf != 1 {
        die("an oversized frame must be dropped and counted");
    }
    port.rx_burst(10, |_| {});
    drop(port);
    println!("RESULT ring frames={got} bytes={bytes}");
}

const MEMIF_FRAMES: usize = 20_000;

fn memif_args(sock: &str, role: &str) -> Vec<String> {
    vec![format!(
        "--vdev=net_memif0,role={role},id=0,socket={sock},socket-abstract=no"
    )]
}

/// The echo test counts every frame: wait for a full ring to drain (the peer may be
/// descheduled on a busy machine) rather than drop.
fn lossless() -> PortConfig {
    PortConfig {
        tx_wait: Duration::from_secs(5),
        ..PortConfig::default()
    }
}

fn memif_server(sock: &str) {
    let eal = eal(&memif_args(sock, "server"));
    let pool = Mempool::new(&eal, "srv", 8191, MBUF_DATA_ROOM).unwrap();
    let mut port =
        Port::open(&eal, eal.ports()[0], pool, &lossless()).unwrap_or_else(|e| die(&e.to_string()));
    println!("READY");
    let t = Instant::now();
    let (mut echoed, mut bytes) = (0usize, 0u64);
    let mut batch: Vec<Vec<u8>> = Vec::new();
    while echoed < MEMIF_FRAMES && t.elapsed() < Duration::from_secs(60) {
        batch.clear();
        port.rx_burst(256, |f| batch.push(f.to_vec()));
        if batch.is_empty() {
            std::thread::sleep(Duration::from_micros(20));
            continue;
        }
        bytes += batch.iter().map(|f| f.len() as u64).sum::<u64>();
        echoed += port.tx_burst(&batch);
    }
    // Let the client take the last frames before the link goes away.
    std::thread::sleep(Duration::from_millis(300));
    let st = port.stats().unwrap();
    println!(
        "RESULT server echoed={echoed} bytes={bytes} rx={}/{} tx={}/{}",
        st.rx_frames, st.rx_bytes, st.tx_frames, st.tx_bytes
    );
}

fn memif_client(sock: &str) {
    let eal = eal(&memif_args(sock, "client"));
    let pool = Mempool::new(&eal, "cli", 8191, MBUF_DATA_ROOM).unwrap();
    let mut port =
        Port::open(&eal, eal.ports()[0], pool, &lossless()).unwrap_or_else(|e| die(&e.to_string()));
    if !port.wait_link_up(Duration::from_secs(20)) {
        die("memif link did not come up");
    }
    let t = Instant::now();
    let (mut next, mut got, mut bytes) = (0usize, 0usize, 0u64);
    // Keep at most 512 frames in flight: the echo's rings stay below their 1024 slots.
    while got < MEMIF_FRAMES && t.elapsed() < Duration::from_secs(60) {
        if next < MEMIF_FRAMES && next - got < 512 {
            let k = 64.min(MEMIF_FRAMES - next);
            let frames: Vec<Vec<u8>> = (next..next + k).map(frame).collect();
            next += port.tx_burst(&frames);
        }
        port.rx_burst(256, |f| {
            if f != frame(got).as_slice() {
                die(&format!("echo of frame {got} differs"));
            }
            got += 1;
            bytes += f.len() as u64;
        });
    }
    let st = port.stats().unwrap();
    println!(
        "RESULT client got={got} bytes={bytes} ipackets={} opackets={} rx={}/{} tx={}/{} dropped={}",
        st.ipackets, st.opackets, st.rx_frames, st.rx_bytes, st.tx_frames, st.tx_bytes, st.tx_dropped
    );
}

fn run_child(role: &str, arg: &str) -> Command {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.env("SGNN_DPDK_CHILD", role).env("SGNN_DPDK_ARG", arg);
    c
}

fn result_line(o: &Output) -> Option<String> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .find(|l| l.starts_with("RESULT "))
        .map(|l| l.to_string())
}

fn show(name: &str, o: &Output) -> String {
    format!(
        "--- {name}: {:?}\n{}{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn test_ring() -> Result<(), String> {
    let o = run_child("ring", "").output().map_err(|e| e.to_string())?;
    let want: u64 = (0..5000).map(|i| frame(i).len() as u64).sum();
    let line = format!("RESULT ring frames=5000 bytes={want}");
    if o.status.success() && result_line(&o).as_deref() == Some(line.as_str()) {
        Ok(())
    } else {
        Err(format!("wanted `{line}`\n{}", show("ring child", &o)))
    }
}

fn test_memif() -> Result<(), String> {
    let dir = std::env::temp_dir().join(format!("sgnn-dpdk-memif-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let sock = dir.join("m.sock").to_string_lossy().into_owned();
    let mut server = run_child("memif-server", &sock)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    // The server must listen before the client connects (the client retries anyway).
    let t = Instant::now();
    while !std::path::Path::new(&sock).exists() && t.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let client = run_child("memif-client", &sock).output();
    let server = {
        let t = Instant::now();
        while server.try_wait().ok().flatten().is_none() && t.elapsed() < Duration::from_secs(70) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = server.kill();
        server.wait_with_output().map_err(|e| e.to_string())?
    };
    let _ = std::fs::remove_dir_all(&dir);
    let client = client.map_err(|e| e.to_string())?;
    let want: u64 = (0..MEMIF_FRAMES).map(|i| frame(i).len() as u64).sum();
    let c_line = result_line(&client).unwrap_or_default();
    let s_line = result_line(&server).unwrap_or_default();
    let c_ok = client.status.success()
        && c_line.starts_with(&format!(
            "RESULT client got={MEMIF_FRAMES} bytes={want} ipackets={MEMIF_FRAMES} opackets={MEMIF_FRAMES} rx={MEMIF_FRAMES}/{want} tx={MEMIF_FRAMES}/{want} dropped=0"
        ));
    let s_ok = server.status.success()
        && s_line
            == format!(
                "RESULT server echoed={MEMIF_FRAMES} bytes={want} rx={MEMIF_FRAMES}/{want} tx={MEMIF_FRAMES}/{want}"
            );
    if c_ok && s_ok {
        Ok(())
    } else {
        Err(format!(
            "{}\n{}",
            show("memif client", &client),
            show("memif server", &server)
        ))
    }
}

/// One test case: Ok, or what went wrong.
type Case = fn() -> Result<(), String>;

fn main() {
    if let Ok(role) = std::env::var("SGNN_DPDK_CHILD") {
        let arg = std::env::var("SGNN_DPDK_ARG").unwrap_or_default();
        match role.as_str() {
            "ring" => ring_child(),
            "memif-server" => memif_server(&arg),
            "memif-client" => memif_client(&arg),
            _ => die(&format!("unknown role {role}")),
        }
        std::process::exit(0);
    }
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let tests: [(&str, Case); 2] = [
        ("ring_loopback", test_ring),
        ("memif_echo_between_two_processes", test_memif),
    ];
    let (mut passed, mut failed) = (0, 0);
    for (name, f) in tests {
        if !filter.is_empty() && !filter.iter().any(|p| name.contains(p.as_str())) {
            continue;
        }
        let t = Instant::now();
        match f() {
            Ok(()) => {
                passed += 1;
                println!("test {name} ... ok ({:.1} s)", t.elapsed().as_secs_f64());
            }
            Err(e) => {
                failed += 1;
                println!("test {name} ... FAILED\n{e}");
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    if failed > 0 {
        std::process::exit(1);
    }
}
