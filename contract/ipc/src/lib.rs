//! The daemon's Unix-socket interface for a training process in another language.
//!
//! Every message is `length: u32 | kind: u8 | body`, where `length` counts `kind` and `body`.
//! All integers and floats are **little-endian** (what NumPy's `<u4`/`<f4` and every
//! mainstream CPU use; the SwitchGNN wire format itself is big-endian, but this socket never
//! leaves the host). This crate is the contract between the daemon (`sgnn-hostd`), the Rust
//! training workers (`sgnn-train`) and the Python client (`python/switchgnn`); it depends on
//! nothing of theirs. The full description, with a Python client, is in `docs/host.md`.
//!
//! | kind | direction | body |
//! |---|---|---|
//! | 1 `HELLO` | client -> daemon | empty |
//! | 2 `PROPAGATE` | client -> daemon | `layer u32, direction u8 (0 forward, 1 backward), rows u32, dim u32, values f32[rows*dim]` |
//! | 3 `CLOSE` | client -> daemon | empty |
//! | 4 `ATTACH` | client -> daemon | `capacity u64, path UTF-8`: a file (in `/dev/shm`) of at least `capacity` bytes that both map |
//! | 5 `PROPAGATE_SHARED` | client -> daemon | `layer u32, direction u8, rows u32, dim u32`; the values are the first `rows*dim` f32 of the shared buffer |
//! | 129 `INFO` | daemon -> client | `worker u32, workers u32, max_dim u32, frac_bits u32, rows u32, vertex_ids u32[rows]` |
//! | 130 `SUMS` | daemon -> client | `round u32, rows u32, dim u32, values f32[rows*dim]` |
//! | 131 `BYE` | daemon -> client | empty (after the final barrier; the daemon then exits) |
//! | 132 `ATTACHED` | daemon -> client | empty: the daemon mapped the buffer (the client may unlink the file now) |
//! | 133 `SUMS_SHARED` | daemon -> client | `round u32, rows u32, dim u32`; the sums replaced the values in the shared buffer |
//! | 255 `ERROR` | daemon -> client | UTF-8 message |
//!
//! With `ATTACH`, features and sums no longer cross the socket: the client writes its values
//! into the shared buffer, sends the 13-byte `PROPAGATE_SHARED`, and reads the sums from the
//! same place after `SUMS_SHARED` ([`SharedBuffer`]). The client must not touch the buffer
//! while a request is outstanding.

#![deny(clippy::undocumented_unsafe_blocks)]

use std::fs::OpenOptions;
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;

/// Direction of a propagation: which pass of training a request belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Forward pass: features.
    Forward,
    /// Backward pass: gradients (the same propagation over the same undirected graph).
    Backward,
}

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
    /// Client offers a shared buffer for the values.
    pub const ATTACH: u8 = 4;
    /// Client's values are in the shared buffer.
    pub const PROPAGATE_SHARED: u8 = 5;
    /// Reply to HELLO.
    pub const INFO: u8 = 129;
    /// Reply to PROPAGATE.
    pub const SUMS: u8 = 130;
    /// Reply to CLOSE.
    pub const BYE: u8 = 131;
    /// Reply to ATTACH.
    pub const ATTACHED: u8 = 132;
    /// Reply to PROPAGATE_SHARED.
    pub const SUMS_SHARED: u8 = 133;
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
    /// Map the client's shared buffer ([`SharedBuffer::open`]).
    Attach {
        /// Bytes of the buffer the daemon may use (the client's largest `rows * dim * 4`).
        capacity: u64,
        /// The file both sides map.
        path: PathBuf,
    },
    /// Propagate one layer whose values are in the shared buffer.
    PropagateShared {
        /// Layer index.
        layer: u32,
        /// Direction.
        direction: Direction,
        /// Rows (must be the worker's local vertex count).
        rows: u32,
        /// Values per row.
        dim: u32,
    },
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
    /// The shared buffer is mapped.
    Attached,
    /// Sums of one layer, written into the shared buffer.
    SumsShared {
        /// Round number used on the wire.
        round: u32,
        /// Rows.
        rows: u32,
        /// Values per row.
        dim: u32,
    },
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

