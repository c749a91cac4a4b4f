//! A small P4Runtime server for the tests: tonic, on 127.0.0.1:0, in its own thread and runtime,
//! so tests go through the real gRPC path (HTTP/2, protobuf encoding, status details).
//!
//! It stores what it is written, follows the specification's arbitration rules (the live
//! controller with the highest election id is primary; others get ALREADY_EXISTS; only the
//! primary may write or set the pipeline), and checks every update against the installed P4Info
//! by id, independently of the crate's own conversion code: unknown ids, wrong match kinds,
//! values wider than their field and non-canonical byte strings are rejected per update with
//! p4.v1.Error details, as PI (bmv2) does.
#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use prost::Message;
use sgnn_p4rt::proto::google::rpc;
use sgnn_p4rt::proto::p4::config::v1 as cfg;
use sgnn_p4rt::proto::p4::v1 as p4;
use sgnn_p4rt::proto::p4::v1::p4_runtime_server::{P4Runtime, P4RuntimeServer};
use tokio::sync::{mpsc, oneshot};
use tokio_stream::wrappers::{ReceiverStream, TcpListenerStream};
use tokio_stream::StreamExt;
use tonic::{Code, Request, Response, Status, Streaming};

struct Controller {
    election_id: u128,
    tx: mpsc::Sender<Result<p4::StreamMessageResponse, Status>>,
}

/// What the test switch holds; tests read it through [`TestSwitch::state`].
#[derive(Default)]
pub struct State {
    pub device_id: u64,
    pub p4info: Option<cfg::P4Info>,
    pub device_config: Vec<u8>,
    pub cookie: Option<u64>,
    /// Table entries by (table id, encoded key).
    pub tables: BTreeMap<(u32, Vec<u8>), p4::TableEntry>,
    /// Register cells by (register id, index): the bytes written.
    pub registers: BTreeMap<(u32, i64), Vec<u8>>,
    /// Counter cells by (counter id, index).
    pub counters: HashMap<(u32, i64), p4::CounterData>,
    pub groups: BTreeMap<u32, p4::MulticastGroupEntry>,
    pub sessions: BTreeMap<u32, p4::CloneSessionEntry>,
    /// WriteRequests received (accepted or not).
    pub write_requests: usize,
    /// Updates received in WriteRequests.
    pub updates_received: usize,
    /// Sizes of the WriteRequests received.
    pub batch_sizes: Vec<usize>,
    /// ReadRequests received.
    pub read_requests: usize,
    controllers: BTreeMap<u64, Controller>,
    next_stream: u64,
    primary: Option<u64>,
}

impl State {
    fn primary_election_id(&self) -> Option<u128> {
        self.primary
            .and_then(|s| self.controllers.get(&s))
            .map(|c| c.election_id)
    }

    fn highest_election_id(&self) -> u128 {
        self.controllers
            .values()
            .map(|c| c.election_id)
            .max()
            .unwrap_or(0)
    }

    fn arbitration_for(&self, stream: u64) -> p4::StreamMessageResponse {
        let is_primary = self.primary == Some(stream);
        let status = if is_primary {
            rpc::Status {
                code: Code::Ok as i32,
                message: "you are the primary".to_string(),
                details: vec![],
            }
        } else {
            rpc::Status {
                code: Code::AlreadyExists as i32,
                message: format!(
                    "a controller with election id {} is primary",
                    self.highest_election_id()
                ),
                details: vec![],
            }
        };
        p4::StreamMessageResponse {
            update: Some(p4::stream_message_response::Update::Arbitration(
                p4::MasterArbitrationUpdate {
                    device_id: self.device_id,
                    role: None,
                    election_id: Some(sgnn_p4rt::client::to_uint128(self.highest_election_id())),
                    status: Some(status),
                },
            )),
        }
    }

    /// Recomputes the primary; if it changed, tells every controller but `except`.
    fn elect(&mut self, except: Option<u64>) {
        let new = self
            .controllers
            .iter()
            .max_by_key(|(_, c)| c.election_id)
            .map(|(s, _)| *s);
        if new != self.primary {
            self.primary = new;
            for (&s, c) in &self.controllers {
                if Some(s) != except {
                    let _ = c.tx.try_send(Ok(self.arbitration_for(s)));
                }
            }
        }
    }
}

