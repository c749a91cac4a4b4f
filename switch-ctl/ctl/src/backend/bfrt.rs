//! [`BfrtTarget`]: a Tofino programmed over BfRuntime gRPC (the SDE's `bf_switchd`, port
//! 50052), for switches that run the SDE without P4Runtime.
//!
//! The control plane names objects as the P4 program's P4Info does (`agg_table`, `aggregate`);
//! this backend validates every operation against the contract's P4Info in the same place as
//! the other backends ([`super::convert`]), then translates names to the ids of the switch's
//! BfRt schema (its `bf-rt.json`, fetched from the switch) and writes table entries, register
//! cells, the packet replication engine's `$pre.mgid`/`$pre.node` and the `$mirror.cfg` table.
//!
//! Register and counter reads return one value per pipe: counters are summed over the pipes
//! (a packet is counted in the pipe it passes); a register cell reports the one pipe whose
//! value is not 0 (the pipe of the workers' ports), or 0.

use std::ops::Range;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::Channel;

use super::convert::{check_plain_cells, check_range, op_to_update};
use super::{Code, CounterValue, Match, Op, Replica, TableEntry, Target, TargetError};
use sgnn_p4rt::bfrt::{decode, encode, BfrtError, BfrtInfo, Field, FieldType, Table};
use sgnn_p4rt::p4info::P4InfoIndex;
use sgnn_p4rt::proto::bfrt_proto as bf;
use sgnn_p4rt::proto::bfrt_proto::bf_runtime_client::BfRuntimeClient;
use sgnn_p4rt::proto::p4::config::v1::P4Info;

/// How long connecting and each call may take.
const TIMEOUT: Duration = Duration::from_secs(10);
/// Updates per WriteRequest.
const BATCH: usize = 1000;
/// `TargetDevice` wildcards: every pipe, both gresses, every parser.
const ALL_PIPES: u32 = 0xffff;
const ALL_GRESSES: u32 = 0xff;
const ALL_PARSERS: u32 = 0xff;

/// A Tofino programmed over BfRuntime, checked to run the expected program.
pub struct BfrtTarget {
    // Dropped before the runtime.
    client: BfRuntimeClient<Channel>,
    _stream: mpsc::Sender<bf::StreamMessageRequest>,
    runtime: tokio::runtime::Runtime,
    addr: String,
    device_id: u32,
    client_id: u32,
    p4_name: String,
    info: BfrtInfo,
    index: P4InfoIndex,
}

impl std::fmt::Debug for BfrtTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BfrtTarget")
            .field("addr", &self.addr)
            .field("p4_name", &self.p4_name)
            .finish_non_exhaustive()
    }
}

fn schema_error(e: BfrtError) -> TargetError {
    TargetError::InvalidArgument(e.to_string())
}

