//! P4Runtime served by the software switch, so `switch-ctl` programs it exactly as it programs
//! bmv2 or a Tofino: the same P4Info (names and ids of `docs/switch-interface.md`), arbitration,
//! pipeline config, batched writes of table entries, registers and multicast groups, and reads
//! of entries, registers and counters.
//!
//! The pipeline is fixed: SetForwardingPipelineConfig accepts a P4Info that equals the switch's
//! own (any difference is refused and listed) and ignores the device config (bmv2 JSON).

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use sgnn_p4rt::p4info::{decode_bits, encode_bits, P4InfoIndex};
use sgnn_p4rt::proto::google::rpc;
use sgnn_p4rt::proto::p4::config::v1 as cfg;
use sgnn_p4rt::proto::p4::v1 as p4;
use sgnn_p4rt::proto::p4::v1::p4_runtime_server::{P4Runtime, P4RuntimeServer};
use sgnn_p4rt::schema::{compare_p4info, switchgnn_p4info};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::{Stream, StreamExt};
use tonic::{Request, Response, Status, Streaming};

use crate::control::{ControlError, NamedEntry, WriteKind};
use crate::pipeline::Pipeline;
use crate::tables::Replica;

/// gRPC status codes used here (google.rpc.Code).
mod code {
    pub const OK: i32 = 0;
    pub const UNKNOWN: i32 = 2;
    pub const INVALID_ARGUMENT: i32 = 3;
    pub const NOT_FOUND: i32 = 5;
    pub const ALREADY_EXISTS: i32 = 6;
    pub const OUT_OF_RANGE: i32 = 11;
}

#[derive(Default)]
struct Arbitration {
    /// Highest election id of a connected client, and a counter of open streams per id.
    primary: Option<u128>,
    open: Vec<u128>,
}

/// The P4Runtime service of one software switch.
pub struct SoftswitchRuntime {
    pipeline: Arc<Mutex<Pipeline>>,
    index: P4InfoIndex,
    device_id: u64,
    arbitration: Arc<Mutex<Arbitration>>,
    cookie: Mutex<Option<u64>>,
    clone_sessions: Mutex<Vec<p4::CloneSessionEntry>>,
}

fn u128_of(e: &Option<p4::Uint128>) -> u128 {
    e.as_ref()
        .map_or(0, |x| (x.high as u128) << 64 | x.low as u128)
}

fn status_of(e: ControlError) -> (i32, String) {
    let c = match &e {
        ControlError::Unknown { .. } => code::NOT_FOUND,
        ControlError::Invalid(_) => code::OUT_OF_RANGE,
        ControlError::Exists(m) if m.contains("already") || m.contains("exists") => {
            code::ALREADY_EXISTS
        }
        ControlError::Exists(_) => code::NOT_FOUND,
    };
    (c, e.to_string())
}

impl SoftswitchRuntime {
    /// A service for `pipeline` as device `device_id`.
    pub fn new(pipeline: Arc<Mutex<Pipeline>>, device_id: u64) -> SoftswitchRuntime {
        let index = P4InfoIndex::new(&switchgnn_p4info()).expect("the built-in P4Info indexes");
        SoftswitchRuntime {
            pipeline,
            index,
            device_id,
            arbitration: Arc::default(),
            cookie: Mutex::new(None),
            clone_sessions: Mutex::default(),
        }
    }

    fn check_device(&self, id: u64) -> Result<(), Status> {
        if id != self.device_id {
            return Err(Status::not_found(format!(
                "this switch is device {}, not {id}",
                self.device_id
            )));
        }
        Ok(())
    }

    fn check_primary(&self, election: &Option<p4::Uint128>) -> Result<(), Status> {
        let a = self.arbitration.lock().unwrap();
        let id = u128_of(election);
        if a.primary != Some(id) {
            return Err(Status::permission_denied(format!(
                "election id {id} is not the primary's ({:?}); open a StreamChannel and win arbitration first",
                a.primary
            )));
        }
        Ok(())
    }

