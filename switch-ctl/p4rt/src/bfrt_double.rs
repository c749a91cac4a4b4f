//! An in-process BfRuntime server double, for testing the BfRt backend without a Tofino.
//!
//! It serves the program's `bf-rt.json` (the compiler's, as a real `bf_switchd` would) plus the
//! SDE's fixed tables the control plane uses ([`FIXED_TABLES`]: `$pre.mgid`, `$pre.node`,
//! `$mirror.cfg`, with the SDE's names, ids and types), keeps table entries, and checks every
//! request against the schema as a strict switch would: the client subscribed and bound to the
//! program, every table, key field, action and data field id exists, every key field of the
//! table is given once with the match type the schema says, every value has the byte length of
//! its field's width and fits it, register and counter indices are below the table's size,
//! mandatory action parameters are present, a string field takes one of its choices. A request
//! that breaks a rule is answered `INVALID_ARGUMENT` naming the update and the rule, and
//! changes nothing.

use std::collections::{BTreeMap, HashSet};
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::sync::mpsc;
use tokio_stream::{Stream, StreamExt};
use tonic::{Code, Request, Response, Status, Streaming};

use crate::bfrt::{decode, BfrtInfo, Field, FieldType, Table};
use crate::proto::bfrt_proto as bf;
use crate::proto::bfrt_proto::bf_runtime_server::{BfRuntime, BfRuntimeServer};

/// The SDE's fixed tables the SwitchGNN control plane uses, for Tofino 1: names, ids, key and
/// data fields as `bf_switchd` reports them in its non-P4 schema.
pub const FIXED_TABLES: &str = r#"{"tables": [
 {"name": "$pre.mgid", "id": 4278321153, "table_type": "PreMgid", "size": 65536,
  "key": [{"id": 1, "name": "$MGID", "match_type": "Exact", "type": {"type": "uint16"}}],
  "data": [
   {"mandatory": false, "singleton": {"id": 1, "name": "$MULTICAST_NODE_ID", "repeated": true, "type": {"type": "uint32"}}},
   {"mandatory": false, "singleton": {"id": 2, "name": "$MULTICAST_NODE_L1_XID_VALID", "repeated": true, "type": {"type": "bool"}}},
   {"mandatory": false, "singleton": {"id": 3, "name": "$MULTICAST_NODE_L1_XID", "repeated": true, "type": {"type": "uint16"}}}]},
 {"name": "$pre.node", "id": 4278321154, "table_type": "PreNode", "size": 16777216,
  "key": [{"id": 1, "name": "$MULTICAST_NODE_ID", "match_type": "Exact", "type": {"type": "uint32"}}],
  "data": [
   {"mandatory": true, "singleton": {"id": 1, "name": "$MULTICAST_RID", "repeated": false, "type": {"type": "uint16"}}},
   {"mandatory": true, "singleton": {"id": 2, "name": "$MULTICAST_LAG_ID", "repeated": true, "type": {"type": "uint8"}}},
   {"mandatory": true, "singleton": {"id": 3, "name": "$DEV_PORT", "repeated": true, "type": {"type": "uint32"}}}]},
 {"name": "$mirror.cfg", "id": 4278452225, "table_type": "MirrorCfg", "size": 1024,
  "key": [{"id": 1, "name": "$sid", "match_type": "Exact", "type": {"type": "uint16"}}],
  "action_specs": [{"id": 2, "name": "$normal", "data": []}],
  "data": [
   {"mandatory": false, "singleton": {"id": 5, "name": "$session_enable", "repeated": false, "type": {"type": "bool"}}},
   {"mandatory": false, "singleton": {"id": 6, "name": "$direction", "repeated": false, "type": {"type": "string", "choices": ["INGRESS", "EGRESS", "BOTH"]}}},
   {"mandatory": false, "singleton": {"id": 7, "name": "$ucast_egress_port", "repeated": false, "type": {"type": "uint32"}}},
   {"mandatory": false, "singleton": {"id": 8, "name": "$ucast_egress_port_valid", "repeated": false, "type": {"type": "bool"}}}]}
]}"#;

/// Pipes the double reports per register and counter cell (a two-pipe Tofino: the second
/// pipe's cells stay 0, so readers must combine per-pipe values).
const PIPES: usize = 2;

