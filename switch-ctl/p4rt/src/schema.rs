//! The P4Info the SwitchGNN P4 program produces, built in Rust from `docs/switch-interface.md`,
//! and [`compare_p4info`], which lists every difference between two P4Infos.
//!
//! The software switch serves [`switchgnn_p4info`]; the bmv2 tests compare it with what p4c
//! writes for `p4/`; the control plane checks a switch's P4Info against it before writing. Any
//! difference is an error that names the object and the field.

use std::collections::BTreeMap;

use crate::p4info::{hashed_id, p4_id, register_cell, Prefix};
use crate::proto::p4::config::v1 as cfg;

/// P4Info id of core.p4's `NoAction`, which p4c chooses (it carries no `@id`). p4c derives it
/// from the name, so it is the same in every program: p4c 1.2.5.16 (`--target bmv2 --arch
/// v1model`) reports 21257015 = 0x01445b37. Change it here if another p4c reports otherwise.
pub const NO_ACTION_ID: u32 = 0x0144_5B37;

/// Name of the `NoAction` action.
pub const NO_ACTION: &str = "NoAction";

/// `config.p4`: number of aggregators (cells of every `agg_*` register).
pub const AGGREGATORS: u32 = sgnn_switch::aggregation::AGGREGATORS;
/// `config.p4`: number of workers (size of the worker tables and `sync_done`).
pub const MAX_WORKERS: u32 = sgnn_switch::config::MAX_WORKERS;
/// Multicast group that reaches every worker (block-advance).
pub const MULTICAST_ALL_WORKERS: u32 = sgnn_switch::block_sync::ADVANCE_GROUP as u32;
/// Clone session used for recirculation (I2E clone of the original packet).
pub const CLONE_SESSION_RECIRCULATE: u32 = sgnn_switch::aggregation::RECIRCULATION_SESSION;
/// The `events` counter's cell names, in cell order.
pub const EVENTS: [&str; sgnn_switch::counters::Event::ALL.len()] =
    sgnn_switch::counters::Event::NAMES;

fn preamble(prefix: Prefix, n: u32, name: &str) -> Option<cfg::Preamble> {
    preamble_id(p4_id(prefix, n), name)
}

fn preamble_id(id: u32, name: &str) -> Option<cfg::Preamble> {
    Some(cfg::Preamble {
        id,
        name: name.to_string(),
        alias: name.to_string(),
        ..Default::default()
    })
}

fn action(n: u32, name: &str, params: &[(&str, i32)]) -> cfg::Action {
    cfg::Action {
        preamble: preamble(Prefix::Action, n, name),
        params: params
            .iter()
            .enumerate()
            .map(|(i, &(name, bitwidth))| cfg::action::Param {
                id: i as u32 + 1,
                name: name.to_string(),
                bitwidth,
                ..Default::default()
            })
            .collect(),
    }
}

fn table(n: u32, name: &str, fields: &[(&str, i32)], actions: &[u32], size: u32) -> cfg::Table {
    use cfg::match_field::{Match, MatchType};
    let mut action_refs: Vec<cfg::ActionRef> = actions
        .iter()
        .map(|&a| cfg::ActionRef {
            id: p4_id(Prefix::Action, a),
            ..Default::default()
        })
        .collect();
    // Every table but the keyless one has NoAction as its fixed (const) default: a miss drops.
    let keyless = fields.is_empty();
    if !keyless {
        action_refs.push(cfg::ActionRef {
            id: NO_ACTION_ID,
            scope: cfg::action_ref::Scope::DefaultOnly as i32,
            ..Default::default()
        });
    } else {
        // `switch_config`: its only action is its (modifiable) default.
        for r in &mut action_refs {
            r.scope = cfg::action_ref::Scope::DefaultOnly as i32;
        }
    }
    cfg::Table {
        preamble: preamble(Prefix::Table, n, name),
        match_fields: fields
            .iter()
            .enumerate()
            .map(|(i, &(name, bitwidth))| cfg::MatchField {
                id: i as u32 + 1,
                name: name.to_string(),
                bitwidth,
                r#match: Some(Match::MatchType(MatchType::Exact as i32)),
                ..Default::default()
            })
            .collect(),
        action_refs,
        const_default_action_id: if keyless { 0 } else { NO_ACTION_ID },
        size: size as i64,
        ..Default::default()
    }
}

