//! P4Info: the canonical byte strings (property tests), comparing P4Infos, loading files.

use proptest::prelude::*;
use prost::Message;
use sgnn_p4rt::p4info::{
    decode_bits, decode_int, encode_bits, encode_int, load_p4info, P4InfoError,
};
use sgnn_p4rt::proto::p4::config::v1 as cfg;
use sgnn_p4rt::schema::{
    compare_p4info, switchgnn_p4info, switchgnn_p4info_for, Arch, NO_ACTION_ID,
};

/// Bits needed to write `v` (at least 1).
fn bits_needed(v: u128) -> u32 {
    (128 - v.leading_zeros()).max(1)
}

proptest! {
    #[test]
    fn encode_bits_is_canonical(width in 1u32..=128, raw in any::<u128>()) {
        let value = if width == 128 { raw } else { raw & ((1u128 << width) - 1) };
        let bytes = encode_bits(value, width).unwrap();
        // Shortest big-endian form, at least one byte.
        prop_assert_eq!(bytes.len(), bits_needed(value).div_ceil(8) as usize);
        prop_assert!(bytes.len() == 1 || bytes[0] != 0);
        prop_assert!(bytes.len() <= width.div_ceil(8) as usize);
        prop_assert_eq!(decode_bits(&bytes, width).unwrap(), value);
        // Zero padding (allowed for senders) decodes to the same value.
        let mut padded = vec![0u8; 3];
        padded.extend_from_slice(&bytes);
        prop_assert_eq!(decode_bits(&padded, width).unwrap(), value);
        // The bytes are the big-endian value.
        let back = bytes.iter().fold(0u128, |v, &b| (v << 8) | b as u128);
        prop_assert_eq!(back, value);
    }

    #[test]
    fn encode_bits_refuses_values_too_wide(width in 1u32..128, raw in any::<u128>()) {
        let value = raw | (1u128 << width);
        prop_assert!(encode_bits(value, width).is_err());
        let bytes = encode_bits(value, 128).unwrap();
        prop_assert!(decode_bits(&bytes, width).is_err());
    }

    #[test]
    fn encode_int_is_canonical(width in 1u32..=128, raw in any::<i128>()) {
        let value = if width == 128 { raw } else { (raw << (128 - width)) >> (128 - width) };
        let bytes = encode_int(value, width).unwrap();
        // Shortest two's complement form: dropping the first byte would change the value.
        if bytes.len() > 1 {
            let sign_ext = if bytes[1] & 0x80 != 0 { 0xff } else { 0x00 };
            prop_assert!(bytes[0] != sign_ext, "{:02x?} is not the shortest form", bytes);
        }
        prop_assert_eq!(decode_int(&bytes, width).unwrap(), value);
        let pad = if value < 0 { 0xff } else { 0x00 };
        let mut padded = vec![pad; 2];
        padded.extend_from_slice(&bytes);
        prop_assert_eq!(decode_int(&padded, width).unwrap(), value);
    }
}

#[test]
fn compare_catches_a_changed_width() {
    let expected = switchgnn_p4info();
    let mut actual = expected.clone();
    let t = actual
        .tables
        .iter_mut()
        .find(|t| t.preamble.as_ref().unwrap().name == "worker_addr")
        .unwrap();
    t.match_fields[0].bitwidth = 32;
    assert_eq!(
        compare_p4info(&expected, &actual),
        ["table `worker_addr` field `worker_id` width: 32, expected 16"]
    );
}

