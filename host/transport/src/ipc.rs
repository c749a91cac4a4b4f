//! The daemon's Unix-socket interface for a training process in another language.
//!
//! Every message is `length: u32 | kind: u8 | body`, where `length` counts `kind` and `body`.
//! All integers and floats are **little-endian** (what NumPy's `<u4`/`<f4` and every
//! mainstream CPU use; the SwitchGNN wire format itself is big-endian, but this socket never
//! leaves the host). The full description, with a Python client, is in `docs/host.md`.
//!
//! | kind | direction | body |
//! |---|---|---|
//! | 1 `HELLO` | client -> daemon | empty |
//! | 2 `PROPAGATE` | client -> daemon | `layer u32, direction u8 (0 forward, 1 backward), rows u32, dim u32, values f32[rows*dim]` |
//! | 3 `CLOSE` | client -> daemon | empty |
//! | 129 `INFO` | daemon -> client | `worker u32, workers u32, max_dim u32, frac_bits u32, rows u32, vertex_ids u32[rows]` |
//! | 130 `SUMS` | daemon -> client | `round u32, rows u32, dim u32, values f32[rows*dim]` |
//! | 131 `BYE` | daemon -> client | empty (after the final barrier; the daemon then exits) |
//! | 255 `ERROR` | daemon -> client | UTF-8 message |

use std::io::{self, Read, Write};

use crate::engine::Direction;

/// Largest message accepted (1 GiB): a bigger length is a framing error, not an allocation.
pub const MAX_MESSAGE: u32 = 1 << 30;

/// Message kinds.
pub mod kind {
    /// Client asks for the worker's layout.
    pub const HELLO: u8 = 1;
    /// Client sends one layer's features.
    pub const PROPAGATE: u8 = 2;
    /// Client is done.
    pub const CLOSE: u8 = 3;
    /// Reply to HELLO.
    pub const INFO: u8 = 129;
    /// Reply to PROPAGATE.
    pub const SUMS: u8 = 130;
    /// Reply to CLOSE.
    pub const BYE: u8 = 131;
    /// Something went wrong.
    pub const ERROR: u8 = 255;
}

/// What a client sends.
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    /// Ask for [`Reply::Info`].
    Hello,
    /// Propagate one layer.
    Propagate {
        /// Layer index.
        layer: u32,
        /// Direction.
        direction: Direction,
        /// Rows (must be the worker's local vertex count).
        rows: u32,
        /// Values per row.
        dim: u32,
        /// `rows * dim` values, row-major.
        values: Vec<f32>,
    },
    /// End the session.
    Close,
}

/// What the daemon answers.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// The worker's layout.
    Info {
        /// Worker id.
        worker: u32,
        /// Workers in the plan.
        workers: u32,
        /// Largest feature dimension the plan's aggregators hold.
        max_dim: u32,
        /// Fixed-point fraction bits.
        frac_bits: u32,
        /// Local vertex ids, ascending: the row order of features and sums.
        vertices: Vec<u32>,
    },
    /// Sums of one layer.
    Sums {
        /// Round number used on the wire.
        round: u32,
        /// Rows.
        rows: u32,
        /// Values per row.
        dim: u32,
        /// `rows * dim` values.
        values: Vec<f32>,
    },
    /// Session closed.
    Bye,
    /// An error; after a transport error the daemon exits.
    Error(String),
}

fn put_u32(b: &mut Vec<u8>, x: u32) {
    b.extend_from_slice(&x.to_le_bytes());
}

fn put_f32s(b: &mut Vec<u8>, xs: &[f32]) {
    b.reserve(xs.len() * 4);
    for x in xs {
        b.extend_from_slice(&x.to_le_bytes());
    }
}