#[derive(Clone)]
struct Service {
    state: Arc<Mutex<State>>,
}

fn entry_key(e: &p4::TableEntry) -> Vec<u8> {
    let mut m = e.r#match.clone();
    m.sort_by_key(|f| f.field_id);
    p4::TableEntry {
        table_id: e.table_id,
        r#match: m,
        priority: e.priority,
        ..Default::default()
    }
    .encode_to_vec()
}

/// Checks a binary string is canonical (shortest, non-empty) and fits `width` bits.
fn check_bits(bytes: &[u8], width: i32, what: &str) -> Result<(), (Code, String)> {
    if bytes.is_empty() {
        return Err((Code::InvalidArgument, format!("{what}: empty bytestring")));
    }
    if bytes.len() > 1 && bytes[0] == 0 {
        return Err((
            Code::InvalidArgument,
            format!("{what}: bytestring is not canonical"),
        ));
    }
    let bits = (bytes.len() as i32 - 1) * 8 + (8 - bytes[0].leading_zeros() as i32);
    if bits > width {
        return Err((
            Code::OutOfRange,
            format!("{what}: {bits}-bit value in a {width}-bit field"),
        ));
    }
    Ok(())
}

fn uid(u: &Option<p4::Uint128>) -> u128 {
    u.as_ref().map_or(0, sgnn_p4rt::client::from_uint128)
}

type Res<T> = Result<T, (Code, String)>;

impl State {
    fn p4info(&self) -> Res<&cfg::P4Info> {
        self.p4info.as_ref().ok_or((
            Code::FailedPrecondition,
            "no pipeline installed".to_string(),
        ))
    }

