//! The [`Target`] trait: what SwitchGNN's control plane does to a switch, by name, whatever the
//! switch is; and its backends.
//!
//! - [`P4RuntimeTarget`]: a real switch (bmv2's simple_switch_grpc, Tofino) over P4Runtime.
//! - [`BfrtTarget`]: a Tofino over BfRuntime gRPC (the SDE's bf_switchd without P4Runtime).
//! - [`MemoryTarget`]: an in-memory switch state, for tests and as the reference behaviour.
//! - [`ChaosTarget`]: wraps any target and injects faults (failed writes, delays, a dropped
//!   connection), for testing what the control plane does when the switch misbehaves.
//!
//! Operations name tables, fields, actions, params, registers and counters as the P4 program
//! does; [`convert`] turns them into P4Runtime ids and canonical binary strings through a
//! [`P4InfoIndex`], in one place, so every backend validates the same way. Every failure is a
//! [`TargetError`] whose variant says who has to act.

use std::fmt;
use std::ops::Range;

use sgnn_p4rt::client::ClientError;
use sgnn_p4rt::p4info::{P4InfoError, P4InfoIndex};

pub mod bfrt;
pub mod chaos;
pub mod convert;
pub mod memory;
pub mod p4runtime;

pub use bfrt::BfrtTarget;
pub use chaos::{ChaosConfig, ChaosTarget};
pub use memory::MemoryTarget;
pub use p4runtime::P4RuntimeTarget;
pub use tonic::Code;

/// How one key field of a table entry matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Match {
    /// The field equals the value (`exact` fields).
    Exact(u128),
    /// The first `prefix_len` bits equal the value's (`lpm` fields).
    Lpm {
        /// The value; bits after the prefix must be 0.
        value: u128,
        /// Prefix length in bits.
        prefix_len: u32,
    },
    /// The masked bits equal the value's (`ternary` fields).
    Ternary {
        /// The value; bits outside the mask must be 0.
        value: u128,
        /// The mask.
        mask: u128,
    },
    /// The field is in `low..=high` (`range` fields).
    Range {
        /// Lowest value matched.
        low: u128,
        /// Highest value matched.
        high: u128,
    },
    /// The field equals the value (`optional` fields; leave the field out for a wildcard).
    Optional(u128),
}

/// A table entry, by name: the neutral form every backend takes.
///
/// Key fields left out are wildcards (allowed for ternary, lpm, range and optional fields).
/// Entries read back list fields and params in P4Info order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableEntry {
    /// Table name.
    pub table: String,
    /// Key field name and match.
    pub matches: Vec<(String, Match)>,
    /// Action name (ignored, and may be empty, when deleting).
    pub action: String,
    /// Action parameter name and value.
    pub params: Vec<(String, u128)>,
    /// Priority among overlapping entries (higher wins); 0 for tables with only exact and lpm
    /// fields, above 0 otherwise.
    pub priority: i32,
}

impl TableEntry {
    /// An entry of `table` calling `action`, with no key fields and no params yet.
    pub fn new(table: &str, action: &str) -> Self {
        TableEntry {
            table: table.to_string(),
            matches: Vec::new(),
            action: action.to_string(),
            params: Vec::new(),
            priority: 0,
        }
    }

    /// Adds an exact key field.
    pub fn exact(self, field: &str, value: u128) -> Self {
        self.with_match(field, Match::Exact(value))
    }

    /// Adds a key field.
    pub fn with_match(mut self, field: &str, m: Match) -> Self {
        self.matches.push((field.to_string(), m));
        self
    }

    /// Adds an action parameter.
    pub fn param(mut self, name: &str, value: u128) -> Self {
        self.params.push((name.to_string(), value));
        self
    }

    /// Sets the priority.
    pub fn priority(mut self, priority: i32) -> Self {
        self.priority = priority;
        self
    }
}

/// One copy made by the packet replication engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Replica {
    /// Egress port.
    pub port: u32,
    /// Instance (v1model: `egress_rid`), to tell copies to the same port apart.
    pub instance: u32,
}

/// The counts of one counter cell.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CounterValue {
    /// Packets counted.
    pub packets: u64,
    /// Bytes counted.
    pub bytes: u64,
}

/// One write operation; [`Target::apply`] takes a batch of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// Add a table entry; fails if an entry with the same key exists.
    Insert(TableEntry),
    /// Change the action of an existing entry.
    Modify(TableEntry),
    /// Remove an entry (only the key counts).
    Delete(TableEntry),
    /// Set the default action of a table (the entry's key must be empty): how a keyless
    /// table such as `switch_config` is programmed.
    SetDefault(TableEntry),
    /// Set one register cell.
    WriteRegister {
        /// Register name.
        register: String,
        /// Cell index.
        index: u64,
        /// Value (for `int<W>` registers, the W-bit two's complement pattern).
        value: u128,
    },
    /// Create or replace a multicast group.
    SetMulticastGroup {
        /// Group id (not 0).
        group: u32,
        /// The copies.
        replicas: Vec<Replica>,
    },
    /// Create or replace a clone session.
    SetCloneSession {
        /// Session id.
        session: u32,
        /// The copies.
        replicas: Vec<Replica>,
    },
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Op::Insert(e) => write!(f, "insert into `{}`", e.table),
            Op::Modify(e) => write!(f, "modify in `{}`", e.table),
            Op::Delete(e) => write!(f, "delete from `{}`", e.table),
            Op::SetDefault(e) => write!(f, "set the default action of `{}`", e.table),
            Op::WriteRegister {
                register, index, ..
            } => write!(f, "write `{register}`[{index}]"),
            Op::SetMulticastGroup { group, .. } => write!(f, "set multicast group {group}"),
            Op::SetCloneSession { session, .. } => write!(f, "set clone session {session}"),
        }
    }
}

