//! The TNA program (`p4/tna`) through the real Tofino compiler, where it is built (`bf-p4c`
//! on `PATH` or `BF_P4C`; docs/tofino.md). Without it every test prints SKIPPED and passes.
//!
//! - the compiler's P4Info is the TNA control-plane contract
//!   (`schema::switchgnn_p4info_for(Arch::Tna)`: names, ids, widths, sizes) and its BfRt
//!   schema has every contract object with the same widths, so `switch-ctl load` can program
//!   it over P4Runtime or BfRt;
//! - the copies of both committed for the tests CI runs without the compiler
//!   (`switch-ctl/p4rt/tests/data/`) are the compiler's output, byte for byte but for the
//!   order of bf-rt.json's snapshot tables, which bf-p4c varies from run to run
//!   ([`same_bfrt`]);
//! - the program compiles to a binary (`tofino.bin`, `tofino2.bin`): it fits Tofino 1's 12
//!   stages and Tofino 2's 20 (docs/tofino.md, "Resources (measured)").

use std::path::PathBuf;

use sgnn_bmv2_tests::tools::{TofinoBuild, TofinoCompiler, TofinoFailure};
use sgnn_p4rt::bfrt::{compare_schema, BfrtInfo};
use sgnn_p4rt::p4info::load_p4info;
use sgnn_p4rt::schema::{compare_p4info, switchgnn_p4info_for, Arch};

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

fn committed(file: &str) -> PathBuf {
    sgnn_bmv2_tests::repo_root()
        .join("switch-ctl/p4rt/tests/data")
        .join(file)
}

/// Whether two `bf-rt.json`s are the same schema: equal byte for byte, or equal as JSON once
/// the `pipe.snapshot.*` tables are set aside, and with the same snapshot tables by name. bf-p4c
/// writes the snapshot tables (the chip's debug capture, which no control plane here uses)
/// ingress first in some runs and egress first in others, numbering their ids and fields in
/// that order: 2 of 5 compiles of the same source on 2026-11-26 gave the other order, and
/// nothing else differed.
fn same_bfrt(a: &[u8], b: &[u8]) -> bool {
    if a == b {
        return true;
    }
    let split = |bytes: &[u8]| -> Option<(serde_json::Value, Vec<String>)> {
        let mut v: serde_json::Value = serde_json::from_slice(bytes).ok()?;
        let tables = v.get_mut("tables")?.as_array_mut()?;
        let snapshot = |t: &serde_json::Value| {
            t["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("pipe.snapshot."))
        };
        let mut names: Vec<String> = tables
            .iter()
            .filter(|t| snapshot(t))
            .filter_map(|t| t["name"].as_str().map(str::to_string))
            .collect();
        names.sort();
        tables.retain(|t| !snapshot(t));
        Some((v, names))
    };
    match (split(a), split(b)) {
        (Some(x), Some(y)) => x == y,
        _ => false,
    }
}

/// The control-plane files the compiler wrote are the contract, and (for Tofino 1) the
/// committed copies.
fn check_control_plane(target: &str, b: &TofinoBuild) {
    let p4info = load_p4info(&b.p4info_txt).unwrap_or_else(|e| panic!("{e}"));
    let diffs = compare_p4info(&switchgnn_p4info_for(Arch::Tna), &p4info);
    assert!(
        diffs.is_empty(),
        "bf-p4c's P4Info ({target}) is not the TNA contract:\n{}",
        diffs.join("\n")
    );
    let json = std::fs::read(&b.bfrt_json).unwrap();
    let info = BfrtInfo::parse(&json).unwrap();
    let diffs = compare_schema(&switchgnn_p4info_for(Arch::Tna), &info);
    assert!(
        diffs.is_empty(),
        "the compiled TNA program ({target}) lacks contract objects:\n{}",
        diffs.join("\n")
    );
    if target == "tofino" {
        for (written, copy, same) in [
            (
                &b.bfrt_json,
                committed("switchgnn-tna.bf-rt.json"),
                same_bfrt as fn(&[u8], &[u8]) -> bool,
            ),
            (
                &b.p4info_txt,
                committed("switchgnn-tna.p4info.txtpb"),
                |a: &[u8], b: &[u8]| a == b,
            ),
        ] {
            let now = std::fs::read(written).unwrap();
            assert!(
                same(&std::fs::read(&copy).unwrap_or_default(), &now),
                "{} is not what bf-p4c writes today: copy {} over it",
                copy.display(),
                written.display()
            );
        }
    }
}

/// What the compiler wrote (in `.0`, deleted when it goes) and whether a binary came out.
type Compiled = (tempfile::TempDir, Result<TofinoBuild, Box<TofinoFailure>>);

/// Compiles for `target` and checks the control plane of what the compiler wrote, whether or
/// not a binary came out. None without the compiler.
fn compile_checked(target: &str) -> Option<Compiled> {
    let c = compiler(target)?;
    let dir = tempfile::tempdir().unwrap();
    let r = c
        .compile(&tna_main(), target, &[], dir.path())
        .unwrap_or_else(|e| panic!("{e}"));
    check_control_plane(target, r.as_ref().unwrap_or_else(|f| &f.build));
    Some((dir, r))
}

/// Compiles for `target`, checks the control plane, and fails unless a binary came out.
fn compile_to_binary(target: &str) {
    let Some((_dir, r)) = compile_checked(target) else {
        return;
    };
    match r {
        Ok(b) => assert!(
            b.binary.is_file(),
            "no {} after compiling",
            b.binary.display()
        ),
        Err(f) => match f.stage_overflow() {
            Some((have, need)) => panic!(
                "{target}: p4/tna needs {need} stages where the chip has {have} (docs/tofino.md)"
            ),
            None => panic!("{}", f.log),
        },
    }
}

#[test]
fn the_tna_program_fits_tofino_1() {
    compile_to_binary("tofino");
}

#[test]
fn the_tna_program_fits_tofino_2() {
    compile_to_binary("tofino2");
}
