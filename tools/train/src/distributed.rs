//! Training across worker processes: every neighbour sum goes through the worker's SwitchGNN
//! daemon (`sgnn-hostd --serve`, over its Unix socket), and the few dense sums (weight
//! gradients, loss, accuracy counts, and the maximum that fixes each exchange's fixed-point
//! scale) go through a coordinator over TCP (the host path; `docs/training.md` says why).
//!
//! # The coordinator link
//! Every message is `length: u32 | kind: u8 | body` (little-endian; `length` counts `kind` and
//! `body`), as on the daemon's socket:
//!
//! | kind | direction | body |
//! |---|---|---|
//! | 1 `JOIN` | worker -> coordinator | `worker u32` |
//! | 2 `SUM` | worker -> coordinator | `f64[k]`: replaced by the element-wise sum over workers |
//! | 3 `MAX` | worker -> coordinator | `f64[k]`: replaced by the element-wise maximum |
//! | 4 `EPOCH` | worker -> coordinator | UTF-8 JSON of one epoch (progress; worker 0 only) |
//! | 5 `DONE` | worker -> coordinator | empty: training ended, the connection may close |
//! | 129 `RESULT` | coordinator -> worker | `f64[k]`: the reduced values |
//! | 255 `ABORT` | coordinator -> worker | UTF-8 reason: another worker died; stop now |
//!
//! A worker whose connection closes before `DONE` is dead: the coordinator sends `ABORT`
//! naming it to every other worker at once, and each of them stops (even in the middle of an
//! exchange that can no longer complete) instead of waiting for a timeout.

use std::cell::RefCell;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use ndarray::{Array2, ArrayView2};
use sgnn_wire::codec::FixedPoint;

use crate::daemon::SumService;
use crate::exchange::Exchange;
use crate::train::Collective;
use crate::{ExchangeError, ShapeMismatch, TrainError};

/// Message kinds of the coordinator link.
pub mod kind {
    /// A worker introduces itself.
    pub const JOIN: u8 = 1;
    /// Element-wise sum.
    pub const SUM: u8 = 2;
    /// Element-wise maximum.
    pub const MAX: u8 = 3;
    /// One epoch's progress record.
    pub const EPOCH: u8 = 4;
    /// Training ended.
    pub const DONE: u8 = 5;
    /// The reduced values.
    pub const RESULT: u8 = 129;
    /// Stop: another worker died.
    pub const ABORT: u8 = 255;
}

const MAX_MESSAGE: usize = 1 << 30;

fn write_msg(w: &mut impl Write, kind: u8, body: &[u8]) -> io::Result<()> {
    let len = body.len() + 1;
    if len > MAX_MESSAGE {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "message over 1 GiB",
        ));
    }
    w.write_all(&(len as u32).to_le_bytes())?;
    w.write_all(&[kind])?;
    w.write_all(body)?;
    w.flush()
}

fn read_msg(r: &mut impl Read) -> io::Result<Option<(u8, Vec<u8>)>> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_le_bytes(len) as usize;
    if len == 0 || len > MAX_MESSAGE {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("message length {len} is not in 1..=2^30"),
        ));
    }
    let mut buf = vec![0u8; len];
    r.read_exact(&mut buf)?;
    let k = buf.remove(0);
    Ok(Some((k, buf)))
}