fn direction_byte(d: Direction) -> u8 {
    match d {
        Direction::Forward => 0,
        Direction::Backward => 1,
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
    let mut kind = [0u8; 1];
    r.read_exact(&mut kind)?;
    let mut buf = vec![0u8; len as usize - 1];
    r.read_exact(&mut buf)?;
    Ok(Some((kind[0], buf)))
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
    fn u64(&mut self) -> io::Result<u64> {
        let (h, t) = self
            .0
            .split_at_checked(8)
            .ok_or_else(|| bad("message body too short".into()))?;
        self.0 = t;
        Ok(u64::from_le_bytes(h.try_into().expect("8 bytes")))
    }
    fn direction(&mut self) -> io::Result<Direction> {
        match self.u8()? {
            0 => Ok(Direction::Forward),
            1 => Ok(Direction::Backward),
            d => Err(bad(format!(
                "direction {d} is neither 0 (forward) nor 1 (backward)"
            ))),
        }
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
        Request::Attach { capacity, path } => {
            let p = path.to_str().ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("the shared buffer's path {} is not UTF-8", path.display()),
                )
            })?;
            let mut b = capacity.to_le_bytes().to_vec();
            b.extend_from_slice(p.as_bytes());
            frame(w, kind::ATTACH, &b)
        }
        Request::PropagateShared {
            layer,
            direction,
            rows,
            dim,
        } => {
            let mut b = Vec::with_capacity(13);
            put_u32(&mut b, *layer);
            b.push(direction_byte(*direction));
            put_u32(&mut b, *rows);
            put_u32(&mut b, *dim);
            frame(w, kind::PROPAGATE_SHARED, &b)
        }
        Request::Propagate {
            layer,
            direction,
            rows,
            dim,
            values,
        } => {
            let mut b = Vec::with_capacity(13 + values.len() * 4);
            put_u32(&mut b, *layer);
            b.push(direction_byte(*direction));
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
        kind::ATTACH => {
            let capacity = c.u64()?;
            let path = std::str::from_utf8(c.0)
                .map_err(|_| bad("ATTACH: the path is not UTF-8".into()))?;
            Request::Attach {
                capacity,
                path: PathBuf::from(path),
            }
        }
        kind::PROPAGATE_SHARED => {
            let layer = c.u32()?;
            let direction = c.direction()?;
            let rows = c.u32()?;
            let dim = c.u32()?;
            if !c.0.is_empty() {
                return Err(bad(format!(
                    "PROPAGATE_SHARED carries {} bytes after its 13-byte header; the values belong in the shared buffer",
                    c.0.len()
                )));
            }
            Request::PropagateShared {
                layer,
                direction,
                rows,
                dim,
            }
        }
        kind::PROPAGATE => {
            let layer = c.u32()?;
            let direction = c.direction()?;
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
                "unknown request kind {k} (expected 1 HELLO, 2 PROPAGATE, 3 CLOSE, 4 ATTACH or 5 PROPAGATE_SHARED)"
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
        Reply::Attached => frame(w, kind::ATTACHED, &[]),
        Reply::SumsShared { round, rows, dim } => {
            let mut b = Vec::with_capacity(12);
            for x in [*round, *rows, *dim] {
                put_u32(&mut b, x);
            }
            frame(w, kind::SUMS_SHARED, &b)
        }
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
        kind::ATTACHED => Reply::Attached,
        kind::SUMS_SHARED => Reply::SumsShared {
            round: c.u32()?,
            rows: c.u32()?,
            dim: c.u32()?,
        },
        kind::ERROR => Reply::Error(String::from_utf8_lossy(&body).into_owned()),
        k => return Err(bad(format!("unknown reply kind {k}"))),
    }))
}

/// Why a shared buffer could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ShmError {
    /// The file could not be opened.
    #[error("opening the shared buffer {path}: {source} (the client creates it, e.g. in /dev/shm, before ATTACH)")]
    Open {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The file is shorter than the capacity ATTACH announced.
    #[error("the shared buffer {path} holds {len} bytes but ATTACH announced {capacity}: size the file (ftruncate) to the capacity first")]
    TooSmall {
        /// The file.
        path: PathBuf,
        /// Its length.
        len: u64,
        /// The announced capacity.
        capacity: u64,
    },
    /// A capacity of zero or beyond the address space.
    #[error("ATTACH capacity {0} must be between 1 byte and the address space")]
    Capacity(u64),
    /// mmap failed.
    #[error("mapping the shared buffer {path} ({capacity} bytes): {source}")]
    Map {
        /// The file.
        path: PathBuf,
        /// Bytes asked for.
        capacity: u64,
        /// Why.
        source: io::Error,
    },
    /// More values than the buffer holds.
    #[error("{values} float32 values ({} bytes) do not fit the shared buffer of {capacity} bytes: ATTACH a larger one", values * 4)]
    Overflow {
        /// Values asked for.
        values: usize,
        /// The buffer's bytes.
        capacity: usize,
    },
}

/// A file mapped read-write and shared with the client (`MAP_SHARED`): the values of
/// `PROPAGATE_SHARED` are read from it and the sums written back, little-endian f32 from
/// offset 0. It stays mapped until dropped, even after the client unlinks the file.
#[derive(Debug)]
pub struct SharedBuffer {
    ptr: NonNull<u8>,
    len: usize,
    path: PathBuf,
}

