//! The P4 program's source against the Rust side of the switch contract, with no compiler:
//! every `@name`/`@id` object of `p4/v1model` (tables with their sizes and match fields,
//! actions with their parameters and widths, registers with their widths and sizes, counters
//! with their sizes and units) equals the P4Info the software switch serves
//! (`sgnn_p4rt::schema::switchgnn_p4info`), one to one; and every constant of `config.p4` and
//! `counters.p4` that Rust also defines (sizes, ids, wire code points, addresses, the event
//! counter order) has the same value. So CI, which has no p4c, fails when the two drift (the
//! bmv2 tests compare the compiled P4Info where p4c is built).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use sgnn_p4rt::proto::p4::config::v1 as cfg;
use sgnn_p4rt::schema;

fn p4_root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../p4"))
}

/// The text without comments, file by file, of `p4/common` (the constants every
/// architecture shares) and of one architecture's directory (`v1model`, `tna`).
fn sources_of(arch: &str) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = ["common", arch]
        .iter()
        .flat_map(|d| std::fs::read_dir(p4_root().join(d)).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "p4"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            let dir = p.parent().unwrap().file_name().unwrap().to_string_lossy();
            (
                format!("{dir}/{}", p.file_name().unwrap().to_string_lossy()),
                strip_comments(&text),
            )
        })
        .collect();
    v.sort();
    v
}

/// The v1model program (bmv2), which the Rust side's P4Info describes.
fn sources() -> Vec<(String, String)> {
    sources_of("v1model")
}

fn strip_comments(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            i += 2;
            while i + 1 < b.len() && !b[i..].starts_with(b"*/") {
                i += 1;
            }
            i += 2;
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    out
}

/// `const <type> NAME = VALUE;` of every file, VALUE as a number.
fn constants(srcs: &[(String, String)]) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for (_, text) in srcs {
        // Preprocessor lines (`#ifndef`, `#define`) are not statements.
        let text: String = text
            .lines()
            .filter(|l| !l.trim_start().starts_with('#'))
            .collect::<Vec<_>>()
            .join("\n");
        for stmt in text.split(';') {
            let stmt = stmt.trim();
            let Some(rest) = stmt.strip_prefix("const ") else {
                continue;
            };
            let Some((lhs, value)) = rest.split_once('=') else {
                continue;
            };
            let name = lhs.split_whitespace().last().unwrap().to_string();
            let value = value.trim();
            let n = if let Some(h) = value.strip_prefix("0x") {
                u64::from_str_radix(h, 16).unwrap()
            } else if value.chars().all(|c| c.is_ascii_uppercase() || c == '_') {
                // A size the compiler command line may set (`-DSGNN_AGGREGATORS=N`, TNA):
                // the `#else` branch's number follows.
                continue;
            } else {
                value
                    .parse()
                    .unwrap_or_else(|_| panic!("const {name} = {value}: not a number"))
            };
            m.insert(name, n);
        }
    }
    m
}

/// One `@name(".x") @id(n)` object of the source.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Object {
    Table { size: u64, fields: Vec<String> },
    Action { params: Vec<(String, i32)> },
    Register { width: i32, size: u64 },
    Counter { size: u64, unit: String },
}

fn size_of(expr: &str, consts: &BTreeMap<String, u64>) -> u64 {
    let e = expr.trim();
    e.parse()
        .ok()
        .or_else(|| consts.get(e).copied())
        .unwrap_or_else(|| panic!("size `{e}` is neither a number nor a constant"))
}

fn width_of(ty: &str) -> i32 {
    let t = ty.trim();
    let w = t
        .strip_prefix("bit<")
        .and_then(|r| r.strip_suffix('>'))
        .unwrap_or_else(|| panic!("type `{t}` is not bit<W>"));
    w.parse().unwrap()
}

/// The text between the bracket at `open` (`{` or `(`) and its match.
fn block(s: &str, open: usize) -> &str {
    let (o, c) = match s.as_bytes()[open] {
        b'{' => (b'{', b'}'),
        b'(' => (b'(', b')'),
        x => panic!("no bracket at {open}: {}", x as char),
    };
    let mut depth = 0;
    for (i, &ch) in s.as_bytes()[open..].iter().enumerate() {
        if ch == o {
            depth += 1;
        } else if ch == c {
            depth -= 1;
            if depth == 0 {
                return &s[open + 1..open + i];
            }
        }
    }
    panic!("unbalanced bracket at {open}")
}