fn f64s_to_bytes(v: &[f64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn bytes_to_f64s(b: &[u8]) -> Result<Vec<f64>, TrainError> {
    if !b.len().is_multiple_of(8) {
        return Err(ExchangeError::NotFloat64s { bytes: b.len() }.into());
    }
    Ok(b.chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect())
}

pub(crate) fn io_err(what: &'static str) -> impl Fn(io::Error) -> TrainError {
    move |reason| ExchangeError::Io { what, reason }.into()
}

/// A worker's end of the coordinator link. A reader thread hands results to the caller and
/// calls `on_abort` (which should end the process) when the coordinator says another worker
/// died or the coordinator itself goes away.
pub struct CoordLink {
    writer: BufWriter<TcpStream>,
    results: mpsc::Receiver<Vec<u8>>,
    /// Set when this side closes the link (done, or dropped while returning an error): the
    /// reader then ends quietly instead of reporting the coordinator gone, so the worker's own
    /// error is what gets printed.
    closing: std::sync::Arc<AtomicBool>,
}

impl CoordLink {
    /// Connects to the coordinator at `addr` as `worker`.
    pub fn connect(
        addr: &str,
        worker: u32,
        on_abort: Box<dyn Fn(String) + Send>,
    ) -> Result<CoordLink, TrainError> {
        let stream = TcpStream::connect(addr).map_err(|reason| ExchangeError::Connect {
            addr: addr.to_string(),
            reason,
        })?;
        stream.set_nodelay(true).ok();
        let mut reader = BufReader::new(
            stream
                .try_clone()
                .map_err(io_err("cloning the coordinator socket"))?,
        );
        let mut writer = BufWriter::new(stream);
        write_msg(&mut writer, kind::JOIN, &worker.to_le_bytes())
            .map_err(io_err("joining the coordinator"))?;
        let (tx, rx) = mpsc::channel();
        let closing = std::sync::Arc::new(AtomicBool::new(false));
        let closed_here = closing.clone();
        std::thread::Builder::new()
            .name("coordinator-link".into())
            .spawn(move || loop {
                match read_msg(&mut reader) {
                    Ok(Some((kind::RESULT, body))) => {
                        if tx.send(body).is_err() {
                            return;
                        }
                    }
                    Ok(Some((kind::ABORT, body))) => {
                        on_abort(String::from_utf8_lossy(&body).into_owned());
                        return;
                    }
                    Ok(Some((k, _))) => {
                        on_abort(format!("the coordinator sent an unknown message kind {k}"));
                        return;
                    }
                    Ok(None) => {
                        // After DONE the receiver is gone and this is the normal end.
                        if !closed_here.load(Ordering::SeqCst) && tx.send(Vec::new()).is_ok() {
                            on_abort("the coordinator closed the connection".into());
                        }
                        return;
                    }
                    Err(e) => {
                        if !closed_here.load(Ordering::SeqCst) {
                            on_abort(format!("reading from the coordinator: {e}"));
                        }
                        return;
                    }
                }
            })
            .map_err(io_err("starting the coordinator reader"))?;
        Ok(CoordLink {
            writer,
            results: rx,
            closing,
        })
    }

    fn reduce(&mut self, k: u8, v: &mut [f64]) -> Result<(), TrainError> {
        write_msg(&mut self.writer, k, &f64s_to_bytes(v))
            .map_err(io_err("sending to the coordinator"))?;
        let body = self
            .results
            .recv()
            .map_err(|_| ExchangeError::CoordinatorClosed)?;
        let r = bytes_to_f64s(&body)?;
        if r.len() != v.len() {
            return Err(ExchangeError::ReductionLength {
                got: r.len(),
                sent: v.len(),
            }
            .into());
        }
        v.copy_from_slice(&r);
        Ok(())
    }

    /// Sends one epoch's progress record (JSON).
    pub fn epoch(&mut self, json: &str) -> Result<(), TrainError> {
        write_msg(&mut self.writer, kind::EPOCH, json.as_bytes())
            .map_err(io_err("sending progress to the coordinator"))
    }

    /// Says training ended; the connection may close after this.
    pub fn done(&mut self) -> Result<(), TrainError> {
        drop(std::mem::replace(&mut self.results, mpsc::channel().1));
        write_msg(&mut self.writer, kind::DONE, &[]).map_err(io_err("saying DONE"))
    }
}

impl Drop for CoordLink {
    /// Closes the connection (the reader thread holds a clone of the socket, which alone would
    /// keep it open): the coordinator sees a link dropped before `DONE` as a dead worker.
    fn drop(&mut self) {
        self.closing.store(true, Ordering::SeqCst);
        let _ = self.writer.flush();
        let _ = self.writer.get_ref().shutdown(std::net::Shutdown::Both);
    }
}

/// The coordinator link shared by the exchange (for its scale) and the trainer (for the
/// weight gradients): one thread, so a plain `Rc<RefCell<_>>`.
#[derive(Clone)]
pub struct SharedLink(pub Rc<RefCell<CoordLink>>);

impl SharedLink {
    /// Wraps a link.
    pub fn new(l: CoordLink) -> SharedLink {
        SharedLink(Rc::new(RefCell::new(l)))
    }

    /// Element-wise maximum over the workers.
    pub fn all_reduce_max(&self, v: &mut [f64]) -> Result<(), TrainError> {
        self.0.borrow_mut().reduce(kind::MAX, v)
    }
}

impl Collective for SharedLink {
    fn all_reduce_sum(&mut self, v: &mut [f64]) -> Result<(), TrainError> {
        self.0.borrow_mut().reduce(kind::SUM, v)
    }
}

/// What one coordinated run saw.
#[derive(Debug, Default, Clone)]
pub struct CoordinatorStats {
    /// Reductions performed (sums and maxima).
    pub reductions: u64,
    /// Bytes received from the workers.
    pub bytes_in: u64,
}

enum Event {
    Msg(u8, Vec<u8>),
    Closed(String),
}

/// Runs the coordinator on `listener` for `workers` workers until every one said `DONE`.
/// `stop` aborts it (the caller saw a child die or Ctrl-C); `on_epoch` gets worker 0's
/// progress records. A worker that disconnects before `DONE` makes every other worker stop
/// (`ABORT`) and this returns an error naming it.
pub fn coordinate(
    listener: TcpListener,
    workers: usize,
    join_timeout: Duration,
    stop: &AtomicBool,
    on_epoch: &mut dyn FnMut(&str),
) -> Result<CoordinatorStats, TrainError> {
    listener
        .set_nonblocking(true)
        .map_err(io_err("setting up the coordinator"))?;
    let started = Instant::now();
    let mut writers: Vec<Option<BufWriter<TcpStream>>> = (0..workers).map(|_| None).collect();
    let (tx, rx) = mpsc::channel::<(usize, Event)>();
    let mut joined = 0;
    while joined < workers {
        if stop.load(Ordering::SeqCst) {
            return Err(ExchangeError::StoppedBeforeJoin.into());
        }
        match listener.accept() {
            Ok((s, _)) => {
                s.set_nonblocking(false)
                    .map_err(io_err("accepting a worker"))?;
                s.set_nodelay(true).ok();
                s.set_read_timeout(Some(Duration::from_secs(30))).ok();
                let mut r = BufReader::new(s.try_clone().map_err(io_err("accepting a worker"))?);
                let w = match read_msg(&mut r) {
                    Ok(Some((kind::JOIN, b))) if b.len() == 4 => {
                        u32::from_le_bytes(b.try_into().expect("4 bytes")) as usize
                    }
                    _ => continue, // not one of ours: ignore the connection
                };
                if w >= workers || writers[w].is_some() {
                    continue;
                }
                s.set_read_timeout(None).ok();
                writers[w] = Some(BufWriter::new(s));
                joined += 1;
                let tx = tx.clone();
                std::thread::Builder::new()
                    .name(format!("coordinator-w{w}"))
                    .spawn(move || loop {
                        match read_msg(&mut r) {
                            Ok(Some((k, b))) => {
                                let done = k == kind::DONE;
                                if tx.send((w, Event::Msg(k, b))).is_err() || done {
                                    return;
                                }
                            }
                            Ok(None) => {
                                let _ = tx.send((w, Event::Closed("its connection closed".into())));
                                return;
                            }
                            Err(e) => {
                                let _ =
                                    tx.send((w, Event::Closed(format!("reading from it: {e}"))));
                                return;
                            }
                        }
                    })
                    .map_err(io_err("starting a coordinator reader"))?;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if started.elapsed() > join_timeout {
                    let missing: Vec<usize> =
                        (0..workers).filter(|&w| writers[w].is_none()).collect();
                    return Err(ExchangeError::JoinTimeout {
                        missing,
                        secs: join_timeout.as_secs_f64(),
                    }
                    .into());
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => return Err(io_err("accepting a worker")(e)),
        }
    }
    let mut stats = CoordinatorStats::default();
    let mut pending: Vec<Option<(u8, Vec<u8>)>> = (0..workers).map(|_| None).collect();
    let mut done = vec![false; workers];
    let abort_all = |writers: &mut [Option<BufWriter<TcpStream>>], why: &str| {
        for w in writers.iter_mut().flatten() {
            let _ = write_msg(w, kind::ABORT, why.as_bytes());
        }
    };
    loop {
        if done.iter().all(|&d| d) {
            return Ok(stats);
        }
        if stop.load(Ordering::SeqCst) {
            abort_all(&mut writers, "the run was stopped");
            return Err(ExchangeError::Stopped.into());
        }
        let (w, ev) = match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(x) => x,
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(ExchangeError::LinksClosed.into())
            }
        };
        match ev {
            Event::Closed(why) if !done[w] => {
                writers[w] = None;
                let e = ExchangeError::WorkerDied { worker: w, why };
                abort_all(&mut writers, &e.to_string());
                return Err(e.into());
            }
            Event::Closed(_) => {}
            Event::Msg(kind::DONE, _) => done[w] = true,
            Event::Msg(kind::EPOCH, b) => {
                if w == 0 {
                    on_epoch(&String::from_utf8_lossy(&b));
                }
            }
            Event::Msg(k @ (kind::SUM | kind::MAX), b) => {
                stats.bytes_in += b.len() as u64;
                if pending[w].is_some() {
                    let e = ExchangeError::SecondReduction { worker: w };
                    abort_all(&mut writers, &e.to_string());
                    return Err(e.into());
                }
                pending[w] = Some((k, b));
                if pending.iter().all(Option::is_some) {
                    let parts: Vec<(u8, Vec<u8>)> = pending
                        .iter_mut()
                        .map(|p| p.take().expect("all some"))
                        .collect();
                    let (k0, len0) = (parts[0].0, parts[0].1.len());
                    if let Some(bad) = parts.iter().position(|p| p.0 != k0 || p.1.len() != len0) {
                        let e = ExchangeError::ReductionMismatch { worker: bad };
                        abort_all(&mut writers, &e.to_string());
                        return Err(e.into());
                    }
                    let mut acc = bytes_to_f64s(&parts[0].1)?;
                    for p in &parts[1..] {
                        for (a, x) in acc.iter_mut().zip(bytes_to_f64s(&p.1)?) {
                            *a = if k0 == kind::SUM { *a + x } else { a.max(x) };
                        }
                    }
                    let body = f64s_to_bytes(&acc);
                    for (i, wr) in writers.iter_mut().enumerate() {
                        if let Some(wr) = wr {
                            if let Err(e) = write_msg(wr, kind::RESULT, &body) {
                                let e = ExchangeError::WorkerUnwritable {
                                    worker: i,
                                    reason: e,
                                };
                                abort_all(&mut writers, &e.to_string());
                                return Err(e.into());
                            }
                        }
                    }
                    stats.reductions += 1;
                }
            }
            Event::Msg(k, _) => {
                let e = ExchangeError::UnknownKind { worker: w, kind: k };
                abort_all(&mut writers, &e.to_string());
                return Err(e.into());
            }
        }
    }
}

/// The power of two `s` by which an exchange's values are multiplied before encoding, so the
/// largest magnitude `max_abs` (over every worker) uses as much of the fixed-point range
/// `clamp` (the largest real value one encoded term may have) as fits: `max_abs * 2^s <=
/// clamp < max_abs * 2^(s+1)`. Zero values need no scale (0). Gradients of 1e-6 then get
/// the same relative precision as activations of 1e3.
pub fn exchange_scale(max_abs: f64, clamp: f64) -> i32 {
    if max_abs <= 0.0 || !max_abs.is_finite() {
        return 0;
    }
    let s = (clamp / max_abs).log2().floor() as i32;
    // Stay inside f32's normal range both ways.
    s.clamp(-100, 100)
}

/// The neighbour-sum exchange of one worker through a [`SumService`], with a per-exchange
/// power-of-two scale agreed by a maximum over the workers first (module documentation).
pub struct ScaledExchange<S: SumService> {
    service: S,
    link: SharedLink,
    /// Largest real value of one encoded term at scale 1: `limit / 2^frac_bits`.
    clamp: f64,
    fixed: FixedPoint,
    /// The scale of every exchange so far, in order (for the report and tests).
    pub scales: Vec<i32>,
}

impl<S: SumService> ScaledExchange<S> {
    /// An exchange whose service encodes with `frac_bits` fraction bits, on a graph whose
    /// largest degree is `max_degree` (the most terms one sum has).
    pub fn new(service: S, link: SharedLink, frac_bits: u8, max_degree: u32) -> Self {
        let fixed = FixedPoint::new(frac_bits, max_degree.max(1));
        ScaledExchange {
            service,
            link,
            clamp: fixed.limit as f64 / fixed.scale() as f64,
            fixed,
            scales: Vec::new(),
        }
    }

    /// The absolute error bound of one sum of `terms` values exchanged at scale `s`: the
    /// fixed-point bound divided by `2^s`.
    pub fn error_bound(&self, terms: u32, s: i32) -> f64 {
        self.fixed.error_bound(terms) as f64 * 2f64.powi(-s)
    }

    /// The service (to close it).
    pub fn into_service(self) -> S {
        self.service
    }
}

impl<S: SumService> Exchange for ScaledExchange<S> {
    fn neighbour_sum(
        &mut self,
        layer: u32,
        backward: bool,
        x: ArrayView2<f32>,
    ) -> Result<Array2<f32>, TrainError> {
        let (rows, dim) = x.dim();
        let mut m = [x.iter().fold(0f64, |a, &v| a.max((v as f64).abs()))];
        if !m[0].is_finite() {
            return Err(ExchangeError::NotFinite { layer, backward }.into());
        }
        self.link.all_reduce_max(&mut m)?;
        let s = exchange_scale(m[0], self.clamp);
        self.scales.push(s);
        let up = 2f32.powi(s);
        let down = 2f32.powi(-s);
        let values: Vec<f32> = x.iter().map(|&v| v * up).collect();
        let sums = self.service.propagate(layer, backward, dim, values)?;
        let out = Array2::from_shape_vec((rows, dim), sums).map_err(ShapeMismatch::Sums)?;
        Ok(out.mapv(|v| v * down))
    }
}