    fn check_table_entry(&self, e: &p4::TableEntry, with_action: bool) -> Res<()> {
        use cfg::match_field::{Match, MatchType};
        use p4::field_match::FieldMatchType as F;
        let info = self.p4info()?;
        let t = info
            .tables
            .iter()
            .find(|t| t.preamble.as_ref().unwrap().id == e.table_id)
            .ok_or((Code::NotFound, format!("unknown table id {}", e.table_id)))?;
        for m in &e.r#match {
            let f = t.match_fields.iter().find(|f| f.id == m.field_id).ok_or((
                Code::InvalidArgument,
                format!("unknown field id {}", m.field_id),
            ))?;
            let kind = match f.r#match {
                Some(Match::MatchType(k)) => MatchType::try_from(k).unwrap(),
                _ => MatchType::Unspecified,
            };
            let what = format!("field {}", f.name);
            match (&m.field_match_type, kind) {
                (Some(F::Exact(x)), MatchType::Exact) => check_bits(&x.value, f.bitwidth, &what)?,
                (Some(F::Lpm(x)), MatchType::Lpm) => check_bits(&x.value, f.bitwidth, &what)?,
                (Some(F::Ternary(x)), MatchType::Ternary) => {
                    check_bits(&x.value, f.bitwidth, &what)?;
                    check_bits(&x.mask, f.bitwidth, &what)?;
                }
                (Some(F::Optional(x)), MatchType::Optional) => {
                    check_bits(&x.value, f.bitwidth, &what)?
                }
                _ => return Err((Code::InvalidArgument, format!("{what}: wrong match kind"))),
            }
        }
        for f in &t.match_fields {
            if f.r#match == Some(Match::MatchType(MatchType::Exact as i32))
                && !e.r#match.iter().any(|m| m.field_id == f.id)
            {
                return Err((
                    Code::InvalidArgument,
                    format!("missing exact field {}", f.name),
                ));
            }
        }
        if !with_action {
            return Ok(());
        }
        let Some(p4::table_action::Type::Action(a)) =
            e.action.as_ref().and_then(|a| a.r#type.as_ref())
        else {
            return Err((Code::InvalidArgument, "no action".to_string()));
        };
        if !t.action_refs.iter().any(|r| r.id == a.action_id) {
            return Err((
                Code::InvalidArgument,
                format!("action id {} not in table", a.action_id),
            ));
        }
        let action = info
            .actions
            .iter()
            .find(|x| x.preamble.as_ref().unwrap().id == a.action_id)
            .ok_or((Code::NotFound, format!("unknown action id {}", a.action_id)))?;
        if a.params.len() != action.params.len() {
            return Err((Code::InvalidArgument, "wrong number of params".to_string()));
        }
        for p in &a.params {
            let q = action.params.iter().find(|q| q.id == p.param_id).ok_or((
                Code::InvalidArgument,
                format!("unknown param id {}", p.param_id),
            ))?;
            check_bits(&p.value, q.bitwidth, &format!("param {}", q.name))?;
        }
        Ok(())
    }

    fn register(&self, id: u32) -> Res<(i32, i64)> {
        use sgnn_p4rt::p4info::{register_cell, CellType};
        let r = self
            .p4info()?
            .registers
            .iter()
            .find(|r| r.preamble.as_ref().unwrap().id == id)
            .ok_or((Code::NotFound, format!("unknown register id {id}")))?;
        // Cells of `bit<W>` or `int<W>` (the TNA program's lanes): W bits either way.
        let width = match register_cell(r) {
            CellType::Bit(w) | CellType::Int(w) => w as i32,
            CellType::Other => 0,
        };
        Ok((width, r.size as i64))
    }

    fn counter_size(&self, id: u32) -> Res<i64> {
        self.p4info()?
            .counters
            .iter()
            .find(|c| c.preamble.as_ref().unwrap().id == id)
            .map(|c| c.size)
            .ok_or((Code::NotFound, format!("unknown counter id {id}")))
    }

    fn apply(&mut self, u: &p4::Update) -> Res<()> {
        use p4::entity::Entity as E;
        use p4::packet_replication_engine_entry::Type as Pre;
        use p4::update::Type as U;
        let kind = U::try_from(u.r#type).unwrap_or(U::Unspecified);
        match u.entity.as_ref().and_then(|e| e.entity.as_ref()) {
            Some(E::TableEntry(e)) => {
                self.check_table_entry(e, kind != U::Delete)?;
                let key = (e.table_id, entry_key(e));
                let exists = self.tables.contains_key(&key);
                match (kind, exists) {
                    (U::Insert, true) => {
                        return Err((Code::AlreadyExists, "entry exists".to_string()))
                    }
                    (U::Insert, false) | (U::Modify, true) => {
                        self.tables.insert(key, e.clone());
                    }
                    (U::Delete, true) => {
                        self.tables.remove(&key);
                    }
                    (U::Modify, false) | (U::Delete, false) => {
                        return Err((Code::NotFound, "no such entry".to_string()))
                    }
                    _ => return Err((Code::InvalidArgument, "bad update type".to_string())),
                }
            }
            Some(E::RegisterEntry(r)) => {
                if kind != U::Modify {
                    return Err((Code::InvalidArgument, "registers only MODIFY".to_string()));
                }
                let (width, size) = self.register(r.register_id)?;
                let index = r
                    .index
                    .map(|i| i.index)
                    .ok_or((Code::Unimplemented, "wildcard register write".to_string()))?;
                if index < 0 || index >= size {
                    return Err((Code::OutOfRange, format!("index {index}")));
                }
                let Some(p4::p4_data::Data::Bitstring(b)) =
                    r.data.as_ref().and_then(|d| d.data.as_ref())
                else {
                    return Err((Code::InvalidArgument, "no bitstring".to_string()));
                };
                check_bits(b, width, "register")?;
                self.registers.insert((r.register_id, index), b.clone());
            }
            Some(E::PacketReplicationEngineEntry(p)) => match &p.r#type {
                Some(Pre::MulticastGroupEntry(g)) => {
                    let exists = self.groups.contains_key(&g.multicast_group_id);
                    match (kind, exists) {
                        (U::Insert, false) | (U::Modify, true) => {
                            self.groups.insert(g.multicast_group_id, g.clone());
                        }
                        (U::Delete, true) => {
                            self.groups.remove(&g.multicast_group_id);
                        }
                        (U::Insert, true) => {
                            return Err((Code::AlreadyExists, "group exists".to_string()))
                        }
                        _ => return Err((Code::NotFound, "no such group".to_string())),
                    }
                }
                Some(Pre::CloneSessionEntry(s)) => {
                    let exists = self.sessions.contains_key(&s.session_id);
                    match (kind, exists) {
                        (U::Insert, false) | (U::Modify, true) => {
                            self.sessions.insert(s.session_id, s.clone());
                        }
                        (U::Delete, true) => {
                            self.sessions.remove(&s.session_id);
                        }
                        (U::Insert, true) => {
                            return Err((Code::AlreadyExists, "session exists".to_string()))
                        }
                        _ => return Err((Code::NotFound, "no such session".to_string())),
                    }
                }
                None => return Err((Code::InvalidArgument, "empty PRE entry".to_string())),
            },
            _ => return Err((Code::Unimplemented, "entity not supported".to_string())),
        }
        Ok(())
    }

    fn read_one(&self, e: &p4::Entity, out: &mut Vec<p4::Entity>) -> Res<()> {
        use p4::entity::Entity as E;
        use p4::packet_replication_engine_entry::Type as Pre;
        let wrap = |x: E| p4::Entity { entity: Some(x) };
        match e.entity.as_ref() {
            Some(E::TableEntry(t)) => {
                for ((id, _), entry) in &self.tables {
                    if t.table_id == 0 || t.table_id == *id {
                        out.push(wrap(E::TableEntry(entry.clone())));
                    }
                }
            }
            Some(E::RegisterEntry(r)) => {
                let (_, size) = self.register(r.register_id)?;
                let indices: Vec<i64> = match r.index {
                    Some(i) if i.index < 0 || i.index >= size => {
                        return Err((Code::OutOfRange, format!("index {}", i.index)))
                    }
                    Some(i) => vec![i.index],
                    None => (0..size).collect(),
                };
                for i in indices {
                    let v = self
                        .registers
                        .get(&(r.register_id, i))
                        .cloned()
                        .unwrap_or(vec![0]);
                    out.push(wrap(E::RegisterEntry(p4::RegisterEntry {
                        register_id: r.register_id,
                        index: Some(p4::Index { index: i }),
                        data: Some(p4::P4Data {
                            data: Some(p4::p4_data::Data::Bitstring(v)),
                        }),
                    })));
                }
            }
            Some(E::CounterEntry(c)) => {
                let size = self.counter_size(c.counter_id)?;
                let indices: Vec<i64> = match c.index {
                    Some(i) => vec![i.index],
                    None => (0..size).collect(),
                };
                for i in indices {
                    out.push(wrap(E::CounterEntry(p4::CounterEntry {
                        counter_id: c.counter_id,
                        index: Some(p4::Index { index: i }),
                        data: Some(
                            self.counters
                                .get(&(c.counter_id, i))
                                .copied()
                                .unwrap_or_default(),
                        ),
                    })));
                }
            }
            Some(E::PacketReplicationEngineEntry(p)) => match &p.r#type {
                Some(Pre::MulticastGroupEntry(g)) if g.multicast_group_id == 0 => {
                    for g in self.groups.values() {
                        out.push(wrap(E::PacketReplicationEngineEntry(
                            p4::PacketReplicationEngineEntry {
                                r#type: Some(Pre::MulticastGroupEntry(g.clone())),
                            },
                        )));
                    }
                }
                Some(Pre::MulticastGroupEntry(g)) => {
                    let g = self
                        .groups
                        .get(&g.multicast_group_id)
                        .ok_or((Code::NotFound, "Multicast group does not exist".to_string()))?;
                    out.push(wrap(E::PacketReplicationEngineEntry(
                        p4::PacketReplicationEngineEntry {
                            r#type: Some(Pre::MulticastGroupEntry(g.clone())),
                        },
                    )));
                }
                Some(Pre::CloneSessionEntry(s)) => {
                    for (id, x) in &self.sessions {
                        if s.session_id == 0 || s.session_id == *id {
                            out.push(wrap(E::PacketReplicationEngineEntry(
                                p4::PacketReplicationEngineEntry {
                                    r#type: Some(Pre::CloneSessionEntry(x.clone())),
                                },
                            )));
                        }
                    }
                    if s.session_id != 0 && !self.sessions.contains_key(&s.session_id) {
                        return Err((Code::NotFound, "Clone session id does not exist".into()));
                    }
                }
                None => return Err((Code::InvalidArgument, "empty PRE entry".to_string())),
            },
            None => return Err((Code::InvalidArgument, "empty entity".to_string())),
        }
        Ok(())
    }
}