#[derive(Default)]
struct State {
    p4_name: String,
    program: Vec<u8>,
    info: BfrtInfo,
    /// String fields' choices, by (table id, field id).
    choices: BTreeMap<(u32, u32), Vec<String>>,
    entries: BTreeMap<u32, BTreeMap<Vec<u8>, bf::TableEntry>>,
    defaults: BTreeMap<u32, bf::TableData>,
    subscribed: HashSet<u32>,
    bound: HashSet<u32>,
    checked: u64,
    rejected: u64,
}

/// A running double; stops when dropped.
pub struct BfrtDouble {
    addr: String,
    state: Arc<Mutex<State>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for BfrtDouble {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl BfrtDouble {
    /// Serves `program_json` (a `bf-rt.json`) as program `p4_name` on 127.0.0.1, on a port of
    /// its own.
    pub fn start(p4_name: &str, program_json: &[u8]) -> Result<BfrtDouble, String> {
        let info = BfrtInfo::parse(program_json)
            .and_then(|p| Ok(p.merged(BfrtInfo::parse(FIXED_TABLES.as_bytes())?)))
            .map_err(|e| e.to_string())?;
        let mut choices = BTreeMap::new();
        for json in [program_json, FIXED_TABLES.as_bytes()] {
            let v: Value = serde_json::from_slice(json).map_err(|e| e.to_string())?;
            for t in v["tables"].as_array().into_iter().flatten() {
                let tid = t["id"].as_u64().unwrap_or(0) as u32;
                for d in t["data"].as_array().into_iter().flatten() {
                    let s = d.get("singleton").unwrap_or(d);
                    if let Some(c) = s["type"]["choices"].as_array() {
                        choices.insert(
                            (tid, s["id"].as_u64().unwrap_or(0) as u32),
                            c.iter()
                                .filter_map(|x| x.as_str().map(String::from))
                                .collect(),
                        );
                    }
                }
            }
        }
        let state = Arc::new(Mutex::new(State {
            p4_name: p4_name.to_string(),
            program: program_json.to_vec(),
            info,
            choices,
            ..Default::default()
        }));
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let svc_state = state.clone();
        let thread = std::thread::Builder::new()
            .name("bfrt-double".into())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("tokio runtime");
                rt.block_on(async move {
                    let l = match tokio::net::TcpListener::bind("127.0.0.1:0").await {
                        Ok(l) => l,
                        Err(e) => return ready_tx.send(Err(e.to_string())).unwrap_or(()),
                    };
                    let _ = ready_tx.send(
                        l.local_addr()
                            .map(|a| a.to_string())
                            .map_err(|e| e.to_string()),
                    );
                    let svc = BfRuntimeServer::new(Svc { state: svc_state })
                        .max_decoding_message_size(64 << 20)
                        .max_encoding_message_size(64 << 20);
                    let _ = tonic::transport::Server::builder()
                        .add_service(svc)
                        .serve_with_incoming_shutdown(
                            tokio_stream::wrappers::TcpListenerStream::new(l),
                            async {
                                let _ = stop_rx.await;
                            },
                        )
                        .await;
                })
            })
            .map_err(|e| e.to_string())?;
        let addr = ready_rx
            .recv()
            .map_err(|_| "the BfRt double's thread died".to_string())??;
        Ok(BfrtDouble {
            addr,
            state,
            stop: Some(stop_tx),
            thread: Some(thread),
        })
    }

    /// `host:port`.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// Updates checked against the schema and applied.
    pub fn updates_applied(&self) -> u64 {
        self.state.lock().unwrap().checked
    }

    /// Requests refused.
    pub fn requests_rejected(&self) -> u64 {
        self.state.lock().unwrap().rejected
    }

    /// Entries of the table `name` (full or last-component name).
    pub fn entries(&self, name: &str) -> usize {
        let s = self.state.lock().unwrap();
        let Ok(t) = s.info.table(name) else { return 0 };
        s.entries.get(&t.id).map_or(0, BTreeMap::len)
    }
}

struct Svc {
    state: Arc<Mutex<State>>,
}

type BoxStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send + 'static>>;

