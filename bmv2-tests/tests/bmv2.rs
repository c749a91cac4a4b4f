//! The P4 program on bmv2, differentially against the software switch's model: compile `p4/`,
//! check its P4Info against the one the control plane expects, then run every scenario on
//! `simple_switch_grpc` in a namespace with veths, loaded over P4Runtime, comparing every
//! emitted frame, the counters and the registers step by step. Says SKIPPED (and why) when
//! p4c or simple_switch_grpc is missing or namespaces cannot be made.

use std::time::Duration;

use sgnn_bmv2_tests::device::{load, model_of, program, start_bmv2, P4rtState};
use sgnn_bmv2_tests::net::TestNet;
use sgnn_bmv2_tests::{p4_main, runner, scenario, Tools};

fn tools() -> Option<Tools> {
    let t = match Tools::find() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("SKIPPED bmv2 tests: {e}");
            return None;
        }
    };
    if let Err(e) = sgnn_netdev::can_create_namespaces() {
        eprintln!("SKIPPED bmv2 tests: {e}");
        return None;
    }
    eprintln!("bmv2 tests with {}", t.versions());
    Some(t)
}

#[test]
fn p4_program_compiles_and_its_p4info_is_the_contract() {
    let Some(t) = tools() else { return };
    let out = tempfile::tempdir().unwrap();
    let c = t.compile(&p4_main(), out.path()).unwrap();
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
    for sc in scenario::all() {
        let dir = tempfile::tempdir().unwrap();
        let net = TestNet::create("bm", sc.plan.workers() as usize).unwrap();
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
            Ok(r) => eprintln!(
                "bmv2 {}: {} steps, {} frames, {} register cells equal",
                sc.name, r.steps, r.frames, r.cells
            ),
            Err(e) => panic!("{e}\n(bmv2 log: {})", sw.log.display()),
        }
    }
}
