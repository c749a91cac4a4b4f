//! [`MemoryTarget`]: a switch's control-plane state in memory, the reference every other backend
//! is tested against.
//!
//! It validates through the same [`convert`](super::convert) functions as the P4Runtime backend,
//! stores entries in P4Runtime form, and answers as a P4Runtime switch would: an existing key
//! on insert is `AlreadyExists`, a missing one on modify or delete `NotFound`, a full table
//! `ResourceExhausted`. A batch stops at the first rejected operation.

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;

use prost::Message;

use super::convert::{check_range, op_to_update, table_entry_from_p4};
use super::{Code, CounterValue, Op, Replica, TableEntry, Target, TargetError};
use sgnn_p4rt::p4info::P4InfoIndex;
use sgnn_p4rt::proto::p4::config::v1::P4Info;
use sgnn_p4rt::proto::p4::v1 as p4;

/// An in-memory switch: tables, registers, counters, multicast groups and clone sessions of one
/// P4Info. Registers and counters start at 0.
#[derive(Debug, Clone)]
pub struct MemoryTarget {
    index: P4InfoIndex,
    tables: HashMap<u32, BTreeMap<Vec<u8>, p4::TableEntry>>,
    defaults: HashMap<u32, p4::TableEntry>,
    registers: HashMap<(u32, u64), u128>,
    counters: HashMap<(u32, u64), CounterValue>,
    groups: BTreeMap<u32, Vec<Replica>>,
    sessions: BTreeMap<u32, Vec<Replica>>,
    applied: usize,
}

/// The identity of a table entry: its key (fields in id order) and priority.
fn entry_key(e: &p4::TableEntry) -> Vec<u8> {
    let mut fields = e.r#match.clone();
    fields.sort_by_key(|f| f.field_id);
    p4::TableEntry {
        table_id: e.table_id,
        r#match: fields,
        priority: e.priority,
        ..Default::default()
    }
    .encode_to_vec()
}

impl MemoryTarget {
    /// An empty switch running the program `p4info` describes.
    pub fn new(p4info: &P4Info) -> Result<Self, TargetError> {
        Ok(MemoryTarget {
            index: P4InfoIndex::new(p4info)?,
            tables: HashMap::new(),
            defaults: HashMap::new(),
            registers: HashMap::new(),
            counters: HashMap::new(),
            groups: BTreeMap::new(),
            sessions: BTreeMap::new(),
            applied: 0,
        })
    }

    /// Number of operations applied so far.
    pub fn applied_ops(&self) -> usize {
        self.applied
    }

    /// Adds to a counter cell, as the data plane would (for tests of what reads counters).
    pub fn count(
        &mut self,
        counter: &str,
        index: u64,
        packets: u64,
        bytes: u64,
    ) -> Result<(), TargetError> {
        let c = self.index.counter(counter)?;
        check_range(
            "counter",
            &c.name,
            &(index..index.saturating_add(1)),
            c.size,
        )?;
        let cell = self.counters.entry((c.id, index)).or_default();
        cell.packets += packets;
        cell.bytes += bytes;
        Ok(())
    }

    fn reject(op: &Op, code: Code, message: String) -> TargetError {
        TargetError::Rejected {
            target: "memory".to_string(),
            op: op.to_string(),
            code,
            message,
        }
    }

