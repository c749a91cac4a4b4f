//! The control-plane view of the pipeline, by the names of `docs/switch-interface.md`: table
//! entries, registers, counters, multicast groups and clone sessions. The P4Runtime server
//! translates ids to these names; `switch-ctl dump` and tests read state through it.

use sgnn_switch::aggregation::{self, AggKey, AGG_VALUE};
use sgnn_switch::config::Settings;
use sgnn_switch::counters::{Event, EVENTS, PORT_RX, PORT_TX};
use sgnn_switch::{block_sync, drop_simulator, recovery, ContractError, TableKey, TypedEntry};

use crate::pipeline::{agg_state, Pipeline, PORTS, SEEN_VALID};
use crate::tables::{PortEnd, Replica};

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

impl From<ContractError> for ControlError {
    fn from(e: ContractError) -> Self {
        match e {
            ContractError::Unknown { kind, name } => ControlError::Unknown { kind, name },
            ContractError::Invalid(m) => ControlError::Invalid(m),
        }
    }
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

fn fits(v: u128, bits: u32, what: &str) -> Result<u128, ControlError> {
    if bits < 128 && v >> bits != 0 {
        return Err(ControlError::Invalid(format!(
            "{what} = {v} does not fit in {bits} bits"
        )));
    }
    Ok(v)
}

/// The register names with their width and size, in id order: the switch contract's
/// registers, the `agg_*` ones sized by this switch's aggregators.
pub fn registers(p: &Pipeline) -> Vec<(String, u32, usize)> {
    sgnn_switch::REGISTERS
        .iter()
        .map(|r| {
            let size = if r.size == aggregation::AGGREGATORS {
                p.config.aggregators as usize
            } else {
                r.size as usize
            };
            (r.name.to_string(), r.bits, size)
        })
        .collect()
}

/// `MAX_WORKERS` of the P4 program: size of `sync_done` and the worker tables.
pub const MAX_WORKERS: usize = sgnn_switch::config::MAX_WORKERS as usize;

fn to_typed(e: &NamedEntry) -> Result<TypedEntry, ControlError> {
    Ok(TypedEntry::from_names(
        &e.table, &e.matches, &e.action, &e.params,
    )?)
}

fn named(t: TypedEntry) -> NamedEntry {
    let e = t.to_entry();
    let s = |v: Vec<(&str, u128)>| v.into_iter().map(|(n, x)| (n.to_string(), x)).collect();
    NamedEntry {
        table: e.table.to_string(),
        matches: s(e.matches),
        action: e.action.to_string(),
        params: s(e.params),
    }
}

impl Pipeline {
    /// Writes one table entry.
    pub fn write_entry(&mut self, kind: WriteKind, e: &NamedEntry) -> Result<(), ControlError> {
        let key = TableKey::from_matches(&e.table, &e.matches)?;
        if key == TableKey::Config {
            // Keyless: only its default action exists, and only MODIFY changes it.
            if kind != WriteKind::Modify {
                return Err(ControlError::Invalid(
                    "switch_config is keyless: MODIFY its default action set_config".into(),
                ));
            }
            let TypedEntry::Config(s) = to_typed(e)? else {
                unreachable!("a switch_config entry");
            };
            self.apply_settings(&s);
            return Ok(());
        }
        let t = &self.tables;
        let exists = match key {
            TableKey::Agg(k) => t.agg_table.contains_key(&(k.block_id, k.src_id, k.pass)),
            TableKey::Worker(w) => t.worker_table.contains_key(&w),
            TableKey::Ipv4Forward(a) => t.ipv4_forward.contains_key(&a),
            TableKey::DscpPriority(d) => t.dscp_priority.contains_key(&d),
            TableKey::WorkerAddr(w) => t.worker_addr.contains_key(&w),
            TableKey::PortWorker(p) => t.port_worker.contains_key(&p),
            TableKey::Config => unreachable!("handled above"),
        };
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
            _ => {}
        }
        let t = &mut self.tables;
        if kind == WriteKind::Delete {
            match key {
                TableKey::Agg(k) => {
                    t.agg_table.remove(&(k.block_id, k.src_id, k.pass));
                }
                TableKey::Worker(w) => {
                    t.worker_table.remove(&w);
                }
                TableKey::Ipv4Forward(a) => {
                    t.ipv4_forward.remove(&a);
                }
                TableKey::DscpPriority(d) => {
                    t.dscp_priority.remove(&d);
                }
                TableKey::WorkerAddr(w) => {
                    t.worker_addr.remove(&w);
                }
                TableKey::PortWorker(p) => {
                    t.port_worker.remove(&p);
                }
                TableKey::Config => unreachable!("handled above"),
            }
            return Ok(());
        }
        let typed = to_typed(e)?;
        if let (TypedEntry::Worker { worker_id, port }, Some(have)) = (typed, self.host_ports) {
            if port >= have {
                return Err(ControlError::Invalid(format!(
                    "worker {worker_id} on port {port}, but this switch has {have} host ports (0..{have}): the plan is for more workers than the switch was started with; start it with one port per worker or plan for at most {have} workers"
                )));
            }
        }
        let row = self.tables.insert_entry(typed);
        debug_assert!(row, "switch_config handled above");
        Ok(())
    }