fn frame(w: &mut impl Write, kind: u8, body: &[u8]) -> io::Result<()> {
    let len = body.len() as u64 + 1;
    if len > MAX_MESSAGE as u64 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "message over 1 GiB",
        ));
    }
    let mut head = [0u8; 5];
    head[..4].copy_from_slice(&(len as u32).to_le_bytes());
    head[4] = kind;
    w.write_all(&head)?;
    w.write_all(body)?;
    w.flush()
}

/// Reads one message; `None` on a clean end of stream before it.
fn read_frame(r: &mut impl Read) -> io::Result<Option<(u8, Vec<u8>)>> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_le_bytes(len);
    if len == 0 || len > MAX_MESSAGE {
        return Err(bad(format!("message length {len} is not in 1..=2^30")));
    }
    let mut buf = vec![0u8; len as usize];
    r.read_exact(&mut buf)?;
    let kind = buf[0];
    buf.remove(0);
    Ok(Some((kind, buf)))
}

fn bad(m: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, m)
}

struct Cursor<'a>(&'a [u8]);

impl Cursor<'_> {
    fn u32(&mut self) -> io::Result<u32> {
        let (h, t) = self
            .0
            .split_at_checked(4)
            .ok_or_else(|| bad("message body too short".into()))?;
        self.0 = t;
        Ok(u32::from_le_bytes(h.try_into().expect("4 bytes")))
    }
    fn u8(&mut self) -> io::Result<u8> {
        let (&h, t) = self
            .0
            .split_first()
            .ok_or_else(|| bad("message body too short".into()))?;
        self.0 = t;
        Ok(h)
    }
    fn f32s(&mut self, n: usize) -> io::Result<Vec<f32>> {
        if self.0.len() != n * 4 {
            return Err(bad(format!(
                "expected {n} float32 values ({} bytes), found {} bytes",
                n * 4,
                self.0.len()
            )));
        }
        Ok(self
            .0
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes")))
            .collect())
    }
    fn u32s(&mut self, n: usize) -> io::Result<Vec<u32>> {
        if self.0.len() != n * 4 {
            return Err(bad(format!(
                "expected {n} uint32 values, found {} bytes",
                self.0.len()
            )));
        }
        Ok(self
            .0
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
            .collect())
    }
}

/// Writes a request.
pub fn write_request(w: &mut impl Write, r: &Request) -> io::Result<()> {
    match r {
        Request::Hello => frame(w, kind::HELLO, &[]),
        Request::Close => frame(w, kind::CLOSE, &[]),
        Request::Propagate {
            layer,
            direction,
            rows,
            dim,
            values,
        } => {
            let mut b = Vec::with_capacity(13 + values.len() * 4);
            put_u32(&mut b, *layer);
            b.push(match direction {
                Direction::Forward => 0,
                Direction::Backward => 1,
            });
            put_u32(&mut b, *rows);
            put_u32(&mut b, *dim);
            put_f32s(&mut b, values);
            frame(w, kind::PROPAGATE, &b)
        }
    }
}

/// Reads a request; `None` when the client closed the stream.
pub fn read_request(r: &mut impl Read) -> io::Result<Option<Request>> {
    let Some((k, body)) = read_frame(r)? else {
        return Ok(None);
    };
    let mut c = Cursor(&body);
    Ok(Some(match k {
        kind::HELLO => Request::Hello,
        kind::CLOSE => Request::Close,
        kind::PROPAGATE => {
            let layer = c.u32()?;
            let direction = match c.u8()? {
                0 => Direction::Forward,
                1 => Direction::Backward,
                d => {
                    return Err(bad(format!(
                        "direction {d} is neither 0 (forward) nor 1 (backward)"
                    )))
                }
            };
            let rows = c.u32()?;
            let dim = c.u32()?;
            let n = rows as usize * dim as usize;
            let values = c.f32s(n)?;
            Request::Propagate {
                layer,
                direction,
                rows,
                dim,
                values,
            }
        }
        k => {
            return Err(bad(format!(
                "unknown request kind {k} (expected 1 HELLO, 2 PROPAGATE or 3 CLOSE)"
            )))
        }
    }))
}

