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
pub const AGGREGATORS: u32 = 65536;
/// `config.p4`: number of workers (size of the worker tables and `sync_done`).
pub const MAX_WORKERS: u32 = 256;
/// `config.p4`: size of `agg_table`.
pub const AGG_TABLE_SIZE: u32 = 1_048_576;
/// `SEEN_CELLS`: cells of `src_seen` (duplicate suppression).
pub const SEEN_CELLS: u32 = 262_144;
/// Number of value lanes, each with its register `agg_value_<lane>`.
pub const LANES: u32 = 32;

/// Multicast group that reaches every worker (block-advance).
pub const MULTICAST_ALL_WORKERS: u32 = 1;
/// Clone session used for recirculation (I2E clone of the original packet).
pub const CLONE_SESSION_RECIRCULATE: u32 = 100;

/// Number of cells of the `events` counter (28 used, see [`EVENTS`]).
pub const EVENTS_SIZE: i64 = 32;

/// Indices of the `events` counter, in the order of `softswitch::Counters`.
pub const EVENTS: [&str; 28] = [
    "rx",
    "tx",
    "data",
    "aggregated",
    "results",
    "recirculated",
    "bypassed",
    "delivered",
    "reclaimed",
    "forwarded",
    "block_done",
    "block_done_duplicate",
    "block_done_stale",
    "block_advance",
    "ecn_marked",
    "drop_simulated",
    "drop_not_ipv4",
    "drop_no_route",
    "drop_malformed",
    "drop_unexpected",
    "drop_stale",
    "drop_no_entry",
    "drop_bad_index",
    "drop_unknown_worker",
    "saturated",
    "drop_duplicate",
    "drop_wrong_port",
    "bypassed_late",
];

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

