//! Table entries by name ([`Entry`], what P4Runtime and `switch-ctl` speak) and typed
//! ([`TypedEntry`], what the software switch stores), and the one conversion between them,
//! checked against the tables' declared fields and widths.

use crate::aggregation::{
    AggAction, AggKey, AggregateParams, AGGREGATE, AGG_TABLE, DELIVER, REPLICATE,
};
use crate::config::{Settings, SET_CONFIG, SWITCH_CONFIG};
use crate::forwarding::{
    FORWARD, IPV4_FORWARD, PORT_WORKER, SET_PORT_LINK, SET_PORT_WORKER, SET_WORKER,
    SET_WORKER_ADDR, WORKER_ADDR, WORKER_TABLE,
};
use crate::priority::{DSCP_PRIORITY, SET_PRIORITY};
use crate::{Action, Table};

/// A write the contract refuses, with what to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContractError {
    /// No table, action, field or parameter of that name (where it was looked up).
    #[error("unknown {kind} {name:?}")]
    Unknown {
        /// What kind of object.
        kind: &'static str,
        /// Its name.
        name: String,
    },
    /// A value that does not fit its field, or a field given twice.
    #[error("{0}")]
    Invalid(String),
}

/// One table entry by names: exact matches and an action with parameters, values as unsigned
/// integers of their field's width. The names are the contract's own (`&'static`), so an
/// `Entry` names only objects the program has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Table name.
    pub table: &'static str,
    /// (match field, value), all exact, in key order.
    pub matches: Vec<(&'static str, u128)>,
    /// Action name.
    pub action: &'static str,
    /// (parameter, value), in declaration order.
    pub params: Vec<(&'static str, u128)>,
}

/// An entry of one of the program's tables, typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypedEntry {
    /// `agg_table`.
    Agg(AggKey, AggAction),
    /// `worker_table`: worker -> port.
    Worker {
        /// Worker id.
        worker_id: u16,
        /// Its port.
        port: u16,
    },
    /// `ipv4_forward`: address -> port.
    Ipv4Forward {
        /// Destination address.
        dst_addr: [u8; 4],
        /// Port.
        port: u16,
    },
    /// `dscp_priority`: DSCP -> queue.
    DscpPriority {
        /// DSCP.
        dscp: u8,
        /// Egress priority queue.
        queue: u8,
    },
    /// `worker_addr`: worker -> addresses.
    WorkerAddr {
        /// Worker id.
        worker_id: u16,
        /// Its MAC.
        mac: [u8; 6],
        /// Its IPv4 address.
        ip: [u8; 4],
    },
    /// `port_worker`, `set_port_worker`: port -> the worker on it.
    PortWorker {
        /// Port.
        port: u16,
        /// Worker id.
        worker_id: u16,
    },
    /// `port_worker`, `set_port_link`: port -> a cabled link to another switch.
    PortLink {
        /// Port.
        port: u16,
        /// The other switch's peer id here.
        peer_id: u16,
    },
    /// `switch_config`'s default action.
    Config(Settings),
}

/// The key of an entry of one of the program's tables (what a delete names). Ordered by table,
/// then by key value (the order `read` returns entries in).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TableKey {
    /// `agg_table`.
    Agg(AggKey),
    /// `worker_table`.
    Worker(u16),
    /// `ipv4_forward`.
    Ipv4Forward([u8; 4]),
    /// `dscp_priority`.
    DscpPriority(u8),
    /// `worker_addr`.
    WorkerAddr(u16),
    /// `port_worker`.
    PortWorker(u16),
    /// `switch_config` (keyless).
    Config,
}

fn mac_value(m: [u8; 6]) -> u128 {
    m.iter().fold(0u128, |a, &b| a << 8 | b as u128)
}

fn mac_of(v: u128) -> [u8; 6] {
    let b = (v as u64).to_be_bytes();
    [b[2], b[3], b[4], b[5], b[6], b[7]]
}

fn ip_value(ip: [u8; 4]) -> u128 {
    u32::from_be_bytes(ip) as u128
}

/// Looks up `name` among `(name, value)` pairs whose names `declared` lists with widths:
/// present exactly once and within its width.
struct Fields<'a, S> {
    kind: &'static str,
    owner: &'static str,
    list: &'a [(S, u128)],
}