    fn named_entry(&self, t: &p4::TableEntry) -> Result<NamedEntry, (i32, String)> {
        let inv = |m: String| (code::INVALID_ARGUMENT, m);
        let table = self
            .index
            .table_by_id(t.table_id)
            .map_err(|e| (code::NOT_FOUND, e.to_string()))?;
        let mut matches = Vec::new();
        for m in &t.r#match {
            let f = table
                .field_by_id(m.field_id)
                .map_err(|e| inv(e.to_string()))?;
            let Some(p4::field_match::FieldMatchType::Exact(x)) = &m.field_match_type else {
                return Err(inv(format!(
                    "{}.{} is an exact match field",
                    table.name, f.name
                )));
            };
            let v =
                decode_bits(&x.value, f.bitwidth).map_err(|e| inv(format!("{}: {e}", f.name)))?;
            matches.push((f.name.clone(), v));
        }
        let (action, params) = match &t.action {
            Some(p4::TableAction {
                r#type: Some(p4::table_action::Type::Action(a)),
            }) => {
                let info = self
                    .index
                    .action_by_id(a.action_id)
                    .map_err(|e| inv(e.to_string()))?;
                let mut params = Vec::new();
                for p in &a.params {
                    let pi = info
                        .param_by_id(p.param_id)
                        .map_err(|e| inv(e.to_string()))?;
                    let v = decode_bits(&p.value, pi.bitwidth)
                        .map_err(|e| inv(format!("{}: {e}", pi.name)))?;
                    params.push((pi.name.clone(), v));
                }
                (info.name.clone(), params)
            }
            _ => (String::new(), Vec::new()),
        };
        Ok(NamedEntry {
            table: table.name.clone(),
            matches,
            action,
            params,
        })
    }

    fn table_entry(&self, e: &NamedEntry) -> p4::TableEntry {
        let table = self.index.table(&e.table).expect("known table");
        let action = self.index.action(&e.action).expect("known action");
        p4::TableEntry {
            table_id: table.id,
            r#match: e
                .matches
                .iter()
                .map(|(n, v)| {
                    let f = table.field(n).expect("known field");
                    p4::FieldMatch {
                        field_id: f.id,
                        field_match_type: Some(p4::field_match::FieldMatchType::Exact(
                            p4::field_match::Exact {
                                value: encode_bits(*v, f.bitwidth).expect("value fits"),
                            },
                        )),
                    }
                })
                .collect(),
            action: Some(p4::TableAction {
                r#type: Some(p4::table_action::Type::Action(p4::Action {
                    action_id: action.id,
                    params: e
                        .params
                        .iter()
                        .map(|(n, v)| {
                            let p = action.param(n).expect("known param");
                            p4::action::Param {
                                param_id: p.id,
                                value: encode_bits(*v, p.bitwidth).expect("value fits"),
                            }
                        })
                        .collect(),
                })),
            }),
            ..Default::default()
        }
    }

    fn apply(&self, u: &p4::Update) -> Result<(), (i32, String)> {
        use p4::entity::Entity as E;
        let inv = |m: String| (code::INVALID_ARGUMENT, m);
        let kind = match p4::update::Type::try_from(u.r#type) {
            Ok(p4::update::Type::Insert) => WriteKind::Insert,
            Ok(p4::update::Type::Modify) => WriteKind::Modify,
            Ok(p4::update::Type::Delete) => WriteKind::Delete,
            _ => return Err(inv("update type must be INSERT, MODIFY or DELETE".into())),
        };
        let entity = u
            .entity
            .as_ref()
            .and_then(|e| e.entity.as_ref())
            .ok_or_else(|| inv("update without an entity".into()))?;
        let mut sw = self.pipeline.lock().unwrap();
        match entity {
            E::TableEntry(t) => {
                let e = self.named_entry(t)?;
                if t.is_default_action {
                    if e.table != sgnn_switch::config::SWITCH_CONFIG.name {
                        return Err(inv(format!(
                            "the default action of {} is fixed (NoAction)",
                            e.table
                        )));
                    }
                    if kind != WriteKind::Modify {
                        return Err(inv("a default action is changed with MODIFY".into()));
                    }
                }
                sw.write_entry(kind, &e).map_err(status_of)
            }
            E::RegisterEntry(r) => {
                if kind != WriteKind::Modify {
                    return Err(inv("registers are written with MODIFY".into()));
                }
                let info = self
                    .index
                    .register_by_id(r.register_id)
                    .map_err(|e| (code::NOT_FOUND, e.to_string()))?;
                let value = match r.data.as_ref().and_then(|d| d.data.as_ref()) {
                    Some(p4::p4_data::Data::Bitstring(b)) => decode_bits(b, info.bitwidth())
                        .map_err(|e| inv(format!("{}: {e}", info.name)))?,
                    _ => return Err(inv(format!("{}: value must be a bitstring", info.name))),
                };
                let cells: Vec<usize> = match &r.index {
                    Some(i) if i.index >= 0 => vec![i.index as usize],
                    Some(i) => return Err(inv(format!("negative index {}", i.index))),
                    None => (0..info.size as usize).collect(),
                };
                for i in cells {
                    sw.write_register(&info.name, i, value).map_err(status_of)?;
                }
                Ok(())
            }
            E::PacketReplicationEngineEntry(p) => match &p.r#type {
                Some(p4::packet_replication_engine_entry::Type::MulticastGroupEntry(g)) => {
                    let replicas = g
                        .replicas
                        .iter()
                        .map(|r| {
                            let port = match &r.port_kind {
                                Some(p4::replica::PortKind::EgressPort(p)) => *p as u128,
                                Some(p4::replica::PortKind::Port(b)) => {
                                    decode_bits(b, 32).unwrap_or(u128::MAX)
                                }
                                None => 0,
                            };
                            if port >= crate::pipeline::PORTS as u128
                                || r.instance > u16::MAX as u32
                            {
                                return Err(inv(format!(
                                    "replica port {port} / instance {} out of range",
                                    r.instance
                                )));
                            }
                            Ok(Replica {
                                rid: r.instance as u16,
                                port: port as u16,
                            })
                        })
                        .collect::<Result<Vec<_>, _>>()?;
                    if g.multicast_group_id == 0 || g.multicast_group_id > u16::MAX as u32 {
                        return Err(inv(format!(
                            "multicast group id {} out of range",
                            g.multicast_group_id
                        )));
                    }
                    sw.write_multicast_group(kind, g.multicast_group_id as u16, replicas)
                        .map_err(status_of)
                }
                Some(p4::packet_replication_engine_entry::Type::CloneSessionEntry(c)) => {
                    // The software switch recirculates internally; the session is kept so a
                    // read answers what was written.
                    let mut s = self.clone_sessions.lock().unwrap();
                    let pos = s.iter().position(|x| x.session_id == c.session_id);
                    match (kind, pos) {
                        (WriteKind::Insert, Some(_)) => Err((
                            code::ALREADY_EXISTS,
                            format!("clone session {} exists", c.session_id),
                        )),
                        (WriteKind::Insert, None) => {
                            s.push(c.clone());
                            Ok(())
                        }
                        (_, None) => Err((
                            code::NOT_FOUND,
                            format!("no clone session {}", c.session_id),
                        )),
                        (WriteKind::Modify, Some(i)) => {
                            s[i] = c.clone();
                            Ok(())
                        }
                        (WriteKind::Delete, Some(i)) => {
                            s.remove(i);
                            Ok(())
                        }
                    }
                }
                None => Err(inv("empty packet replication entry".into())),
            },
            E::CounterEntry(_) => Err(inv("counters are read-only here".into())),
        }
    }

    fn read_entity(&self, e: &p4::entity::Entity) -> Result<Vec<p4::Entity>, Status> {
        use p4::entity::Entity as E;
        let wrap = |x: E| p4::Entity { entity: Some(x) };
        let sw = self.pipeline.lock().unwrap();
        let mut out = Vec::new();
        match e {
            E::TableEntry(t) => {
                let tables: Vec<String> = if t.table_id == 0 {
                    self.index.tables().iter().map(|t| t.name.clone()).collect()
                } else {
                    vec![self
                        .index
                        .table_by_id(t.table_id)
                        .map_err(|e| Status::not_found(e.to_string()))?
                        .name
                        .clone()]
                };
                for name in tables {
                    // switch_config is keyless: its only entry is the default action.
                    let keyless = name == sgnn_switch::config::SWITCH_CONFIG.name;
                    if t.is_default_action != keyless {
                        continue;
                    }
                    for e in sw
                        .read_entries(&name)
                        .map_err(|e| Status::not_found(e.to_string()))?
                    {
                        let mut te = self.table_entry(&e);
                        te.is_default_action = keyless;
                        out.push(wrap(E::TableEntry(te)));
                    }
                }
            }
            E::RegisterEntry(r) => {
                let regs: Vec<_> = if r.register_id == 0 {
                    self.index.registers().to_vec()
                } else {
                    vec![self
                        .index
                        .register_by_id(r.register_id)
                        .map_err(|e| Status::not_found(e.to_string()))?
                        .clone()]
                };
                for info in regs {
                    let cells: Vec<i64> = match &r.index {
                        Some(i) => vec![i.index],
                        None => (0..info.size as i64).collect(),
                    };
                    for i in cells {
                        let v = sw
                            .read_register(&info.name, i as usize)
                            .map_err(|e| Status::out_of_range(e.to_string()))?;
                        out.push(wrap(E::RegisterEntry(p4::RegisterEntry {
                            register_id: info.id,
                            index: Some(p4::Index { index: i }),
                            data: Some(p4::P4Data {
                                data: Some(p4::p4_data::Data::Bitstring(
                                    encode_bits(v, info.bitwidth()).expect("value fits"),
                                )),
                            }),
                        })));
                    }
                }
            }
            E::CounterEntry(c) => {
                let ctrs: Vec<_> = if c.counter_id == 0 {
                    self.index.counters().to_vec()
                } else {
                    vec![self
                        .index
                        .counter_by_id(c.counter_id)
                        .map_err(|e| Status::not_found(e.to_string()))?
                        .clone()]
                };
                for info in ctrs {
                    let cells: Vec<i64> = match &c.index {
                        Some(i) => vec![i.index],
                        None => (0..info.size as i64).collect(),
                    };
                    for i in cells {
                        let (packets, bytes) = sw
                            .read_counter(&info.name, i as usize)
                            .map_err(|e| Status::out_of_range(e.to_string()))?;
                        out.push(wrap(E::CounterEntry(p4::CounterEntry {
                            counter_id: info.id,
                            index: Some(p4::Index { index: i }),
                            data: Some(p4::CounterData {
                                byte_count: bytes as i64,
                                packet_count: packets as i64,
                            }),
                        })));
                    }
                }
            }
            E::PacketReplicationEngineEntry(p) => match &p.r#type {
                Some(p4::packet_replication_engine_entry::Type::MulticastGroupEntry(g)) => {
                    let mut ids: Vec<u16> = sw.tables.multicast_groups.keys().copied().collect();
                    ids.sort_unstable();
                    for id in ids {
                        if g.multicast_group_id != 0 && g.multicast_group_id != id as u32 {
                            continue;
                        }
                        let replicas = sw.tables.multicast_groups[&id]
                            .iter()
                            .map(|r| p4::Replica {
                                port_kind: Some(p4::replica::PortKind::EgressPort(r.port as u32)),
                                instance: r.rid as u32,
                            })
                            .collect();
                        out.push(wrap(E::PacketReplicationEngineEntry(
                            p4::PacketReplicationEngineEntry {
                                r#type: Some(
                                    p4::packet_replication_engine_entry::Type::MulticastGroupEntry(
                                        p4::MulticastGroupEntry {
                                            multicast_group_id: id as u32,
                                            replicas,
                                            metadata: Vec::new(),
                                        },
                                    ),
                                ),
                            },
                        )));
                    }
                }
                Some(p4::packet_replication_engine_entry::Type::CloneSessionEntry(c)) => {
                    for s in self.clone_sessions.lock().unwrap().iter() {
                        if c.session_id == 0 || c.session_id == s.session_id {
                            out.push(wrap(E::PacketReplicationEngineEntry(
                                p4::PacketReplicationEngineEntry {
                                    r#type: Some(
                                        p4::packet_replication_engine_entry::Type::CloneSessionEntry(
                                            s.clone(),
                                        ),
                                    ),
                                },
                            )));
                        }
                    }
                }
                None => {}
            },
        }
        Ok(out)
    }
}

type BoxStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send + 'static>>;

#[tonic::async_trait]
impl P4Runtime for SoftswitchRuntime {
    async fn write(
        &self,
        request: Request<p4::WriteRequest>,
    ) -> Result<Response<p4::WriteResponse>, Status> {
        let req = request.into_inner();
        self.check_device(req.device_id)?;
        self.check_primary(&req.election_id)?;
        let mut errors = Vec::with_capacity(req.updates.len());
        let mut failed = 0;
        for u in &req.updates {
            match self.apply(u) {
                Ok(()) => errors.push(p4::Error {
                    canonical_code: code::OK,
                    ..Default::default()
                }),
                Err((c, m)) => {
                    failed += 1;
                    errors.push(p4::Error {
                        canonical_code: c,
                        message: m,
                        ..Default::default()
                    });
                }
            }
        }
        if failed == 0 {
            return Ok(Response::new(p4::WriteResponse {}));
        }
        let first = errors
            .iter()
            .find(|e| e.canonical_code != code::OK)
            .map(|e| e.message.clone())
            .unwrap_or_default();
        let details = rpc::Status {
            code: code::UNKNOWN,
            message: format!(
                "{failed} of {} updates failed; first: {first}",
                errors.len()
            ),
            details: errors
                .iter()
                .map(|e| prost_types::Any {
                    type_url: "type.googleapis.com/p4.v1.Error".into(),
                    value: prost::Message::encode_to_vec(e),
                })
                .collect(),
        };
        Err(Status::with_details(
            tonic::Code::Unknown,
            details.message.clone(),
            prost::Message::encode_to_vec(&details).into(),
        ))
    }

