//! The control-plane view of the pipeline, by the names of `docs/switch-interface.md`: table
//! entries, registers, counters, multicast groups and clone sessions. The P4Runtime server
//! translates ids to these names; `switch-ctl dump` and tests read state through it.

use sgnn_p4rt::schema::names;
use sgnn_wire::LANES;

use crate::pipeline::{agg_state, Pipeline, PORTS, SEEN_CELLS, SEEN_VALID};
use crate::tables::{AggAction, AggregateParams, Replica, WorkerAddr};

/// A control operation the switch refused, with the reason a client can act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ControlError {
    /// No table, action, field, register or counter of that name.
    #[error("unknown {kind} {name:?}")]
    Unknown {
        /// What kind of object.
        kind: &'static str,
        /// Its name.
        name: String,
    },
    /// A value or index that does not fit.
    #[error("{0}")]
    Invalid(String),
    /// Insert of an existing key, or modify/delete of a missing one.
    #[error("{0}")]
    Exists(String),
}

/// A table entry by names; values are unsigned integers of the field's width.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedEntry {
    /// Table.
    pub table: String,
    /// (field, value), exact matches.
    pub matches: Vec<(String, u128)>,
    /// Action.
    pub action: String,
    /// (param, value).
    pub params: Vec<(String, u128)>,
}

/// How an entry write treats an existing key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteKind {
    /// Fails if the key exists.
    Insert,
    /// Fails if the key does not exist.
    Modify,
    /// Fails if the key does not exist.
    Delete,
}

fn get(list: &[(String, u128)], name: &str, kind: &'static str) -> Result<u128, ControlError> {
    list.iter()
        .find(|(n, _)| n == name)
        .map(|&(_, v)| v)
        .ok_or_else(|| ControlError::Unknown {
            kind,
            name: name.into(),
        })
}

fn fits(v: u128, bits: u32, what: &str) -> Result<u128, ControlError> {
    if bits < 128 && v >> bits != 0 {
        return Err(ControlError::Invalid(format!(
            "{what} = {v} does not fit in {bits} bits"
        )));
    }
    Ok(v)
}

fn mac_of(v: u128) -> [u8; 6] {
    let b = (v as u64).to_be_bytes();
    [b[2], b[3], b[4], b[5], b[6], b[7]]
}

fn mac_value(m: [u8; 6]) -> u128 {
    m.iter().fold(0u128, |a, &b| a << 8 | b as u128)
}

/// The register names with their width and size, in id order (`@id` 1..=40, 48..=50).
pub fn registers(p: &Pipeline) -> Vec<(String, u32, usize)> {
    let aggs = p.config.aggregators as usize;
    let mut v: Vec<(String, u32, usize)> = (0..LANES)
        .map(|i| (format!("agg_value_{i}"), 32, aggs))
        .collect();
    for (n, w, s) in [
        ("agg_count", 16, aggs),
        ("agg_state", 8, aggs),
        ("agg_tag", 32, aggs),
        ("agg_ecn", 8, aggs),
        ("sync_round", 16, 1),
        ("sync_block", 16, 1),
        ("sync_done", 8, crate::control::MAX_WORKERS),
        ("sync_count", 16, 1),
        ("drop_seen", 32, 1),
        ("src_seen", 33, SEEN_CELLS),
        ("agg_gen", 16, aggs),
    ] {
        v.push((n.to_string(), w, s));
    }
    v
}

/// `MAX_WORKERS` of the P4 program: size of `sync_done` and the worker tables.
pub const MAX_WORKERS: usize = 256;