impl<S: AsRef<str>> Fields<'_, S> {
    fn check(&self, declared: &[(&'static str, u32)]) -> Result<(), ContractError> {
        for (n, _) in self.list {
            let n = n.as_ref();
            if !declared.iter().any(|(d, _)| *d == n) {
                return Err(ContractError::Unknown {
                    kind: self.kind,
                    name: format!("{}.{n}", self.owner),
                });
            }
        }
        for &(d, bits) in declared {
            let mut found = self.list.iter().filter(|(n, _)| n.as_ref() == d);
            let Some(&(_, v)) = found.next() else {
                return Err(ContractError::Invalid(format!(
                    "{} needs {} {d:?}",
                    self.owner, self.kind
                )));
            };
            if found.next().is_some() {
                return Err(ContractError::Invalid(format!(
                    "{} {d:?} of {} given twice",
                    self.kind, self.owner
                )));
            }
            if bits < 128 && v >> bits != 0 {
                return Err(ContractError::Invalid(format!(
                    "{d} = {v} does not fit in {bits} bits"
                )));
            }
        }
        Ok(())
    }

    fn get(&self, name: &str) -> u128 {
        self.list
            .iter()
            .find(|(n, _)| n.as_ref() == name)
            .map(|&(_, v)| v)
            .expect("checked")
    }
}

fn key_fields(t: &Table) -> Vec<(&'static str, u32)> {
    t.keys.iter().map(|k| (k.name, k.bits)).collect()
}

fn param_fields(a: &Action) -> Vec<(&'static str, u32)> {
    a.params.iter().map(|p| (p.name, p.bits)).collect()
}

impl TableKey {
    /// The key of an entry of `table` matching `matches`, checked against the table's fields.
    pub fn from_matches<S: AsRef<str>>(
        table: &str,
        matches: &[(S, u128)],
    ) -> Result<TableKey, ContractError> {
        let t = crate::table(table).ok_or_else(|| ContractError::Unknown {
            kind: "table",
            name: table.into(),
        })?;
        let m = Fields {
            kind: "match field",
            owner: t.name,
            list: matches,
        };
        m.check(&key_fields(t))?;
        Ok(match t.name {
            n if n == AGG_TABLE.name => TableKey::Agg(AggKey {
                block_id: m.get("block_id") as u16,
                src_id: m.get("src_id") as u32,
                pass: m.get("pass") as u8,
            }),
            n if n == WORKER_TABLE.name => TableKey::Worker(m.get("worker_id") as u16),
            n if n == IPV4_FORWARD.name => {
                TableKey::Ipv4Forward((m.get("dst_addr") as u32).to_be_bytes())
            }
            n if n == DSCP_PRIORITY.name => TableKey::DscpPriority(m.get("dscp") as u8),
            n if n == WORKER_ADDR.name => TableKey::WorkerAddr(m.get("worker_id") as u16),
            n if n == PORT_WORKER.name => TableKey::PortWorker(m.get("port") as u16),
            _ => TableKey::Config,
        })
    }
}

impl TypedEntry {
    /// The table the entry belongs to.
    pub fn table(&self) -> &'static Table {
        match self {
            TypedEntry::Agg(..) => &AGG_TABLE,
            TypedEntry::Worker { .. } => &WORKER_TABLE,
            TypedEntry::Ipv4Forward { .. } => &IPV4_FORWARD,
            TypedEntry::DscpPriority { .. } => &DSCP_PRIORITY,
            TypedEntry::WorkerAddr { .. } => &WORKER_ADDR,
            TypedEntry::PortWorker { .. } | TypedEntry::PortLink { .. } => &PORT_WORKER,
            TypedEntry::Config(_) => &SWITCH_CONFIG,
        }
    }

    /// Its key.
    pub fn key(&self) -> TableKey {
        match *self {
            TypedEntry::Agg(k, _) => TableKey::Agg(k),
            TypedEntry::Worker { worker_id, .. } => TableKey::Worker(worker_id),
            TypedEntry::Ipv4Forward { dst_addr, .. } => TableKey::Ipv4Forward(dst_addr),
            TypedEntry::DscpPriority { dscp, .. } => TableKey::DscpPriority(dscp),
            TypedEntry::WorkerAddr { worker_id, .. } => TableKey::WorkerAddr(worker_id),
            TypedEntry::PortWorker { port, .. } | TypedEntry::PortLink { port, .. } => {
                TableKey::PortWorker(port)
            }
            TypedEntry::Config(_) => TableKey::Config,
        }
    }

    /// The entry by names.
    pub fn to_entry(&self) -> Entry {
        let (action, matches, params): (&Action, Vec<u128>, Vec<u128>) = match *self {
            TypedEntry::Agg(k, a) => {
                let m = vec![k.block_id as u128, k.src_id as u128, k.pass as u128];
                match a {
                    AggAction::Aggregate(p) | AggAction::Up(p) | AggAction::Partials(p) => (
                        match a {
                            AggAction::Up(_) => &crate::aggregation::AGGREGATE_UP,
                            AggAction::Partials(_) => &crate::aggregation::AGGREGATE_PARTIALS,
                            _ => &AGGREGATE,
                        },
                        m,
                        vec![
                            p.agg_base as u128,
                            p.dst_id as u128,
                            p.dst_worker as u128,
                            p.expected as u128,
                            p.more as u128,
                            p.seen_base as u128,
                            p.generation as u128,
                        ],
                    ),
                    AggAction::Deliver {
                        dst_id,
                        dst_worker,
                        more,
                        seen_base,
                    } => (
                        &DELIVER,
                        m,
                        vec![
                            dst_id as u128,
                            dst_worker as u128,
                            more as u128,
                            seen_base as u128,
                        ],
                    ),
                    AggAction::Replicate {
                        group,
                        more,
                        seen_base,
                    } => (
                        &REPLICATE,
                        m,
                        vec![group as u128, more as u128, seen_base as u128],
                    ),
                }
            }
            TypedEntry::Worker { worker_id, port } => {
                (&SET_WORKER, vec![worker_id as u128], vec![port as u128])
            }
            TypedEntry::Ipv4Forward { dst_addr, port } => {
                (&FORWARD, vec![ip_value(dst_addr)], vec![port as u128])
            }
            TypedEntry::DscpPriority { dscp, queue } => {
                (&SET_PRIORITY, vec![dscp as u128], vec![queue as u128])
            }
            TypedEntry::WorkerAddr { worker_id, mac, ip } => (
                &SET_WORKER_ADDR,
                vec![worker_id as u128],
                vec![mac_value(mac), ip_value(ip)],
            ),
            TypedEntry::PortWorker { port, worker_id } => (
                &SET_PORT_WORKER,
                vec![port as u128],
                vec![worker_id as u128],
            ),
            TypedEntry::PortLink { port, peer_id } => {
                (&SET_PORT_LINK, vec![port as u128], vec![peer_id as u128])
            }
            TypedEntry::Config(s) => {
                let (role, sync_base, up_id, up_peer) = s.role.params();
                (
                    &SET_CONFIG,
                    vec![],
                    vec![
                        s.workers as u128,
                        s.blocks_per_round as u128,
                        s.ecn_threshold as u128,
                        s.drop_every as u128,
                        s.drop_prob as u128,
                        mac_value(s.switch_mac),
                        ip_value(s.switch_ip),
                        s.plan_tag as u128,
                        role as u128,
                        sync_base as u128,
                        up_id as u128,
                        up_peer as u128,
                        s.job as u128,
                    ],
                )
            }
        };
        let t = self.table();
        Entry {
            table: t.name,
            matches: t.keys.iter().map(|k| k.name).zip(matches).collect(),
            action: action.name,
            params: action.params.iter().map(|p| p.name).zip(params).collect(),
        }
    }

    /// The typed entry of `table` with `matches`, `action` and `params` by name, checked
    /// against the contract: the table and action exist, every field and parameter is given
    /// once and fits its width.
    pub fn from_names<S: AsRef<str>>(
        table: &str,
        matches: &[(S, u128)],
        action: &str,
        params: &[(S, u128)],
    ) -> Result<TypedEntry, ContractError> {
        let key = TableKey::from_matches(table, matches)?;
        let t = crate::table(table).expect("checked by from_matches");
        let a = t.action(action).ok_or_else(|| ContractError::Unknown {
            kind: "action",
            name: format!("{action} (of {})", t.name),
        })?;
        let p = Fields {
            kind: "action parameter",
            owner: a.name,
            list: params,
        };
        p.check(&param_fields(a))?;
        let g = |n| p.get(n);
        Ok(match key {
            TableKey::Agg(k) => TypedEntry::Agg(
                k,
                match a.name {
                    n if n == AGGREGATE.name
                        || n == crate::aggregation::AGGREGATE_UP.name
                        || n == crate::aggregation::AGGREGATE_PARTIALS.name =>
                    {
                        let p = AggregateParams {
                            agg_base: g("agg_base") as u32,
                            dst_id: g("dst_id") as u32,
                            dst_worker: g("dst_worker") as u16,
                            expected: g("expected") as u16,
                            more: g("more") == 1,
                            seen_base: g("seen_base") as u32,
                            generation: g("generation") as u16,
                        };
                        match n {
                            n if n == AGGREGATE.name => AggAction::Aggregate(p),
                            n if n == crate::aggregation::AGGREGATE_UP.name => AggAction::Up(p),
                            _ => AggAction::Partials(p),
                        }
                    }
                    n if n == DELIVER.name => AggAction::Deliver {
                        dst_id: g("dst_id") as u32,
                        dst_worker: g("dst_worker") as u16,
                        more: g("more") == 1,
                        seen_base: g("seen_base") as u32,
                    },
                    _ => AggAction::Replicate {
                        group: g("group") as u16,
                        more: g("more") == 1,
                        seen_base: g("seen_base") as u32,
                    },
                },
            ),
            TableKey::Worker(worker_id) => TypedEntry::Worker {
                worker_id,
                port: g("port") as u16,
            },
            TableKey::Ipv4Forward(dst_addr) => TypedEntry::Ipv4Forward {
                dst_addr,
                port: g("port") as u16,
            },
            TableKey::DscpPriority(dscp) => TypedEntry::DscpPriority {
                dscp,
                queue: g("queue") as u8,
            },
            TableKey::WorkerAddr(worker_id) => TypedEntry::WorkerAddr {
                worker_id,
                mac: mac_of(g("mac")),
                ip: (g("ip") as u32).to_be_bytes(),
            },
            TableKey::PortWorker(port) if a.name == SET_PORT_LINK.name => TypedEntry::PortLink {
                port,
                peer_id: g("peer_id") as u16,
            },
            TableKey::PortWorker(port) => TypedEntry::PortWorker {
                port,
                worker_id: g("worker_id") as u16,
            },
            TableKey::Config => TypedEntry::Config(Settings {
                workers: g("workers") as u16,
                blocks_per_round: g("blocks_per_round") as u16,
                ecn_threshold: g("ecn_threshold") as u32,
                drop_every: g("drop_every") as u32,
                drop_prob: g("drop_prob") as u32,
                switch_mac: mac_of(g("switch_mac")),
                switch_ip: (g("switch_ip") as u32).to_be_bytes(),
                plan_tag: g("plan_tag") as u32,
                role: crate::config::Role::from_params(
                    g("role") as u8,
                    g("sync_base") as u16,
                    g("up_id") as u16,
                    g("up_peer") as u16,
                )
                .ok_or_else(|| {
                    ContractError::Invalid(format!(
                        "set_config role {}: 0 (star), 1 (leaf) or 2 (spine)",
                        g("role")
                    ))
                })?,
                job: g("job") as u16,
            }),
        })
    }

    /// [`TypedEntry::from_names`] of an [`Entry`].
    pub fn from_entry(e: &Entry) -> Result<TypedEntry, ContractError> {
        TypedEntry::from_names(e.table, &e.matches, e.action, &e.params)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples() -> Vec<TypedEntry> {
        vec![
            TypedEntry::Agg(
                AggKey {
                    block_id: 3,
                    src_id: 70_000,
                    pass: 2,
                },
                AggAction::Aggregate(AggregateParams {
                    agg_base: 65_000,
                    dst_id: 9,
                    dst_worker: 2,
                    expected: 7,
                    more: true,
                    seen_base: 38,
                    generation: 4,
                }),
            ),
            TypedEntry::Agg(
                AggKey {
                    block_id: 2,
                    src_id: 5,
                    pass: 1,
                },
                AggAction::Up(AggregateParams {
                    agg_base: 12,
                    dst_id: 3,
                    dst_worker: 130,
                    expected: 4,
                    more: true,
                    seen_base: 40,
                    generation: 1,
                }),
            ),
            TypedEntry::Agg(
                AggKey {
                    block_id: 2,
                    src_id: 3,
                    pass: 0,
                },
                AggAction::Partials(AggregateParams {
                    agg_base: 12,
                    dst_id: 77,
                    dst_worker: 6,
                    expected: 9,
                    more: false,
                    seen_base: 15,
                    generation: 1,
                }),
            ),
            TypedEntry::Agg(
                AggKey {
                    block_id: 0,
                    src_id: 1,
                    pass: 0,
                },
                AggAction::Deliver {
                    dst_id: 5,
                    dst_worker: 1,
                    more: false,
                    seen_base: 0,
                },
            ),
            TypedEntry::Agg(
                AggKey {
                    block_id: 1,
                    src_id: 2,
                    pass: 0,
                },
                AggAction::Replicate {
                    group: 17,
                    more: true,
                    seen_base: 19,
                },
            ),
            TypedEntry::Worker {
                worker_id: 3,
                port: 511,
            },
            TypedEntry::Ipv4Forward {
                dst_addr: [10, 0, 0, 3],
                port: 3,
            },
            TypedEntry::DscpPriority { dscp: 46, queue: 7 },
            TypedEntry::WorkerAddr {
                worker_id: 3,
                mac: [2, 0, 0, 0, 0, 3],
                ip: [10, 0, 0, 3],
            },
            TypedEntry::PortWorker {
                port: 3,
                worker_id: 3,
            },
            TypedEntry::PortLink {
                port: 4,
                peer_id: 9,
            },
            TypedEntry::Config(Settings {
                workers: 4,
                plan_tag: 0xdead_beef,
                drop_prob: Settings::drop_prob_of(0.25),
                role: crate::config::Role::Leaf {
                    first_worker: 8,
                    id: 34,
                    root: 40,
                },
                ..Settings::default()
            }),
        ]
    }

    #[test]
    fn every_table_round_trips_by_names() {
        let all = samples();
        for t in crate::TABLES {
            assert!(
                all.iter().any(|e| e.table() == t),
                "{} has a sample",
                t.name
            );
        }
        for a in crate::ACTIONS {
            assert!(
                all.iter().any(|e| e.to_entry().action == a.name),
                "{} has a sample",
                a.name
            );
        }
        for e in all {
            let named = e.to_entry();
            assert_eq!(named.matches.len(), e.table().keys.len());
            assert_eq!(TypedEntry::from_entry(&named), Ok(e));
        }
    }

    #[test]
    fn writes_the_contract_does_not_have_are_refused_with_the_reason() {
        let e = samples()[0].to_entry();
        let err = |r: Result<TypedEntry, ContractError>| r.unwrap_err().to_string();
        assert!(err(TypedEntry::from_names::<&str>(
            "agg_tabel",
            &e.matches,
            e.action,
            &e.params
        ))
        .contains("unknown table"));
        assert!(err(TypedEntry::from_names(
            e.table, &e.matches, "forward", &e.params
        ))
        .contains("unknown action"));
        let mut wide = e.clone();
        wide.params[2].1 = 1 << 16;
        assert!(err(TypedEntry::from_entry(&wide)).contains("does not fit in 16 bits"));
        let mut short = e.clone();
        short.params.pop();
        assert!(
            err(TypedEntry::from_entry(&short)).contains("needs action parameter \"generation\"")
        );
        let mut twice = e.clone();
        twice.matches.push(("pass", 1));
        assert!(err(TypedEntry::from_entry(&twice)).contains("given twice"));
        let mut extra = e;
        extra.params.push(("colour", 1));
        assert!(err(TypedEntry::from_entry(&extra)).contains("unknown action parameter"));
    }
}