    type ReadStream = BoxStream<p4::ReadResponse>;

    async fn read(
        &self,
        request: Request<p4::ReadRequest>,
    ) -> Result<Response<Self::ReadStream>, Status> {
        let req = request.into_inner();
        self.check_device(req.device_id)?;
        let mut entities = Vec::new();
        for e in &req.entities {
            if let Some(e) = &e.entity {
                entities.extend(self.read_entity(e)?);
            }
        }
        // Chunks keep each message far below gRPC's default 4 MB limit.
        let chunks: Vec<Result<p4::ReadResponse, Status>> = entities
            .chunks(4096)
            .map(|c| {
                Ok(p4::ReadResponse {
                    entities: c.to_vec(),
                })
            })
            .collect();
        Ok(Response::new(Box::pin(tokio_stream::iter(chunks))))
    }

    async fn set_forwarding_pipeline_config(
        &self,
        request: Request<p4::SetForwardingPipelineConfigRequest>,
    ) -> Result<Response<p4::SetForwardingPipelineConfigResponse>, Status> {
        let req = request.into_inner();
        self.check_device(req.device_id)?;
        self.check_primary(&req.election_id)?;
        let config = req
            .config
            .ok_or_else(|| Status::invalid_argument("no config"))?;
        let given: cfg::P4Info = config
            .p4info
            .ok_or_else(|| Status::invalid_argument("config without a P4Info"))?;
        let diffs = compare_p4info(&switchgnn_p4info(), &given);
        if !diffs.is_empty() {
            return Err(Status::invalid_argument(format!(
                "this software switch runs the SwitchGNN pipeline of docs/switch-interface.md; the P4Info differs: {}",
                diffs.join("; ")
            )));
        }
        *self.cookie.lock().unwrap() = config.cookie.map(|c| c.cookie);
        Ok(Response::new(p4::SetForwardingPipelineConfigResponse {}))
    }

