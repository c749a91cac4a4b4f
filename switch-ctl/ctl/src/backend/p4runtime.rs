//! [`P4RuntimeTarget`]: a real switch (bmv2's simple_switch_grpc, Tofino) over P4Runtime.
//!
//! The [`Target`] trait is synchronous, like the control plane that uses it; this backend owns a
//! small tokio runtime (one worker thread, which also keeps the StreamChannel alive) and blocks
//! on the async [`P4RuntimeClient`]. Do not use it from inside async code: use the client there.

use std::collections::{BTreeMap, HashSet};
use std::future::Future;
use std::ops::Range;

use super::convert::{
    check_range, op_to_update, register_value_from_p4, replicas_from_p4, table_entry_from_p4,
};
use super::{Code, CounterValue, Op, Replica, TableEntry, Target, TargetError};
use sgnn_p4rt::client::{ClientError, ClientOptions, P4RuntimeClient};
use sgnn_p4rt::p4info::P4InfoIndex;
use sgnn_p4rt::proto::p4::config::v1::P4Info;
use sgnn_p4rt::proto::p4::v1 as p4;
use sgnn_p4rt::schema::{arch_of, compare_p4info, switchgnn_p4info, switchgnn_p4info_for};

/// Reads of more cells than this fetch the whole register or counter (one wildcard entity)
/// and keep the range, rather than naming every cell.
const WILDCARD_READ_ABOVE: u64 = 64;

/// A switch programmed over P4Runtime, checked to run the expected P4Info.
pub struct P4RuntimeTarget {
    // Dropped before the runtime (fields drop in order).
    client: P4RuntimeClient,
    runtime: tokio::runtime::Runtime,
    index: P4InfoIndex,
    /// Multicast groups known to exist (so setting one is a MODIFY), or `None` until read.
    groups: Option<HashSet<u32>>,
    /// Clone sessions known to exist, or `None` until read.
    sessions: Option<HashSet<u32>>,
}

impl std::fmt::Debug for P4RuntimeTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("P4RuntimeTarget")
            .field("client", &self.client)
            .finish_non_exhaustive()
    }
}

/// `actual` is `expected` for the control plane, or every difference.
fn check(expected: &P4Info, actual: &P4Info) -> Result<(), TargetError> {
    let differences = compare_p4info(expected, actual);
    if differences.is_empty() {
        Ok(())
    } else {
        Err(TargetError::Mismatch { differences })
    }
}

impl P4RuntimeTarget {
    /// Connects (becoming primary), and checks the switch runs the pipeline `expected`
    /// describes: [`TargetError::NoPipeline`] if it runs none, [`TargetError::Mismatch`] listing
    /// every difference if it runs another.
    pub fn connect(
        addr: &str,
        device_id: u64,
        election_id: u128,
        expected: &P4Info,
    ) -> Result<Self, TargetError> {
        Self::connect_with(
            addr,
            device_id,
            election_id,
            ClientOptions::default(),
            expected,
        )
    }

    /// [`P4RuntimeTarget::connect`] with client options (timeouts, batch size, role).
    pub fn connect_with(
        addr: &str,
        device_id: u64,
        election_id: u128,
        options: ClientOptions,
        expected: &P4Info,
    ) -> Result<Self, TargetError> {
        let target = Self::open(addr, device_id, election_id, options, expected)?;
        target.verify(expected)?;
        Ok(target)
    }

    /// Connects to a switch running either SwitchGNN program and checks it against the contract
    /// for the architecture its P4Info reports ([`arch_of`]: the v1model program, or the TNA
    /// program a Tofino reports as `tna` or `t2na`).
    pub fn connect_switchgnn(
        addr: &str,
        device_id: u64,
        election_id: u128,
    ) -> Result<Self, TargetError> {
        Self::connect_switchgnn_with(addr, device_id, election_id, ClientOptions::default())
    }

    /// [`P4RuntimeTarget::connect_switchgnn`] with client options (TLS, timeouts, role).
    pub fn connect_switchgnn_with(
        addr: &str,
        device_id: u64,
        election_id: u128,
        options: ClientOptions,
    ) -> Result<Self, TargetError> {
        let mut target = Self::open(addr, device_id, election_id, options, &switchgnn_p4info())?;
        let actual = target.installed()?;
        let expected = switchgnn_p4info_for(arch_of(&actual));
        target.index = P4InfoIndex::new(&expected)?;
        check(&expected, &actual)?;
        Ok(target)
    }