// SAFETY: the mapping is plain memory owned by this value (no thread-local state), so moving it
// to another thread is sound; `&mut self` on the writer keeps this process's accesses exclusive.
unsafe impl Send for SharedBuffer {}

impl SharedBuffer {
    /// Maps the first `capacity` bytes of `path` (which must be at least that long).
    pub fn open(path: &Path, capacity: u64) -> Result<SharedBuffer, ShmError> {
        let len = usize::try_from(capacity)
            .ok()
            .filter(|&l| l > 0 && l <= isize::MAX as usize)
            .ok_or(ShmError::Capacity(capacity))?;
        let open_err = |source| ShmError::Open {
            path: path.to_path_buf(),
            source,
        };
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(open_err)?;
        let file_len = file.metadata().map_err(open_err)?.len();
        if file_len < capacity {
            return Err(ShmError::TooSmall {
                path: path.to_path_buf(),
                len: file_len,
                capacity,
            });
        }
        // SAFETY: a fresh shared read-write mapping of `len` (> 0) bytes of an open file at
        // offset 0; the kernel chooses the address, so nothing of ours is replaced. The file
        // holds at least `len` bytes (checked above), so every page of the mapping is backed
        // unless the client shrinks the file later, which the protocol forbids.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(ShmError::Map {
                path: path.to_path_buf(),
                capacity,
                source: io::Error::last_os_error(),
            });
        }
        let ptr = NonNull::new(p.cast::<u8>()).expect("mmap returned MAP_FAILED or an address");
        Ok(SharedBuffer {
            ptr,
            len,
            path: path.to_path_buf(),
        })
    }

    /// The buffer's size in bytes.
    pub fn capacity(&self) -> usize {
        self.len
    }

    /// The file it maps.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn check(&self, values: usize) -> Result<usize, ShmError> {
        values
            .checked_mul(4)
            .filter(|&b| b <= self.len)
            .ok_or(ShmError::Overflow {
                values,
                capacity: self.len,
            })
    }

    /// The first `n` values: borrowed in place on a little-endian host (no copy), converted
    /// into a new vector on a big-endian one.
    pub fn values(&self, n: usize) -> Result<std::borrow::Cow<'_, [f32]>, ShmError> {
        if cfg!(target_endian = "big") {
            return self.read_f32(n).map(std::borrow::Cow::Owned);
        }
        let bytes = self.check(n)?;
        debug_assert!(bytes <= self.len);
        // SAFETY: `ptr` is the start of our mapping, page-aligned (so aligned for f32), and the
        // first `n * 4 <= len` bytes are mapped for as long as `self` lives, which the returned
        // borrow cannot outlive. Every bit pattern is a valid f32. This process cannot write
        // the buffer during the borrow (writing takes `&mut self`), and the client does not
        // write it while its request is outstanding, which is when the daemon holds this
        // borrow (the protocol of `PROPAGATE_SHARED`, documented in the module and docs/host.md).
        Ok(std::borrow::Cow::Borrowed(unsafe {
            std::slice::from_raw_parts(self.ptr.as_ptr().cast::<f32>(), n)
        }))
    }

    /// Copies the first `n` values out (one memcpy on a little-endian host).
    pub fn read_f32(&self, n: usize) -> Result<Vec<f32>, ShmError> {
        let bytes = self.check(n)?;
        let mut v = vec![0f32; n];
        // SAFETY: the source is the first `bytes` <= `self.len` bytes of our live mapping and
        // the destination is the `n * 4 == bytes` bytes of a fresh Vec, so both ranges are valid
        // and cannot overlap. The client does not write the buffer while its request is
        // outstanding (the protocol); if it did, values would be garbled, never memory,
        // since every bit pattern is a valid f32.
        unsafe {
            std::ptr::copy_nonoverlapping(self.ptr.as_ptr(), v.as_mut_ptr().cast::<u8>(), bytes)
        };
        if cfg!(target_endian = "big") {
            for x in &mut v {
                *x = f32::from_bits(u32::from_le(x.to_bits()));
            }
        }
        Ok(v)
    }

    /// Writes `values` from offset 0 (one memcpy on a little-endian host).
    pub fn write_f32(&mut self, values: &[f32]) -> Result<(), ShmError> {
        let bytes = self.check(values.len())?;
        let swapped: Vec<f32>;
        let src = if cfg!(target_endian = "big") {
            swapped = values
                .iter()
                .map(|x| f32::from_bits(x.to_bits().to_le()))
                .collect();
            &swapped[..]
        } else {
            values
        };
        // SAFETY: the destination is the first `bytes` <= `self.len` bytes of our live mapping,
        // the source the `bytes` bytes of `src`, which lives in this process's heap and so does
        // not overlap the mapping. `&mut self` keeps this process's other accesses out; the
        // client reads only after our reply (the protocol).
        unsafe {
            std::ptr::copy_nonoverlapping(src.as_ptr().cast::<u8>(), self.ptr.as_ptr(), bytes)
        };
        Ok(())
    }
}

