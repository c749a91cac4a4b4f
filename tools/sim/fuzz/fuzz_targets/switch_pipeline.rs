//! Fuzzes the software switch's `Pipeline` with a loaded plan (the paper's or `auto`):
//! arbitrary sequences of frames from any port, built from fuzzer-chosen header fields. It
//! must never panic, never count more aggregators in use than it has, and every frame it
//! emits must parse.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use sgnn_sim::harness::loaded_switch;
use sgnn_wire::addressing::{worker_ip, SWITCH_IP};
use softswitch::Pipeline;

#[path = "common.rs"]
mod common;

fuzz_target!(|input: (bool, Vec<common::Op>)| {
    let (which, ops) = input;
    let plan = &common::plans()[which as usize];
    let workers = plan.workers() as u16;
    // The loaded switch (the harness's, as `switch-ctl load` leaves it) is built once per
    // plan and copied for every input.
    static SWITCHES: OnceLock<[Pipeline; 2]> = OnceLock::new();
    let switches = SWITCHES.get_or_init(|| {
        let p = common::plans();
        [loaded_switch(&p[0]), loaded_switch(&p[1])]
    });
    let mut sw = switches[which as usize].clone();
    let mut out = Vec::new();
    let mut sent = 0u64;
    for op in ops.iter().take(512) {
        let from = op.port as u16 % (workers + 1);
        let to = worker_ip((op.dst % workers as u32) as u16);
        let Some(frame) =
            op.frame(plan, Some(from), if op.kind & 0x80 != 0 { to } else { SWITCH_IP })
        else {
            continue;
        };
        sent += 1;
        out.clear();
        sw.process(from, &frame, &mut out);
        for e in &out {
            assert!(e.port < workers + 1, "emitted on port {}", e.port);
            if e.frame.len() > 14 + 20 && e.frame[14 + 9] == sgnn_wire::IP_PROTO_SWITCHGNN {
                sgnn_wire::FrameRepr::parse(&e.frame).expect("an emitted frame parses");
            }
        }
    }
    let (busy, stale) = sw.aggregators_in_use();
    assert!(busy + stale <= plan.manifest.aggregators as usize);
    assert_eq!(sw.counters.rx, sent);
});