type BoxStream<T> = Pin<Box<dyn tokio_stream::Stream<Item = Result<T, Status>> + Send>>;

#[tonic::async_trait]
impl P4Runtime for Service {
    async fn write(
        &self,
        req: Request<p4::WriteRequest>,
    ) -> Result<Response<p4::WriteResponse>, Status> {
        let req = req.into_inner();
        let mut st = self.state.lock().unwrap();
        st.write_requests += 1;
        st.updates_received += req.updates.len();
        st.batch_sizes.push(req.updates.len());
        if req.device_id != st.device_id {
            return Err(Status::not_found("unknown device id"));
        }
        if st.primary_election_id() != Some(uid(&req.election_id)) {
            return Err(Status::permission_denied("not the primary controller"));
        }
        let mut errors = Vec::with_capacity(req.updates.len());
        let mut failed = false;
        for u in &req.updates {
            let (code, message) = match st.apply(u) {
                Ok(()) => (Code::Ok, String::new()),
                Err(e) => {
                    failed = true;
                    e
                }
            };
            errors.push(p4::Error {
                canonical_code: code as i32,
                message,
                space: String::new(),
                code: 0,
            });
        }
        if !failed {
            return Ok(Response::new(p4::WriteResponse {}));
        }
        let details = rpc::Status {
            code: Code::Unknown as i32,
            message: "write failed".to_string(),
            details: errors
                .iter()
                .map(|e| prost_types::Any {
                    type_url: "type.googleapis.com/p4.v1.Error".to_string(),
                    value: e.encode_to_vec(),
                })
                .collect(),
        };
        Err(Status::with_details(
            Code::Unknown,
            "write failed",
            details.encode_to_vec().into(),
        ))
    }

