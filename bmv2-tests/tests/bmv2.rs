//! The P4 program on bmv2, differentially against the software switch's model: compile `p4/`,
//! check its P4Info against the one the control plane expects, then run every scenario on
//! `simple_switch_grpc` in a namespace with veths, loaded over P4Runtime, comparing every
//! emitted frame, the counters and the registers step by step. Says SKIPPED (and why) when
//! p4c or simple_switch_grpc is missing or namespaces cannot be made.

use std::time::Duration;

use sgnn_bmv2_tests::device::{load, model_of, program, start_bmv2, P4rtState};
use sgnn_bmv2_tests::net::TestNet;
use sgnn_bmv2_tests::{p4_main, runner, scenario, Tools};
use switch_ctl::Target;

/// Runs `cmds` (one per line) through simple_switch_CLI (next to simple_switch_grpc, with
/// `$P4_PYTHON` if set) against the switch's Thrift port inside its namespace.
fn simple_switch_cli(t: &Tools, (ns, port): &(String, u16), cmds: &str) {
    use std::io::Write;
    let cli = t.simple_switch_grpc.with_file_name("simple_switch_CLI");
    let python = std::env::var("P4_PYTHON").unwrap_or_else(|_| "python3".into());
    let mut child = std::process::Command::new("ip")
        .args(["netns", "exec", ns, &python])
        .arg(&cli)
        .args(["--thrift-port", &port.to_string()])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(cmds.as_bytes())
        .unwrap();
    assert!(child.wait().unwrap().success());
}

fn tools() -> Option<Tools> {
    let t = sgnn_testkit::require("bmv2 tests", Tools::find(), sgnn_testkit::HOW_BMV2)?;
    sgnn_testkit::require(
        "bmv2 tests",
        sgnn_netdev::can_create_namespaces(),
        sgnn_testkit::HOW_ROOT,
    )?;
    eprintln!("bmv2 tests with {}", t.versions());
    Some(t)
}

/// Needs p4c only: the program's P4Info is checked wherever a compiler is, with or without bmv2.
#[test]
fn p4_program_compiles_and_its_p4info_is_the_contract() {
    let Some(p4c) = sgnn_testkit::require(
        "bmv2 compile test",
        sgnn_bmv2_tests::tools::find_p4c(),
        sgnn_testkit::HOW_BMV2,
    ) else {
        return;
    };
    let out = tempfile::tempdir().unwrap();
    let c = sgnn_bmv2_tests::tools::compile(&p4c, &p4_main(), out.path()).unwrap();
    let got = sgnn_p4rt::p4info::load_p4info(&c.p4info_bin).unwrap();
    let diffs = sgnn_p4rt::schema::compare_p4info(&sgnn_p4rt::schema::switchgnn_p4info(), &got);
    assert!(
        diffs.is_empty(),
        "P4Info differs:\n  {}",
        diffs.join("\n  ")
    );
}

#[test]
fn every_scenario_on_bmv2_matches_the_model() {
    let Some(t) = tools() else { return };
    let build = tempfile::tempdir().unwrap();
    let c = t.compile(&p4_main(), build.path()).unwrap();
    let cli = t.simple_switch_grpc.with_file_name("simple_switch_CLI");
    // SGNN_RECORD_BMV2=FILE: keep what bmv2 emitted for tests/recorded.rs.
    let record = std::env::var_os("SGNN_RECORD_BMV2");
    let mut recorded = Vec::new();
    for sc in scenario::all() {
        let dir = tempfile::tempdir().unwrap();
        let net = TestNet::create("bm", sc.ports()).unwrap();
        let sw = start_bmv2(&t, &net, dir.path()).unwrap();
        let prog = program(&sc).unwrap();
        let mut target = load(&sw, &prog, Some(&c)).unwrap();
        let mut state = P4rtState {
            target: &mut target,
            thrift: sw.thrift.clone(),
            cli: Some(cli.clone()),
        };
        let model = model_of(&sc, &prog);
        match runner::run(&sc, model, &net, &mut state, Duration::from_secs(5)) {
            Ok(r) => {
                eprintln!(
                    "bmv2 {}: {} steps, {} frames, {} register cells equal",
                    sc.name, r.steps, r.frames, r.cells
                );
                recorded.push(sgnn_bmv2_tests::recording::Recorded {
                    name: sc.name.to_string(),
                    plan_tag: sc.plan.tag(),
                    steps: sc
                        .steps
                        .iter()
                        .zip(r.emitted)
                        .map(|(st, got)| {
                            (
                                sgnn_bmv2_tests::recording::input_digest(st.port, &st.frame),
                                got,
                            )
                        })
                        .collect(),
                });
            }
            Err(e) => panic!("{e}\n(bmv2 log: {})", sw.log.display()),
        }
    }
    if let Some(path) = record {
        sgnn_bmv2_tests::recording::write(std::path::Path::new(&path), &t.versions(), &recorded)
            .unwrap();
        eprintln!("recorded bmv2's frames in {}", path.to_string_lossy());
    }
}