impl BfrtTarget {
    /// Connects to `addr` (`host:port`, or `bfrt://host:port`) as client `client_id`,
    /// subscribes, binds to the program the switch runs, and checks that program has every
    /// object `expected` (the contract, [`sgnn_p4rt::schema::switchgnn_p4info_for`]) names with the
    /// same widths: [`TargetError::Mismatch`] lists every difference. Sizes are the switch's.
    pub fn connect(
        addr: &str,
        device_id: u32,
        client_id: u32,
        expected: &P4Info,
    ) -> Result<Self, TargetError> {
        let addr = addr.strip_prefix("bfrt://").unwrap_or(addr).to_string();
        let unreachable = |reason: String| TargetError::Unreachable {
            addr: addr.clone(),
            reason,
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("sgnn-bfrt")
            .enable_all()
            .build()
            .map_err(|e| unreachable(format!("cannot start the I/O runtime: {e}")))?;
        let endpoint = Channel::from_shared(format!("http://{addr}"))
            .map_err(|e| TargetError::InvalidArgument(format!("bad switch address `{addr}`: {e}")))?
            .connect_timeout(TIMEOUT)
            .timeout(TIMEOUT);
        let channel = runtime
            .block_on(endpoint.connect())
            .map_err(|e| unreachable(format!("{e}")))?;
        let mut client = BfRuntimeClient::new(channel);

        // Subscribe: the switch answers with the subscription and its status.
        let (tx, rx) = mpsc::channel(8);
        let subscribe = bf::StreamMessageRequest {
            client_id,
            update: Some(bf::stream_message_request::Update::Subscribe(
                bf::Subscribe {
                    device_id,
                    notifications: Some(Default::default()),
                    status: None,
                },
            )),
        };
        let answer = runtime.block_on(async {
            tx.send(subscribe)
                .await
                .map_err(|_| "the stream closed".to_string())?;
            let mut stream = client
                .stream_channel(ReceiverStream::new(rx))
                .await
                .map_err(|s| format!("{:?}: {}", s.code(), s.message()))?
                .into_inner();
            match tokio::time::timeout(TIMEOUT, stream.message()).await {
                Err(_) => Err("no answer to the subscription".to_string()),
                Ok(Err(s)) => Err(format!("{:?}: {}", s.code(), s.message())),
                Ok(Ok(None)) => Err("the switch closed the stream".to_string()),
                Ok(Ok(Some(m))) => {
                    // Keep reading (notifications) so the stream stays open.
                    tokio::spawn(async move { while let Ok(Some(_)) = stream.message().await {} });
                    Ok(m)
                }
            }
        });
        let answer = answer.map_err(|m| TargetError::Rejected {
            target: addr.clone(),
            op: format!("subscription of client {client_id} to device {device_id}"),
            code: Code::Unavailable,
            message: m,
        })?;
        if let Some(bf::stream_message_response::Update::Subscribe(s)) = answer.update {
            if let Some(st) = s.status.filter(|st| st.code != 0) {
                return Err(TargetError::Rejected {
                    target: addr.clone(),
                    op: format!("subscription of client {client_id}"),
                    code: Code::from_i32(st.code),
                    message: st.message,
                });
            }
        }

        // The program the switch runs, and its schema.
        let cfg = runtime
            .block_on(client.get_forwarding_pipeline_config(
                bf::GetForwardingPipelineConfigRequest {
                    device_id,
                    client_id,
                },
            ))
            .map_err(|s| rejected(&addr, "GetForwardingPipelineConfig", s))?
            .into_inner();
        let Some(program) = cfg.config.first() else {
            return Err(TargetError::NoPipeline { addr });
        };
        let p4_name = program.p4_name.clone();
        let mut info =
            BfrtInfo::parse(&program.bfruntime_info).map_err(|e| TargetError::Mismatch {
                differences: vec![format!("the switch's bf-rt.json for `{p4_name}`: {e}")],
            })?;
        if let Some(fixed) = cfg.non_p4_config.filter(|n| !n.bfruntime_info.is_empty()) {
            let fixed =
                BfrtInfo::parse(&fixed.bfruntime_info).map_err(|e| TargetError::Mismatch {
                    differences: vec![format!("the switch's fixed-table schema: {e}")],
                })?;
            info = info.merged(fixed);
        }
        runtime
            .block_on(client.set_forwarding_pipeline_config(
                bf::SetForwardingPipelineConfigRequest {
                    device_id,
                    client_id,
                    action: bf::set_forwarding_pipeline_config_request::Action::Bind as i32,
                    base_path: String::new(),
                    config: vec![bf::ForwardingPipelineConfig {
                        p4_name: p4_name.clone(),
                        ..Default::default()
                    }],
                },
            ))
            .map_err(|s| rejected(&addr, "SetForwardingPipelineConfig (BIND)", s))?;

        let differences = sgnn_p4rt::bfrt::compare_schema(expected, &info);
        if !differences.is_empty() {
            return Err(TargetError::Mismatch { differences });
        }
        let index = P4InfoIndex::new(&with_sizes(expected, &info))?;
        Ok(BfrtTarget {
            client,
            _stream: tx,
            runtime,
            addr,
            device_id,
            client_id,
            p4_name,
            info,
            index,
        })
    }

    /// The switch's BfRt schema (program and fixed tables).
    pub fn schema(&self) -> &BfrtInfo {
        &self.info
    }

    /// The program the switch runs.
    pub fn p4_name(&self) -> &str {
        &self.p4_name
    }

    fn device(&self) -> Option<bf::TargetDevice> {
        Some(bf::TargetDevice {
            device_id: self.device_id,
            pipe_id: ALL_PIPES,
            direction: ALL_GRESSES,
            prsr_id: ALL_PARSERS,
        })
    }

    fn table(&self, name: &str) -> Result<&Table, TargetError> {
        self.info.table(name).map_err(schema_error)
    }

    fn write(&mut self, updates: Vec<bf::Update>, ops: usize) -> Result<(), TargetError> {
        let batches = updates.len().div_ceil(BATCH).max(1);
        let mut done = 0;
        let mut it = updates.into_iter().peekable();
        for b in 0..batches {
            let chunk: Vec<bf::Update> = it.by_ref().take(BATCH).collect();
            let n = chunk.len();
            let req = bf::WriteRequest {
                target: self.device(),
                client_id: self.client_id,
                updates: chunk,
                atomicity: bf::write_request::Atomicity::ContinueOnError as i32,
                p4_name: self.p4_name.clone(),
            };
            let mut client = self.client.clone();
            if let Err(s) = self.runtime.block_on(client.write(req)) {
                let e = TargetError::Rejected {
                    target: self.addr.clone(),
                    op: format!("write batch {} of {batches}", b + 1),
                    code: s.code(),
                    message: s.message().to_string(),
                };
                return Err(if ops > 1 {
                    TargetError::Partial {
                        applied: done.min(ops),
                        total: ops,
                        source: Box::new(e),
                    }
                } else {
                    e
                });
            }
            done += n;
        }
        Ok(())
    }

    fn read(&self, entities: Vec<bf::TableEntry>) -> Result<Vec<bf::TableEntry>, tonic::Status> {
        let req = bf::ReadRequest {
            target: self.device(),
            client_id: self.client_id,
            entities: entities
                .into_iter()
                .map(|t| bf::Entity {
                    entity: Some(bf::entity::Entity::TableEntry(t)),
                })
                .collect(),
            p4_name: self.p4_name.clone(),
        };
        let mut client = self.client.clone();
        self.runtime.block_on(async move {
            let mut stream = client.read(req).await?.into_inner();
            let mut out = Vec::new();
            while let Some(r) = stream.message().await? {
                for e in r.entities {
                    if let Some(bf::entity::Entity::TableEntry(t)) = e.entity {
                        out.push(t);
                    }
                }
            }
            Ok(out)
        })
    }

    fn read_or(
        &self,
        entities: Vec<bf::TableEntry>,
        what: &str,
    ) -> Result<Vec<bf::TableEntry>, TargetError> {
        self.read(entities)
            .map_err(|s| rejected(&self.addr, &format!("read of {what}"), s))
    }

    /// Reads the one entry `entity` names: `None` when the switch has none (BfRt answers
    /// `NOT_FOUND` for a key with no entry, or may answer nothing).
    fn read_one(
        &self,
        entity: bf::TableEntry,
        what: &str,
    ) -> Result<Option<bf::TableEntry>, TargetError> {
        match self.read(vec![entity]) {
            Ok(got) => Ok(got.into_iter().next()),
            Err(s) if s.code() == Code::NotFound => Ok(None),
            Err(s) => Err(rejected(&self.addr, &format!("read of {what}"), s)),
        }
    }

    /// The contract's register or counter `name` as its BfRt table, with the index key field.
    fn cells_table(&self, name: &str, register: bool) -> Result<(&Table, &Field), TargetError> {
        let t = self.table(name)?;
        let key = t
            .key(if register {
                "$REGISTER_INDEX"
            } else {
                "$COUNTER_INDEX"
            })
            .map_err(schema_error)?;
        Ok((t, key))
    }

    fn read_cells(
        &self,
        name: &str,
        register: bool,
        range: &Range<u64>,
    ) -> Result<Vec<bf::TableEntry>, TargetError> {
        let (t, key) = self.cells_table(name, register)?;
        let entries: Vec<bf::TableEntry> = range
            .clone()
            .map(|i| {
                Ok(bf::TableEntry {
                    table_id: t.id,
                    value: Some(bf::table_entry::Value::Key(bf::TableKey {
                        fields: vec![exact(key, i as u128)?],
                    })),
                    table_flags: Some(bf::TableFlags {
                        from_hw: true,
                        key_only: false,
                    }),
                    ..Default::default()
                })
            })
            .collect::<Result<_, TargetError>>()?;
        let what = format!("`{name}`[{}..{}]", range.start, range.end);
        let got = self.read_or(entries, &what)?;
        if got.len() != (range.end - range.start) as usize {
            return Err(TargetError::Rejected {
                target: self.addr.clone(),
                op: format!("read of {what}"),
                code: Code::Internal,
                message: format!(
                    "the switch returned {} cells for {} asked",
                    got.len(),
                    range.end - range.start
                ),
            });
        }
        Ok(got)
    }
}

fn rejected(addr: &str, op: &str, s: tonic::Status) -> TargetError {
    if s.code() == Code::Unavailable {
        return TargetError::Unreachable {
            addr: addr.to_string(),
            reason: s.message().to_string(),
        };
    }
    TargetError::Rejected {
        target: addr.to_string(),
        op: op.to_string(),
        code: s.code(),
        message: s.message().to_string(),
    }
}

/// An exact key field of value `v`.
fn exact(f: &Field, v: u128) -> Result<bf::KeyField, TargetError> {
    let bytes = encode(v, f.ty.width()).ok_or_else(|| {
        TargetError::InvalidArgument(format!(
            "{v} does not fit key field `{}` ({} bits)",
            f.name,
            f.ty.width()
        ))
    })?;
    Ok(bf::KeyField {
        field_id: f.id,
        match_type: Some(bf::key_field::MatchType::Exact(bf::key_field::Exact {
            value: bytes,
        })),
    })
}

/// The entry of `table_id` whose one exact key field `key` holds `v`.
fn keyed(table_id: u32, key: &Field, v: u128) -> Result<bf::TableEntry, TargetError> {
    Ok(bf::TableEntry {
        table_id,
        value: Some(bf::table_entry::Value::Key(bf::TableKey {
            fields: vec![exact(key, v)?],
        })),
        ..Default::default()
    })
}

/// The entry of `table_id` keyed `key` = `v` with data: action `action_id` (0 for the
/// fixed tables, which have none) and `fields`.
fn keyed_data(
    table_id: u32,
    key: &Field,
    v: u128,
    action_id: u32,
    fields: Vec<bf::DataField>,
) -> Result<bf::TableEntry, TargetError> {
    Ok(bf::TableEntry {
        data: Some(bf::TableData { action_id, fields }),
        ..keyed(table_id, key, v)?
    })
}

/// A data field of value `v` (a number).
fn data(f: &Field, v: u128) -> Result<bf::DataField, TargetError> {
    use bf::data_field::Value as V;
    let value = match f.ty {
        FieldType::Bool => V::BoolVal(v != 0),
        FieldType::Bytes(w) | FieldType::Uint(w) => V::Stream(encode(v, w).ok_or_else(|| {
            TargetError::InvalidArgument(format!(
                "{v} does not fit data field `{}` ({w} bits)",
                f.name
            ))
        })?),
        FieldType::Str => {
            return Err(TargetError::InvalidArgument(format!(
                "data field `{}` is a string, not a number",
                f.name
            )))
        }
    };
    Ok(bf::DataField {
        field_id: f.id,
        value: Some(value),
    })
}

fn data_ints(f: &Field, v: Vec<u32>) -> bf::DataField {
    bf::DataField {
        field_id: f.id,
        value: Some(bf::data_field::Value::IntArrVal(bf::data_field::IntArray {
            val: v,
        })),
    }
}

fn data_bools(f: &Field, v: Vec<bool>) -> bf::DataField {
    bf::DataField {
        field_id: f.id,
        value: Some(bf::data_field::Value::BoolArrVal(
            bf::data_field::BoolArray { val: v },
        )),
    }
}

/// The numbers a data field holds: one per pipe for register cells.
fn numbers(fields: &[bf::DataField], id: u32) -> Vec<u128> {
    use bf::data_field::Value as V;
    let mut out = Vec::new();
    for f in fields.iter().filter(|f| f.field_id == id) {
        match &f.value {
            Some(V::Stream(b)) => out.extend(decode(b)),
            Some(V::IntArrVal(a)) => out.extend(a.val.iter().map(|&x| x as u128)),
            Some(V::BoolVal(b)) => out.push(*b as u128),
            _ => {}
        }
    }
    out
}

/// `expected` with the sizes of the switch's schema (a Tofino's tables are as large as the
/// compiled program made them).
fn with_sizes(expected: &P4Info, info: &BfrtInfo) -> P4Info {
    let mut p = expected.clone();
    for t in &mut p.tables {
        let name = t.preamble.as_ref().map_or("", |p| p.name.as_str());
        if let Ok(bt) = info.table(name) {
            if bt.size > 0 {
                t.size = bt.size as i64;
            }
        }
    }
    for r in &mut p.registers {
        let name = r.preamble.as_ref().map_or("", |p| p.name.as_str());
        if let Ok(bt) = info.table(name) {
            if bt.size > 0 {
                r.size = bt.size as i32;
            }
        }
    }
    for c in &mut p.counters {
        let name = c.preamble.as_ref().map_or("", |p| p.name.as_str());
        if let Ok(bt) = info.table(name) {
            if bt.size > 0 {
                c.size = bt.size as i64;
            }
        }
    }
    p
}

impl BfrtTarget {
    /// The BfRt entry of a contract table entry (validated against the P4Info already).
    fn entry(&self, e: &TableEntry, with_data: bool) -> Result<bf::TableEntry, TargetError> {
        let t = self.table(&e.table)?;
        let mut fields = Vec::new();
        for (name, m) in &e.matches {
            let k = t.key(name).map_err(schema_error)?;
            let w = k.ty.width();
            let enc = |v: u128| {
                encode(v, w).ok_or_else(|| {
                    TargetError::InvalidArgument(format!(
                        "{v} does not fit key `{name}` ({w} bits)"
                    ))
                })
            };
            use bf::key_field::MatchType as M;
            let mt = match *m {
                Match::Exact(v) | Match::Optional(v) => {
                    M::Exact(bf::key_field::Exact { value: enc(v)? })
                }
                Match::Ternary { value, mask } => M::Ternary(bf::key_field::Ternary {
                    value: enc(value)?,
                    mask: enc(mask)?,
                }),
                Match::Lpm { value, prefix_len } => M::Lpm(bf::key_field::Lpm {
                    value: enc(value)?,
                    prefix_len: prefix_len as i32,
                }),
                Match::Range { low, high } => M::Range(bf::key_field::Range {
                    low: enc(low)?,
                    high: enc(high)?,
                }),
            };
            fields.push(bf::KeyField {
                field_id: k.id,
                match_type: Some(mt),
            });
        }
        let data = if with_data {
            let a = t.action(&e.action).map_err(schema_error)?;
            let mut fs = Vec::new();
            for (name, v) in &e.params {
                fs.push(data(a.param(name).map_err(schema_error)?, *v)?);
            }
            Some(bf::TableData {
                action_id: a.id,
                fields: fs,
            })
        } else {
            None
        };
        Ok(bf::TableEntry {
            table_id: t.id,
            value: Some(bf::table_entry::Value::Key(bf::TableKey { fields })),
            data,
            ..Default::default()
        })
    }