    /// The `switch_config` settings as the pipeline's configuration.
    fn apply_settings(&mut self, s: &Settings) {
        let c = &mut self.config;
        c.workers = s.workers;
        c.blocks_per_round = s.blocks_per_round;
        c.ecn_threshold = s.ecn_threshold;
        c.drop_every = s.drop_every as u64;
        c.drop_probability = s.drop_probability();
        c.mac = s.switch_mac;
        c.ip = s.switch_ip;
        c.plan_tag = s.plan_tag;
        c.role = s.role;
        c.job = s.job;
        self.regs.sync_done.resize(s.workers as usize, false);
    }

    /// The pipeline's configuration as the `switch_config` settings.
    fn settings(&self) -> Settings {
        let c = &self.config;
        Settings {
            workers: c.workers,
            blocks_per_round: c.blocks_per_round,
            ecn_threshold: c.ecn_threshold,
            drop_every: c.drop_every.min(u32::MAX as u64) as u32,
            drop_prob: (c.drop_probability * u32::MAX as f64).round() as u32,
            switch_mac: c.mac,
            switch_ip: c.ip,
            plan_tag: c.plan_tag,
            role: c.role,
            job: c.job,
        }
    }

    /// Every entry of `table`, in key order.
    pub fn read_entries(&self, table: &str) -> Result<Vec<NamedEntry>, ControlError> {
        let t = &self.tables;
        let mut out: Vec<TypedEntry> = match sgnn_switch::table(table).map(|t| t.name) {
            Some(n) if n == aggregation::AGG_TABLE.name => t
                .agg_table
                .iter()
                .map(|((block_id, src_id, pass), &a)| {
                    TypedEntry::Agg(
                        AggKey {
                            block_id,
                            src_id,
                            pass,
                        },
                        a,
                    )
                })
                .collect(),
            Some(n) if n == sgnn_switch::forwarding::WORKER_TABLE.name => t
                .worker_table
                .iter()
                .map(|(&worker_id, &port)| TypedEntry::Worker { worker_id, port })
                .collect(),
            Some(n) if n == sgnn_switch::forwarding::PORT_WORKER.name => t
                .port_worker
                .iter()
                .map(|(&port, &end)| match end {
                    PortEnd::Worker(worker_id) => TypedEntry::PortWorker { port, worker_id },
                    PortEnd::Link(peer_id) => TypedEntry::PortLink { port, peer_id },
                })
                .collect(),
            Some(n) if n == sgnn_switch::forwarding::IPV4_FORWARD.name => t
                .ipv4_forward
                .iter()
                .map(|(&dst_addr, &port)| TypedEntry::Ipv4Forward { dst_addr, port })
                .collect(),
            Some(n) if n == sgnn_switch::priority::DSCP_PRIORITY.name => t
                .dscp_priority
                .iter()
                .map(|(&dscp, &queue)| TypedEntry::DscpPriority { dscp, queue })
                .collect(),
            Some(n) if n == sgnn_switch::forwarding::WORKER_ADDR.name => t
                .worker_addr
                .iter()
                .map(|(&worker_id, a)| TypedEntry::WorkerAddr {
                    worker_id,
                    mac: a.mac,
                    ip: a.ip,
                })
                .collect(),
            Some(_) => vec![TypedEntry::Config(self.settings())],
            None => {
                return Err(ControlError::Unknown {
                    kind: "table",
                    name: table.into(),
                })
            }
        };
        out.sort_unstable_by_key(|e| e.key());
        Ok(out.into_iter().map(named).collect())
    }