/// Every object with an `@id`: (kind-qualified name, id, object).
fn objects(
    srcs: &[(String, String)],
    consts: &BTreeMap<String, u64>,
) -> BTreeMap<String, (u32, Object)> {
    let mut m = BTreeMap::new();
    for (file, text) in srcs {
        let mut at = 0;
        while let Some(i) = text[at..].find("@name(\"") {
            let start = at + i + 7;
            let end = start + text[start..].find('"').unwrap();
            let name = text[start..end].trim_start_matches('.').to_string();
            at = end;
            let rest = text[end + 2..].trim_start();
            let Some(r) = rest.strip_prefix("@id(") else {
                continue; // a match field's name
            };
            let id: u32 = r[..r.find(')').unwrap()].parse().unwrap();
            let mut decl = r[r.find(')').unwrap() + 1..].trim_start();
            // Annotations after the id that say nothing of the object's shape (`@stage(N)`,
            // where the TNA program pins a table).
            while let Some(a) = decl.strip_prefix("@stage(") {
                decl = a[a.find(')').unwrap() + 1..].trim_start();
            }
            let decl_at = text.len() - decl.len();
            let obj = if let Some(d) = decl.strip_prefix("Register<") {
                // TNA: Register<T, I>(size) with T bit<W> or int<W>.
                let t = &d[..d.find(',').unwrap()];
                let width = if t.trim() == sgnn_switch::tna::LANE_PAIR_TYPE {
                    sgnn_switch::tna::LANE_PAIR_BITS as i32
                } else {
                    width_of(&t.replace("int<", "bit<"))
                };
                let open = decl_at + "Register".len() + 1 + d.find(">(").unwrap() + 1;
                Object::Register {
                    width,
                    size: size_of(block(text, open), consts),
                }
            } else if let Some(d) = decl.strip_prefix("Counter<") {
                // TNA: Counter<W, I>(size, CounterType_t.UNIT).
                let open = decl_at + "Counter".len() + 1 + d.find(">(").unwrap() + 1;
                let args = block(text, open);
                let (size, unit) = args.split_once(',').unwrap();
                Object::Counter {
                    size: size_of(size, consts),
                    unit: unit
                        .trim()
                        .trim_start_matches("CounterType_t.")
                        .to_lowercase(),
                }
            } else if let Some(d) = decl.strip_prefix("register<") {
                let ty_end = d.find(">>").unwrap();
                let width = width_of(&format!("{}>", &d[..ty_end]));
                let open = decl_at + "register<".len() + ty_end + 2;
                Object::Register {
                    width,
                    size: size_of(block(text, open), consts),
                }
            } else if decl.starts_with("counter(") {
                let args = block(text, decl_at + "counter".len());
                let (size, unit) = args.split_once(',').unwrap();
                Object::Counter {
                    size: size_of(size, consts),
                    unit: unit.trim().trim_start_matches("CounterType.").to_string(),
                }
            } else if let Some(d) = decl.strip_prefix("action ") {
                let paren = decl_at + "action ".len() + d.find('(').unwrap();
                let params = block(text, paren)
                    .split(',')
                    .map(str::trim)
                    .filter(|p| !p.is_empty())
                    .map(|p| {
                        let (ty, name) = p.rsplit_once(' ').unwrap();
                        (name.to_string(), width_of(ty))
                    })
                    .collect();
                Object::Action { params }
            } else if let Some(d) = decl.strip_prefix("table ") {
                let brace = decl_at + "table ".len() + d.find('{').unwrap();
                let body = block(text, brace);
                let size = body
                    .split(';')
                    .find_map(|s| s.trim().strip_prefix("size").map(|v| v.trim()))
                    .map(|v| size_of(v.trim_start_matches('='), consts))
                    .unwrap_or_else(|| panic!("{file}: table {name} has no size"));
                let mut fields = Vec::new();
                if let Some(k) = body.find("key") {
                    let open = k + body[k..].find('{').unwrap();
                    for f in block(body, open).split(';') {
                        if let Some(n) = f.split("@name(\"").nth(1) {
                            fields.push(n[..n.find('"').unwrap()].to_string());
                        }
                    }
                }
                Object::Table { size, fields }
            } else {
                panic!(
                    "{file}: @name(\"{name}\") @id({id}) on something unknown: {}",
                    &decl[..40.min(decl.len())]
                );
            };
            let kind = match obj {
                Object::Table { .. } => "table",
                Object::Action { .. } => "action",
                Object::Register { .. } => "register",
                Object::Counter { .. } => "counter",
            };
            let key = format!("{kind} {name}");
            assert!(
                m.insert(key.clone(), (id, obj)).is_none(),
                "{file}: {key} declared twice"
            );
        }
    }
    m
}