    /// A BfRt entry back in the contract's names.
    fn entry_back(
        &self,
        table: &str,
        t: &Table,
        be: &bf::TableEntry,
    ) -> Result<TableEntry, TargetError> {
        let info = self.index.table(table)?;
        let foreign = |m: String| TargetError::Rejected {
            target: self.addr.clone(),
            op: format!("read of `{table}`"),
            code: Code::Internal,
            message: m,
        };
        let mut out = TableEntry::new(table, "");
        if let Some(bf::table_entry::Value::Key(k)) = &be.value {
            for f in &info.fields {
                let bk = t.key(&f.name).map_err(schema_error)?;
                let Some(kf) = k.fields.iter().find(|x| x.field_id == bk.id) else {
                    continue;
                };
                use bf::key_field::MatchType as M;
                let m = match &kf.match_type {
                    Some(M::Exact(x)) => Match::Exact(decode(&x.value).unwrap_or(0)),
                    Some(M::Ternary(x)) => Match::Ternary {
                        value: decode(&x.value).unwrap_or(0),
                        mask: decode(&x.mask).unwrap_or(0),
                    },
                    Some(M::Lpm(x)) => Match::Lpm {
                        value: decode(&x.value).unwrap_or(0),
                        prefix_len: x.prefix_len as u32,
                    },
                    Some(M::Range(x)) => Match::Range {
                        low: decode(&x.low).unwrap_or(0),
                        high: decode(&x.high).unwrap_or(0),
                    },
                    Some(M::Optional(x)) => Match::Optional(decode(&x.value).unwrap_or(0)),
                    None => {
                        return Err(foreign(format!(
                            "key field {} without a match",
                            kf.field_id
                        )))
                    }
                };
                out.matches.push((f.name.clone(), m));
            }
        }
        if let Some(d) = &be.data {
            let ba = t
                .action_by_id(d.action_id)
                .ok_or_else(|| foreign(format!("unknown action id {}", d.action_id)))?;
            let short = sgnn_p4rt::bfrt::short(&ba.name);
            let a = self.index.action(short)?;
            out.action = a.name.clone();
            for p in &a.params {
                let bp = ba.param(&p.name).map_err(schema_error)?;
                let v = numbers(&d.fields, bp.id).first().copied().unwrap_or(0);
                out.params.push((p.name.clone(), v));
            }
        }
        Ok(out)
    }

