//! [`P4RuntimeClient`]: one controller session with one P4Runtime switch.
//!
//! Connecting opens the StreamChannel and performs arbitration (the client must become primary
//! to write); a background task then keeps the stream open and follows arbitration changes.
//! Writes are sent in batches, and a failed batch says which batch, which updates, and how many
//! updates the switch had already committed.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use prost::Message;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::{Channel, Endpoint};
use tonic::Code;

use crate::proto::google::rpc;
use crate::proto::p4::config::v1::P4Info;
use crate::proto::p4::v1 as p4;
use p4::p4_runtime_client::P4RuntimeClient as Grpc;

/// Default number of updates per WriteRequest.
pub const DEFAULT_BATCH_SIZE: usize = 1000;

/// How a client connects and talks; [`ClientOptions::default`] suits a switch on the same host
/// or LAN.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// How long to wait for the TCP/HTTP2 connection.
    pub connect_timeout: Duration,
    /// How long to wait for the arbitration answer on the StreamChannel.
    pub arbitration_timeout: Duration,
    /// Deadline of each unary call, and of each Read (all of its messages).
    pub rpc_timeout: Duration,
    /// Updates per WriteRequest.
    pub batch_size: usize,
    /// The P4Runtime role; empty is the default role (full access).
    pub role: String,
    /// TLS towards a `host:port` server; `None` is plaintext (loopback, Unix sockets).
    pub tls: Option<ClientTls>,
}

/// TLS on the P4Runtime channel (rustls): the server's certificate must chain to `ca_pem`
/// and name `domain` (by default the host of the address).
#[derive(Debug, Clone, Default)]
pub struct ClientTls {
    /// The CA certificate(s), PEM.
    pub ca_pem: Vec<u8>,
    /// The name the server's certificate must carry, if not the address's host.
    pub domain: Option<String>,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            connect_timeout: Duration::from_secs(5),
            arbitration_timeout: Duration::from_secs(5),
            rpc_timeout: Duration::from_secs(60),
            batch_size: DEFAULT_BATCH_SIZE,
            role: String::new(),
            tls: None,
        }
    }
}

/// The error of one update in a rejected WriteRequest, from the `p4.v1.Error` details of the
/// gRPC status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpdateFailure {
    /// Index of the update in the `updates` passed to [`P4RuntimeClient::write`].
    pub index: usize,
    /// The canonical gRPC code of this update's error.
    pub code: Code,
    /// The switch's message for this update.
    pub message: String,
}

impl fmt::Display for UpdateFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "update #{} {:?}: {}",
            self.index, self.code, self.message
        )
    }
}

/// What went wrong talking to a P4Runtime switch, and so who has to act.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The address does not parse as `host:port` or a URI.
    #[error(
        "`{addr}` is not a P4Runtime server address ({reason}); use host:port, e.g. 127.0.0.1:9559"
    )]
    BadAddress {
        /// The address given.
        addr: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Nothing answers at the address (or the connection broke).
    #[error("cannot reach the P4Runtime server at {addr}: {reason}; check that the switch is running and listening on {addr} (bmv2: simple_switch_grpc ... -- --grpc-server-addr {addr})")]
    Unreachable {
        /// The address.
        addr: String,
        /// What the transport said.
        reason: String,
    },
    /// The switch refused the StreamChannel or the arbitration (unknown device id, election id
    /// in use, ...).
    #[error("P4Runtime arbitration with {addr} (device {device_id}) failed: {code:?}: {message}")]
    Arbitration {
        /// The address.
        addr: String,
        /// The device id asked for.
        device_id: u64,
        /// The gRPC code.
        code: Code,
        /// The switch's message.
        message: String,
    },
    /// Arbitration succeeded but another controller has a higher election id.
    #[error("not the primary controller of device {device_id} at {addr}: our election id is {election_id}, the highest seen is {primary_election_id}; the switch said: {message}")]
    NotPrimary {
        /// The address.
        addr: String,
        /// The device id.
        device_id: u64,
        /// Our election id.
        election_id: u128,
        /// The election id the switch reports as the highest (the primary's).
        primary_election_id: u128,
        /// The status message of the arbitration answer.
        message: String,
    },
    /// A call other than Write failed on the switch.
    #[error("P4Runtime {rpc} to {addr} failed: {code:?}: {message}")]
    Rpc {
        /// Which call.
        rpc: &'static str,
        /// The address.
        addr: String,
        /// The gRPC code.
        code: Code,
        /// The switch's message.
        message: String,
    },
    /// A WriteRequest was rejected; see [`WriteFailure`].
    #[error("{0}")]
    Write(Box<WriteFailure>),
}