fn bad(i: usize, msg: String) -> Status {
    Status::invalid_argument(format!("update {i}: {msg}"))
}

/// The key's canonical bytes (field id, value bytes, in field-id order).
fn canonical(k: &bf::TableKey) -> Vec<u8> {
    let mut fs: Vec<&bf::KeyField> = k.fields.iter().collect();
    fs.sort_by_key(|f| f.field_id);
    let mut out = Vec::new();
    for f in fs {
        out.extend(f.field_id.to_be_bytes());
        use bf::key_field::MatchType as M;
        match &f.match_type {
            Some(M::Exact(x)) => out.extend(&x.value),
            Some(M::Ternary(x)) => {
                out.extend(&x.value);
                out.extend(&x.mask);
            }
            Some(M::Lpm(x)) => {
                out.extend(&x.value);
                out.extend(x.prefix_len.to_be_bytes());
            }
            Some(M::Range(x)) => {
                out.extend(&x.low);
                out.extend(&x.high);
            }
            Some(M::Optional(x)) => out.extend(&x.value),
            None => {}
        }
    }
    out
}

fn check_bytes(f: &Field, b: &[u8], what: &str) -> Result<(), String> {
    let w = f.ty.width();
    if b.len() != w.div_ceil(8) as usize {
        return Err(format!(
            "{what} `{}` is {} bits wide: {} bytes, got {}",
            f.name,
            w,
            w.div_ceil(8),
            b.len()
        ));
    }
    match decode(b) {
        Some(v) if w >= 128 || v >> w == 0 => Ok(()),
        _ => Err(format!(
            "{what} `{}`: the value does not fit {w} bits",
            f.name
        )),
    }
}

fn check_key(t: &Table, k: &bf::TableKey) -> Result<u128, String> {
    let mut seen = HashSet::new();
    let mut index = 0;
    for kf in &k.fields {
        let f = t
            .keys
            .iter()
            .find(|f| f.id == kf.field_id)
            .ok_or_else(|| format!("table `{}` has no key field id {}", t.name, kf.field_id))?;
        if !seen.insert(kf.field_id) {
            return Err(format!("key field `{}` given twice", f.name));
        }
        use bf::key_field::MatchType as M;
        let mt = f.match_type.as_deref().unwrap_or("Exact");
        match (&kf.match_type, mt) {
            (Some(M::Exact(x)), "Exact") => {
                check_bytes(f, &x.value, "key field")?;
                index = decode(&x.value).unwrap_or(0);
            }
            (Some(M::Ternary(x)), "Ternary") => {
                check_bytes(f, &x.value, "key field")?;
                check_bytes(f, &x.mask, "key mask")?;
            }
            (Some(M::Lpm(x)), "LPM") => {
                check_bytes(f, &x.value, "key field")?;
                if x.prefix_len < 0 || x.prefix_len as u32 > f.ty.width() {
                    return Err(format!(
                        "key field `{}`: prefix length {}",
                        f.name, x.prefix_len
                    ));
                }
            }
            (Some(M::Range(x)), "Range") => {
                check_bytes(f, &x.low, "key field")?;
                check_bytes(f, &x.high, "key field")?;
            }
            (m, want) => {
                return Err(format!(
                    "key field `{}` matches {want}, got {:?}",
                    f.name,
                    m.as_ref().map(|_| "another match type")
                ))
            }
        }
    }
    for f in &t.keys {
        if !seen.contains(&f.id) && f.match_type.as_deref() == Some("Exact") {
            return Err(format!(
                "exact key field `{}` of `{}` is missing",
                f.name, t.name
            ));
        }
    }
    if matches!(t.table_type.as_str(), "Register" | "Counter") && index >= t.size as u128 {
        return Err(format!(
            "index {index} of `{}` is beyond its {} cells",
            t.name, t.size
        ));
    }
    Ok(index)
}