    fn op_updates(&self, op: &Op) -> Result<Vec<bf::Update>, TargetError> {
        use bf::update::Type as U;
        let upd = |ty: U, e: bf::TableEntry| bf::Update {
            r#type: ty as i32,
            entity: Some(bf::Entity {
                entity: Some(bf::entity::Entity::TableEntry(e)),
            }),
        };
        Ok(match op {
            Op::Insert(e) => vec![upd(U::Insert, self.entry(e, true)?)],
            Op::Modify(e) => vec![upd(U::Modify, self.entry(e, true)?)],
            Op::Delete(e) => vec![upd(U::Delete, self.entry(e, false)?)],
            Op::SetDefault(e) => {
                let mut be = self.entry(e, true)?;
                be.value = None;
                be.is_default_entry = true;
                vec![upd(U::Modify, be)]
            }
            Op::WriteRegister {
                register,
                index,
                value,
            } => {
                let (t, key) = self.cells_table(register, true)?;
                let f = t.data.first().ok_or_else(|| {
                    TargetError::InvalidArgument(format!("register `{register}` has no data field"))
                })?;
                vec![upd(
                    U::Modify,
                    keyed_data(t.id, key, *index as u128, 0, vec![data(f, *value)?])?,
                )]
            }
            Op::SetMulticastGroup { group, replicas } => {
                let node_t = self.table("$pre.node")?;
                let mgid_t = self.table("$pre.mgid")?;
                let node_key = node_t.key("$MULTICAST_NODE_ID").map_err(schema_error)?;
                let rid = node_t.data_field("$MULTICAST_RID").map_err(schema_error)?;
                let lag = node_t
                    .data_field("$MULTICAST_LAG_ID")
                    .map_err(schema_error)?;
                let ports = node_t.data_field("$DEV_PORT").map_err(schema_error)?;
                let mut out = Vec::new();
                let mut nodes = Vec::new();
                for (i, r) in replicas.iter().enumerate() {
                    // One node per copy: node id = group << 16 | copy.
                    let node = (*group << 16) | i as u32;
                    nodes.push(node);
                    out.push(upd(
                        U::InsertOrModify,
                        keyed_data(
                            node_t.id,
                            node_key,
                            node as u128,
                            0,
                            vec![
                                data(rid, r.instance as u128)?,
                                data_ints(lag, vec![]),
                                data_ints(ports, vec![r.port]),
                            ],
                        )?,
                    ));
                }
                let mgid = mgid_t.key("$MGID").map_err(schema_error)?;
                let ids = mgid_t
                    .data_field("$MULTICAST_NODE_ID")
                    .map_err(schema_error)?;
                let xv = mgid_t
                    .data_field("$MULTICAST_NODE_L1_XID_VALID")
                    .map_err(schema_error)?;
                let x = mgid_t
                    .data_field("$MULTICAST_NODE_L1_XID")
                    .map_err(schema_error)?;
                let n = nodes.len();
                out.push(upd(
                    U::InsertOrModify,
                    keyed_data(
                        mgid_t.id,
                        mgid,
                        *group as u128,
                        0,
                        vec![
                            data_ints(ids, nodes),
                            data_bools(xv, vec![false; n]),
                            data_ints(x, vec![0; n]),
                        ],
                    )?,
                ));
                out
            }
            Op::SetCloneSession { session, replicas } => {
                let [r] = replicas.as_slice() else {
                    return Err(TargetError::InvalidArgument(format!(
                        "a Tofino mirror session sends one copy to one port; clone session {session} has {}",
                        replicas.len()
                    )));
                };
                let t = self.table("$mirror.cfg")?;
                let normal = t.action("$normal").map_err(schema_error)?;
                let sid = t.key("$sid").map_err(schema_error)?;
                let df = |n: &str| t.data_field(n).map_err(schema_error);
                let dir = df("$direction")?;
                vec![upd(
                    U::InsertOrModify,
                    keyed_data(
                        t.id,
                        sid,
                        *session as u128,
                        normal.id,
                        vec![
                            data(df("$session_enable")?, 1)?,
                            bf::DataField {
                                field_id: dir.id,
                                value: Some(bf::data_field::Value::StrVal("BOTH".into())),
                            },
                            data(df("$ucast_egress_port")?, r.port as u128)?,
                            data(df("$ucast_egress_port_valid")?, 1)?,
                        ],
                    )?,
                )]
            }
        })
    }
}

impl Target for BfrtTarget {
    fn index(&self) -> &P4InfoIndex {
        &self.index
    }