/// ECN depends on real queue depths, so it is not compared with the model: a slow egress
/// (100 frames/s on every port) and a burst must make bmv2 mark results (SwitchGNN flag and
/// IPv4 CE together), count every mark, and leave the sums exact.
#[test]
fn a_queue_over_the_threshold_marks_results_ecn_on_bmv2() {
    let Some(t) = tools() else { return };
    let build = tempfile::tempdir().unwrap();
    let c = t.compile(&p4_main(), build.path()).unwrap();
    let mut sc = scenario::recirculation_and_reuse();
    sc.config.ecn_threshold = 2;
    let dir = tempfile::tempdir().unwrap();
    let net = TestNet::create("be", sc.plan.workers() as usize).unwrap();
    let sw = start_bmv2(&t, &net, dir.path()).unwrap();
    let prog = program(&sc).unwrap();
    let mut target = load(&sw, &prog, Some(&c)).unwrap();
    // simple_switch_CLI: every egress queue holds 1000 frames and drains 100 per second.
    // With priority queues, rates and depths are per port and priority.
    let mut cmds = String::new();
    for p in 0..sc.plan.workers() {
        for q in 0..8 {
            cmds += &format!("set_queue_depth 1000 {p} {q}\nset_queue_rate 100 {p} {q}\n");
        }
    }
    simple_switch_cli(&t, sw.thrift.as_ref().unwrap(), &cmds);
    // The first block's data, all at once: results pile up in the egress queues.
    let mut model = model_of(&sc, &prog);
    let mut want_results = 0;
    let mut out = Vec::new();
    // Paced by bmv2's rx counter so no frame is lost on the way in; the egress queues, at
    // 100 frames/s, still fill.
    for (sent, st) in sc
        .steps
        .iter()
        .take_while(|s| s.what.starts_with("data round 0 block 0"))
        .enumerate()
    {
        while sent as u64 >= target.read_counter("events", 0).unwrap().packets + 16 {
            std::thread::sleep(Duration::from_millis(1));
        }
        net.send(st.port, &st.frame).unwrap();
        out.clear();
        model.process(st.port, &st.frame, &mut out);
        want_results += out.len();
    }
    assert!(want_results > 20, "enough results to queue");
    let got = net.collect(
        want_results,
        Duration::from_secs(30),
        Duration::from_millis(200),
    );
    assert_eq!(
        got.len(),
        want_results,
        "every result arrives, marked or not"
    );
    let mut marked = 0;
    for (_, f) in &got {
        let (r, _) = sgnn_wire::FrameRepr::parse(f).unwrap();
        assert_eq!(r.sgnn.packet_type, sgnn_wire::PacketType::Result);
        assert_eq!(r.sgnn.flags.ecn, r.ip.ecn == 3, "both marks or neither");
        marked += r.sgnn.flags.ecn as u64;
    }
    assert!(marked > 0, "a queue over 2 frames marks results");
    let ev = target
        .read_counters(sgnn_switch::counters::EVENTS.name)
        .unwrap();
    let ecn_index = sgnn_switch::counters::Event::EcnMarked.index();
    assert_eq!(ev[ecn_index].packets, marked);
    // The marks change nothing else: the same frames as the unmarked model, ECN bits aside.
    eprintln!("bmv2 ECN: {marked} of {want_results} results marked");
}

/// DSCP priority on bmv2's priority queues (ported from the deleted Python checker's `priority`):
/// with worker 1's port draining 10 frames a second, 12 bulk frames (plain UDP, DSCP 0,
/// queue 0) sent first and 3 acks (results and acks, queue 5) sent after them all reach worker
/// 1, and the acks leave before the last bulk frame: they overtook it.
#[test]
fn acks_overtake_bulk_frames_in_the_priority_queues_on_bmv2() {
    let Some(t) = tools() else { return };
    let build = tempfile::tempdir().unwrap();
    let c = t.compile(&p4_main(), build.path()).unwrap();
    let sc = scenario::forwarding_and_malformed();
    let dir = tempfile::tempdir().unwrap();
    let net = TestNet::create("bp", 3).unwrap();
    let sw = start_bmv2(&t, &net, dir.path()).unwrap();
    let mut plan_sc = sc;
    plan_sc.steps.clear();
    let prog = program(&plan_sc).unwrap();
    let _target = load(&sw, &prog, Some(&c)).unwrap();
    let set_rate = |pps: u32| {
        let cmds: String = (0..8)
            .map(|q| format!("set_queue_rate {pps} 1 {q}\n"))
            .collect();
        simple_switch_cli(&t, sw.thrift.as_ref().unwrap(), &cmds);
    };
    // The plan has 2 workers (ports 0 and 1); the frames go from worker 0 to worker 1.
    set_rate(10);
    let to = sgnn_wire::addressing::worker_ip(1);
    for i in 0..12u8 {
        let mut ack = sgnn_wire::sgnn::Repr::new(sgnn_wire::PacketType::Ack);
        ack.worker_id = 0;
        ack.src_id = i as u32;
        let mut f = scenario::frame_to(0, to, ack, None);
        // Plain UDP (protocol 17), DSCP 0: bulk traffic, forwarded by ipv4_forward.
        f[14 + 1] = 0;
        f[14 + 9] = 17;
        scenario::fix_ipv4_checksum(&mut f);
        net.send(0, &f).unwrap();
    }
    for i in 0..3u32 {
        let mut ack = sgnn_wire::sgnn::Repr::new(sgnn_wire::PacketType::Ack);
        ack.worker_id = 0;
        ack.dst_id = i;
        let mut f = scenario::frame_to(0, to, ack, None);
        f[14 + 1] = sgnn_wire::dscp::RESULT_ACK << 2;
        scenario::fix_ipv4_checksum(&mut f);
        net.send(0, &f).unwrap();
    }
    let got = net.collect(15, Duration::from_secs(10), Duration::from_millis(500));
    set_rate(1_000_000);
    let seq: String = got
        .iter()
        .map(|(_, f)| if f[14 + 9] == 17 { 'u' } else { 'a' })
        .collect();
    eprintln!("bmv2 priority: sent uuuuuuuuuuuuaaa, received {seq}");
    assert_eq!(seq.len(), 15, "every frame arrives: {seq}");
    assert!(
        seq.rfind('a') < seq.rfind('u'),
        "the acks overtake the last bulk frame: {seq}"
    );
}