impl Pipeline {
    /// Writes one table entry.
    pub fn write_entry(&mut self, kind: WriteKind, e: &NamedEntry) -> Result<(), ControlError> {
        let m = |f: &str, bits| get(&e.matches, f, "match field").and_then(|v| fits(v, bits, f));
        let p =
            |f: &str, bits| get(&e.params, f, "action parameter").and_then(|v| fits(v, bits, f));
        macro_rules! apply {
            ($map:expr, $key:expr, $val:expr) => {{
                let key = $key;
                let exists = $map.contains_key(&key);
                match kind {
                    WriteKind::Insert if exists => {
                        return Err(ControlError::Exists(format!(
                            "{} already has an entry for {:?}",
                            e.table, e.matches
                        )))
                    }
                    WriteKind::Modify | WriteKind::Delete if !exists => {
                        return Err(ControlError::Exists(format!(
                            "{} has no entry for {:?}",
                            e.table, e.matches
                        )))
                    }
                    WriteKind::Delete => {
                        $map.remove(&key);
                    }
                    _ => {
                        let v = $val;
                        $map.insert(key, v);
                    }
                }
                Ok(())
            }};
        }
        match e.table.as_str() {
            names::AGG_TABLE => {
                let key = (
                    m("block_id", 16)? as u16,
                    m("src_id", 32)? as u32,
                    m("pass", 8)? as u8,
                );
                let action = || -> Result<AggAction, ControlError> {
                    Ok(match e.action.as_str() {
                        names::AGGREGATE => AggAction::Aggregate(AggregateParams {
                            agg_base: p("agg_base", 32)? as u32,
                            dst_id: p("dst_id", 32)? as u32,
                            dst_worker: p("dst_worker", 16)? as u16,
                            expected: p("expected", 16)? as u16,
                            more: p("more", 1)? == 1,
                            seen_base: p("seen_base", 32)? as u32,
                            generation: p("generation", 16)? as u16,
                        }),
                        names::DELIVER => AggAction::Deliver {
                            dst_id: p("dst_id", 32)? as u32,
                            dst_worker: p("dst_worker", 16)? as u16,
                            more: p("more", 1)? == 1,
                            seen_base: p("seen_base", 32)? as u32,
                        },
                        names::REPLICATE => AggAction::Replicate {
                            group: p("group", 16)? as u16,
                            more: p("more", 1)? == 1,
                            seen_base: p("seen_base", 32)? as u32,
                        },
                        other => return Err(unknown_action(&e.table, other)),
                    })
                };
                let v = if kind == WriteKind::Delete {
                    None
                } else {
                    Some(action()?)
                };
                apply!(self.tables.agg_table, key, v.expect("not a delete"))
            }
            names::WORKER_TABLE => {
                let key = m("worker_id", 16)? as u16;
                let v = self.port_action(kind, e, names::SET_WORKER)?;
                if let (Some(port), Some(have)) = (v, self.host_ports) {
                    if port >= have {
                        return Err(ControlError::Invalid(format!(
                            "worker {key} on port {port}, but this switch has {have} host ports (0..{have}): the plan is for more workers than the switch was started with; start it with one port per worker or plan for at most {have} workers"
                        )));
                    }
                }
                apply!(self.tables.worker_table, key, v.expect("not a delete"))
            }
            names::IPV4_FORWARD => {
                let key = (m("dst_addr", 32)? as u32).to_be_bytes();
                let v = self.port_action(kind, e, names::FORWARD)?;
                apply!(self.tables.ipv4_forward, key, v.expect("not a delete"))
            }
            names::DSCP_PRIORITY => {
                let key = m("dscp", 6)? as u8;
                let v = match (kind, e.action.as_str()) {
                    (WriteKind::Delete, _) => None,
                    (_, names::SET_PRIORITY) => Some(p("queue", 3)? as u8),
                    (_, other) => return Err(unknown_action(&e.table, other)),
                };
                apply!(self.tables.dscp_priority, key, v.expect("not a delete"))
            }
            names::SWITCH_CONFIG => {
                // Keyless: only its default action exists, and only MODIFY changes it.
                if kind != WriteKind::Modify || !e.matches.is_empty() {
                    return Err(ControlError::Invalid(
                        "switch_config is keyless: MODIFY its default action set_config".into(),
                    ));
                }
                if e.action != names::SET_CONFIG {
                    return Err(unknown_action(&e.table, &e.action));
                }
                let workers = p("workers", 16)? as u16;
                let c = &mut self.config;
                c.workers = workers;
                c.blocks_per_round = p("blocks_per_round", 16)? as u16;
                c.ecn_threshold = p("ecn_threshold", 32)? as u32;
                c.drop_every = p("drop_every", 32)? as u64;
                c.drop_probability = p("drop_prob", 32)? as f64 / u32::MAX as f64;
                c.mac = mac_of(p("switch_mac", 48)?);
                c.ip = (p("switch_ip", 32)? as u32).to_be_bytes();
                c.plan_tag = p("plan_tag", 32)? as u32;
                self.regs.sync_done.resize(workers as usize, false);
                Ok(())
            }
            names::WORKER_ADDR => {
                let key = m("worker_id", 16)? as u16;
                let v = match (kind, e.action.as_str()) {
                    (WriteKind::Delete, _) => None,
                    (_, names::SET_WORKER_ADDR) => Some(WorkerAddr {
                        mac: mac_of(p("mac", 48)?),
                        ip: (p("ip", 32)? as u32).to_be_bytes(),
                    }),
                    (_, other) => return Err(unknown_action(&e.table, other)),
                };
                apply!(self.tables.worker_addr, key, v.expect("not a delete"))
            }
            names::PORT_WORKER => {
                let key = m("port", 9)? as crate::tables::PortId;
                let v = match (kind, e.action.as_str()) {
                    (WriteKind::Delete, _) => None,
                    (_, names::SET_PORT_WORKER) => Some(p("worker_id", 16)? as u16),
                    (_, other) => return Err(unknown_action(&e.table, other)),
                };
                apply!(self.tables.port_worker, key, v.expect("not a delete"))
            }
            other => Err(ControlError::Unknown {
                kind: "table",
                name: other.into(),
            }),
        }
    }

