//! Throughput of the switches on the same packets, and P4Runtime entries installed per second:
//! bmv2 (`simple_switch_grpc`, when installed) and the software switch binary, both on veths in
//! a namespace, both loaded over P4Runtime. Prints a Markdown table for docs/benchmarks.md.
//!
//!   cargo build --release -p softswitch
//!   cargo run --release -p sgnn-bmv2-tests --example switch_bench -- [FRAMES]
//!
//! Needs root (namespaces). The frames are one block of cora's plan (4 workers): the Data
//! frames of every source (the first copy of each aggregates, recirculating where a source
//! feeds several aggregators; repeats are duplicates the switch drops after the same lookups),
//! at most 512 ahead of the switch's `rx` counter; the rate is frames the switch processed
//! over the time until the last one.

use std::time::{Duration, Instant};

use sgnn_bmv2_tests::device::{load, program, start_bmv2, start_softswitch, SwitchProcess};
use sgnn_bmv2_tests::net::TestNet;
use sgnn_bmv2_tests::{p4_main, scenario, Tools};
use switch_ctl::Target;

fn run(
    name: &str,
    net: &TestNet,
    sw: &SwitchProcess,
    compiled: Option<&sgnn_bmv2_tests::Compiled>,
    sc: &scenario::Scenario,
    frames: usize,
) -> String {
    let prog = program(sc).unwrap();
    let t0 = Instant::now();
    let mut target = load(sw, &prog, compiled).unwrap();
    let load_s = t0.elapsed().as_secs_f64();
    let ops = prog.agg_entries() + prog.base_entries.len() + 3;
    // Only the block's data frames, repeated: the first copy aggregates, later copies are
    // duplicates the switch drops after the same lookups (one pass each).
    let data: Vec<_> = sc
        .steps
        .iter()
        .filter(|s| s.what.starts_with("data"))
        .collect();
    // At most WINDOW frames ahead of what the switch has taken in (its `rx` counter), so
    // neither switch loses frames to a full socket and both are measured at their own pace.
    const WINDOW: u64 = 512;
    let start = Instant::now();
    let mut taken = 0u64;
    for i in 0..frames {
        while i as u64 >= taken + WINDOW {
            taken = target
                .read_counter(sgnn_switch::counters::EVENTS.name, 0)
                .unwrap()
                .packets;
            let _ = net.collect(0, Duration::ZERO, Duration::ZERO);
        }
        let s = data[i % data.len()];
        net.send(s.port, &s.frame).unwrap();
        if i % 64 == 0 {
            let _ = net.collect(0, Duration::ZERO, Duration::ZERO);
        }
    }
    // Until every frame is in, or nothing moved for 2 s (frames lost on the way in).
    let mut rx = 0;
    let mut last_change = Instant::now();
    let mut secs = start.elapsed().as_secs_f64();
    while last_change.elapsed() < Duration::from_secs(2) {
        let now = target
            .read_counter(sgnn_switch::counters::EVENTS.name, 0)
            .unwrap()
            .packets;
        if now != rx {
            rx = now;
            last_change = Instant::now();
            secs = start.elapsed().as_secs_f64();
        }
        if rx as usize >= frames {
            break;
        }
        let _ = net.collect(0, Duration::ZERO, Duration::ZERO);
        std::thread::sleep(Duration::from_millis(2));
    }
    format!(
        "| {name} | {} | {:.0} | {:.2} | {:.0} |",
        rx,
        rx as f64 / secs,
        load_s,
        ops as f64 / load_s
    )
}

fn main() {
    let frames: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse().expect("FRAMES is a number"))
        .unwrap_or(20_000);
    sgnn_netdev::can_create_namespaces().expect("needs root");
    let sc = scenario::one_block_real_graph();
    println!("| switch | frames processed | frames/s | load s | entries/s |");
    println!("|---|---|---|---|---|");
    let exe = std::env::current_exe().unwrap();
    let bin = exe
        .parent()
        .and_then(|p| p.parent())
        .unwrap()
        .join("softswitch");
    {
        let dir = tempfile::tempdir().unwrap();
        let net = TestNet::create("bs", 4).unwrap();
        let sw = start_softswitch(&bin, &net, dir.path()).unwrap();
        println!(
            "{}",
            run(
                "softswitch (AF_PACKET, release)",
                &net,
                &sw,
                None,
                &sc,
                frames
            )
        );
    }
    match Tools::find() {
        Ok(t) => {
            let build = tempfile::tempdir().unwrap();
            let c = t.compile(&p4_main(), build.path()).unwrap();
            let dir = tempfile::tempdir().unwrap();
            let net = TestNet::create("bb", 4).unwrap();
            let sw = start_bmv2(&t, &net, dir.path()).unwrap();
            println!(
                "{}",
                run(
                    &format!("bmv2 ({})", t.versions()),
                    &net,
                    &sw,
                    Some(&c),
                    &sc,
                    frames
                )
            );
        }
        Err(e) => println!("(bmv2 skipped: {e})"),
    }
}