    type ReadStream = BoxStream<p4::ReadResponse>;

    async fn read(
        &self,
        req: Request<p4::ReadRequest>,
    ) -> Result<Response<Self::ReadStream>, Status> {
        let req = req.into_inner();
        let mut st = self.state.lock().unwrap();
        st.read_requests += 1;
        if req.device_id != st.device_id {
            return Err(Status::not_found("unknown device id"));
        }
        let mut out = Vec::new();
        for e in &req.entities {
            st.read_one(e, &mut out)
                .map_err(|(c, m)| Status::new(c, m))?;
        }
        // Several messages of at most 100 entities, to exercise the client's collection.
        let msgs: Vec<Result<p4::ReadResponse, Status>> = out
            .chunks(100)
            .map(|c| {
                Ok(p4::ReadResponse {
                    entities: c.to_vec(),
                })
            })
            .collect();
        Ok(Response::new(Box::pin(tokio_stream::iter(msgs))))
    }

    async fn set_forwarding_pipeline_config(
        &self,
        req: Request<p4::SetForwardingPipelineConfigRequest>,
    ) -> Result<Response<p4::SetForwardingPipelineConfigResponse>, Status> {
        use p4::set_forwarding_pipeline_config_request::Action;
        let req = req.into_inner();
        let mut st = self.state.lock().unwrap();
        if req.device_id != st.device_id {
            return Err(Status::not_found("unknown device id"));
        }
        if st.primary_election_id() != Some(uid(&req.election_id)) {
            return Err(Status::permission_denied("not the primary controller"));
        }
        let Some(config) = req.config else {
            return Err(Status::invalid_argument("no config"));
        };
        let Some(p4info) = config.p4info else {
            return Err(Status::invalid_argument("no p4info"));
        };
        match Action::try_from(req.action) {
            Ok(Action::Verify) => {}
            Ok(Action::VerifyAndCommit) => {
                st.p4info = Some(p4info);
                st.device_config = config.p4_device_config;
                st.cookie = config.cookie.map(|c| c.cookie);
                st.tables.clear();
                st.registers.clear();
                st.counters.clear();
                st.groups.clear();
                st.sessions.clear();
            }
            _ => return Err(Status::unimplemented("only VERIFY and VERIFY_AND_COMMIT")),
        }
        Ok(Response::new(p4::SetForwardingPipelineConfigResponse {}))
    }