/// What went wrong, by who has to act.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// The switch cannot be reached (not running, wrong address, connection lost): the operator.
    #[error("cannot reach the switch at {addr}: {reason}; check that the switch is running and listening there")]
    Unreachable {
        /// The switch's address.
        addr: String,
        /// What failed.
        reason: String,
    },
    /// The switch said no: its message tells why (entry exists, table full, unsupported, ...).
    #[error("the switch at {target} rejected {op}: {code:?}: {message}")]
    Rejected {
        /// The switch (address, or "memory", "chaos").
        target: String,
        /// What was asked.
        op: String,
        /// The canonical gRPC code.
        code: Code,
        /// The switch's message, with per-update details when there were some.
        message: String,
    },
    /// The switch runs another P4 program than the control plane expects: rebuild one or the
    /// other. Lists every difference.
    #[error("the switch's P4Info differs from the expected one:\n  {}", .differences.join("\n  "))]
    Mismatch {
        /// One sentence per difference.
        differences: Vec<String>,
    },
    /// The switch has no P4 program installed: install one first.
    #[error("the switch at {addr} has no P4 pipeline installed; install one (P4RuntimeTarget::connect_and_install) first")]
    NoPipeline {
        /// The switch's address.
        addr: String,
    },
    /// Another controller is primary: stop it or use a higher election id.
    #[error("not the primary controller of the switch at {addr}: {message}")]
    NotPrimary {
        /// The switch's address.
        addr: String,
        /// The switch's arbitration answer.
        message: String,
    },
    /// The caller asked for something the P4Info does not allow (unknown name, value too wide,
    /// index out of range, ...): nothing was sent.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A batch failed part way: `applied` of `total` operations took effect, the rest did not
    /// (or is unknown, see `source`). Nothing is half-installed without this error saying so.
    #[error("{applied} of {total} operations were applied, then: {source}")]
    Partial {
        /// Operations known to be applied.
        applied: usize,
        /// Operations in the batch.
        total: usize,
        /// Why the batch stopped.
        source: Box<TargetError>,
    },
}

impl From<P4InfoError> for TargetError {
    fn from(e: P4InfoError) -> Self {
        TargetError::InvalidArgument(e.to_string())
    }
}

impl TargetError {
    /// The error without its `Partial` wrapper (what actually failed).
    pub fn root(&self) -> &TargetError {
        match self {
            TargetError::Partial { source, .. } => source.root(),
            e => e,
        }
    }

    /// Maps a client error, for a batch of `total` operations, to the target's terms.
    pub fn from_client(e: ClientError, total: usize) -> TargetError {
        match e {
            ClientError::BadAddress { addr, reason } => {
                TargetError::InvalidArgument(format!("bad switch address `{addr}`: {reason}"))
            }
            ClientError::Unreachable { addr, reason } => TargetError::Unreachable { addr, reason },
            ClientError::NotPrimary {
                addr,
                election_id,
                primary_election_id,
                message,
                ..
            } => TargetError::NotPrimary {
                addr,
                message: format!(
                    "our election id {election_id}, highest seen {primary_election_id}: {message}"
                ),
            },
            ClientError::Arbitration {
                addr,
                device_id,
                code,
                message,
            } => TargetError::Rejected {
                target: addr,
                op: format!("arbitration for device {device_id}"),
                code,
                message,
            },
            ClientError::Rpc {
                rpc,
                addr,
                code,
                message,
            } => TargetError::Rejected {
                target: addr,
                op: rpc.to_string(),
                code,
                message,
            },
            ClientError::Write(w) => {
                let applied = w.applied();
                // Servers (PI/bmv2) answer a failed batch with a generic code (UNKNOWN) and put
                // the real one per update: report the first failed update's code.
                let code = w.failures.first().map_or(w.code, |f| f.code);
                // The first failed update says why; the others usually repeat it for other
                // keys (and servers' own summaries repeat the first), so they are only counted.
                let text = match w.failures.first() {
                    None => w.message.clone(),
                    Some(first) if w.failures.len() == 1 => first.to_string(),
                    Some(first) => format!(
                        "{first}; and {} more failed updates in this batch",
                        w.failures.len() - 1
                    ),
                };
                let source = if w.code == Code::Unavailable {
                    TargetError::Unreachable {
                        addr: w.addr.clone(),
                        reason: text,
                    }
                } else {
                    TargetError::Rejected {
                        target: w.addr.clone(),
                        op: format!("write batch {} of {}", w.batch + 1, w.batches),
                        code,
                        message: text,
                    }
                };
                if total > 1 {
                    TargetError::Partial {
                        applied,
                        total,
                        source: Box::new(source),
                    }
                } else {
                    source
                }
            }
        }
    }
}