/// A register of signed cells (`int<bitwidth>`).
fn int_register(n: u32, name: &str, bitwidth: i32, size: u32) -> cfg::Register {
    use cfg::p4_bitstring_like_type_spec::TypeSpec as B;
    use cfg::p4_data_type_spec::TypeSpec as D;
    cfg::Register {
        type_spec: Some(cfg::P4DataTypeSpec {
            type_spec: Some(D::Bitstring(cfg::P4BitstringLikeTypeSpec {
                type_spec: Some(B::Int(cfg::P4IntTypeSpec { bitwidth })),
                ..Default::default()
            })),
        }),
        ..register(n, name, bitwidth, size)
    }
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
pub const TNA_AGGREGATORS: u32 = 16384;
/// `p4/tna/config.p4`: size of the TNA program's `agg_table`.
pub const TNA_AGG_TABLE_SIZE: u32 = 65536;
/// `p4/tna/config.p4`: cells of the TNA program's `src_seen`.
pub const TNA_SEEN_CELLS: u32 = 65536;

/// The names of the program's tables and actions (P4Info `preamble.name`, also the BfRt
/// names without their `pipe.` prefix): the control plane, the software switch and the tests
/// use these constants, never the strings (issue 12: each fact defined once).
pub mod names {
    /// Table `agg_table`: (block, source, pass) -> aggregate, deliver or replicate.
    pub const AGG_TABLE: &str = "agg_table";
    /// Table `worker_table`: worker id -> its port.
    pub const WORKER_TABLE: &str = "worker_table";
    /// Table `ipv4_forward`: destination address -> port.
    pub const IPV4_FORWARD: &str = "ipv4_forward";
    /// Table `dscp_priority`: DSCP -> egress queue.
    pub const DSCP_PRIORITY: &str = "dscp_priority";
    /// Table `worker_addr`: worker id -> its MAC and IPv4 address.
    pub const WORKER_ADDR: &str = "worker_addr";
    /// Table `switch_config`: the default action holds the switch's configuration.
    pub const SWITCH_CONFIG: &str = "switch_config";
    /// Table `port_worker`: port -> the worker whose BlockDone it may carry.
    pub const PORT_WORKER: &str = "port_worker";
    /// Action `aggregate` of `agg_table`.
    pub const AGGREGATE: &str = "aggregate";
    /// Action `deliver` of `agg_table`.
    pub const DELIVER: &str = "deliver";
    /// Action `replicate` of `agg_table`.
    pub const REPLICATE: &str = "replicate";
    /// Action `set_worker` of `worker_table`.
    pub const SET_WORKER: &str = "set_worker";
    /// Action `forward` of `ipv4_forward`.
    pub const FORWARD: &str = "forward";
    /// Action `set_priority` of `dscp_priority`.
    pub const SET_PRIORITY: &str = "set_priority";
    /// Action `set_worker_addr` of `worker_addr`.
    pub const SET_WORKER_ADDR: &str = "set_worker_addr";
    /// Action `set_config` of `switch_config`.
    pub const SET_CONFIG: &str = "set_config";
    /// Action `set_port_worker` of `port_worker`.
    pub const SET_PORT_WORKER: &str = "set_port_worker";
    /// Every table, in P4Info id order.
    pub const TABLES: [&str; 7] = [
        AGG_TABLE,
        WORKER_TABLE,
        IPV4_FORWARD,
        DSCP_PRIORITY,
        WORKER_ADDR,
        SWITCH_CONFIG,
        PORT_WORKER,
    ];
    /// Every action but `NoAction`, in P4Info id order.
    pub const ACTIONS: [&str; 9] = [
        AGGREGATE,
        DELIVER,
        SET_WORKER,
        FORWARD,
        SET_PRIORITY,
        SET_WORKER_ADDR,
        SET_CONFIG,
        REPLICATE,
        SET_PORT_WORKER,
    ];
}

/// The P4Info of the SwitchGNN P4 program (v1model), as `docs/switch-interface.md` specifies
/// it: every name, id (`prefix << 24 | @id`), width, size, match kind and action reference.
pub fn switchgnn_p4info() -> cfg::P4Info {
    switchgnn_p4info_for(Arch::V1model)
}

/// The control-plane objects of the SwitchGNN program for `arch`. This is the one place where
/// the TNA program's objects differ from the v1model program's (`docs/tofino.md`, "Names and
/// widths"): `src_seen` and `sync_done` are 32 bits wide, the counter `egress_events` exists,
/// the sizes are those of `p4/tna/config.p4`, and the architecture is `tna`. The control plane
/// programs either through the same names.
pub fn switchgnn_p4info_for(arch: Arch) -> cfg::P4Info {
    let mut p = v1model_p4info();
    if arch == Arch::Tna {
        use cfg::counter_spec::Unit;
        if let Some(i) = p.pkg_info.as_mut() {
            i.arch = "tna".to_string();
        }
        for t in &mut p.tables {
            if name_of(&t.preamble) == names::AGG_TABLE {
                t.size = TNA_AGG_TABLE_SIZE as i64;
            }
        }
        for r in &mut p.registers {
            let name = name_of(&r.preamble).to_string();
            let id = id_of(&r.preamble) & 0x00ff_ffff;
            let w = match register_cell(r) {
                crate::p4info::CellType::Bit(w) | crate::p4info::CellType::Int(w) => w as i32,
                crate::p4info::CellType::Other => 0,
            };
            *r = match name.as_str() {
                "src_seen" => register(id, &name, 32, TNA_SEEN_CELLS),
                "sync_done" => register(id, &name, 32, MAX_WORKERS),
                // The lanes are declared signed: the stateful ALU's saturating add is signed.
                n if n.starts_with("agg_value_") => int_register(id, n, w, TNA_AGGREGATORS),
                n if n.starts_with("agg_") => register(id, n, w, TNA_AGGREGATORS),
                _ => r.clone(),
            };
            // bf-p4c ignores `@id` on Tofino externs: registers and counters get p4c's hashed
            // id of `pipe.NAME` (tables and actions keep theirs).
            if let Some(pre) = r.preamble.as_mut() {
                pre.id = hashed_id(Prefix::Register, &format!("pipe.{name}"));
            }
        }
        p.counters
            .push(counter(4, "egress_events", Unit::Packets, EVENTS_SIZE));
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
    let actions = vec![
        action(
            1,
            names::AGGREGATE,
            &[
                ("agg_base", 32),
                ("dst_id", 32),
                ("dst_worker", 16),
                ("expected", 16),
                ("more", 1),
                ("seen_base", 32),
                ("generation", 16),
            ],
        ),
        action(
            2,
            names::DELIVER,
            &[
                ("dst_id", 32),
                ("dst_worker", 16),
                ("more", 1),
                ("seen_base", 32),
            ],
        ),
        action(3, names::SET_WORKER, &[("port", 9)]),
        action(4, names::FORWARD, &[("port", 9)]),
        action(5, names::SET_PRIORITY, &[("queue", 3)]),
        action(6, names::SET_WORKER_ADDR, &[("mac", 48), ("ip", 32)]),
        action(
            7,
            names::SET_CONFIG,
            &[
                ("workers", 16),
                ("blocks_per_round", 16),
                ("ecn_threshold", 32),
                ("drop_every", 32),
                ("drop_prob", 32),
                ("switch_mac", 48),
                ("switch_ip", 32),
                ("plan_tag", 32),
            ],
        ),
        action(
            8,
            names::REPLICATE,
            &[("group", 16), ("more", 1), ("seen_base", 32)],
        ),
        action(9, names::SET_PORT_WORKER, &[("worker_id", 16)]),
        cfg::Action {
            preamble: preamble_id(NO_ACTION_ID, NO_ACTION),
            params: Vec::new(),
        },
    ];
    let tables = vec![
        table(
            1,
            names::AGG_TABLE,
            &[("block_id", 16), ("src_id", 32), ("pass", 8)],
            &[1, 2, 8],
            AGG_TABLE_SIZE,
        ),
        table(
            2,
            names::WORKER_TABLE,
            &[("worker_id", 16)],
            &[3],
            MAX_WORKERS,
        ),
        table(3, names::IPV4_FORWARD, &[("dst_addr", 32)], &[4], 1024),
        table(4, names::DSCP_PRIORITY, &[("dscp", 6)], &[5], 64),
        table(
            5,
            names::WORKER_ADDR,
            &[("worker_id", 16)],
            &[6],
            MAX_WORKERS,
        ),
        table(6, names::SWITCH_CONFIG, &[], &[7], 1),
        table(7, names::PORT_WORKER, &[("port", 9)], &[9], MAX_WORKERS),
    ];
    let mut registers: Vec<cfg::Register> = (0..LANES)
        .map(|lane| register(lane + 1, &format!("agg_value_{lane}"), 32, AGGREGATORS))
        .collect();
    let rest: [(&str, i32, u32); 8] = [
        ("agg_count", 16, AGGREGATORS),
        ("agg_state", 8, AGGREGATORS),
        ("agg_tag", 32, AGGREGATORS),
        ("agg_ecn", 8, AGGREGATORS),
        ("sync_round", 16, 1),
        ("sync_block", 16, 1),
        ("sync_done", 8, MAX_WORKERS),
        ("sync_count", 16, 1),
    ];
    registers.extend(
        rest.iter()
            .enumerate()
            .map(|(i, &(name, w, size))| register(LANES + 1 + i as u32, name, w, size)),
    );
    // Ids 41-47 were settings registers in an earlier draft (now the switch_config table).
    registers.push(register(48, "drop_seen", 32, 1));
    registers.push(register(49, "src_seen", 33, SEEN_CELLS));
    registers.push(register(50, "agg_gen", 16, AGGREGATORS));
    let counters = vec![
        counter(1, "events", Unit::Packets, EVENTS_SIZE),
        counter(2, "port_rx", Unit::Both, 512),
        counter(3, "port_tx", Unit::Both, 512),
    ];
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
        assert_eq!(ix.action("set_config").unwrap().params.len(), 8);
        assert_eq!(ix.register("sync_done").unwrap().size, 256);
        assert_eq!(ix.counter("port_tx").unwrap().id, 0x1200_0003);
        assert_eq!(ix.counter("events").unwrap().size, 32);
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
        assert_eq!(ix.registers().len(), 43);
        assert!(compare_p4info(&p, &p).is_empty());
    }

    #[test]
    fn the_names_module_names_every_table_and_action_of_both_programs() {
        for arch in [Arch::V1model, Arch::Tna] {
            let p = switchgnn_p4info_for(arch);
            let tables: Vec<&str> = p.tables.iter().map(|t| name_of(&t.preamble)).collect();
            assert_eq!(tables, names::TABLES, "{arch:?}");
            let actions: Vec<&str> = p
                .actions
                .iter()
                .map(|a| name_of(&a.preamble))
                .filter(|&n| n != NO_ACTION)
                .collect();
            assert_eq!(actions, names::ACTIONS, "{arch:?}");
        }
    }
}