    fn apply(&mut self, ops: &[Op]) -> Result<(), TargetError> {
        // Validate everything against the contract first (the same checks as every backend).
        for op in ops {
            op_to_update(&self.index, op, false)?;
        }
        let mut updates = Vec::new();
        for op in ops {
            updates.extend(self.op_updates(op)?);
        }
        self.write(updates, ops.len())
    }

    fn read_table(&mut self, table: &str) -> Result<Vec<TableEntry>, TargetError> {
        self.index.table(table)?;
        let t = self.table(table)?.clone();
        let got = self.read_or(
            vec![bf::TableEntry {
                table_id: t.id,
                ..Default::default()
            }],
            &format!("table `{table}`"),
        )?;
        got.iter()
            .filter(|e| !e.is_default_entry && e.table_id == t.id)
            .map(|e| self.entry_back(table, &t, e))
            .collect()
    }

    fn read_default(&mut self, table: &str) -> Result<Option<TableEntry>, TargetError> {
        self.index.table(table)?;
        let t = self.table(table)?.clone();
        let got = self.read_one(
            bf::TableEntry {
                table_id: t.id,
                is_default_entry: true,
                ..Default::default()
            },
            &format!("the default entry of `{table}`"),
        )?;
        got.map(|e| self.entry_back(table, &t, &e)).transpose()
    }