    async fn get_forwarding_pipeline_config(
        &self,
        req: Request<p4::GetForwardingPipelineConfigRequest>,
    ) -> Result<Response<p4::GetForwardingPipelineConfigResponse>, Status> {
        let req = req.into_inner();
        let st = self.state.lock().unwrap();
        if req.device_id != st.device_id {
            return Err(Status::not_found("unknown device id"));
        }
        // Like PI (bmv2): FAILED_PRECONDITION when none is set.
        let config = match &st.p4info {
            None => {
                return Err(Status::failed_precondition(
                    "No forwarding pipeline config set for this device",
                ))
            }
            Some(p) => p4::ForwardingPipelineConfig {
                p4info: Some(p.clone()),
                p4_device_config: Vec::new(),
                cookie: st
                    .cookie
                    .map(|cookie| p4::forwarding_pipeline_config::Cookie { cookie }),
            },
        };
        Ok(Response::new(p4::GetForwardingPipelineConfigResponse {
            config: Some(config),
        }))
    }

    type StreamChannelStream = BoxStream<p4::StreamMessageResponse>;

    async fn stream_channel(
        &self,
        req: Request<Streaming<p4::StreamMessageRequest>>,
    ) -> Result<Response<Self::StreamChannelStream>, Status> {
        let mut incoming = req.into_inner();
        let (tx, rx) = mpsc::channel(64);
        let state = self.state.clone();
        tokio::spawn(async move {
            let stream_id = {
                let mut st = state.lock().unwrap();
                st.next_stream += 1;
                st.next_stream
            };
            while let Some(msg) = incoming.next().await {
                let Ok(msg) = msg else { break };
                let Some(p4::stream_message_request::Update::Arbitration(a)) = msg.update else {
                    continue;
                };
                let mut st = state.lock().unwrap();
                if a.device_id != st.device_id {
                    let _ = tx.try_send(Err(Status::not_found(format!(
                        "device id {} is not known to this switch",
                        a.device_id
                    ))));
                    break;
                }
                let election_id = uid(&a.election_id);
                if st
                    .controllers
                    .iter()
                    .any(|(&s, c)| s != stream_id && c.election_id == election_id)
                {
                    let _ = tx.try_send(Err(Status::invalid_argument(
                        "election id already used by another controller",
                    )));
                    break;
                }
                st.controllers.insert(
                    stream_id,
                    Controller {
                        election_id,
                        tx: tx.clone(),
                    },
                );
                st.elect(Some(stream_id));
                let answer = st.arbitration_for(stream_id);
                let _ = tx.try_send(Ok(answer));
            }
            // The controller left: elect again and tell the others.
            let mut st = state.lock().unwrap();
            if st.controllers.remove(&stream_id).is_some() {
                st.elect(None);
            }
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }

    async fn capabilities(
        &self,
        _req: Request<p4::CapabilitiesRequest>,
    ) -> Result<Response<p4::CapabilitiesResponse>, Status> {
        Ok(Response::new(p4::CapabilitiesResponse {
            p4runtime_api_version: "1.4.0-test".to_string(),
        }))
    }
}

/// The test server, running until dropped.
pub struct TestSwitch {
    pub addr: SocketAddr,
    state: Arc<Mutex<State>>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl TestSwitch {
    /// Starts a switch with this device id on 127.0.0.1 and a free port.
    pub fn start(device_id: u64) -> TestSwitch {
        let state = Arc::new(Mutex::new(State {
            device_id,
            ..Default::default()
        }));
        let service = Service {
            state: state.clone(),
        };
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (shutdown, shutdown_rx) = oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                addr_tx.send(listener.local_addr().unwrap()).unwrap();
                tonic::transport::Server::builder()
                    .add_service(P4RuntimeServer::new(service))
                    .serve_with_incoming_shutdown(TcpListenerStream::new(listener), async {
                        let _ = shutdown_rx.await;
                    })
                    .await
                    .unwrap();
            });
        });
        let addr = addr_rx.recv().unwrap();
        TestSwitch {
            addr,
            state,
            shutdown: Some(shutdown),
            thread: Some(thread),
        }
    }

    /// `host:port`, as the client takes it.
    pub fn addr(&self) -> String {
        self.addr.to_string()
    }

    /// The switch's state, locked.
    pub fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap()
    }
}

impl Drop for TestSwitch {
    fn drop(&mut self) {
        if let Some(s) = self.shutdown.take() {
            let _ = s.send(());
        }
        // Open client streams keep the server's graceful shutdown waiting; the thread is left
        // to finish on its own rather than blocking the test.
        drop(self.thread.take());
    }
}

/// A free port on 127.0.0.1 with nothing listening (bound, then released).
pub fn dead_addr() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    drop(l);
    addr.to_string()
}