    fn port_action(
        &self,
        kind: WriteKind,
        e: &NamedEntry,
        action: &str,
    ) -> Result<Option<u16>, ControlError> {
        if kind == WriteKind::Delete {
            return Ok(None);
        }
        if e.action != action {
            return Err(unknown_action(&e.table, &e.action));
        }
        let port = fits(get(&e.params, "port", "action parameter")?, 9, "port")?;
        Ok(Some(port as u16))
    }

    /// Every entry of `table`, in key order.
    pub fn read_entries(&self, table: &str) -> Result<Vec<NamedEntry>, ControlError> {
        let s = |v: &[(&str, u128)]| -> Vec<(String, u128)> {
            v.iter().map(|&(n, x)| (n.to_string(), x)).collect()
        };
        let entry = |m: &[(&str, u128)], a: &str, p: &[(&str, u128)]| NamedEntry {
            table: table.to_string(),
            matches: s(m),
            action: a.to_string(),
            params: s(p),
        };
        let mut out = Vec::new();
        match table {
            names::AGG_TABLE => {
                let mut keys: Vec<_> = self.tables.agg_table.keys().copied().collect();
                keys.sort_unstable();
                for k in keys {
                    let m = [
                        ("block_id", k.0 as u128),
                        ("src_id", k.1 as u128),
                        ("pass", k.2 as u128),
                    ];
                    out.push(match self.tables.agg_table[&k] {
                        AggAction::Aggregate(a) => entry(
                            &m,
                            names::AGGREGATE,
                            &[
                                ("agg_base", a.agg_base as u128),
                                ("dst_id", a.dst_id as u128),
                                ("dst_worker", a.dst_worker as u128),
                                ("expected", a.expected as u128),
                                ("more", a.more as u128),
                                ("seen_base", a.seen_base as u128),
                                ("generation", a.generation as u128),
                            ],
                        ),
                        AggAction::Deliver {
                            dst_id,
                            dst_worker,
                            more,
                            seen_base,
                        } => entry(
                            &m,
                            names::DELIVER,
                            &[
                                ("dst_id", dst_id as u128),
                                ("dst_worker", dst_worker as u128),
                                ("more", more as u128),
                                ("seen_base", seen_base as u128),
                            ],
                        ),
                        AggAction::Replicate {
                            group,
                            more,
                            seen_base,
                        } => entry(
                            &m,
                            names::REPLICATE,
                            &[
                                ("group", group as u128),
                                ("more", more as u128),
                                ("seen_base", seen_base as u128),
                            ],
                        ),
                    });
                }
            }
            names::WORKER_TABLE => {
                let mut v: Vec<_> = self.tables.worker_table.iter().collect();
                v.sort_unstable();
                for (&w, &port) in v {
                    out.push(entry(
                        &[("worker_id", w as u128)],
                        names::SET_WORKER,
                        &[("port", port as u128)],
                    ));
                }
            }
            names::PORT_WORKER => {
                let mut v: Vec<_> = self.tables.port_worker.iter().collect();
                v.sort_unstable();
                for (&port, &w) in v {
                    out.push(entry(
                        &[("port", port as u128)],
                        names::SET_PORT_WORKER,
                        &[("worker_id", w as u128)],
                    ));
                }
            }
            names::IPV4_FORWARD => {
                let mut v: Vec<_> = self.tables.ipv4_forward.iter().collect();
                v.sort_unstable();
                for (&ip, &port) in v {
                    out.push(entry(
                        &[("dst_addr", u32::from_be_bytes(ip) as u128)],
                        names::FORWARD,
                        &[("port", port as u128)],
                    ));
                }
            }
            names::DSCP_PRIORITY => {
                let mut v: Vec<_> = self.tables.dscp_priority.iter().collect();
                v.sort_unstable();
                for (&d, &q) in v {
                    out.push(entry(
                        &[("dscp", d as u128)],
                        names::SET_PRIORITY,
                        &[("queue", q as u128)],
                    ));
                }
            }
            names::SWITCH_CONFIG => {
                let c = &self.config;
                out.push(entry(
                    &[],
                    names::SET_CONFIG,
                    &[
                        ("workers", c.workers as u128),
                        ("blocks_per_round", c.blocks_per_round as u128),
                        ("ecn_threshold", c.ecn_threshold as u128),
                        ("drop_every", c.drop_every.min(u32::MAX as u64) as u128),
                        (
                            "drop_prob",
                            (c.drop_probability * u32::MAX as f64).round() as u128,
                        ),
                        ("switch_mac", mac_value(c.mac)),
                        ("switch_ip", u32::from_be_bytes(c.ip) as u128),
                        ("plan_tag", c.plan_tag as u128),
                    ],
                ));
            }
            names::WORKER_ADDR => {
                let mut v: Vec<_> = self.tables.worker_addr.iter().collect();
                v.sort_unstable_by_key(|(w, _)| **w);
                for (&w, a) in v {
                    out.push(entry(
                        &[("worker_id", w as u128)],
                        names::SET_WORKER_ADDR,
                        &[
                            ("mac", mac_value(a.mac)),
                            ("ip", u32::from_be_bytes(a.ip) as u128),
                        ],
                    ));
                }
            }
            other => {
                return Err(ControlError::Unknown {
                    kind: "table",
                    name: other.into(),
                })
            }
        }
        Ok(out)
    }