    fn read_register_range(
        &mut self,
        register: &str,
        range: Range<u64>,
    ) -> Result<Vec<u128>, TargetError> {
        let info = self.index.register(register)?;
        check_plain_cells(info)?;
        check_range("register", register, &range, info.size)?;
        let (t, _) = self.cells_table(register, true)?;
        let id = t.data.first().map_or(0, |f| f.id);
        let got = self.read_cells(register, true, &range)?;
        Ok(got
            .iter()
            .map(|e| {
                let per_pipe = e.data.as_ref().map_or(vec![], |d| numbers(&d.fields, id));
                per_pipe.iter().copied().find(|&v| v != 0).unwrap_or(0)
            })
            .collect())
    }

    fn read_counter_range(
        &mut self,
        counter: &str,
        range: Range<u64>,
    ) -> Result<Vec<CounterValue>, TargetError> {
        let info = self.index.counter(counter)?;
        check_range("counter", counter, &range, info.size)?;
        let (t, _) = self.cells_table(counter, false)?;
        let pk = t.data_field("$COUNTER_SPEC_PKTS").ok().map(|f| f.id);
        let by = t.data_field("$COUNTER_SPEC_BYTES").ok().map(|f| f.id);
        let got = self.read_cells(counter, false, &range)?;
        Ok(got
            .iter()
            .map(|e| {
                let sum = |id: Option<u32>| {
                    id.map_or(0, |id| {
                        e.data
                            .as_ref()
                            .map_or(0, |d| numbers(&d.fields, id).iter().sum::<u128>() as u64)
                    })
                };
                CounterValue {
                    packets: sum(pk),
                    bytes: sum(by),
                }
            })
            .collect())
    }