/// A rejected WriteRequest. Earlier batches were committed; the batch's own updates may be
/// partly applied (P4Runtime's CONTINUE_ON_ERROR), as `batch_applied` tells when the switch sent
/// per-update details; later batches were not sent.
#[derive(Debug, Clone)]
pub struct WriteFailure {
    /// The address.
    pub addr: String,
    /// Which batch failed (0-based).
    pub batch: usize,
    /// Number of batches the updates were cut into.
    pub batches: usize,
    /// Updates committed by the earlier batches.
    pub committed: usize,
    /// Updates in the failed batch.
    pub batch_len: usize,
    /// All updates passed to `write`.
    pub total: usize,
    /// The gRPC code of the batch.
    pub code: Code,
    /// The switch's message for the batch.
    pub message: String,
    /// The updates that failed, with their errors (empty if the switch sent no details).
    pub failures: Vec<UpdateFailure>,
    /// How many updates of the failed batch the switch reports as applied, if it sent
    /// per-update details.
    pub batch_applied: Option<usize>,
}

impl WriteFailure {
    /// Number of updates known to be applied.
    pub fn applied(&self) -> usize {
        self.committed + self.batch_applied.unwrap_or(0)
    }
}

impl fmt::Display for WriteFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "P4Runtime write to {} failed in batch {} of {} (updates {}..{}): {:?}",
            self.addr,
            self.batch + 1,
            self.batches,
            self.committed,
            self.committed + self.batch_len,
            self.code,
        )?;
        if !self.message.is_empty() {
            write!(f, ": {}", self.message)?;
        }
        write!(
            f,
            "; {} of {} updates were committed by earlier batches",
            self.committed, self.total
        )?;
        match self.batch_applied {
            Some(n) => write!(
                f,
                ", {n} of the {} in this batch were applied",
                self.batch_len
            )?,
            None => {
                f.write_str(", the switch did not say which updates of this batch were applied")?
            }
        }
        for u in self.failures.iter().take(5) {
            write!(f, "; {u}")?;
        }
        if self.failures.len() > 5 {
            write!(f, "; and {} more failed updates", self.failures.len() - 5)?;
        }
        Ok(())
    }
}

impl ClientError {
    /// Number of updates known to be applied when a write failed (0 for other errors).
    pub fn applied(&self) -> usize {
        match self {
            ClientError::Write(w) => w.applied(),
            _ => 0,
        }
    }

    /// The gRPC code the switch answered with, if it answered.
    pub fn code(&self) -> Option<Code> {
        match self {
            ClientError::Arbitration { code, .. } | ClientError::Rpc { code, .. } => Some(*code),
            ClientError::Write(w) => Some(w.code),
            _ => None,
        }
    }
}

/// What the background task knows about the stream.
#[derive(Debug, Default)]
struct StreamState {
    primary: bool,
    primary_election_id: u128,
    closed: Option<String>,
    errors: Vec<String>,
}

/// A P4Runtime client session with one device: arbitrated, with the StreamChannel kept open.
///
/// Dropping it closes the stream, which the switch takes as the controller leaving.
pub struct P4RuntimeClient {
    grpc: Grpc<Channel>,
    addr: String,
    device_id: u64,
    election_id: u128,
    options: ClientOptions,
    state: Arc<Mutex<StreamState>>,
    // Held so the request half of the StreamChannel stays open.
    _stream_tx: mpsc::Sender<p4::StreamMessageRequest>,
    stream_task: JoinHandle<()>,
}

impl fmt::Debug for P4RuntimeClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("P4RuntimeClient")
            .field("addr", &self.addr)
            .field("device_id", &self.device_id)
            .field("election_id", &self.election_id)
            .finish_non_exhaustive()
    }
}

impl Drop for P4RuntimeClient {
    fn drop(&mut self) {
        self.stream_task.abort();
    }
}