    /// Removes every entry of `table`.
    pub fn clear_table(&mut self, table: &str) -> Result<usize, ControlError> {
        let t = &mut self.tables;
        let n = match table {
            names::AGG_TABLE => std::mem::take(&mut t.agg_table).len(),
            names::WORKER_TABLE => std::mem::take(&mut t.worker_table).len(),
            names::IPV4_FORWARD => std::mem::take(&mut t.ipv4_forward).len(),
            names::DSCP_PRIORITY => std::mem::take(&mut t.dscp_priority).len(),
            names::WORKER_ADDR => std::mem::take(&mut t.worker_addr).len(),
            names::PORT_WORKER => std::mem::take(&mut t.port_worker).len(),
            other => {
                return Err(ControlError::Unknown {
                    kind: "table",
                    name: other.into(),
                })
            }
        };
        Ok(n)
    }

    fn register_cell(&self, name: &str, index: usize) -> Result<u128, ControlError> {
        let r = &self.regs;
        let at = |len: usize| -> Result<usize, ControlError> {
            if index < len {
                Ok(index)
            } else {
                Err(ControlError::Invalid(format!(
                    "index {index} is beyond register {name} (size {len})"
                )))
            }
        };
        if let Some(lane) = name.strip_prefix("agg_value_") {
            let lane: usize = lane
                .parse()
                .ok()
                .filter(|&l| l < LANES)
                .ok_or_else(|| unknown_register(name))?;
            return Ok(r.agg_values[at(r.agg_values.len())?][lane] as u32 as u128);
        }
        Ok(match name {
            "agg_count" => r.agg_count[at(r.agg_count.len())?] as u128,
            "agg_state" => r.agg_state[at(r.agg_state.len())?] as u128,
            "agg_tag" => r.agg_tag[at(r.agg_tag.len())?] as u128,
            "agg_gen" => r.agg_gen[at(r.agg_gen.len())?] as u128,
            "agg_ecn" => r.agg_ecn[at(r.agg_ecn.len())?] as u128,
            "sync_round" => (at(1)?, r.sync_round as u128).1,
            "sync_block" => (at(1)?, r.sync_block as u128).1,
            "sync_done" => {
                at(MAX_WORKERS)?;
                r.sync_done.get(index).copied().unwrap_or(false) as u128
            }
            "sync_count" => (at(1)?, r.sync_count as u128).1,
            "drop_seen" => (at(1)?, r.drop_seen as u128).1,
            "src_seen" => r.src_seen[at(r.src_seen.len())?] as u128,
            _ => return Err(unknown_register(name)),
        })
    }