    fn read_multicast_group(&mut self, group: u32) -> Result<Option<Vec<Replica>>, TargetError> {
        let mgid_t = self.table("$pre.mgid")?.clone();
        let node_t = self.table("$pre.node")?.clone();
        let key = mgid_t.key("$MGID").map_err(schema_error)?;
        let ids = mgid_t
            .data_field("$MULTICAST_NODE_ID")
            .map_err(schema_error)?;
        let Some(e) = self.read_one(
            keyed(mgid_t.id, key, group as u128)?,
            &format!("multicast group {group}"),
        )?
        else {
            return Ok(None);
        };
        let nodes = e
            .data
            .as_ref()
            .map_or(vec![], |d| numbers(&d.fields, ids.id));
        let nk = node_t.key("$MULTICAST_NODE_ID").map_err(schema_error)?;
        let rid = node_t.data_field("$MULTICAST_RID").map_err(schema_error)?;
        let ports = node_t.data_field("$DEV_PORT").map_err(schema_error)?;
        let mut out = Vec::new();
        for n in nodes {
            let got = self.read_or(
                vec![keyed(node_t.id, nk, n)?],
                &format!("multicast node {n}"),
            )?;
            for e in got {
                let d = e.data.unwrap_or_default();
                let r = numbers(&d.fields, rid.id).first().copied().unwrap_or(0) as u32;
                for p in numbers(&d.fields, ports.id) {
                    out.push(Replica {
                        port: p as u32,
                        instance: r,
                    });
                }
            }
        }
        out.sort();
        Ok(Some(out))
    }

    fn read_clone_session(&mut self, session: u32) -> Result<Option<Vec<Replica>>, TargetError> {
        let t = self.table("$mirror.cfg")?.clone();
        let key = t.key("$sid").map_err(schema_error)?;
        let port = t.data_field("$ucast_egress_port").map_err(schema_error)?;
        let got = self.read_one(
            keyed(t.id, key, session as u128)?,
            &format!("mirror session {session}"),
        )?;
        Ok(got.map(|e| {
            let d = e.data.unwrap_or_default();
            numbers(&d.fields, port.id)
                .into_iter()
                .map(|p| Replica {
                    port: p as u32,
                    instance: 0,
                })
                .collect()
        }))
    }
}