fn register(n: u32, name: &str, bitwidth: i32, size: u32) -> cfg::Register {
    use cfg::p4_bitstring_like_type_spec::TypeSpec as B;
    use cfg::p4_data_type_spec::TypeSpec as D;
    cfg::Register {
        preamble: preamble(Prefix::Register, n, name),
        type_spec: Some(cfg::P4DataTypeSpec {
            type_spec: Some(D::Bitstring(cfg::P4BitstringLikeTypeSpec {
                type_spec: Some(B::Bit(cfg::P4BitTypeSpec { bitwidth })),
                ..Default::default()
            })),
        }),
        size: size as i32,
    }
}

/// A register of `lane_pair_t` cells (the TNA program's lane pairs).
fn pair_register(n: u32, name: &str, size: u32) -> cfg::Register {
    use cfg::p4_data_type_spec::TypeSpec as D;
    cfg::Register {
        type_spec: Some(cfg::P4DataTypeSpec {
            type_spec: Some(D::Struct(cfg::P4NamedType {
                name: sgnn_switch::tna::LANE_PAIR_TYPE.to_string(),
            })),
        }),
        ..register(n, name, 0, size)
    }
}

/// One of v1model's lane registers (`agg_value_*`).
fn is_lane(name: &str) -> bool {
    sgnn_switch::aggregation::AGG_VALUE
        .iter()
        .any(|l| l.name == name)
}

fn counter(n: u32, name: &str, unit: cfg::counter_spec::Unit, size: i64) -> cfg::Counter {
    cfg::Counter {
        preamble: preamble(Prefix::Counter, n, name),
        spec: Some(cfg::CounterSpec { unit: unit as i32 }),
        size,
    }
}

/// Which of the SwitchGNN P4 programs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    /// `p4/v1model` (bmv2, and what the software switch serves).
    V1model,
    /// `p4/tna` (Tofino 1; Tofino 2 with the same control-plane objects).
    Tna,
}

/// `p4/tna/config.p4`: aggregators of the TNA program (cells of every `agg_*` register).
pub const TNA_AGGREGATORS: u32 = sgnn_switch::tna::AGGREGATORS;

/// The P4Info of the SwitchGNN P4 program (v1model), as `docs/switch-interface.md` specifies
/// it: every name, id (`prefix << 24 | @id`), width, size, match kind and action reference.
pub fn switchgnn_p4info() -> cfg::P4Info {
    switchgnn_p4info_for(Arch::V1model)
}

