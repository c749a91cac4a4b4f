//! Where a training worker talks to its daemon: [`DaemonClient`] speaks the daemon's
//! Unix-socket protocol (`sgnn-ipc`, `contract/ipc`; `sgnn-hostd --serve`) and is the
//! [`SumService`] of a distributed run (`crate::distributed::ScaledExchange`).

use std::io::{BufReader, BufWriter};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use sgnn_ipc::Direction;
use sgnn_ipc::{self as ipc, Reply, Request};

use crate::distributed::io_err;
use crate::{ExchangeError, TrainError};

/// Where the sums of one exchange come from: the daemon's socket, or (in tests) a model of it.
pub trait SumService {
    /// The fixed-point sums of `values` (`rows x dim`, the worker's rows in the daemon's order).
    fn propagate(
        &mut self,
        layer: u32,
        backward: bool,
        dim: usize,
        values: Vec<f32>,
    ) -> Result<Vec<f32>, TrainError>;
}

/// A client of `sgnn-hostd --serve`.
pub struct DaemonClient {
    r: BufReader<UnixStream>,
    w: BufWriter<UnixStream>,
    /// The daemon's worker id.
    pub worker: u32,
    /// Workers in the plan.
    pub workers: u32,
    /// Largest value count per vertex the plan carries.
    pub max_dim: u32,
    /// Fixed-point fraction bits of the plan.
    pub frac_bits: u32,
    /// The worker's vertices, ascending: the row order of every exchange.
    pub vertices: Vec<u32>,
}

impl DaemonClient {
    /// Connects to the daemon's socket, waiting up to `wait` for it to appear (the daemon
    /// binds it once it has reached the switch), and asks for the worker's layout.
    pub fn connect(path: &Path, wait: Duration) -> Result<DaemonClient, TrainError> {
        let t = Instant::now();
        let s = loop {
            match UnixStream::connect(path) {
                Ok(s) => break s,
                Err(e) if t.elapsed() < wait => {
                    let _ = e;
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => {
                    return Err(ExchangeError::NoDaemon {
                        path: path.to_path_buf(),
                        secs: wait.as_secs_f64(),
                        reason: e,
                    }
                    .into())
                }
            }
        };
        let mut r = BufReader::new(s.try_clone().map_err(io_err("the daemon socket"))?);
        let mut w = BufWriter::new(s);
        ipc::write_request(&mut w, &Request::Hello).map_err(io_err("HELLO to the daemon"))?;
        match ipc::read_reply(&mut r).map_err(io_err("reading the daemon's INFO"))? {
            Some(Reply::Info {
                worker,
                workers,
                max_dim,
                frac_bits,
                vertices,
            }) => Ok(DaemonClient {
                r,
                w,
                worker,
                workers,
                max_dim,
                frac_bits,
                vertices,
            }),
            Some(Reply::Error(m)) => Err(ExchangeError::Daemon(m).into()),
            reply => Err(ExchangeError::UnexpectedReply {
                request: "HELLO",
                reply,
            }
            .into()),
        }
    }

    /// Ends the session (the daemon runs its final barrier, answers BYE and exits).
    pub fn close(mut self) -> Result<(), TrainError> {
        ipc::write_request(&mut self.w, &Request::Close).map_err(io_err("CLOSE to the daemon"))?;
        match ipc::read_reply(&mut self.r).map_err(io_err("reading the daemon's BYE"))? {
            Some(Reply::Bye) => Ok(()),
            Some(Reply::Error(m)) => Err(ExchangeError::Daemon(m).into()),
            reply => Err(ExchangeError::UnexpectedReply {
                request: "CLOSE",
                reply,
            }
            .into()),
        }
    }
}

impl SumService for DaemonClient {
    fn propagate(
        &mut self,
        layer: u32,
        backward: bool,
        dim: usize,
        values: Vec<f32>,
    ) -> Result<Vec<f32>, TrainError> {
        let rows = self.vertices.len() as u32;
        let req = Request::Propagate {
            layer,
            direction: if backward {
                Direction::Backward
            } else {
                Direction::Forward
            },
            rows,
            dim: dim as u32,
            values,
        };
        ipc::write_request(&mut self.w, &req).map_err(io_err("PROPAGATE to the daemon"))?;
        match ipc::read_reply(&mut self.r).map_err(io_err("reading the daemon's SUMS"))? {
            Some(Reply::Sums { values, .. }) if values.len() == rows as usize * dim => Ok(values),
            Some(Reply::Error(m)) => Err(ExchangeError::Daemon(m).into()),
            None => Err(ExchangeError::DaemonClosed.into()),
            reply => Err(ExchangeError::UnexpectedReply {
                request: "PROPAGATE",
                reply,
            }
            .into()),
        }
    }
}