    /// Reads cell `index` of register `name` (its bits as an unsigned value).
    pub fn read_register(&self, name: &str, index: usize) -> Result<u128, ControlError> {
        self.register_cell(name, index)
    }

    /// Writes cell `index` of register `name`.
    pub fn write_register(
        &mut self,
        name: &str,
        index: usize,
        value: u128,
    ) -> Result<(), ControlError> {
        let (_, width, _) = registers(self)
            .into_iter()
            .find(|(n, _, _)| n == name)
            .ok_or_else(|| unknown_register(name))?;
        let v = fits(value, width, name)?;
        self.register_cell(name, index)?; // bounds
        let r = &mut self.regs;
        if let Some(lane) = name.strip_prefix("agg_value_") {
            let lane: usize = lane.parse().expect("checked by registers()");
            r.agg_values[index][lane] = v as u32 as i32;
            return Ok(());
        }
        match name {
            "agg_count" => r.agg_count[index] = v as u16,
            "agg_state" => {
                if v as u8 > agg_state::BYPASSED {
                    return Err(ControlError::Invalid(format!(
                        "agg_state {v} is not a state"
                    )));
                }
                r.agg_state[index] = v as u8
            }
            "agg_tag" => r.agg_tag[index] = v as u32,
            "agg_gen" => r.agg_gen[index] = v as u16,
            "agg_ecn" => r.agg_ecn[index] = v as u8,
            "sync_round" => r.sync_round = v as u16,
            "sync_block" => r.sync_block = v as u16,
            "sync_done" => {
                if index >= r.sync_done.len() {
                    r.sync_done.resize(index + 1, false);
                }
                r.sync_done[index] = v != 0;
            }
            "sync_count" => r.sync_count = v as u16,
            "drop_seen" => r.drop_seen = v as u32,
            "src_seen" => {
                if v != 0 && v as u64 & SEEN_VALID == 0 {
                    return Err(ControlError::Invalid(
                        "src_seen cells are 0 or have bit 32 set".into(),
                    ));
                }
                r.src_seen[index] = v as u64
            }
            _ => return Err(unknown_register(name)),
        }
        Ok(())
    }

    /// Counter `name` at `index`: (packets, bytes). `events` counts packets only.
    pub fn read_counter(&self, name: &str, index: usize) -> Result<(u64, u64), ControlError> {
        let bad = |len: usize| {
            ControlError::Invalid(format!(
                "index {index} is beyond counter {name} (size {len})"
            ))
        };
        match name {
            "events" => {
                if index >= 32 {
                    return Err(bad(32));
                }
                Ok((self.counters.to_array().get(index).copied().unwrap_or(0), 0))
            }
            "port_rx" | "port_tx" => {
                let c = if name == "port_rx" {
                    &self.port_rx
                } else {
                    &self.port_tx
                };
                let x = c.get(index).ok_or_else(|| bad(PORTS))?;
                Ok((x.packets, x.bytes))
            }
            _ => Err(ControlError::Unknown {
                kind: "counter",
                name: name.into(),
            }),
        }
    }

    /// Creates, replaces (`replace`) or, with no replicas and `replace`, deletes a multicast
    /// group.
    pub fn write_multicast_group(
        &mut self,
        kind: WriteKind,
        id: u16,
        replicas: Vec<Replica>,
    ) -> Result<(), ControlError> {
        let exists = self.tables.multicast_groups.contains_key(&id);
        match kind {
            WriteKind::Insert if exists => {
                Err(ControlError::Exists(format!("multicast group {id} exists")))
            }
            WriteKind::Modify | WriteKind::Delete if !exists => {
                Err(ControlError::Exists(format!("no multicast group {id}")))
            }
            WriteKind::Delete => {
                self.tables.multicast_groups.remove(&id);
                Ok(())
            }
            _ => {
                self.tables.multicast_groups.insert(id, replicas);
                Ok(())
            }
        }
    }
}

fn unknown_action(table: &str, action: &str) -> ControlError {
    ControlError::Unknown {
        kind: "action",
        name: format!("{action} (in {table})"),
    }
}

fn unknown_register(name: &str) -> ControlError {
    ControlError::Unknown {
        kind: "register",
        name: name.into(),
    }
}