fn check_data(
    t: &Table,
    d: &bf::TableData,
    choices: &BTreeMap<(u32, u32), Vec<String>>,
    insert: bool,
) -> Result<(), String> {
    let params: &[Field] = if t.actions.is_empty() {
        &[]
    } else {
        let a = t
            .action_by_id(d.action_id)
            .ok_or_else(|| format!("table `{}` has no action id {}", t.name, d.action_id))?;
        &a.data
    };
    let mut seen = HashSet::new();
    for df in &d.fields {
        let f = params
            .iter()
            .chain(&t.data)
            .find(|f| f.id == df.field_id)
            .ok_or_else(|| format!("`{}` has no data field id {} here", t.name, df.field_id))?;
        seen.insert(f.id);
        use bf::data_field::Value as V;
        match (&df.value, f.ty, f.repeated) {
            (Some(V::Stream(b)), FieldType::Bytes(_) | FieldType::Uint(_), false) => {
                check_bytes(f, b, "data field")?
            }
            // A register cell is written as one value for every pipe.
            (Some(V::Stream(b)), FieldType::Bytes(_), true) => check_bytes(f, b, "data field")?,
            (Some(V::IntArrVal(a)), FieldType::Uint(w), true) => {
                if let Some(v) = a.val.iter().find(|&&v| w < 32 && v >> w != 0) {
                    return Err(format!(
                        "data field `{}`: {v} does not fit {w} bits",
                        f.name
                    ));
                }
            }
            (Some(V::BoolArrVal(_)), FieldType::Bool, true) => {}
            (Some(V::BoolVal(_)), FieldType::Bool, false) => {}
            (Some(V::StrVal(s)), FieldType::Str, false) => {
                if let Some(c) = choices.get(&(t.id, f.id)) {
                    if !c.contains(s) {
                        return Err(format!(
                            "data field `{}` is one of {c:?}, got `{s}`",
                            f.name
                        ));
                    }
                }
            }
            _ => {
                return Err(format!(
                    "data field `{}` has the wrong kind of value for {:?}{}",
                    f.name,
                    f.ty,
                    if f.repeated { " (repeated)" } else { "" }
                ))
            }
        }
    }
    if insert && !t.actions.is_empty() {
        if let Some(p) = params.iter().find(|p| !seen.contains(&p.id)) {
            return Err(format!("action parameter `{}` is missing", p.name));
        }
    }
    Ok(())
}

impl State {
    fn table(&self, id: u32) -> Result<Table, String> {
        self.info
            .table_by_id(id)
            .cloned()
            .ok_or_else(|| format!("no table id {id}"))
    }

    fn cell(&self, t: &Table, key: &bf::TableKey) -> bf::TableEntry {
        // Registers and counters always exist: an unwritten cell reads 0 in every pipe.
        let id = canonical(key);
        if let Some(e) = self.entries.get(&t.id).and_then(|m| m.get(&id)) {
            return e.clone();
        }
        let fields = t
            .data
            .iter()
            .flat_map(|f| {
                std::iter::repeat_n(
                    bf::DataField {
                        field_id: f.id,
                        value: Some(bf::data_field::Value::Stream(vec![
                            0;
                            f.ty.width().div_ceil(8)
                                as usize
                        ])),
                    },
                    if t.table_type == "Register" { PIPES } else { 1 },
                )
            })
            .collect();
        bf::TableEntry {
            table_id: t.id,
            value: Some(bf::table_entry::Value::Key(key.clone())),
            data: Some(bf::TableData {
                action_id: 0,
                fields,
            }),
            ..Default::default()
        }
    }
}