#[test]
fn compare_lists_every_difference() {
    let expected = switchgnn_p4info();
    let mut actual = expected.clone();
    // A register renumbered and resized, a param widened, a counter unit changed, a table
    // missing an action and one missing entirely, NoAction under another id, an extra register.
    let r = actual
        .registers
        .iter_mut()
        .find(|r| r.preamble.as_ref().unwrap().name == "agg_count")
        .unwrap();
    r.preamble.as_mut().unwrap().id += 100;
    r.size = 1;
    actual.actions[5].params[0].bitwidth = 64; // set_worker_addr.mac
    actual.counters[0].spec = Some(cfg::CounterSpec {
        unit: cfg::counter_spec::Unit::Both as i32,
    });
    // agg_table loses `deliver` (@id 2).
    actual.tables[0].action_refs.retain(|r| r.id != 0x0100_0002);
    actual.tables.remove(3); // dscp_priority
    for a in &mut actual.actions {
        if a.preamble.as_ref().unwrap().id == NO_ACTION_ID {
            a.preamble.as_mut().unwrap().id = 0x0100_0099;
        }
    }
    for t in &mut actual.tables {
        for r in &mut t.action_refs {
            if r.id == NO_ACTION_ID {
                r.id = 0x0100_0099;
            }
        }
        if t.const_default_action_id == NO_ACTION_ID {
            t.const_default_action_id = 0x0100_0099;
        }
    }
    let mut extra = actual.registers[0].clone();
    extra.preamble.as_mut().unwrap().name = "debug".into();
    extra.preamble.as_mut().unwrap().id = 0x1600_00ff;
    actual.registers.push(extra);

    let diffs = compare_p4info(&expected, &actual);
    let want = [
        "action `NoAction`: id is 0x01000099, expected 0x01445b37",
        "action `set_worker_addr` param `mac` width: 64, expected 48",
        "table `agg_table`: action `deliver` is missing",
        "table `dscp_priority` is missing",
        "register `agg_count`: id is 0x16000085, expected 0x16000021",
        "register `agg_count` size: 1, expected 65536",
        "register `debug` is not expected",
        "counter `events` unit: \"BOTH\", expected \"PACKETS\"",
    ];
    for w in want {
        assert!(diffs.iter().any(|d| d == w), "missing `{w}` in {diffs:#?}");
    }
    assert_eq!(diffs.len(), want.len(), "{diffs:#?}");
}