    /// Connects (becoming primary), installs the pipeline (P4Info and the target binary, for
    /// bmv2 the JSON p4c wrote) with VERIFY_AND_COMMIT, and checks the switch then reports it.
    pub fn connect_and_install(
        addr: &str,
        device_id: u64,
        election_id: u128,
        options: ClientOptions,
        p4info: &P4Info,
        device_config: Vec<u8>,
    ) -> Result<Self, TargetError> {
        let target = Self::open(addr, device_id, election_id, options, p4info)?;
        target
            .runtime
            .block_on(target.client.set_pipeline(p4info, device_config))
            .map_err(|e| TargetError::from_client(e, 1))?;
        target.verify(p4info)?;
        Ok(target)
    }

    fn open(
        addr: &str,
        device_id: u64,
        election_id: u128,
        options: ClientOptions,
        p4info: &P4Info,
    ) -> Result<Self, TargetError> {
        let index = P4InfoIndex::new(p4info)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("sgnn-p4rt")
            .enable_all()
            .build()
            .map_err(|e| TargetError::Unreachable {
                addr: addr.to_string(),
                reason: format!("cannot start the I/O runtime: {e}"),
            })?;
        let client = runtime
            .block_on(P4RuntimeClient::connect_with(
                addr,
                device_id,
                election_id,
                options,
            ))
            .map_err(|e| TargetError::from_client(e, 1))?;
        Ok(P4RuntimeTarget {
            client,
            runtime,
            index,
            groups: None,
            sessions: None,
        })
    }

    /// The P4Info of the pipeline the switch runs.
    fn installed(&self) -> Result<P4Info, TargetError> {
        let installed = self
            .runtime
            .block_on(self.client.get_pipeline())
            .map_err(|e| TargetError::from_client(e, 1))?;
        let Some((actual, _cookie)) = installed else {
            return Err(TargetError::NoPipeline {
                addr: self.client.addr().to_string(),
            });
        };
        Ok(actual)
    }

    fn verify(&self, expected: &P4Info) -> Result<(), TargetError> {
        check(expected, &self.installed()?)
    }

    /// The P4Runtime client (for calls the trait does not cover).
    pub fn client(&self) -> &P4RuntimeClient {
        &self.client
    }

    /// The P4Runtime client, mutably (e.g. to change the batch size).
    pub fn client_mut(&mut self) -> &mut P4RuntimeClient {
        &mut self.client
    }