/// The control-plane objects of the SwitchGNN program for `arch`. This is the one place where
/// the TNA program's objects differ from the v1model program's (`docs/tofino.md`, "Names and
/// widths"): `src_seen` and `sync_done` are 32 bits wide, the counter `egress_events` exists,
/// the all-sent registers and the fabric's actions do not
/// (`sgnn_switch::tna::V1MODEL_ONLY_REGISTERS`, `V1MODEL_ONLY_ACTIONS`), the sizes are
/// those of `p4/tna/config.p4`, and the architecture is `tna`. The control plane programs
/// either through the same names.
pub fn switchgnn_p4info_for(arch: Arch) -> cfg::P4Info {
    let mut p = v1model_p4info();
    if arch == Arch::Tna {
        use cfg::counter_spec::Unit;
        if let Some(i) = p.pkg_info.as_mut() {
            i.arch = "tna".to_string();
        }
        for t in &mut p.tables {
            if name_of(&t.preamble) == sgnn_switch::aggregation::AGG_TABLE.name {
                t.size = sgnn_switch::tna::AGG_TABLE_SIZE as i64;
            }
        }
        // The fabric's actions (sgnn_switch::tna::V1MODEL_ONLY_ACTIONS): not in the table or
        // the program.
        let only: Vec<u32> = sgnn_switch::tna::V1MODEL_ONLY_ACTIONS
            .iter()
            .map(|a| crate::p4info::p4_id(Prefix::Action, a.id))
            .collect();
        p.actions.retain(|a| !only.contains(&id_of(&a.preamble)));
        for t in &mut p.tables {
            t.action_refs.retain(|r| !only.contains(&r.id));
        }
        p.registers.retain(|r| {
            let n = name_of(&r.preamble);
            !sgnn_switch::tna::V1MODEL_ONLY_REGISTERS
                .iter()
                .any(|o| o.name == n)
        });
        for r in &mut p.registers {
            let name = name_of(&r.preamble).to_string();
            let id = id_of(&r.preamble) & 0x00ff_ffff;
            let w = match register_cell(r) {
                crate::p4info::CellType::Bit(w) | crate::p4info::CellType::Int(w) => w as i32,
                crate::p4info::CellType::Other => 0,
            };
            use sgnn_switch::{aggregation as agg, block_sync, tna};
            let wide = tna::WIDE_REGISTER_BITS as i32;
            *r = match name.as_str() {
                n if n == agg::SRC_SEEN.name => register(id, n, wide, tna::SEEN_CELLS),
                n if n == block_sync::SYNC_DONE.name => register(id, n, wide, MAX_WORKERS),
                n if n.starts_with("agg_") => register(id, n, w, tna::AGGREGATORS),
                _ => r.clone(),
            };
            // bf-p4c ignores `@id` on Tofino externs: registers and counters get p4c's hashed
            // id of `pipe.NAME` (tables and actions keep theirs).
            if let Some(pre) = r.preamble.as_mut() {
                pre.id = hashed_id(Prefix::Register, &format!("pipe.{name}"));
            }
        }
        // The lanes are pairs (two signed 32-bit lanes per register and stateful ALU), in
        // place of v1model's one register per lane.
        let first = p
            .registers
            .iter()
            .position(|r| is_lane(name_of(&r.preamble)))
            .unwrap_or(p.registers.len());
        p.registers.retain(|r| !is_lane(name_of(&r.preamble)));
        let pairs = sgnn_switch::tna::AGG_PAIR.iter().map(|r| {
            let mut c = pair_register(r.id, r.name, r.size);
            if let Some(pre) = c.preamble.as_mut() {
                pre.id = hashed_id(Prefix::Register, &format!("pipe.{}", r.name));
            }
            c
        });
        p.registers.splice(first..first, pairs);
        let ee = sgnn_switch::tna::EGRESS_EVENTS;
        p.counters
            .push(counter(ee.id, ee.name, Unit::Packets, ee.size as i64));
        for c in &mut p.counters {
            if let Some(pre) = c.preamble.as_mut() {
                pre.id = hashed_id(Prefix::Counter, &format!("pipe.{}", pre.name));
            }
        }
    }
    p
}

/// The program a P4Info belongs to, by its architecture (`tna` and `t2na` are the TNA program,
/// anything else the v1model one).
pub fn arch_of(p4info: &cfg::P4Info) -> Arch {
    match p4info.pkg_info.as_ref().map(|i| i.arch.as_str()) {
        Some("tna") | Some("t2na") => Arch::Tna,
        _ => Arch::V1model,
    }
}

fn v1model_p4info() -> cfg::P4Info {
    use cfg::counter_spec::Unit;
    let mut actions: Vec<cfg::Action> = sgnn_switch::ACTIONS
        .iter()
        .map(|a| {
            let params: Vec<(&str, i32)> =
                a.params.iter().map(|p| (p.name, p.bits as i32)).collect();
            action(a.id, a.name, &params)
        })
        .collect();
    actions.push(cfg::Action {
        preamble: preamble_id(NO_ACTION_ID, NO_ACTION),
        params: Vec::new(),
    });
    let tables = sgnn_switch::TABLES
        .iter()
        .map(|t| {
            let fields: Vec<(&str, i32)> = t.keys.iter().map(|k| (k.name, k.bits as i32)).collect();
            let acts: Vec<u32> = t.actions.iter().map(|a| a.id).collect();
            table(t.id, t.name, &fields, &acts, t.size)
        })
        .collect();
    let registers = sgnn_switch::REGISTERS
        .iter()
        .map(|r| register(r.id, r.name, r.bits as i32, r.size))
        .collect();
    let counters = sgnn_switch::COUNTERS
        .iter()
        .map(|c| {
            let unit = match c.unit {
                sgnn_switch::Unit::Packets => Unit::Packets,
                sgnn_switch::Unit::Both => Unit::Both,
            };
            counter(c.id, c.name, unit, c.size as i64)
        })
        .collect();
    cfg::P4Info {
        pkg_info: Some(cfg::PkgInfo {
            arch: "v1model".to_string(),
            ..Default::default()
        }),
        tables,
        actions,
        counters,
        registers,
    }
}