/// The same objects from the P4Info the Rust side serves.
fn from_p4info(p: &cfg::P4Info) -> BTreeMap<String, (u32, Object)> {
    let low = |id: u32| id & 0x00ff_ffff;
    let mut m = BTreeMap::new();
    for a in &p.actions {
        let pre = a.preamble.as_ref().unwrap();
        if pre.name == schema::NO_ACTION {
            continue;
        }
        let params = a
            .params
            .iter()
            .map(|q| (q.name.clone(), q.bitwidth))
            .collect();
        m.insert(
            format!("action {}", pre.name),
            (low(pre.id), Object::Action { params }),
        );
    }
    for t in &p.tables {
        let pre = t.preamble.as_ref().unwrap();
        let fields = t.match_fields.iter().map(|f| f.name.clone()).collect();
        m.insert(
            format!("table {}", pre.name),
            (
                low(pre.id),
                Object::Table {
                    size: t.size as u64,
                    fields,
                },
            ),
        );
    }
    for r in &p.registers {
        use cfg::p4_bitstring_like_type_spec::TypeSpec as B;
        use cfg::p4_data_type_spec::TypeSpec as D;
        let pre = r.preamble.as_ref().unwrap();
        let width = match r.type_spec.as_ref().and_then(|t| t.type_spec.as_ref()) {
            Some(D::Bitstring(b)) => match b.type_spec.as_ref() {
                Some(B::Bit(x)) => x.bitwidth,
                other => panic!("register {}: {other:?}", pre.name),
            },
            other => panic!("register {}: {other:?}", pre.name),
        };
        m.insert(
            format!("register {}", pre.name),
            (
                low(pre.id),
                Object::Register {
                    width,
                    size: r.size as u64,
                },
            ),
        );
    }
    for c in &p.counters {
        use cfg::counter_spec::Unit;
        let pre = c.preamble.as_ref().unwrap();
        let unit = match c.spec.as_ref().map(|s| s.unit()) {
            Some(Unit::Packets) => "packets",
            Some(Unit::Bytes) => "bytes",
            Some(Unit::Both) => "packets_and_bytes",
            other => panic!("counter {}: {other:?}", pre.name),
        };
        m.insert(
            format!("counter {}", pre.name),
            (
                low(pre.id),
                Object::Counter {
                    size: c.size as u64,
                    unit: unit.into(),
                },
            ),
        );
    }
    m
}

#[test]
fn every_p4_object_equals_the_p4info_the_rust_side_serves() {
    let srcs = sources();
    let consts = constants(&srcs);
    let p4 = objects(&srcs, &consts);
    let rust = from_p4info(&schema::switchgnn_p4info());
    assert!(p4.len() > 50, "{} objects parsed", p4.len());
    let names: BTreeSet<&String> = p4.keys().chain(rust.keys()).collect();
    let mut diffs = Vec::new();
    for n in names {
        match (p4.get(n), rust.get(n)) {
            (Some(a), Some(b)) if a == b => {}
            (Some(a), Some(b)) => diffs.push(format!("{n}: P4 {a:?}, Rust {b:?}")),
            (Some(_), None) => diffs.push(format!("{n}: in the P4 source only")),
            (None, Some(_)) => diffs.push(format!("{n}: in the Rust P4Info only")),
            (None, None) => unreachable!(),
        }
    }
    assert!(
        diffs.is_empty(),
        "P4 and Rust disagree:\n{}",
        diffs.join("\n")
    );
}