    /// Runs a future (e.g. a client call) on this target's runtime.
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        self.runtime.block_on(future)
    }

    fn read(&self, entities: Vec<p4::Entity>) -> Result<Vec<p4::Entity>, ClientError> {
        self.runtime.block_on(self.client.read(entities))
    }

    fn read_error(&self, what: String, e: ClientError) -> TargetError {
        match TargetError::from_client(e, 1) {
            TargetError::Rejected {
                target,
                code,
                message,
                ..
            } => TargetError::Rejected {
                target,
                op: format!("read of {what}"),
                code,
                message,
            },
            other => other,
        }
    }

    /// The ids of all multicast groups (`groups`) or clone sessions on the switch.
    fn read_pre_ids(&self, groups: bool) -> Result<HashSet<u32>, TargetError> {
        use p4::packet_replication_engine_entry::Type as Pre;
        let what = if groups {
            "multicast groups"
        } else {
            "clone sessions"
        };
        let entity = pre_entity(if groups {
            Pre::MulticastGroupEntry(Default::default())
        } else {
            Pre::CloneSessionEntry(Default::default())
        });
        let got = self
            .read(vec![entity])
            .map_err(|e| self.read_error(what.to_string(), e))?;
        Ok(got
            .into_iter()
            .filter_map(|e| match e.entity {
                Some(p4::entity::Entity::PacketReplicationEngineEntry(p)) => match p.r#type {
                    Some(Pre::MulticastGroupEntry(g)) if groups => Some(g.multicast_group_id),
                    Some(Pre::CloneSessionEntry(s)) if !groups => Some(s.session_id),
                    _ => None,
                },
                _ => None,
            })
            .collect())
    }

    fn read_pre(&self, groups: bool, id: u32) -> Result<Option<Vec<Replica>>, TargetError> {
        use p4::packet_replication_engine_entry::Type as Pre;
        let (what, entity) = if groups {
            (
                format!("multicast group {id}"),
                pre_entity(Pre::MulticastGroupEntry(p4::MulticastGroupEntry {
                    multicast_group_id: id,
                    ..Default::default()
                })),
            )
        } else {
            (
                format!("clone session {id}"),
                pre_entity(Pre::CloneSessionEntry(p4::CloneSessionEntry {
                    session_id: id,
                    ..Default::default()
                })),
            )
        };
        let got = match self.read(vec![entity]) {
            Ok(got) => got,
            // Servers answer NOT_FOUND for a group or session that does not exist.
            Err(e) if e.code() == Some(Code::NotFound) => return Ok(None),
            Err(e) => return Err(self.read_error(what, e)),
        };
        for e in got {
            if let Some(p4::entity::Entity::PacketReplicationEngineEntry(p)) = e.entity {
                match p.r#type {
                    Some(Pre::MulticastGroupEntry(g)) if groups && g.multicast_group_id == id => {
                        return replicas_from_p4(&g.replicas).map(Some)
                    }
                    Some(Pre::CloneSessionEntry(s)) if !groups && s.session_id == id => {
                        return replicas_from_p4(&s.replicas).map(Some)
                    }
                    _ => {}
                }
            }
        }
        Ok(None)
    }

    /// Reads cells `range` of a register (`register` true) or counter, by index.
    fn read_cells(
        &self,
        register: bool,
        id: u32,
        name: &str,
        range: &Range<u64>,
        size: u64,
    ) -> Result<BTreeMap<u64, p4::Entity>, TargetError> {
        let kind = if register { "register" } else { "counter" };
        let entity = |index: Option<u64>| {
            let index = index.map(|i| p4::Index { index: i as i64 });
            p4::Entity {
                entity: Some(if register {
                    p4::entity::Entity::RegisterEntry(p4::RegisterEntry {
                        register_id: id,
                        index,
                        data: None,
                    })
                } else {
                    p4::entity::Entity::CounterEntry(p4::CounterEntry {
                        counter_id: id,
                        index,
                        data: None,
                    })
                }),
            }
        };
        let n = range.end - range.start;
        let entities = if n > WILDCARD_READ_ABOVE || n == size {
            vec![entity(None)]
        } else {
            range.clone().map(|i| entity(Some(i))).collect()
        };
        let what = format!("{kind} `{name}`[{}..{}]", range.start, range.end);
        let got = self
            .read(entities)
            .map_err(|e| self.read_error(what.clone(), e))?;
        let mut cells = BTreeMap::new();
        for e in got {
            let (eid, index) = match &e.entity {
                Some(p4::entity::Entity::RegisterEntry(r)) if register => {
                    (r.register_id, r.index.map(|i| i.index))
                }
                Some(p4::entity::Entity::CounterEntry(c)) if !register => {
                    (c.counter_id, c.index.map(|i| i.index))
                }
                _ => continue,
            };
            if let Some(i) = index.filter(|&i| eid == id && i >= 0) {
                if range.contains(&(i as u64)) {
                    cells.insert(i as u64, e);
                }
            }
        }
        if let Some(missing) = range.clone().find(|i| !cells.contains_key(i)) {
            return Err(TargetError::Rejected {
                target: self.client.addr().to_string(),
                op: format!("read of {what}"),
                code: Code::Internal,
                message: format!("the switch returned no value for cell {missing}"),
            });
        }
        Ok(cells)
    }
}