    fn apply_one(&mut self, op: &Op, update: p4::Update) -> Result<(), TargetError> {
        use p4::entity::Entity as E;
        use p4::packet_replication_engine_entry::Type as Pre;
        let entity = update.entity.and_then(|e| e.entity);
        match (op, entity) {
            (Op::SetDefault(_), Some(E::TableEntry(entry))) => {
                self.defaults.insert(entry.table_id, entry);
            }
            (Op::Insert(_) | Op::Modify(_) | Op::Delete(_), Some(E::TableEntry(entry))) => {
                let info = self.index.table_by_id(entry.table_id)?;
                let (name, size) = (info.name.clone(), info.size);
                let table = self.tables.entry(entry.table_id).or_default();
                let key = entry_key(&entry);
                match op {
                    Op::Insert(_) => {
                        if table.contains_key(&key) {
                            return Err(Self::reject(
                                op,
                                Code::AlreadyExists,
                                format!("an entry with this key is already in `{name}`"),
                            ));
                        }
                        if table.len() as u64 >= size {
                            return Err(Self::reject(
                                op,
                                Code::ResourceExhausted,
                                format!("table `{name}` is full ({size} entries)"),
                            ));
                        }
                        table.insert(key, entry);
                    }
                    Op::Modify(_) => match table.get_mut(&key) {
                        Some(old) => *old = entry,
                        None => {
                            return Err(Self::reject(
                                op,
                                Code::NotFound,
                                format!("no entry with this key in `{name}`"),
                            ))
                        }
                    },
                    _ => {
                        if table.remove(&key).is_none() {
                            return Err(Self::reject(
                                op,
                                Code::NotFound,
                                format!("no entry with this key in `{name}`"),
                            ));
                        }
                    }
                }
            }
            (
                Op::WriteRegister {
                    register,
                    index,
                    value,
                },
                Some(E::RegisterEntry(_)),
            ) => {
                let id = self.index.register(register)?.id;
                self.registers.insert((id, *index), *value);
            }
            (
                Op::SetMulticastGroup { group, replicas },
                Some(E::PacketReplicationEngineEntry(p)),
            ) if matches!(p.r#type, Some(Pre::MulticastGroupEntry(_))) => {
                let mut r = replicas.clone();
                r.sort();
                self.groups.insert(*group, r);
            }
            (
                Op::SetCloneSession { session, replicas },
                Some(E::PacketReplicationEngineEntry(p)),
            ) if matches!(p.r#type, Some(Pre::CloneSessionEntry(_))) => {
                let mut r = replicas.clone();
                r.sort();
                self.sessions.insert(*session, r);
            }
            (op, _) => unreachable!("convert::op_to_update made the wrong entity for {op}"),
        }
        self.applied += 1;
        Ok(())
    }
}

impl Target for MemoryTarget {
    fn index(&self) -> &P4InfoIndex {
        &self.index
    }

    fn apply(&mut self, ops: &[Op]) -> Result<(), TargetError> {
        let updates = ops
            .iter()
            .map(|op| op_to_update(&self.index, op, false))
            .collect::<Result<Vec<_>, _>>()?;
        for (i, (op, update)) in ops.iter().zip(updates).enumerate() {
            if let Err(e) = self.apply_one(op, update) {
                return Err(if ops.len() > 1 {
                    TargetError::Partial {
                        applied: i,
                        total: ops.len(),
                        source: Box::new(e),
                    }
                } else {
                    e
                });
            }
        }
        Ok(())
    }

    fn read_default(&mut self, table: &str) -> Result<Option<TableEntry>, TargetError> {
        let id = self.index.table(table)?.id;
        self.defaults
            .get(&id)
            .map(|e| table_entry_from_p4(&self.index, e))
            .transpose()
    }

    fn read_table(&mut self, table: &str) -> Result<Vec<TableEntry>, TargetError> {
        let id = self.index.table(table)?.id;
        self.tables
            .get(&id)
            .into_iter()
            .flat_map(|t| t.values())
            .map(|e| table_entry_from_p4(&self.index, e))
            .collect()
    }

    fn read_register_range(
        &mut self,
        register: &str,
        range: Range<u64>,
    ) -> Result<Vec<u128>, TargetError> {
        let r = self.index.register(register)?;
        check_range("register", &r.name, &range, r.size)?;
        Ok(range
            .map(|i| self.registers.get(&(r.id, i)).copied().unwrap_or(0))
            .collect())
    }

    fn read_counter_range(
        &mut self,
        counter: &str,
        range: Range<u64>,
    ) -> Result<Vec<CounterValue>, TargetError> {
        let c = self.index.counter(counter)?;
        check_range("counter", &c.name, &range, c.size)?;
        Ok(range
            .map(|i| self.counters.get(&(c.id, i)).copied().unwrap_or_default())
            .collect())
    }

    fn read_multicast_group(&mut self, group: u32) -> Result<Option<Vec<Replica>>, TargetError> {
        Ok(self.groups.get(&group).cloned())
    }

    fn read_clone_session(&mut self, session: u32) -> Result<Option<Vec<Replica>>, TargetError> {
        Ok(self.sessions.get(&session).cloned())
    }
}
