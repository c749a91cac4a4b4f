//! Every switch scenario of `bmv2-tests` against the real `softswitch` binary: AF_PACKET ports
//! on veths in a namespace the test creates, tables loaded over P4Runtime as `switch-ctl load`
//! does, and every emitted frame, counter and register compared with the model step by step.
//! (The same scenarios run against bmv2 in `tests/bmv2.rs` where bmv2 is installed.) The binary
//! is built with this test's profile, or taken from `SOFTSWITCH`.

use std::time::Duration;

use sgnn_bmv2_tests::device::{load, model_of, program, start_softswitch, P4rtState};
use sgnn_bmv2_tests::net::TestNet;
use sgnn_bmv2_tests::{runner, scenario};

#[test]
fn every_scenario_matches_the_model_through_real_sockets() {
    if sgnn_testkit::require(
        "softswitch scenarios over veths",
        sgnn_netdev::can_create_namespaces(),
        sgnn_testkit::HOW_ROOT,
    )
    .is_none()
    {
        return;
    }
    let bin = sgnn_testkit::workspace_binary("softswitch", "SOFTSWITCH");
    let bin = bin.as_path();
    for sc in scenario::all() {
        let dir = tempfile::tempdir().unwrap();
        let net = TestNet::create("ss", sc.ports()).unwrap();
        let sw = start_softswitch(bin, &net, dir.path()).unwrap();
        let prog = program(&sc).unwrap();
        let mut target = load(&sw, &prog, None).unwrap();
        let mut state = P4rtState {
            target: &mut target,
            thrift: None,
            cli: None,
        };
        let model = model_of(&sc, &prog);
        match runner::run(&sc, model, &net, &mut state, Duration::from_secs(3)) {
            Ok(r) => eprintln!(
                "{}: {} steps, {} frames, {} register cells equal",
                sc.name, r.steps, r.frames, r.cells
            ),
            Err(e) => panic!(
                "{e}\n(switch log: {})",
                std::fs::read_to_string(&sw.log).unwrap_or_default()
            ),
        }
    }
}