/// `u128` to P4Runtime's `Uint128`.
pub fn to_uint128(v: u128) -> p4::Uint128 {
    p4::Uint128 {
        high: (v >> 64) as u64,
        low: v as u64,
    }
}

/// P4Runtime's `Uint128` to `u128`.
pub fn from_uint128(v: &p4::Uint128) -> u128 {
    ((v.high as u128) << 64) | v.low as u128
}

/// The causes of an error, joined, so "transport error" says what actually failed.
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let m = c.to_string();
        if !s.contains(&m) {
            s.push_str(": ");
            s.push_str(&m);
        }
        cur = c.source();
    }
    s
}

/// The `p4.v1.Error` details of a gRPC status, in update order (empty when there are none).
pub fn update_errors(status: &tonic::Status) -> Vec<p4::Error> {
    let Ok(details) = rpc::Status::decode(status.details()) else {
        return Vec::new();
    };
    details
        .details
        .iter()
        .filter(|any| any.type_url.ends_with("/p4.v1.Error"))
        .filter_map(|any| p4::Error::decode(any.value.as_slice()).ok())
        .collect()
}

/// A cookie for a pipeline: FNV-1a of the encoded P4Info and the device config, so
/// [`P4RuntimeClient::get_pipeline`] can tell whether the same pipeline is installed without
/// fetching the device config.
pub fn pipeline_cookie(p4info: &P4Info, device_config: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in p4info.encode_to_vec().iter().chain(device_config) {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

impl P4RuntimeClient {
    /// Connects to a P4Runtime server at `addr` (`host:port`, or `unix:/path`), opens the StreamChannel and
    /// becomes primary for `device_id` with `election_id`, with [`ClientOptions::default`].
    pub async fn connect(
        addr: &str,
        device_id: u64,
        election_id: u128,
    ) -> Result<Self, ClientError> {
        Self::connect_with(addr, device_id, election_id, ClientOptions::default()).await
    }

    /// [`P4RuntimeClient::connect`] with explicit options.
    pub async fn connect_with(
        addr: &str,
        device_id: u64,
        election_id: u128,
        options: ClientOptions,
    ) -> Result<Self, ClientError> {
        if options.tls.is_some() && addr.starts_with("unix:") {
            return Err(ClientError::BadAddress {
                addr: addr.to_string(),
                reason: "TLS is for host:port addresses; a Unix socket is protected by its file permissions".into(),
            });
        }
        let scheme = if options.tls.is_some() {
            "https"
        } else {
            "http"
        };
        let uri = if addr.contains("://") {
            addr.to_string()
        } else if addr.starts_with("unix:") {
            // The URI is not used for the connection, only for the requests' authority.
            "http://localhost".to_string()
        } else {
            format!("{scheme}://{addr}")
        };
        let mut endpoint = Endpoint::from_shared(uri).map_err(|e| ClientError::BadAddress {
            addr: addr.to_string(),
            reason: chain(&e),
        })?;
        if let Some(tls) = &options.tls {
            let mut cfg = tonic::transport::ClientTlsConfig::new()
                .ca_certificate(tonic::transport::Certificate::from_pem(&tls.ca_pem));
            if let Some(d) = &tls.domain {
                cfg = cfg.domain_name(d.clone());
            }
            endpoint = endpoint
                .tls_config(cfg)
                .map_err(|e| ClientError::BadAddress {
                    addr: addr.to_string(),
                    reason: format!("TLS configuration: {}", chain(&e)),
                })?;
        }
        let endpoint = endpoint
            .connect_timeout(options.connect_timeout)
            .tcp_nodelay(true)
            .tcp_keepalive(Some(Duration::from_secs(60)))
            // A rejected write batch carries one p4.v1.Error per update in the status's
            // trailers (grpc-status-details-bin): about 60 KB for a batch of 1000 even when
            // one update failed, above h2's default limit of 16 KB, which turned every such
            // refusal into "h2 protocol error". 16 MB holds the details of any batch.
            .http2_max_header_list_size(16 << 20);
        let unreachable = |reason: String| ClientError::Unreachable {
            addr: addr.to_string(),
            reason,
        };
        // `unix:/path`: a Unix socket, which reaches a switch inside another network namespace.
        let connect = async {
            match addr.strip_prefix("unix:") {
                Some(path) => {
                    let path = std::path::PathBuf::from(path);
                    endpoint
                        .connect_with_connector(tower::service_fn(
                            move |_: tonic::transport::Uri| {
                                let path = path.clone();
                                async move {
                                    let s = tokio::net::UnixStream::connect(path).await?;
                                    Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(s))
                                }
                            },
                        ))
                        .await
                }
                None => endpoint.connect().await,
            }
        };
        let channel = match tokio::time::timeout(options.connect_timeout, connect).await {
            Err(_) => {
                return Err(unreachable(format!(
                    "no connection within {:?}",
                    options.connect_timeout
                )))
            }
            Ok(Err(e)) => return Err(unreachable(chain(&e))),
            Ok(Ok(c)) => c,
        };
        let mut grpc = Grpc::new(channel).max_decoding_message_size(usize::MAX);

        // Queue the arbitration request before opening the stream: servers answer with their
        // first message, and tonic waits for the response headers, which come with it.
        let (tx, rx) = mpsc::channel(16);
        let role = (!options.role.is_empty()).then(|| p4::Role {
            name: options.role.clone(),
            config: None,
        });
        let arbitration = p4::StreamMessageRequest {
            update: Some(p4::stream_message_request::Update::Arbitration(
                p4::MasterArbitrationUpdate {
                    device_id,
                    role,
                    election_id: Some(to_uint128(election_id)),
                    status: None,
                },
            )),
        };
        tx.send(arbitration)
            .await
            .expect("the receiver is alive until the stream is opened");
        // A plaintext client at a TLS endpoint sees the connection cut: say what to try.
        let plaintext = options.tls.is_none() && !addr.starts_with("unix:");
        let hint = |m: &str| {
            // tonic reports it as a transport or an h2 error, depending on timing.
            let cut = [
                "transport error",
                "h2 protocol error",
                "http2 error",
                "connection",
            ]
            .iter()
            .any(|k| m.contains(k));
            if plaintext && cut {
                format!("{m} (if the switch serves P4Runtime over TLS, give its CA with --tls-ca)")
            } else {
                m.to_string()
            }
        };
        let arbitration_failed = |status: tonic::Status| match status.code() {
            Code::Unavailable => unreachable(hint(status.message())),
            code => ClientError::Arbitration {
                addr: addr.to_string(),
                device_id,
                code,
                message: hint(status.message()),
            },
        };
        let timeout = options.arbitration_timeout;
        let timed_out = || ClientError::Arbitration {
            addr: addr.to_string(),
            device_id,
            code: Code::DeadlineExceeded,
            message: if plaintext {
                format!("no arbitration answer within {timeout:?} (if the switch serves P4Runtime over TLS, give its CA with --tls-ca)")
            } else {
                format!("no arbitration answer within {timeout:?}")
            },
        };
        let mut stream =
            tokio::time::timeout(timeout, grpc.stream_channel(ReceiverStream::new(rx)))
                .await
                .map_err(|_| timed_out())?
                .map_err(arbitration_failed)?
                .into_inner();
        let answer = loop {
            let msg = tokio::time::timeout(timeout, stream.message())
                .await
                .map_err(|_| timed_out())?
                .map_err(arbitration_failed)?;
            match msg.and_then(|m| m.update) {
                Some(p4::stream_message_response::Update::Arbitration(a)) => break a,
                Some(_) => continue,
                None => {
                    return Err(ClientError::Arbitration {
                        addr: addr.to_string(),
                        device_id,
                        code: Code::Unavailable,
                        message:
                            "the switch closed the StreamChannel without an arbitration answer"
                                .to_string(),
                    })
                }
            }
        };
        let status = answer.status.unwrap_or_default();
        let primary_election_id = answer.election_id.as_ref().map_or(0, from_uint128);
        if status.code != Code::Ok as i32 {
            return Err(ClientError::NotPrimary {
                addr: addr.to_string(),
                device_id,
                election_id,
                primary_election_id,
                message: format!("{:?}: {}", Code::from_i32(status.code), status.message),
            });
        }

        let state = Arc::new(Mutex::new(StreamState {
            primary: true,
            primary_election_id,
            ..Default::default()
        }));
        let task_state = state.clone();
        let stream_task = tokio::spawn(async move {
            let end = loop {
                match stream.message().await {
                    Ok(Some(msg)) => {
                        let mut st = task_state.lock().unwrap_or_else(|p| p.into_inner());
                        match msg.update {
                            Some(p4::stream_message_response::Update::Arbitration(a)) => {
                                st.primary = a.status.is_some_and(|s| s.code == 0);
                                st.primary_election_id =
                                    a.election_id.as_ref().map_or(0, from_uint128);
                            }
                            Some(p4::stream_message_response::Update::Error(e))
                                if st.errors.len() < 100 =>
                            {
                                st.errors.push(format!(
                                    "{:?}: {}",
                                    Code::from_i32(e.canonical_code),
                                    e.message
                                ));
                            }
                            Some(p4::stream_message_response::Update::Error(_)) => {}
                            None => {}
                        }
                    }
                    Ok(None) => break "the switch closed the StreamChannel".to_string(),
                    Err(s) => {
                        break format!("StreamChannel failed: {:?}: {}", s.code(), s.message())
                    }
                }
            };
            let mut st = task_state.lock().unwrap_or_else(|p| p.into_inner());
            st.primary = false;
            st.closed = Some(end);
        });
        Ok(P4RuntimeClient {
            grpc,
            addr: addr.to_string(),
            device_id,
            election_id,
            options,
            state,
            _stream_tx: tx,
            stream_task,
        })
    }

    /// The server address.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// The device id.
    pub fn device_id(&self) -> u64 {
        self.device_id
    }

    /// Our election id.
    pub fn election_id(&self) -> u128 {
        self.election_id
    }

    /// Updates per WriteRequest.
    pub fn batch_size(&self) -> usize {
        self.options.batch_size
    }

    /// Sets the number of updates per WriteRequest (at least 1).
    pub fn set_batch_size(&mut self, n: usize) {
        self.options.batch_size = n.max(1);
    }

    /// Whether we are still primary, as far as the StreamChannel says (false once it closed).
    pub fn is_primary(&self) -> bool {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).primary
    }

    /// Why the StreamChannel closed, if it did.
    pub fn stream_closed(&self) -> Option<String> {
        self.state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .closed
            .clone()
    }

    /// Errors the switch reported on the StreamChannel (at most 100 are kept).
    pub fn stream_errors(&self) -> Vec<String> {
        self.state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .errors
            .clone()
    }

    fn rpc_error(&self, rpc: &'static str, status: tonic::Status) -> ClientError {
        match status.code() {
            Code::Unavailable => ClientError::Unreachable {
                addr: self.addr.clone(),
                reason: format!("{rpc}: {}", status.message()),
            },
            code => ClientError::Rpc {
                rpc,
                addr: self.addr.clone(),
                code,
                message: status.message().to_string(),
            },
        }
    }

    fn request<T>(&self, msg: T) -> tonic::Request<T> {
        let mut r = tonic::Request::new(msg);
        r.set_timeout(self.options.rpc_timeout);
        r
    }

    /// The P4Runtime version the server implements (e.g. "1.3.0").
    pub async fn capabilities(&self) -> Result<String, ClientError> {
        let req = self.request(p4::CapabilitiesRequest {
            device_id: self.device_id,
        });
        let resp = self
            .grpc
            .clone()
            .capabilities(req)
            .await
            .map_err(|s| self.rpc_error("Capabilities", s))?;
        Ok(resp.into_inner().p4runtime_api_version)
    }

    /// Installs a pipeline (VERIFY_AND_COMMIT): the P4Info and the target's binary (bmv2: the
    /// JSON p4c wrote). The cookie is [`pipeline_cookie`] of the two. All table entries and
    /// other state of the previous pipeline are lost.
    pub async fn set_pipeline(
        &self,
        p4info: &P4Info,
        device_config: Vec<u8>,
    ) -> Result<(), ClientError> {
        let cookie = pipeline_cookie(p4info, &device_config);
        let req = self.request(p4::SetForwardingPipelineConfigRequest {
            device_id: self.device_id,
            role: self.options.role.clone(),
            election_id: Some(to_uint128(self.election_id)),
            action: p4::set_forwarding_pipeline_config_request::Action::VerifyAndCommit as i32,
            config: Some(p4::ForwardingPipelineConfig {
                p4info: Some(p4info.clone()),
                p4_device_config: device_config,
                cookie: Some(p4::forwarding_pipeline_config::Cookie { cookie }),
            }),
        });
        self.grpc
            .clone()
            .set_forwarding_pipeline_config(req)
            .await
            .map_err(|s| self.rpc_error("SetForwardingPipelineConfig", s))?;
        Ok(())
    }

    /// The installed pipeline's P4Info and cookie, or `None` if the device has no pipeline.
    pub async fn get_pipeline(&self) -> Result<Option<(P4Info, Option<u64>)>, ClientError> {
        let req = self.request(p4::GetForwardingPipelineConfigRequest {
            device_id: self.device_id,
            response_type: p4::get_forwarding_pipeline_config_request::ResponseType::P4infoAndCookie
                as i32,
        });
        let resp = match self.grpc.clone().get_forwarding_pipeline_config(req).await {
            Ok(r) => r,
            // PI (bmv2) answers FAILED_PRECONDITION when no pipeline is set; others send an
            // empty config.
            Err(s) if s.code() == Code::FailedPrecondition => return Ok(None),
            Err(s) => return Err(self.rpc_error("GetForwardingPipelineConfig", s)),
        };
        let Some(config) = resp.into_inner().config else {
            return Ok(None);
        };
        let cookie = config.cookie.map(|c| c.cookie);
        Ok(config
            .p4info
            .filter(|p| *p != P4Info::default())
            .map(|p| (p, cookie)))
    }

    /// Sends the updates in WriteRequests of [`Self::batch_size`] updates each, in order, one
    /// request at a time, and stops at the first rejected request. Returns the number of requests
    /// sent.
    pub async fn write(&self, updates: Vec<p4::Update>) -> Result<usize, ClientError> {
        let total = updates.len();
        let size = self.options.batch_size.max(1);
        let batches = total.div_ceil(size);
        let mut committed = 0;
        let mut iter = updates.into_iter();
        for batch in 0..batches {
            let chunk: Vec<p4::Update> = iter.by_ref().take(size).collect();
            let batch_len = chunk.len();
            let req = self.request(p4::WriteRequest {
                device_id: self.device_id,
                role: self.options.role.clone(),
                election_id: Some(to_uint128(self.election_id)),
                updates: chunk,
                atomicity: p4::write_request::Atomicity::ContinueOnError as i32,
            });
            if let Err(status) = self.grpc.clone().write(req).await {
                let details = update_errors(&status);
                let batch_applied = (details.len() == batch_len).then(|| {
                    details
                        .iter()
                        .filter(|e| e.canonical_code == Code::Ok as i32)
                        .count()
                });
                let failures = details
                    .iter()
                    .enumerate()
                    .filter(|(_, e)| e.canonical_code != Code::Ok as i32)
                    .map(|(i, e)| UpdateFailure {
                        index: committed + i,
                        code: Code::from_i32(e.canonical_code),
                        message: e.message.clone(),
                    })
                    .collect();
                return Err(ClientError::Write(Box::new(WriteFailure {
                    addr: self.addr.clone(),
                    batch,
                    batches,
                    committed,
                    batch_len,
                    total,
                    code: status.code(),
                    message: status.message().to_string(),
                    failures,
                    batch_applied,
                })));
            }
            committed += batch_len;
        }
        Ok(batches)
    }

    /// Reads entities (unset fields are wildcards) and collects every answer message.
    pub async fn read(&self, entities: Vec<p4::Entity>) -> Result<Vec<p4::Entity>, ClientError> {
        let req = self.request(p4::ReadRequest {
            device_id: self.device_id,
            role: self.options.role.clone(),
            entities,
        });
        let mut stream = self
            .grpc
            .clone()
            .read(req)
            .await
            .map_err(|s| self.rpc_error("Read", s))?
            .into_inner();
        let mut out = Vec::new();
        while let Some(msg) = stream
            .message()
            .await
            .map_err(|s| self.rpc_error("Read", s))?
        {
            out.extend(msg.entities);
        }
        Ok(out)
    }
}