fn name_of(p: &Option<cfg::Preamble>) -> &str {
    p.as_ref().map_or("", |p| p.name.as_str())
}

fn id_of(p: &Option<cfg::Preamble>) -> u32 {
    p.as_ref().map_or(0, |p| p.id)
}

fn by_name<T>(items: &[T], pre: impl Fn(&T) -> &Option<cfg::Preamble>) -> BTreeMap<&str, &T> {
    items.iter().map(|i| (name_of(pre(i)), i)).collect()
}

/// Reports objects of one kind present on one side only, and calls `both` for the others.
fn pair<'a, T>(
    kind: &str,
    expected: &'a [T],
    actual: &'a [T],
    pre: impl Fn(&T) -> &Option<cfg::Preamble>,
    out: &mut Vec<String>,
    mut both: impl FnMut(&str, &'a T, &'a T, &mut Vec<String>),
) {
    let e = by_name(expected, &pre);
    let a = by_name(actual, &pre);
    for (name, x) in &e {
        match a.get(name) {
            None => out.push(format!("{kind} `{name}` is missing")),
            Some(y) => {
                let (ix, iy) = (id_of(pre(x)), id_of(pre(y)));
                if ix != iy {
                    out.push(format!(
                        "{kind} `{name}`: id is {iy:#010x}, expected {ix:#010x}"
                    ));
                }
                both(name, x, y, out);
            }
        }
    }
    for name in a.keys() {
        if !e.contains_key(name) {
            out.push(format!("{kind} `{name}` is not expected"));
        }
    }
}

fn check<T: PartialEq + std::fmt::Debug>(
    out: &mut Vec<String>,
    what: impl FnOnce() -> String,
    expected: T,
    actual: T,
) {
    if expected != actual {
        out.push(format!("{}: {actual:?}, expected {expected:?}", what()));
    }
}

fn action_names(p4info: &cfg::P4Info) -> BTreeMap<u32, &str> {
    p4info
        .actions
        .iter()
        .map(|a| (id_of(&a.preamble), name_of(&a.preamble)))
        .collect()
}