/// What the control plane does to a switch. Backends: [`P4RuntimeTarget`], [`MemoryTarget`],
/// [`ChaosTarget`].
///
/// Writes go through [`Target::apply`]; the single-operation methods are batches of one.
/// Arguments are checked against the P4Info before anything reaches the switch.
pub trait Target {
    /// The P4Info of the pipeline the switch runs.
    fn index(&self) -> &P4InfoIndex;

    /// Applies the operations in order. All are validated first (an invalid one fails the batch
    /// with [`TargetError::InvalidArgument`] before anything is applied); if the switch then
    /// rejects one, a batch of more than one operation fails with [`TargetError::Partial`].
    fn apply(&mut self, ops: &[Op]) -> Result<(), TargetError>;

    /// Every entry of a table (not its default entry).
    fn read_table(&mut self, table: &str) -> Result<Vec<TableEntry>, TargetError>;

    /// The default entry of a table, if the switch reports one (key empty).
    fn read_default(&mut self, table: &str) -> Result<Option<TableEntry>, TargetError>;

    /// Register cells `range`, in index order.
    fn read_register_range(
        &mut self,
        register: &str,
        range: Range<u64>,
    ) -> Result<Vec<u128>, TargetError>;

    /// Counter cells `range`, in index order.
    fn read_counter_range(
        &mut self,
        counter: &str,
        range: Range<u64>,
    ) -> Result<Vec<CounterValue>, TargetError>;

    /// The replicas of a multicast group, or `None` if it does not exist.
    fn read_multicast_group(&mut self, group: u32) -> Result<Option<Vec<Replica>>, TargetError>;

    /// The replicas of a clone session, or `None` if it does not exist.
    fn read_clone_session(&mut self, session: u32) -> Result<Option<Vec<Replica>>, TargetError>;

    /// Inserts one table entry.
    fn insert_table_entry(&mut self, entry: TableEntry) -> Result<(), TargetError> {
        self.apply(&[Op::Insert(entry)])
    }

    /// Modifies one table entry.
    fn modify_table_entry(&mut self, entry: TableEntry) -> Result<(), TargetError> {
        self.apply(&[Op::Modify(entry)])
    }

    /// Deletes one table entry.
    fn delete_table_entry(&mut self, entry: TableEntry) -> Result<(), TargetError> {
        self.apply(&[Op::Delete(entry)])
    }

    /// Deletes every entry of a table; returns how many there were.
    fn clear_table(&mut self, table: &str) -> Result<usize, TargetError> {
        let ops: Vec<Op> = self
            .read_table(table)?
            .into_iter()
            .map(Op::Delete)
            .collect();
        self.apply(&ops)?;
        Ok(ops.len())
    }

    /// Sets one register cell.
    fn write_register(
        &mut self,
        register: &str,
        index: u64,
        value: u128,
    ) -> Result<(), TargetError> {
        self.apply(&[Op::WriteRegister {
            register: register.to_string(),
            index,
            value,
        }])
    }

    /// Sets register cells `start..start + values.len()`.
    fn write_register_range(
        &mut self,
        register: &str,
        start: u64,
        values: &[u128],
    ) -> Result<(), TargetError> {
        let ops: Vec<Op> = values
            .iter()
            .enumerate()
            .map(|(i, &value)| Op::WriteRegister {
                register: register.to_string(),
                index: start.saturating_add(i as u64),
                value,
            })
            .collect();
        self.apply(&ops)
    }

    /// One register cell.
    fn read_register(&mut self, register: &str, index: u64) -> Result<u128, TargetError> {
        Ok(self.read_register_range(register, index..index.saturating_add(1))?[0])
    }

    /// One counter cell.
    fn read_counter(&mut self, counter: &str, index: u64) -> Result<CounterValue, TargetError> {
        Ok(self.read_counter_range(counter, index..index.saturating_add(1))?[0])
    }

    /// Every cell of a counter.
    fn read_counters(&mut self, counter: &str) -> Result<Vec<CounterValue>, TargetError> {
        let size = self.index().counter(counter)?.size;
        self.read_counter_range(counter, 0..size)
    }

    /// Creates or replaces a multicast group.
    fn set_multicast_group(&mut self, group: u32, replicas: &[Replica]) -> Result<(), TargetError> {
        self.apply(&[Op::SetMulticastGroup {
            group,
            replicas: replicas.to_vec(),
        }])
    }

    /// Creates or replaces a clone session.
    fn set_clone_session(&mut self, session: u32, replicas: &[Replica]) -> Result<(), TargetError> {
        self.apply(&[Op::SetCloneSession {
            session,
            replicas: replicas.to_vec(),
        }])
    }
}