fn pre_entity(t: p4::packet_replication_engine_entry::Type) -> p4::Entity {
    p4::Entity {
        entity: Some(p4::entity::Entity::PacketReplicationEngineEntry(
            p4::PacketReplicationEngineEntry { r#type: Some(t) },
        )),
    }
}

impl Target for P4RuntimeTarget {
    fn index(&self) -> &P4InfoIndex {
        &self.index
    }

    fn apply(&mut self, ops: &[Op]) -> Result<(), TargetError> {
        // Setting a group or session is an INSERT if it is new, a MODIFY if it exists: learn
        // which exist before converting (once; then kept up to date as writes succeed).
        let sets_groups = ops
            .iter()
            .any(|o| matches!(o, Op::SetMulticastGroup { .. }));
        let sets_sessions = ops.iter().any(|o| matches!(o, Op::SetCloneSession { .. }));
        if sets_groups && self.groups.is_none() {
            self.groups = Some(self.read_pre_ids(true)?);
        }
        if sets_sessions && self.sessions.is_none() {
            self.sessions = Some(self.read_pre_ids(false)?);
        }
        let mut groups = self.groups.clone().unwrap_or_default();
        let mut sessions = self.sessions.clone().unwrap_or_default();
        let mut updates = Vec::with_capacity(ops.len());
        for op in ops {
            let exists = match op {
                Op::SetMulticastGroup { group, .. } => !groups.insert(*group),
                Op::SetCloneSession { session, .. } => !sessions.insert(*session),
                _ => false,
            };
            updates.push(op_to_update(&self.index, op, exists)?);
        }
        match self.runtime.block_on(self.client.write(updates)) {
            Ok(_) => {
                if sets_groups {
                    self.groups = Some(groups);
                }
                if sets_sessions {
                    self.sessions = Some(sessions);
                }
                Ok(())
            }
            Err(e) => {
                // Which groups and sessions now exist is uncertain: read them again next time.
                if sets_groups {
                    self.groups = None;
                }
                if sets_sessions {
                    self.sessions = None;
                }
                Err(TargetError::from_client(e, ops.len()))
            }
        }
    }

    fn read_default(&mut self, table: &str) -> Result<Option<TableEntry>, TargetError> {
        let info = self.index.table(table)?;
        let entity = p4::Entity {
            entity: Some(p4::entity::Entity::TableEntry(p4::TableEntry {
                table_id: info.id,
                is_default_action: true,
                ..Default::default()
            })),
        };
        let what = format!("the default entry of table `{}`", info.name);
        let got = self
            .read(vec![entity])
            .map_err(|e| self.read_error(what.clone(), e))?;
        got.into_iter()
            .find_map(|e| match e.entity {
                Some(p4::entity::Entity::TableEntry(t)) if t.is_default_action => Some(t),
                _ => None,
            })
            .map(|t| table_entry_from_p4(&self.index, &t))
            .transpose()
    }

    fn read_table(&mut self, table: &str) -> Result<Vec<TableEntry>, TargetError> {
        let info = self.index.table(table)?;
        let entity = p4::Entity {
            entity: Some(p4::entity::Entity::TableEntry(p4::TableEntry {
                table_id: info.id,
                ..Default::default()
            })),
        };
        let what = format!("table `{}`", info.name);
        let got = self
            .read(vec![entity])
            .map_err(|e| self.read_error(what.clone(), e))?;
        got.into_iter()
            .filter_map(|e| match e.entity {
                Some(p4::entity::Entity::TableEntry(t)) if !t.is_default_action => Some(t),
                _ => None,
            })
            .map(|t| table_entry_from_p4(&self.index, &t))
            .collect()
    }

    fn read_register_range(
        &mut self,
        register: &str,
        range: Range<u64>,
    ) -> Result<Vec<u128>, TargetError> {
        let r = self.index.register(register)?;
        check_range("register", &r.name, &range, r.size)?;
        let cells = self.read_cells(true, r.id, &r.name, &range, r.size)?;
        cells
            .values()
            .map(|e| match &e.entity {
                Some(p4::entity::Entity::RegisterEntry(x)) => {
                    register_value_from_p4(r, x.data.as_ref())
                }
                _ => unreachable!("read_cells keeps register entries only"),
            })
            .collect()
    }

    fn read_counter_range(
        &mut self,
        counter: &str,
        range: Range<u64>,
    ) -> Result<Vec<CounterValue>, TargetError> {
        let c = self.index.counter(counter)?;
        check_range("counter", &c.name, &range, c.size)?;
        let cells = self.read_cells(false, c.id, &c.name, &range, c.size)?;
        Ok(cells
            .values()
            .map(|e| match &e.entity {
                Some(p4::entity::Entity::CounterEntry(x)) => {
                    let d = x.data.unwrap_or_default();
                    CounterValue {
                        packets: d.packet_count.max(0) as u64,
                        bytes: d.byte_count.max(0) as u64,
                    }
                }
                _ => unreachable!("read_cells keeps counter entries only"),
            })
            .collect())
    }

    fn read_multicast_group(&mut self, group: u32) -> Result<Option<Vec<Replica>>, TargetError> {
        self.read_pre(true, group)
    }

    fn read_clone_session(&mut self, session: u32) -> Result<Option<Vec<Replica>>, TargetError> {
        self.read_pre(false, session)
    }
}
