//! The TNA program (`p4/tna`) through the real Tofino compiler, where it is built (`bf-p4c`
//! on `PATH` or `BF_P4C`; docs/tofino.md). Without it every test prints SKIPPED and passes.
//!
//! - it compiles for Tofino 1 (`tna`) and Tofino 2 (`t2na`) to a loadable binary;
//! - the BfRt schema the compiler wrote has every object of the control-plane contract for
//!   the TNA program (`schema::switchgnn_p4info_for(Arch::Tna)`) with the same widths, so
//!   `switch-ctl load --target bfrt://` can program it;
//! - the copy of that schema committed for the BfRt tests (which CI runs without the
//!   compiler) is the compiler's output, byte for byte.

use std::path::PathBuf;

use sgnn_bmv2_tests::tools::TofinoCompiler;
use sgnn_p4rt::bfrt::{compare_schema, BfrtInfo};
use sgnn_p4rt::schema::{switchgnn_p4info_for, Arch};

fn compiler(target: &str) -> Option<TofinoCompiler> {
    sgnn_testkit::require(
        &format!("Tofino compile test ({target})"),
        TofinoCompiler::find(),
        sgnn_testkit::HOW_TOFINO,
    )
}

fn tna_main() -> PathBuf {
    sgnn_bmv2_tests::repo_root().join("p4/tna/switchgnn.p4")
}

/// The committed copy of the compiler's BfRt schema for Tofino 1.
pub fn committed_bfrt() -> PathBuf {
    sgnn_bmv2_tests::repo_root().join("switch-ctl/p4rt/tests/data/switchgnn-tna.bf-rt.json")
}

fn compile_and_check(target: &str) {
    let Some(c) = compiler(target) else { return };
    let dir = tempfile::tempdir().unwrap();
    let b = c
        .compile(&tna_main(), target, &[], dir.path())
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        b.binary.is_file(),
        "no {} after compiling",
        b.binary.display()
    );
    let json = std::fs::read(&b.bfrt_json).unwrap();
    let info = BfrtInfo::parse(&json).unwrap();
    let diffs = compare_schema(&switchgnn_p4info_for(Arch::Tna), &info);
    assert!(
        diffs.is_empty(),
        "the compiled TNA program lacks contract objects:\n{}",
        diffs.join("\n")
    );
    if target == "tofino" {
        let committed = std::fs::read(committed_bfrt()).unwrap_or_default();
        assert!(
            committed == json,
            "{} is not what bf-p4c writes today: copy {} over it",
            committed_bfrt().display(),
            b.bfrt_json.display()
        );
    }
}

#[test]
fn the_tna_program_compiles_for_tofino_1_with_every_contract_object() {
    compile_and_check("tofino");
}

#[test]
fn the_tna_program_compiles_for_tofino_2_with_every_contract_object() {
    compile_and_check("tofino2");
}