    /// Removes every entry of `table`.
    pub fn clear_table(&mut self, table: &str) -> Result<usize, ControlError> {
        let t = &mut self.tables;
        let key = sgnn_switch::table(table)
            .filter(|t| !t.keyless())
            .map(|t| t.name)
            .ok_or_else(|| ControlError::Unknown {
                kind: "table",
                name: table.into(),
            })?;
        use sgnn_switch::forwarding as fw;
        let n = match key {
            n if n == aggregation::AGG_TABLE.name => std::mem::take(&mut t.agg_table).len(),
            n if n == fw::WORKER_TABLE.name => std::mem::take(&mut t.worker_table).len(),
            n if n == fw::IPV4_FORWARD.name => std::mem::take(&mut t.ipv4_forward).len(),
            n if n == sgnn_switch::priority::DSCP_PRIORITY.name => {
                std::mem::take(&mut t.dscp_priority).len()
            }
            n if n == fw::WORKER_ADDR.name => std::mem::take(&mut t.worker_addr).len(),
            _ => std::mem::take(&mut t.port_worker).len(),
        };
        Ok(n)
    }

    /// The register `name` of the contract, and its lane if it is one of `agg_value_*`.
    fn register_of(
        name: &str,
    ) -> Result<(&'static sgnn_switch::Register, Option<usize>), ControlError> {
        let r = sgnn_switch::register(name).ok_or_else(|| unknown_register(name))?;
        Ok((r, AGG_VALUE.iter().position(|l| l.name == r.name)))
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
        let (reg, lane) = Self::register_of(name)?;
        if let Some(lane) = lane {
            return Ok(r.agg_values[at(r.agg_values.len())?][lane] as u32 as u128);
        }
        use aggregation::{AGG_COUNT, AGG_ECN, AGG_GEN, AGG_IDS, AGG_STATE, AGG_TAG, SRC_SEEN};
        use block_sync::{SYNC_BLOCK, SYNC_COUNT, SYNC_DONE, SYNC_ROUND};
        use recovery::{SENT_COUNT, SENT_DONE, SEQ_GAP, SEQ_NEXT};
        let is = |other: &sgnn_switch::Register| reg.name == other.name;
        Ok(if is(&AGG_COUNT) {
            r.agg_count[at(r.agg_count.len())?] as u128
        } else if is(&AGG_STATE) {
            r.agg_state[at(r.agg_state.len())?] as u128
        } else if is(&AGG_TAG) {
            r.agg_tag[at(r.agg_tag.len())?] as u128
        } else if is(&AGG_GEN) {
            r.agg_gen[at(r.agg_gen.len())?] as u128
        } else if is(&AGG_ECN) {
            r.agg_ecn[at(r.agg_ecn.len())?] as u128
        } else if is(&SYNC_ROUND) {
            (at(1)?, r.sync_round as u128).1
        } else if is(&SYNC_BLOCK) {
            (at(1)?, r.sync_block as u128).1
        } else if is(&SYNC_DONE) {
            at(MAX_WORKERS)?;
            r.sync_done.get(index).copied().unwrap_or(false) as u128
        } else if is(&SYNC_COUNT) {
            (at(1)?, r.sync_count as u128).1
        } else if is(&drop_simulator::DROP_SEEN) {
            (at(1)?, r.drop_seen as u128).1
        } else if is(&SRC_SEEN) {
            r.src_seen[at(r.src_seen.len())?] as u128
        } else if is(&AGG_IDS) {
            r.agg_ids[at(r.agg_ids.len())?] as u128
        } else if is(&SEQ_NEXT) {
            r.seq_next[at(r.seq_next.len())?] as u128
        } else if is(&SEQ_GAP) {
            r.seq_gap[at(r.seq_gap.len())?] as u128
        } else if is(&SENT_DONE) {
            r.sent_done[at(r.sent_done.len())?] as u128
        } else if is(&SENT_COUNT) {
            (at(1)?, r.sent_count as u128).1
        } else {
            return Err(unknown_register(name));
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
        let (reg, lane) = Self::register_of(name)?;
        let v = fits(value, reg.bits, name)?;
        self.register_cell(name, index)?; // bounds
        let r = &mut self.regs;
        if let Some(lane) = lane {
            r.agg_values[index][lane] = v as u32 as i32;
            return Ok(());
        }
        use aggregation::{AGG_COUNT, AGG_ECN, AGG_GEN, AGG_IDS, AGG_STATE, AGG_TAG, SRC_SEEN};
        use block_sync::{SYNC_BLOCK, SYNC_COUNT, SYNC_DONE, SYNC_ROUND};
        use recovery::{SENT_COUNT, SENT_DONE, SEQ_GAP, SEQ_NEXT};
        let is = |other: &sgnn_switch::Register| reg.name == other.name;
        if is(&AGG_COUNT) {
            r.agg_count[index] = v as u16
        } else if is(&AGG_STATE) {
            if v as u8 > agg_state::DONE {
                return Err(ControlError::Invalid(format!(
                    "agg_state {v} is not a state"
                )));
            }
            r.agg_state[index] = v as u8;
            self.recount_active();
        } else if is(&AGG_TAG) {
            r.agg_tag[index] = v as u32
        } else if is(&AGG_GEN) {
            r.agg_gen[index] = v as u16
        } else if is(&AGG_ECN) {
            r.agg_ecn[index] = v as u8
        } else if is(&SYNC_ROUND) {
            r.sync_round = v as u16
        } else if is(&SYNC_BLOCK) {
            r.sync_block = v as u16
        } else if is(&SYNC_DONE) {
            if index >= r.sync_done.len() {
                r.sync_done.resize(index + 1, false);
            }
            r.sync_done[index] = v != 0;
        } else if is(&SYNC_COUNT) {
            r.sync_count = v as u16
        } else if is(&drop_simulator::DROP_SEEN) {
            r.drop_seen = v as u32
        } else if is(&SRC_SEEN) {
            if v != 0 && v as u64 & SEEN_VALID == 0 {
                return Err(ControlError::Invalid(
                    "src_seen cells are 0 or have bit 32 set".into(),
                ));
            }
            r.src_seen[index] = v as u64
        } else if is(&AGG_IDS) {
            r.agg_ids[index] = v as u32
        } else if is(&SEQ_NEXT) {
            r.seq_next[index] = v as u32
        } else if is(&SEQ_GAP) {
            r.seq_gap[index] = v as u32
        } else if is(&SENT_DONE) {
            r.sent_done[index] = v as u32
        } else if is(&SENT_COUNT) {
            r.sent_count = v as u32
        } else {
            return Err(unknown_register(name));
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
        if name == EVENTS.name {
            if index >= EVENTS.size as usize {
                return Err(bad(EVENTS.size as usize));
            }
            let e = Event::ALL.get(index);
            return Ok((e.map_or(0, |&e| self.counters.get(e)), 0));
        }
        let c = if name == PORT_RX.name {
            &self.port_rx
        } else if name == PORT_TX.name {
            &self.port_tx
        } else {
            return Err(ControlError::Unknown {
                kind: "counter",
                name: name.into(),
            });
        };
        let x = c.get(index).ok_or_else(|| bad(PORTS))?;
        Ok((x.packets, x.bytes))
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

fn unknown_register(name: &str) -> ControlError {
    ControlError::Unknown {
        kind: "register",
        name: name.into(),
    }
}