#[test]
fn every_shared_constant_has_the_same_value_in_p4_and_rust() {
    use sgnn_wire::PacketType;
    let consts = constants(&sources());
    use sgnn_switch::{aggregation as agg, block_sync, config, counters, forwarding, priority};
    let mut want: Vec<(&str, u64)> = vec![
        ("AGGREGATORS", agg::AGGREGATORS as u64),
        ("MAX_WORKERS", config::MAX_WORKERS as u64),
        ("AGG_TABLE_SIZE", agg::AGG_TABLE_SIZE as u64),
        ("SEEN_CELLS", agg::SEEN_CELLS as u64),
        ("SEEN_VALID", agg::SEEN_VALID >> 32),
        ("EVENT_COUNTERS", counters::EVENT_COUNTERS as u64),
        ("PORTS", forwarding::PORTS as u64),
        ("IPV4_FORWARD_SIZE", forwarding::IPV4_FORWARD_SIZE as u64),
        ("DSCP_PRIORITY_SIZE", priority::DSCP_PRIORITY_SIZE as u64),
        ("ADVANCE_MCAST_GROUP", block_sync::ADVANCE_GROUP as u64),
        ("RECIRC_CLONE_SESSION", agg::RECIRCULATION_SESSION as u64),
        ("ECN_CE", sgnn_switch::ecn::ECN_CE as u64),
        ("IP_PROTO_SWITCHGNN", sgnn_wire::IP_PROTO_SWITCHGNN as u64),
        ("SGNN_VERSION", sgnn_wire::VERSION as u64),
        (
            "MAX_FRAC_BITS",
            sgnn_wire::codec::FixedPoint::MAX_FRAC_BITS as u64,
        ),
        ("SGNN_HEADER_LEN", sgnn_wire::HEADER_LEN as u64),
        (
            "SGNN_LANES_LEN",
            (sgnn_wire::HEADER_LEN + sgnn_wire::PAYLOAD_LEN) as u64,
        ),
        ("IPV4_HEADER_LEN", sgnn_wire::IPV4_HEADER_LEN as u64),
        ("ETHERNET_HEADER_LEN", sgnn_wire::ETHERNET_HEADER_LEN as u64),
        ("PROBE_DST", sgnn_wire::PROBE_DST as u64),
        ("ALL_NEIGHBOURS", sgnn_wire::ALL_NEIGHBOURS as u64),
        ("AGG_FREE", agg::agg_state::FREE as u64),
        ("AGG_ACTIVE", agg::agg_state::ACTIVE as u64),
        ("AGG_BYPASSED", agg::agg_state::BYPASSED as u64),
        ("AGG_DONE", agg::agg_state::DONE as u64),
        ("SEQ_VALID", sgnn_wire::recovery::SEQ_VALID as u64),
        ("SEQ_PROBE", sgnn_wire::recovery::SEQ_PROBE as u64),
        ("SEND_DONE", sgnn_wire::recovery::SEND_DONE as u64),
        ("PULL_GONE", sgnn_wire::recovery::PULL_GONE as u64),
        ("SEQ_WINDOW", sgnn_wire::recovery::SEQ_WINDOW as u64),
        (
            "WORKER_NET",
            u32::from_be_bytes(sgnn_wire::addressing::worker_ip(0)) as u64,
        ),
    ];
    // The program's initial settings are the contract's `Settings::default()`.
    let init = config::Settings::default();
    let mac = init.switch_mac.iter().fold(0u64, |a, &b| a << 8 | b as u64);
    let (role, sync_base, up_id, up_peer) = init.role.params();
    for (name, v) in [
        ("INIT_ROLE", role as u64),
        ("INIT_SYNC_BASE", sync_base as u64),
        ("INIT_UP_ID", up_id as u64),
        ("INIT_UP_PEER", up_peer as u64),
        ("ROLE_STAR", config::role::STAR as u64),
        ("ROLE_LEAF", config::role::LEAF as u64),
        ("ROLE_SPINE", config::role::SPINE as u64),
        ("INIT_WORKERS", init.workers as u64),
        ("INIT_BLOCKS_PER_ROUND", init.blocks_per_round as u64),
        ("INIT_ECN_THRESHOLD", init.ecn_threshold as u64),
        ("INIT_DROP_EVERY", init.drop_every as u64),
        ("INIT_DROP_PROB", init.drop_prob as u64),
        ("INIT_SWITCH_MAC", mac),
        ("INIT_SWITCH_IP", u32::from_be_bytes(init.switch_ip) as u64),
        ("INIT_PLAN_TAG", init.plan_tag as u64),
        ("INIT_JOB", init.job as u64),
    ] {
        want.push((name, v));
    }
    for (name, t) in [
        ("TYPE_DATA", PacketType::Data),
        ("TYPE_RESULT", PacketType::Result),
        ("TYPE_ACK", PacketType::Ack),
        ("TYPE_FETCH_REQ", PacketType::FetchReq),
        ("TYPE_BYPASS", PacketType::Bypass),
        ("TYPE_BLOCK_DONE", PacketType::BlockDone),
        ("TYPE_BLOCK_ADVANCE", PacketType::BlockAdvance),
    ] {
        want.push((name, t as u64));
    }
    // The event counter's cells, in the order Rust counts them.
    let events: Vec<String> = sgnn_switch::counters::Event::NAMES
        .iter()
        .map(|e| format!("EV_{}", e.to_uppercase()))
        .collect();
    for (i, e) in events.iter().enumerate() {
        want.push((e.as_str(), i as u64));
    }
    let ev_in_p4 = consts.keys().filter(|k| k.starts_with("EV_")).count();
    let mut diffs = Vec::new();
    if ev_in_p4 != events.len() {
        diffs.push(format!(
            "counters.p4 names {ev_in_p4} events, Rust {}",
            events.len()
        ));
    }
    for (name, value) in want {
        match consts.get(name) {
            Some(&v) if v == value => {}
            Some(&v) => diffs.push(format!("{name}: P4 {v}, Rust {value}")),
            None => diffs.push(format!("{name}: not a constant of p4/v1model")),
        }
    }
    assert!(
        diffs.is_empty(),
        "P4 and Rust disagree:\n{}",
        diffs.join("\n")
    );
}