    async fn get_forwarding_pipeline_config(
        &self,
        request: Request<p4::GetForwardingPipelineConfigRequest>,
    ) -> Result<Response<p4::GetForwardingPipelineConfigResponse>, Status> {
        self.check_device(request.get_ref().device_id)?;
        let cookie = *self.cookie.lock().unwrap();
        Ok(Response::new(p4::GetForwardingPipelineConfigResponse {
            config: Some(p4::ForwardingPipelineConfig {
                p4info: Some(switchgnn_p4info()),
                p4_device_config: Vec::new(),
                cookie: cookie.map(|cookie| p4::forwarding_pipeline_config::Cookie { cookie }),
            }),
        }))
    }

    type StreamChannelStream = BoxStream<p4::StreamMessageResponse>;

    async fn stream_channel(
        &self,
        request: Request<Streaming<p4::StreamMessageRequest>>,
    ) -> Result<Response<Self::StreamChannelStream>, Status> {
        let mut inbound = request.into_inner();
        let (tx, rx) = mpsc::channel(8);
        let arbitration = self.arbitration.clone();
        let device_id = self.device_id;
        tokio::spawn(async move {
            let mut mine: Option<u128> = None;
            while let Some(Ok(msg)) = inbound.next().await {
                let Some(p4::stream_message_request::Update::Arbitration(a)) = msg.update else {
                    continue;
                };
                let (status, primary) = {
                    let mut arb = arbitration.lock().unwrap();
                    if a.device_id != device_id {
                        (
                            rpc::Status {
                                code: code::NOT_FOUND,
                                message: format!("this switch is device {device_id}"),
                                details: vec![],
                            },
                            arb.primary,
                        )
                    } else {
                        let id = u128_of(&a.election_id);
                        if let Some(old) = mine.replace(id) {
                            if let Some(i) = arb.open.iter().position(|&x| x == old) {
                                arb.open.remove(i);
                            }
                        }
                        arb.open.push(id);
                        arb.primary = arb.open.iter().copied().max();
                        let ok = arb.primary == Some(id);
                        (
                            rpc::Status {
                                code: if ok { code::OK } else { code::ALREADY_EXISTS },
                                message: if ok {
                                    "primary".into()
                                } else {
                                    "another client has a higher election id".into()
                                },
                                details: vec![],
                            },
                            arb.primary,
                        )
                    }
                };
                let reply = p4::StreamMessageResponse {
                    update: Some(p4::stream_message_response::Update::Arbitration(
                        p4::MasterArbitrationUpdate {
                            device_id,
                            role: a.role,
                            election_id: primary.map(|p| p4::Uint128 {
                                high: (p >> 64) as u64,
                                low: p as u64,
                            }),
                            status: Some(status),
                        },
                    )),
                };
                if tx.send(Ok(reply)).await.is_err() {
                    break;
                }
            }
            // The client went away: it is no longer a candidate.
            if let Some(id) = mine {
                let mut arb = arbitration.lock().unwrap();
                if let Some(i) = arb.open.iter().position(|&x| x == id) {
                    arb.open.remove(i);
                }
                arb.primary = arb.open.iter().copied().max();
            }
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }

    async fn capabilities(
        &self,
        _request: Request<p4::CapabilitiesRequest>,
    ) -> Result<Response<p4::CapabilitiesResponse>, Status> {
        Ok(Response::new(p4::CapabilitiesResponse {
            p4runtime_api_version: "1.3.0".into(),
        }))
    }
}

/// Where the P4Runtime server listens: TCP, or a Unix socket (`unix:/path`), which works across
/// network namespaces.
#[derive(Debug, Clone)]
pub enum Listen {
    /// A TCP address.
    Tcp(SocketAddr),
    /// A Unix socket path.
    Unix(std::path::PathBuf),
}

impl std::str::FromStr for Listen {
    type Err = String;
    fn from_str(s: &str) -> Result<Listen, String> {
        match s.strip_prefix("unix:") {
            Some(p) => Ok(Listen::Unix(p.into())),
            None => s
                .parse()
                .map(Listen::Tcp)
                .map_err(|e| format!("{s:?} is neither host:port nor unix:/path ({e})")),
        }
    }
}

/// Starts serving P4Runtime on a background thread with its own runtime; returns the bound
/// address (for TCP port 0) once listening.
pub fn spawn(
    pipeline: Arc<Mutex<Pipeline>>,
    device_id: u64,
    listen: Listen,
) -> std::io::Result<String> {
    spawn_with(pipeline, device_id, listen, None)
}

/// The certificate and key (PEM) of a TLS P4Runtime endpoint.
#[derive(Debug, Clone)]
pub struct ServerTls {
    /// Certificate chain, PEM.
    pub cert_pem: Vec<u8>,
    /// Private key, PEM.
    pub key_pem: Vec<u8>,
}

/// [`spawn`], with TLS on a TCP endpoint when `tls` is given (rustls through tonic). A Unix
/// socket with TLS is refused: its file permissions protect it.
pub fn spawn_with(
    pipeline: Arc<Mutex<Pipeline>>,
    device_id: u64,
    listen: Listen,
    tls: Option<ServerTls>,
) -> std::io::Result<String> {
    if tls.is_some() && matches!(listen, Listen::Unix(_)) {
        return Err(std::io::Error::other(
            "TLS is for a host:port P4Runtime endpoint; a Unix socket is protected by its file permissions",
        ));
    }
    let mut builder = tonic::transport::Server::builder();
    if let Some(t) = &tls {
        builder = builder
            .tls_config(tonic::transport::ServerTlsConfig::new().identity(
                tonic::transport::Identity::from_pem(&t.cert_pem, &t.key_pem),
            ))
            .map_err(|e| std::io::Error::other(format!("TLS configuration: {e}")))?;
    }
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("p4runtime".into())
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("tokio runtime");
            rt.block_on(async move {
                let svc = P4RuntimeServer::new(SoftswitchRuntime::new(pipeline, device_id))
                    .max_decoding_message_size(64 << 20)
                    .max_encoding_message_size(64 << 20);
                let mut builder = builder;
                let router = builder.add_service(svc);
                match listen {
                    Listen::Tcp(addr) => {
                        let l = match tokio::net::TcpListener::bind(addr).await {
                            Ok(l) => l,
                            Err(e) => return ready_tx.send(Err(e)).unwrap_or(()),
                        };
                        let local = l.local_addr().map(|a| a.to_string());
                        let _ = ready_tx.send(local);
                        let _ = router
                            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(l))
                            .await;
                    }
                    Listen::Unix(path) => {
                        let _ = std::fs::remove_file(&path);
                        let l = match tokio::net::UnixListener::bind(&path) {
                            Ok(l) => l,
                            Err(e) => return ready_tx.send(Err(e)).unwrap_or(()),
                        };
                        let _ = ready_tx.send(Ok(format!("unix:{}", path.display())));
                        let _ = router
                            .serve_with_incoming(tokio_stream::wrappers::UnixListenerStream::new(l))
                            .await;
                    }
                }
            })
        })?;
    ready_rx
        .recv()
        .map_err(|_| std::io::Error::other("P4Runtime server thread died"))?
}