#[test]
fn loads_binary_and_text_p4info_files() {
    let dir = tempfile::tempdir().unwrap();
    let p4info = switchgnn_p4info();

    let bin = dir.path().join("switchgnn.p4info.bin");
    std::fs::write(&bin, p4info.encode_to_vec()).unwrap();
    assert_eq!(load_p4info(&bin).unwrap(), p4info);

    // A text P4Info as p4c writes it, with fields the crate does not model.
    let txt = dir.path().join("small.p4info.txtpb");
    std::fs::write(
        &txt,
        r#"# proto-file: p4/config/v1/p4info.proto
pkg_info {
  arch: "v1model"
}
tables {
  preamble {
    id: 33554434
    name: "worker_table"
    alias: "worker_table"
  }
  match_fields {
    id: 1
    name: "worker_id"
    bitwidth: 16
    match_type: EXACT
  }
  action_refs {
    id: 16777219
  }
  action_refs {
    id: 21257015
    scope: DEFAULT_ONLY
  }
  const_default_action_id: 21257015
  initial_default_action {
    action_id: 21257015
  }
  size: 256
}
actions {
  preamble {
    id: 21257015
    name: "NoAction"
    alias: "NoAction"
    annotations: "@noWarn(\"unused\")"
  }
}
actions {
  preamble {
    id: 16777219
    name: "set_worker"
    alias: "set_worker"
  }
  params {
    id: 1
    name: "port"
    bitwidth: 9
  }
}
registers {
  preamble {
    id: 369098793
    name: "cfg_workers"
    alias: "cfg_workers"
  }
  type_spec {
    bitstring {
      bit {
        bitwidth: 16
      }
    }
  }
  size: 1
}
type_info {
}
"#,
    )
    .unwrap();
    let small = load_p4info(&txt).unwrap();
    let ix = sgnn_p4rt::P4InfoIndex::new(&small).unwrap();
    assert_eq!(ix.table("worker_table").unwrap().fields[0].bitwidth, 16);
    assert_eq!(ix.action("NoAction").unwrap().id, NO_ACTION_ID);
    assert_eq!(ix.register("cfg_workers").unwrap().bitwidth(), 16);
    // The same objects as the Rust schema builds, where both have them.
    let full = switchgnn_p4info();
    let want = |name: &str| {
        full.tables
            .iter()
            .find(|t| t.preamble.as_ref().unwrap().name == name)
            .unwrap()
            .clone()
    };
    assert_eq!(small.tables[0], want("worker_table"));

    let json = dir.path().join("x.p4info.json");
    std::fs::write(&json, "{}").unwrap();
    let err = load_p4info(&json).unwrap_err();
    assert!(matches!(err, P4InfoError::UnknownFormat { .. }), "{err}");
    assert!(err.to_string().contains(".bin"), "{err}");

    // A program with meters: loading it would silently lose them, so it is refused.
    let mut bytes = p4info.encode_to_vec();
    // Field 7 (meters), length-delimited, an empty Meter.
    bytes.extend_from_slice(&[7 << 3 | 2, 0]);
    let with_meters = dir.path().join("meters.p4info.bin");
    std::fs::write(&with_meters, &bytes).unwrap();
    let err = load_p4info(&with_meters).unwrap_err();
    assert!(err.to_string().contains("meters"), "{err}");
    assert!(!err.to_string().contains("force-std"), "{err}");

    // bf-p4c's default for a TNA program: registers as Tofino externs. The error says which
    // compiler flag gives the standard messages instead.
    let tofino = dir.path().join("tofino.p4info.txtpb");
    std::fs::write(
        &tofino,
        "pkg_info {\n  arch: \"tna\"\n}\nexterns {\n  extern_type_id: 132\n  extern_type_name: \"Register\"\n}\n",
    )
    .unwrap();
    let err = load_p4info(&tofino).unwrap_err();
    assert!(
        err.to_string().contains("externs")
            && err.to_string().contains("--p4runtime-force-std-externs"),
        "{err}"
    );

    // The one extern bf-p4c writes for every TNA program, PortMetadata, loses nothing: text
    // and binary P4Infos with it load.
    std::fs::write(
        &tofino,
        "pkg_info {\n  arch: \"tna\"\n}\nexterns {\n  extern_type_id: 144\n  extern_type_name: \"PortMetadata\"\n  instances {\n    preamble {\n      id: 2418070881\n      name: \"SgnnIngressParser.$PORT_METADATA\"\n    }\n  }\n}\n",
    )
    .unwrap();
    let p = load_p4info(&tofino).unwrap();
    assert_eq!(p.pkg_info.unwrap().arch, "tna");
    let extern_of = |name: &str| {
        // Field 100 (externs), length-delimited: field 1 (type id 144), field 2 (type name).
        let mut e = vec![1 << 3, 144, 1, 2 << 3 | 2, name.len() as u8];
        e.extend_from_slice(name.as_bytes());
        let mut bytes = p4info.encode_to_vec();
        bytes.extend_from_slice(&[0xa2, 0x06, e.len() as u8]);
        bytes.extend_from_slice(&e);
        bytes
    };
    let bin_tofino = dir.path().join("tofino.p4info.bin");
    std::fs::write(&bin_tofino, extern_of("PortMetadata")).unwrap();
    assert_eq!(load_p4info(&bin_tofino).unwrap(), p4info);
    std::fs::write(&bin_tofino, extern_of("Register")).unwrap();
    let err = load_p4info(&bin_tofino).unwrap_err();
    assert!(err.to_string().contains("externs"), "{err}");

    let bad = dir.path().join("bad.p4info.txt");
    std::fs::write(&bad, "tables {\n  preamble { id: \"x\" }\n}\n").unwrap();
    let err = load_p4info(&bad).unwrap_err();
    assert!(err.to_string().contains("bad.p4info.txt:2:"), "{err}");

    let missing = dir.path().join("missing.p4info.bin");
    assert!(matches!(load_p4info(&missing), Err(P4InfoError::Io { .. })));
}

/// The P4Info bf-p4c writes for `p4/tna` (`--p4runtime-force-std-externs`, committed in
/// `tests/data`, checked against the compiler's output by `bmv2-tests/tests/tofino.rs`) is the
/// TNA contract: same tables, actions, parameters, registers, counters, ids and widths.
#[test]
fn the_compilers_tna_p4info_is_the_tna_contract() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/switchgnn-tna.p4info.txtpb"
    );
    let actual = load_p4info(path).unwrap();
    assert_eq!(sgnn_p4rt::schema::arch_of(&actual), Arch::Tna);
    let diffs = compare_p4info(&switchgnn_p4info_for(Arch::Tna), &actual);
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
    // Compiled for Tofino 2 it reports `t2na`: the same program for the control plane.
    let mut t2 = actual.clone();
    t2.pkg_info.as_mut().unwrap().arch = "t2na".into();
    assert_eq!(sgnn_p4rt::schema::arch_of(&t2), Arch::Tna);
    assert!(compare_p4info(&switchgnn_p4info_for(Arch::Tna), &t2).is_empty());
    // And it is not the v1model contract (the check can tell them apart).
    assert!(!compare_p4info(&switchgnn_p4info(), &actual).is_empty());
}