/// Every difference between two P4Infos, one sentence each, naming the object and what differs:
/// objects missing or unexpected (tables, actions, registers, counters, match fields, params,
/// action refs), ids, widths, match kinds, sizes, counter units, register cell types, the
/// architecture. Empty when they describe the same program for the control plane (names,
/// annotations, documentation and order do not count).
pub fn compare_p4info(expected: &cfg::P4Info, actual: &cfg::P4Info) -> Vec<String> {
    let mut out = Vec::new();
    let arch = |p: &cfg::P4Info| {
        p.pkg_info
            .as_ref()
            .map_or(String::new(), |i| i.arch.clone())
    };
    // The TNA program compiled for Tofino 2 reports `t2na`: the same objects, the same
    // control plane (docs/tofino.md).
    let family = |a: String| if a == "t2na" { "tna".to_string() } else { a };
    if !arch(expected).is_empty() && family(arch(expected)) != family(arch(actual)) {
        out.push(format!(
            "architecture is `{}`, expected `{}`",
            arch(actual),
            arch(expected)
        ));
    }
    let (ea, aa) = (action_names(expected), action_names(actual));
    pair(
        "action",
        &expected.actions,
        &actual.actions,
        |a| &a.preamble,
        &mut out,
        |name, x, y, out| {
            let xs: BTreeMap<&str, _> = x.params.iter().map(|p| (p.name.as_str(), p)).collect();
            let ys: BTreeMap<&str, _> = y.params.iter().map(|p| (p.name.as_str(), p)).collect();
            for (pn, p) in &xs {
                match ys.get(pn) {
                    None => out.push(format!("action `{name}`: param `{pn}` is missing")),
                    Some(q) => {
                        check(
                            out,
                            || format!("action `{name}` param `{pn}` id"),
                            p.id,
                            q.id,
                        );
                        check(
                            out,
                            || format!("action `{name}` param `{pn}` width"),
                            p.bitwidth,
                            q.bitwidth,
                        );
                    }
                }
            }
            for pn in ys.keys() {
                if !xs.contains_key(pn) {
                    out.push(format!("action `{name}`: param `{pn}` is not expected"));
                }
            }
        },
    );
    pair(
        "table",
        &expected.tables,
        &actual.tables,
        |t| &t.preamble,
        &mut out,
        |name, x, y, out| {
            check(out, || format!("table `{name}` size"), x.size, y.size);
            let xs: BTreeMap<&str, _> = x
                .match_fields
                .iter()
                .map(|m| (m.name.as_str(), m))
                .collect();
            let ys: BTreeMap<&str, _> = y
                .match_fields
                .iter()
                .map(|m| (m.name.as_str(), m))
                .collect();
            for (fname, m) in &xs {
                match ys.get(fname) {
                    None => out.push(format!("table `{name}`: match field `{fname}` is missing")),
                    Some(n) => {
                        check(
                            out,
                            || format!("table `{name}` field `{fname}` id"),
                            m.id,
                            n.id,
                        );
                        check(
                            out,
                            || format!("table `{name}` field `{fname}` width"),
                            m.bitwidth,
                            n.bitwidth,
                        );
                        let kind =
                            |f: &cfg::MatchField| crate::p4info::MatchKind::of(f).to_string();
                        check(
                            out,
                            || format!("table `{name}` field `{fname}` match kind"),
                            kind(m),
                            kind(n),
                        );
                    }
                }
            }
            for fname in ys.keys() {
                if !xs.contains_key(fname) {
                    out.push(format!(
                        "table `{name}`: match field `{fname}` is not expected"
                    ));
                }
            }
            // Action refs, compared by action name so one renumbered action is reported once (as
            // an action id difference above), not again for every table that calls it.
            let refs = |t: &cfg::Table, names: &BTreeMap<u32, &str>| -> BTreeMap<String, i32> {
                t.action_refs
                    .iter()
                    .map(|r| {
                        let n = names
                            .get(&r.id)
                            .map_or_else(|| format!("#{:#010x}", r.id), |n| n.to_string());
                        (n, r.scope)
                    })
                    .collect()
            };
            let (xr, yr) = (refs(x, &ea), refs(y, &aa));
            for (an, scope) in &xr {
                match yr.get(an) {
                    None => out.push(format!("table `{name}`: action `{an}` is missing")),
                    Some(s) => check(
                        out,
                        || format!("table `{name}` action `{an}` scope"),
                        scope_name(*scope),
                        scope_name(*s),
                    ),
                }
            }
            for an in yr.keys() {
                if !xr.contains_key(an) {
                    out.push(format!("table `{name}`: action `{an}` is not expected"));
                }
            }
            let default =
                |t: &cfg::Table, names: &BTreeMap<u32, &str>| match t.const_default_action_id {
                    0 => "none".to_string(),
                    id => names
                        .get(&id)
                        .map_or_else(|| format!("#{id:#010x}"), |n| n.to_string()),
                };
            check(
                out,
                || format!("table `{name}` const default action"),
                default(x, &ea),
                default(y, &aa),
            );
            check(
                out,
                || format!("table `{name}` is_const_table"),
                x.is_const_table,
                y.is_const_table,
            );
        },
    );
    pair(
        "register",
        &expected.registers,
        &actual.registers,
        |r| &r.preamble,
        &mut out,
        |name, x, y, out| {
            check(
                out,
                || format!("register `{name}` cell type"),
                register_cell(x),
                register_cell(y),
            );
            check(out, || format!("register `{name}` size"), x.size, y.size);
        },
    );
    pair(
        "counter",
        &expected.counters,
        &actual.counters,
        |c| &c.preamble,
        &mut out,
        |name, x, y, out| {
            let unit = |c: &cfg::Counter| {
                cfg::counter_spec::Unit::try_from(c.spec.map_or(0, |s| s.unit))
                    .map_or("unknown", |u| u.as_str_name())
            };
            check(out, || format!("counter `{name}` unit"), unit(x), unit(y));
            check(out, || format!("counter `{name}` size"), x.size, y.size);
        },
    );
    out
}