/// Writes a reply.
pub fn write_reply(w: &mut impl Write, r: &Reply) -> io::Result<()> {
    match r {
        Reply::Info {
            worker,
            workers,
            max_dim,
            frac_bits,
            vertices,
        } => {
            let mut b = Vec::with_capacity(20 + vertices.len() * 4);
            for x in [
                *worker,
                *workers,
                *max_dim,
                *frac_bits,
                vertices.len() as u32,
            ] {
                put_u32(&mut b, x);
            }
            for v in vertices {
                put_u32(&mut b, *v);
            }
            frame(w, kind::INFO, &b)
        }
        Reply::Sums {
            round,
            rows,
            dim,
            values,
        } => {
            let mut b = Vec::with_capacity(12 + values.len() * 4);
            for x in [*round, *rows, *dim] {
                put_u32(&mut b, x);
            }
            put_f32s(&mut b, values);
            frame(w, kind::SUMS, &b)
        }
        Reply::Bye => frame(w, kind::BYE, &[]),
        Reply::Error(m) => frame(w, kind::ERROR, m.as_bytes()),
    }
}

/// Reads a reply; `None` when the daemon closed the stream.
pub fn read_reply(r: &mut impl Read) -> io::Result<Option<Reply>> {
    let Some((k, body)) = read_frame(r)? else {
        return Ok(None);
    };
    let mut c = Cursor(&body);
    Ok(Some(match k {
        kind::INFO => {
            let worker = c.u32()?;
            let workers = c.u32()?;
            let max_dim = c.u32()?;
            let frac_bits = c.u32()?;
            let rows = c.u32()? as usize;
            Reply::Info {
                worker,
                workers,
                max_dim,
                frac_bits,
                vertices: c.u32s(rows)?,
            }
        }
        kind::SUMS => {
            let round = c.u32()?;
            let rows = c.u32()?;
            let dim = c.u32()?;
            let values = c.f32s(rows as usize * dim as usize)?;
            Reply::Sums {
                round,
                rows,
                dim,
                values,
            }
        }
        kind::BYE => Reply::Bye,
        kind::ERROR => Reply::Error(String::from_utf8_lossy(&body).into_owned()),
        k => return Err(bad(format!("unknown reply kind {k}"))),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_and_replies_round_trip_little_endian() {
        let req = Request::Propagate {
            layer: 2,
            direction: Direction::Backward,
            rows: 2,
            dim: 1,
            values: vec![1.0, -2.5],
        };
        let mut buf = Vec::new();
        write_request(&mut buf, &req).unwrap();
        // length 1 + 4 + 1 + 4 + 4 + 8 = 22, kind 2, layer 2 little-endian.
        assert_eq!(&buf[..9], &[22, 0, 0, 0, 2, 2, 0, 0, 0]);
        assert_eq!(read_request(&mut &buf[..]).unwrap(), Some(req));
        let rep = Reply::Info {
            worker: 1,
            workers: 4,
            max_dim: 64,
            frac_bits: 20,
            vertices: vec![3, 9],
        };
        let mut buf = Vec::new();
        write_reply(&mut buf, &rep).unwrap();
        assert_eq!(read_reply(&mut &buf[..]).unwrap(), Some(rep));
        assert_eq!(read_reply(&mut &[][..]).unwrap(), None);
    }

    #[test]
    fn framing_errors_are_errors_not_allocations() {
        let huge = [0xff, 0xff, 0xff, 0xff, 2];
        assert!(read_request(&mut &huge[..]).is_err());
        // Declared 3 values, carries 2.
        let mut b = vec![];
        let mut body = vec![0, 0, 0, 0, 0, 1, 0, 0, 0, 3, 0, 0, 0];
        body.extend_from_slice(&[0u8; 8]);
        frame(&mut b, kind::PROPAGATE, &body).unwrap();
        assert!(read_request(&mut &b[..]).is_err());
    }
}
