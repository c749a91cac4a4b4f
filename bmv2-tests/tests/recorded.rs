//! What bmv2 emitted, recorded where bmv2 is built (`tests/data/bmv2-frames.txt.gz`,
//! `sgnn_bmv2_tests::recording`), checked on every machine without p4c or bmv2:
//! - the model emits the same frames for every step of every scenario, so a change to the
//!   software switch that bmv2 would disagree with fails here, in CI;
//! - the wire crate parses every SwitchGNN frame bmv2 built and emits it again byte for byte
//!   (real bytes from the P4 program's deparser, as smoltcp tests its headers against
//!   captured packets).
//!
//! A scenario whose plan differs from the recorded one (its real graph, cora, is absent and
//! R-MAT stands in) is SKIPPED loudly; one whose steps changed fails with what to re-record.

use std::path::Path;

use sgnn_bmv2_tests::recording::{input_digest, read};
use sgnn_bmv2_tests::scenario;
use sgnn_wire::{FrameRepr, IP_PROTO_SWITCHGNN};

const RECORDING: &str = "tests/data/bmv2-frames.txt.gz";
const RERECORD: &str = "re-record on a machine with p4c and bmv2: SGNN_RECORD_BMV2=$PWD/bmv2-tests/tests/data/bmv2-frames.txt.gz cargo test -p sgnn-bmv2-tests --test bmv2 every_scenario (bmv2-tests/README.md)";

#[test]
fn the_model_emits_what_bmv2_emitted_and_the_wire_crate_reads_it() {
    let recorded = read(&Path::new(env!("CARGO_MANIFEST_DIR")).join(RECORDING)).unwrap();
    let scenarios = scenario::all();
    let (mut frames, mut parsed, mut checked) = (0, 0, 0);
    for sc in &scenarios {
        let Some(rec) = recorded.iter().find(|r| r.name == sc.name) else {
            panic!("scenario {} is not in the recording: {RERECORD}", sc.name);
        };
        if rec.plan_tag != sc.plan.tag() {
            eprintln!(
                "SKIPPED: scenario {}: its plan (tag {:08x}) is not the recorded one ({:08x}); its real graph is probably missing here",
                sc.name,
                sc.plan.tag(),
                rec.plan_tag
            );
            continue;
        }
        assert_eq!(
            rec.steps.len(),
            sc.steps.len(),
            "scenario {} has other steps than recorded: {RERECORD}",
            sc.name
        );
        let mut model = sc.model();
        let mut out = Vec::new();
        for (k, (st, (digest, bmv2))) in sc.steps.iter().zip(&rec.steps).enumerate() {
            assert_eq!(
                input_digest(st.port, &st.frame),
                *digest,
                "scenario {} step {k} ({}) changed since the recording: {RERECORD}",
                sc.name,
                st.what
            );
            out.clear();
            model.process(st.port, &st.frame, &mut out);
            let mut want: Vec<(u16, Vec<u8>)> =
                out.iter().map(|e| (e.port, e.frame.clone())).collect();
            want.sort();
            assert_eq!(
                &want, bmv2,
                "scenario {} step {k} ({}): the model emits other frames than bmv2 did",
                sc.name, st.what
            );
            for (_, f) in bmv2 {
                frames += 1;
                // IPv4 protocol 253: a SwitchGNN frame, read and written again by the wire crate.
                if f.len() > 23 && f[12..14] == [0x08, 0x00] && f[23] == IP_PROTO_SWITCHGNN {
                    let (repr, lanes) = FrameRepr::parse(f).unwrap_or_else(|e| {
                        panic!(
                            "scenario {} step {k}: bmv2's frame does not parse: {e}",
                            sc.name
                        )
                    });
                    let mut again = vec![0u8; repr.frame_len()];
                    repr.emit(lanes.as_ref(), &mut again).unwrap();
                    assert_eq!(
                        &again[..],
                        &f[..again.len()],
                        "scenario {} step {k}: emit(parse(bmv2's frame)) differs",
                        sc.name
                    );
                    parsed += 1;
                }
            }
        }
        checked += 1;
    }
    eprintln!(
        "{checked} of {} scenarios: {frames} frames bmv2 emitted equal the model's, {parsed} SwitchGNN frames parsed and emitted again byte for byte",
        scenarios.len()
    );
    assert!(
        checked >= scenarios.len() - 1,
        "at most one scenario skipped"
    );
    assert!(parsed > 1000);
}