#[tonic::async_trait]
impl BfRuntime for Svc {
    async fn write(
        &self,
        request: Request<bf::WriteRequest>,
    ) -> Result<Response<bf::WriteResponse>, Status> {
        let r = request.into_inner();
        let mut s = self.state.lock().unwrap();
        let refuse = |s: &mut State, st: Status| {
            s.rejected += 1;
            Err(st)
        };
        if !s.bound.contains(&r.client_id) {
            return refuse(
                &mut s,
                Status::failed_precondition(format!(
                    "client {} has not bound to a program (SetForwardingPipelineConfig BIND)",
                    r.client_id
                )),
            );
        }
        if !r.p4_name.is_empty() && r.p4_name != s.p4_name {
            let m = format!("this switch runs `{}`, not `{}`", s.p4_name, r.p4_name);
            return refuse(&mut s, Status::invalid_argument(m));
        }
        // Check every update first: a bad one changes nothing.
        let mut plan = Vec::new();
        for (i, u) in r.updates.iter().enumerate() {
            let Some(bf::entity::Entity::TableEntry(e)) =
                u.entity.as_ref().and_then(|e| e.entity.clone())
            else {
                return refuse(&mut s, bad(i, "not a table entry".into()));
            };
            let t = match s.table(e.table_id) {
                Ok(t) => t,
                Err(m) => return refuse(&mut s, bad(i, m)),
            };
            use bf::update::Type as U;
            let ty = U::try_from(u.r#type).unwrap_or(U::Unspecified);
            let key = e
                .value
                .as_ref()
                .map(|bf::table_entry::Value::Key(k)| k.clone());
            if e.is_default_entry {
                if ty != U::Modify || key.as_ref().is_some_and(|k| !k.fields.is_empty()) {
                    return refuse(
                        &mut s,
                        bad(i, "a default entry is MODIFY without a key".into()),
                    );
                }
            } else {
                let Some(k) = &key else {
                    return refuse(
                        &mut s,
                        bad(i, format!("an entry of `{}` needs a key", t.name)),
                    );
                };
                if let Err(m) = check_key(&t, k) {
                    return refuse(&mut s, bad(i, m));
                }
            }
            let needs_data = matches!(ty, U::Insert | U::Modify | U::InsertOrModify);
            match (&e.data, needs_data) {
                (Some(d), true) => {
                    let insert = matches!(ty, U::Insert | U::InsertOrModify)
                        && !matches!(t.table_type.as_str(), "Register" | "Counter");
                    if let Err(m) = check_data(&t, d, &s.choices, insert) {
                        return refuse(&mut s, bad(i, m));
                    }
                }
                (None, true) => return refuse(&mut s, bad(i, "no data".into())),
                _ => {}
            }
            if ty == U::Unspecified || ty == U::ModifyInc || ty == U::Reset {
                return refuse(
                    &mut s,
                    bad(
                        i,
                        format!("update type {ty:?} is not used by this control plane"),
                    ),
                );
            }
            plan.push((i, ty, t, key, e));
        }
        for (i, ty, t, key, e) in plan {
            use bf::update::Type as U;
            if e.is_default_entry {
                s.defaults.insert(t.id, e.data.clone().unwrap_or_default());
                s.checked += 1;
                continue;
            }
            let id = canonical(key.as_ref().expect("checked"));
            let cells = matches!(t.table_type.as_str(), "Register" | "Counter");
            let m = s.entries.entry(t.id).or_default();
            let exists = m.contains_key(&id);
            match ty {
                U::Insert if exists => {
                    return refuse(
                        &mut s,
                        Status::already_exists(format!(
                            "update {i}: the entry exists in `{}`",
                            t.name
                        )),
                    )
                }
                U::Modify | U::Delete if !exists && !cells => {
                    return refuse(
                        &mut s,
                        Status::not_found(format!("update {i}: no such entry in `{}`", t.name)),
                    )
                }
                _ => {}
            }
            if matches!(ty, U::Insert | U::InsertOrModify)
                && !exists
                && !cells
                && m.len() as u64 >= t.size
            {
                return refuse(
                    &mut s,
                    Status::resource_exhausted(format!(
                        "update {i}: `{}` is full ({} entries)",
                        t.name, t.size
                    )),
                );
            }
            if ty == U::Delete {
                m.remove(&id);
            } else {
                m.insert(id, e);
            }
            s.checked += 1;
        }
        Ok(Response::new(bf::WriteResponse { status: vec![] }))
    }

    type ReadStream = BoxStream<bf::ReadResponse>;

    async fn read(
        &self,
        request: Request<bf::ReadRequest>,
    ) -> Result<Response<Self::ReadStream>, Status> {
        let r = request.into_inner();
        let s = self.state.lock().unwrap();
        let mut out = Vec::new();
        for e in r.entities {
            let Some(bf::entity::Entity::TableEntry(e)) = e.entity else {
                return Err(Status::invalid_argument("only table entries are read here"));
            };
            let t = s.table(e.table_id).map_err(Status::invalid_argument)?;
            if e.is_default_entry {
                let d = s.defaults.get(&t.id).cloned().ok_or_else(|| {
                    Status::not_found(format!("`{}` has no default entry set", t.name))
                })?;
                out.push(bf::TableEntry {
                    table_id: t.id,
                    data: Some(d),
                    is_default_entry: true,
                    ..Default::default()
                });
                continue;
            }
            match &e.value {
                Some(bf::table_entry::Value::Key(k)) if !k.fields.is_empty() => {
                    check_key(&t, k).map_err(Status::invalid_argument)?;
                    if matches!(t.table_type.as_str(), "Register" | "Counter") {
                        out.push(s.cell(&t, k));
                    } else {
                        let got = s.entries.get(&t.id).and_then(|m| m.get(&canonical(k)));
                        out.push(got.cloned().ok_or_else(|| {
                            Status::not_found(format!("no such entry in `{}`", t.name))
                        })?);
                    }
                }
                _ => out.extend(
                    s.entries
                        .get(&t.id)
                        .into_iter()
                        .flat_map(|m| m.values().cloned()),
                ),
            }
        }
        let resp = bf::ReadResponse {
            entities: out
                .into_iter()
                .map(|t| bf::Entity {
                    entity: Some(bf::entity::Entity::TableEntry(t)),
                })
                .collect(),
            status: vec![],
        };
        Ok(Response::new(Box::pin(tokio_stream::once(Ok(resp)))))
    }

    async fn set_forwarding_pipeline_config(
        &self,
        request: Request<bf::SetForwardingPipelineConfigRequest>,
    ) -> Result<Response<bf::SetForwardingPipelineConfigResponse>, Status> {
        let r = request.into_inner();
        let mut s = self.state.lock().unwrap();
        if !s.subscribed.contains(&r.client_id) {
            return Err(Status::failed_precondition(format!(
                "client {} has not subscribed",
                r.client_id
            )));
        }
        let name = r
            .config
            .first()
            .map(|c| c.p4_name.clone())
            .unwrap_or_default();
        if r.action != bf::set_forwarding_pipeline_config_request::Action::Bind as i32 {
            return Err(Status::unimplemented(
                "this double only binds to the program it runs",
            ));
        }
        if name != s.p4_name {
            return Err(Status::not_found(format!(
                "no program `{name}`; this switch runs `{}`",
                s.p4_name
            )));
        }
        s.bound.insert(r.client_id);
        Ok(Response::new(Default::default()))
    }

    async fn get_forwarding_pipeline_config(
        &self,
        _request: Request<bf::GetForwardingPipelineConfigRequest>,
    ) -> Result<Response<bf::GetForwardingPipelineConfigResponse>, Status> {
        let s = self.state.lock().unwrap();
        Ok(Response::new(bf::GetForwardingPipelineConfigResponse {
            config: vec![bf::ForwardingPipelineConfig {
                p4_name: s.p4_name.clone(),
                bfruntime_info: s.program.clone(),
                profiles: vec![],
            }],
            non_p4_config: Some(bf::NonP4Config {
                bfruntime_info: FIXED_TABLES.as_bytes().to_vec(),
            }),
        }))
    }

    type StreamChannelStream = BoxStream<bf::StreamMessageResponse>;

    async fn stream_channel(
        &self,
        request: Request<Streaming<bf::StreamMessageRequest>>,
    ) -> Result<Response<Self::StreamChannelStream>, Status> {
        let mut inbound = request.into_inner();
        let (tx, rx) = mpsc::channel(8);
        let state = self.state.clone();
        tokio::spawn(async move {
            while let Some(Ok(m)) = inbound.next().await {
                if let Some(bf::stream_message_request::Update::Subscribe(sub)) = m.update {
                    state.lock().unwrap().subscribed.insert(m.client_id);
                    let answer = bf::StreamMessageResponse {
                        update: Some(bf::stream_message_response::Update::Subscribe(
                            bf::Subscribe {
                                device_id: sub.device_id,
                                notifications: sub.notifications,
                                status: Some(bf::Status {
                                    code: Code::Ok as i32,
                                    message: String::new(),
                                }),
                            },
                        )),
                    };
                    if tx.send(Ok(answer)).await.is_err() {
                        break;
                    }
                }
            }
        });
        Ok(Response::new(Box::pin(
            tokio_stream::wrappers::ReceiverStream::new(rx),
        )))
    }
}