/// What the TNA program (`p4/tna`, Tofino) may declare differently from the v1model one,
/// object by object, and why (docs/tofino.md, "Design"). Everything else must be equal:
/// every table with its match fields, every action with its parameters and widths, every
/// register with its width, every counter with its unit, all under the same name and id.
/// Sizes may differ where a Tofino's memory is not a bmv2's (`TNA_SIZED`).
const TNA_DIFFERS: &[(&str, &str)] = &[
    (
        "register src_seen",
        "32 bits, ~(round ++ block): a Tofino register is 8, 16 or 32 bits wide",
    ),
    (
        "register sync_done",
        "32 bits, ~(round ++ block) of the last report instead of a flag that egress clears",
    ),
    (
        "counter egress_events",
        "TNA only: a counter belongs to one gress, so egress counts its events here",
    ),
];
const TNA_SIZED: &[&str] = &[
    "table agg_table",
    "register src_seen",
    "register agg_count",
    "register agg_state",
    "register agg_tag",
    "register agg_ecn",
    "register agg_gen",
    "register agg_ids",
];

fn without_size(o: &Object) -> Object {
    match o.clone() {
        Object::Table { fields, .. } => Object::Table { size: 0, fields },
        Object::Register { width, .. } => Object::Register { width, size: 0 },
        other => other,
    }
}

#[test]
fn the_tna_program_declares_what_the_v1model_program_declares() {
    let v1 = sources_of("v1model");
    let tna = sources_of("tna");
    let a = objects(&v1, &constants(&v1));
    let b = objects(&tna, &constants(&tna));
    assert!(b.len() > 40, "{} TNA objects parsed", b.len());
    // The lanes: v1model's 32 one-lane registers are the TNA program's 16 lane pairs (a
    // stateful ALU adds two lanes; docs/tofino.md, "Lane pairs"), the same cells in half the
    // registers.
    let lane = |n: &str| n.starts_with("register agg_value_");
    let pair = |n: &str| n.starts_with("register agg_pair_");
    let in_v1 = a.keys().filter(|n| lane(n)).count();
    let in_tna = b.keys().filter(|n| pair(n)).count();
    assert_eq!(
        (in_v1, b.keys().filter(|n| lane(n)).count()),
        (sgnn_switch::aggregation::LANES, 0),
        "lane registers (v1model, TNA)"
    );
    assert_eq!(
        in_tna,
        sgnn_switch::tna::LANE_PAIRS,
        "lane pairs in the TNA program"
    );
    for r in sgnn_switch::tna::AGG_PAIR {
        let Some((_, Object::Register { width, size })) = b.get(&format!("register {}", r.name))
        else {
            panic!("register {} not in the TNA program", r.name);
        };
        assert_eq!(
            (*width, *size),
            (r.bits as i32, r.size as u64),
            "register {} in p4/tna is not the contract's",
            r.name
        );
    }
    // The registers only the v1model program has (sgnn_switch::tna says why): absent from
    // the TNA program, or the list is stale.
    // So are the actions only the v1model program has (the fabric's).
    let only: Vec<String> = sgnn_switch::tna::V1MODEL_ONLY_REGISTERS
        .iter()
        .map(|r| format!("register {}", r.name))
        .chain(
            sgnn_switch::tna::V1MODEL_ONLY_ACTIONS
                .iter()
                .map(|a| format!("action {}", a.name)),
        )
        .collect();
    let v1_only = |n: &str| only.iter().any(|o| o == n);
    let mut diffs = Vec::new();
    for n in &only {
        let n = n.clone();
        if !a.contains_key(&n) || b.contains_key(&n) {
            diffs.push(format!(
                "{n}: listed as v1model only, but v1model has it: {}, TNA has it: {}",
                a.contains_key(&n),
                b.contains_key(&n)
            ));
        }
    }
    let differs =
        |n: &str| lane(n) || pair(n) || v1_only(n) || TNA_DIFFERS.iter().any(|(k, _)| *k == n);
    let sized = |n: &str| TNA_SIZED.contains(&n) || n.starts_with("register agg_value_");
    let names: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    for n in names {
        if differs(n) {
            continue;
        }
        match (a.get(n), b.get(n)) {
            (Some((ia, oa)), Some((ib, ob))) => {
                let same = if sized(n) {
                    without_size(oa) == without_size(ob)
                } else {
                    oa == ob
                };
                if ia != ib || !same {
                    diffs.push(format!(
                        "{n}: v1model @id({ia}) {oa:?}, TNA @id({ib}) {ob:?}"
                    ));
                }
            }
            (Some(_), None) => diffs.push(format!("{n}: in the v1model program only")),
            (None, Some(_)) => diffs.push(format!("{n}: in the TNA program only")),
            (None, None) => unreachable!(),
        }
    }
    // The listed differences must still exist (or the list is stale).
    for (n, why) in TNA_DIFFERS {
        let (x, y) = (a.get(*n), b.get(*n));
        if x.is_some() && y.is_some() && x == y {
            diffs.push(format!("{n}: listed as differing ({why}) but equal"));
        }
        if y.is_none() {
            diffs.push(format!(
                "{n}: listed as differing ({why}) but not in the TNA program"
            ));
        }
    }
    assert!(
        diffs.is_empty(),
        "the v1model and TNA programs disagree:\n{}",
        diffs.join("\n")
    );
}