impl Drop for SharedBuffer {
    fn drop(&mut self) {
        // SAFETY: `ptr` and `len` are exactly what mmap returned and took, and this is the only
        // unmap: no reference into the mapping outlives `self`.
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
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
    fn shared_requests_round_trip_and_carry_no_values() {
        for req in [
            Request::Attach {
                capacity: 1 << 33,
                path: PathBuf::from("/dev/shm/switchgnn-1-w0"),
            },
            Request::PropagateShared {
                layer: 7,
                direction: Direction::Forward,
                rows: 3,
                dim: 2,
            },
        ] {
            let mut buf = Vec::new();
            write_request(&mut buf, &req).unwrap();
            assert_eq!(read_request(&mut &buf[..]).unwrap(), Some(req));
        }
        let mut buf = Vec::new();
        write_request(
            &mut buf,
            &Request::PropagateShared {
                layer: 1,
                direction: Direction::Backward,
                rows: 1,
                dim: 1,
            },
        )
        .unwrap();
        // length 14 = kind + 13-byte header: no values on the socket.
        assert_eq!(&buf[..5], &[14, 0, 0, 0, kind::PROPAGATE_SHARED]);
        buf.extend_from_slice(&[0; 4]);
        buf[0] = 18;
        let e = read_request(&mut &buf[..]).unwrap_err().to_string();
        assert!(e.contains("shared buffer"), "{e}");
        for rep in [
            Reply::Attached,
            Reply::SumsShared {
                round: 4,
                rows: 5,
                dim: 6,
            },
        ] {
            let mut buf = Vec::new();
            write_reply(&mut buf, &rep).unwrap();
            assert_eq!(read_reply(&mut &buf[..]).unwrap(), Some(rep));
        }
    }

    #[test]
    fn a_shared_buffer_is_the_same_memory_on_both_sides() {
        let dir = std::env::temp_dir().join(format!("sgnn-ipc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("buf");
        std::fs::write(&path, [0u8; 64]).unwrap();
        let mut a = SharedBuffer::open(&path, 64).unwrap();
        let b = SharedBuffer::open(&path, 32).unwrap();
        // Little-endian f32 in the file, whatever the host.
        {
            use std::os::unix::fs::FileExt;
            let f = OpenOptions::new().write(true).open(&path).unwrap();
            f.write_all_at(&1.5f32.to_le_bytes(), 0).unwrap();
            f.write_all_at(&(-2.0f32).to_le_bytes(), 4).unwrap();
        }
        assert_eq!(b.read_f32(2).unwrap(), vec![1.5, -2.0]);
        assert_eq!(&b.values(2).unwrap()[..], &[1.5, -2.0]);
        a.write_f32(&[3.0, 4.0, 5.0]).unwrap();
        assert_eq!(b.read_f32(3).unwrap(), vec![3.0, 4.0, 5.0]);
        assert_eq!(&std::fs::read(&path).unwrap()[8..12], &5.0f32.to_le_bytes());
        // Unlinked, still mapped: the client removes the file after ATTACHED.
        std::fs::remove_file(&path).unwrap();
        a.write_f32(&[6.0]).unwrap();
        assert_eq!(b.read_f32(1).unwrap(), vec![6.0]);
        // Errors say what to fix.
        assert!(b.values(9).is_err());
        let e = b.read_f32(9).unwrap_err().to_string();
        assert!(e.contains("ATTACH a larger one"), "{e}");
        let e = a.write_f32(&[0.0; 17]).unwrap_err();
        assert!(
            matches!(
                e,
                ShmError::Overflow {
                    values: 17,
                    capacity: 64
                }
            ),
            "{e}"
        );
        std::fs::write(&path, [0u8; 8]).unwrap();
        let e = SharedBuffer::open(&path, 64).unwrap_err().to_string();
        assert!(
            e.contains("holds 8 bytes") && e.contains("ftruncate"),
            "{e}"
        );
        assert!(matches!(
            SharedBuffer::open(&path, 0),
            Err(ShmError::Capacity(0))
        ));
        let e = SharedBuffer::open(&dir.join("missing"), 8)
            .unwrap_err()
            .to_string();
        assert!(e.contains("missing") && e.contains("before ATTACH"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
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