fn scope_name(scope: i32) -> &'static str {
    cfg::action_ref::Scope::try_from(scope).map_or("unknown", |s| s.as_str_name())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::P4InfoIndex;

    #[test]
    fn schema_indexes_and_matches_the_doc() {
        let p = switchgnn_p4info();
        let ix = P4InfoIndex::new(&p).unwrap();
        let t = ix.table("agg_table").unwrap();
        assert_eq!(t.id, 0x0200_0001);
        assert_eq!(t.size, 1 << 20);
        assert_eq!(
            t.fields
                .iter()
                .map(|f| (f.name.as_str(), f.bitwidth))
                .collect::<Vec<_>>(),
            [("block_id", 16), ("src_id", 32), ("pass", 8)]
        );
        assert_eq!(
            ix.action("set_worker_addr")
                .unwrap()
                .param("mac")
                .unwrap()
                .bitwidth,
            48
        );
        assert_eq!(ix.register("agg_value_31").unwrap().id, 0x1600_0020);
        assert_eq!(ix.register("drop_seen").unwrap().id, 0x1600_0030);
        assert_eq!(ix.register("src_seen").unwrap().bitwidth(), 33);
        assert_eq!(ix.register("src_seen").unwrap().id, 0x1600_0031);
        assert_eq!(ix.table("switch_config").unwrap().fields.len(), 0);
        assert_eq!(ix.action("set_config").unwrap().params.len(), 13);
        assert_eq!(ix.register("sync_done").unwrap().size, 256);
        assert_eq!(ix.counter("port_tx").unwrap().id, 0x1200_0003);
        assert_eq!(ix.counter("events").unwrap().size, 64);
        assert_eq!(ix.register("agg_gen").unwrap().id, 0x1600_0032);
        assert_eq!(ix.register("agg_gen").unwrap().bitwidth(), 16);
        assert_eq!(
            ix.action("aggregate")
                .unwrap()
                .param("generation")
                .unwrap()
                .bitwidth,
            16
        );
        assert_eq!(ix.registers().len(), 48);
        assert_eq!(ix.register("sent_done").unwrap().size, 256);
        assert_eq!(ix.register("sent_count").unwrap().id, 0x1600_0037);
        assert!(compare_p4info(&p, &p).is_empty());
    }

    #[test]
    fn both_programs_have_every_table_and_action_of_the_contract() {
        for arch in [Arch::V1model, Arch::Tna] {
            let p = switchgnn_p4info_for(arch);
            let tables: Vec<&str> = p.tables.iter().map(|t| name_of(&t.preamble)).collect();
            let want: Vec<&str> = sgnn_switch::TABLES.iter().map(|t| t.name).collect();
            assert_eq!(tables, want, "{arch:?}");
            let actions: Vec<&str> = p
                .actions
                .iter()
                .map(|a| name_of(&a.preamble))
                .filter(|&n| n != NO_ACTION)
                .collect();
            let only = sgnn_switch::tna::V1MODEL_ONLY_ACTIONS;
            let want: Vec<&str> = sgnn_switch::ACTIONS
                .iter()
                .filter(|a| arch == Arch::V1model || !only.iter().any(|o| o.name == a.name))
                .map(|a| a.name)
                .collect();
            assert_eq!(actions, want, "{arch:?}");
        }
    }
}