#[test]
fn the_tna_program_shares_the_v1model_constants() {
    let v1 = constants(&sources_of("v1model"));
    let tna = constants(&sources_of("tna"));
    // Everything in p4/common is shared by construction; these must not be redefined.
    let mut diffs = Vec::new();
    for name in [
        "MAX_WORKERS",
        "EVENT_COUNTERS",
        "PORTS",
        "ADVANCE_MCAST_GROUP",
    ] {
        if v1.get(name) != tna.get(name) {
            diffs.push(format!(
                "{name}: v1model {:?}, TNA {:?}",
                v1.get(name),
                tna.get(name)
            ));
        }
    }
    for (name, v) in &v1 {
        let shared =
            name.starts_with("EV_") || name.starts_with("TYPE_") || name.starts_with("INIT_");
        if shared && tna.get(name) != Some(v) {
            diffs.push(format!("{name}: v1model {v}, TNA {:?}", tna.get(name)));
        }
    }
    // The TNA sizes the control plane expects (sgnn_p4rt::schema::switchgnn_p4info_for).
    for (name, want) in [
        ("AGGREGATORS", sgnn_switch::tna::AGGREGATORS),
        ("AGG_TABLE_SIZE", sgnn_switch::tna::AGG_TABLE_SIZE),
        ("SEEN_CELLS", sgnn_switch::tna::SEEN_CELLS),
    ] {
        if tna.get(name) != Some(&(want as u64)) {
            diffs.push(format!(
                "{name}: TNA config.p4 {:?}, Rust {want}",
                tna.get(name)
            ));
        }
    }
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
}

/// Both programs refuse frames by the admission rule (`sgnn_switch::admission`) and count each
/// refusal under its reason's event: each event of a refusal is counted somewhere in each
/// architecture's own files (its `EV_` constant used beyond its definition in `common/`).
#[test]
fn both_programs_count_every_refusal_of_the_admission_rule() {
    use sgnn_switch::admission::Refusal;
    for arch in ["v1model", "tna"] {
        let own: Vec<(String, String)> = sources_of(arch)
            .into_iter()
            .filter(|(name, _)| name.starts_with(&format!("{arch}/")))
            .collect();
        for r in [
            Refusal::WrongPort,
            Refusal::WrongAddress,
            Refusal::ForeignJob,
        ] {
            let constant = format!("EV_{}", r.event().name().to_uppercase());
            assert!(
                own.iter().any(|(_, text)| text.contains(&constant)),
                "p4/{arch} never counts {constant}: it does not refuse {r:?} frames"
            );
        }
    }
}
