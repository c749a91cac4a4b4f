//! The reference row `tcp-all-to-all`: a plain TCP all-to-all of exactly the host-based
//! baseline's bytes, between the same workers, with no switch.
//!
//! What host-based sends: each worker sends every boundary vertex once to every remote worker
//! with a neighbour of it, one Bypass frame per segment (`sgnn_transport::view::HostBasedView`
//! `sends`, the list its engine walks). So worker `w` sends peer `p`, per round,
//! `(w's sends to p) x segments x (length of a Bypass frame)` bytes: [`pair_bytes`] computes
//! that from the plan, and it equals the Data bytes host-based's daemons count as sent
//! (`stats.sent.data.bytes`, Ethernet header to the last lane) in a run without loss (the
//! testbed's test checks this against the run). Control frames (probes, hellos, barriers) are
//! not part of it: they are the protocol's, not the exchange's.
//!
//! How it runs: in this process, one thread per direction of every connection (a sender per
//! ordered pair `(w, p)` on a loopback TCP connection from `w` to `p`, a receiver on the
//! other end), so every worker sends to and receives from all its peers at once, as
//! host-based's daemons do. No tricks: default socket options, `write_all` of the pair's
//! bytes, `read_exact` of them. Each round starts when every thread has passed a barrier and
//! ends when every receiver has read its bytes (a second barrier); the round's time is
//! measured between the two on the coordinating thread. Connections are set up before the
//! first round and not timed.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Barrier};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use sgnn_plan::Plan;
use sgnn_transport::view::WorkerView;
use sgnn_wire::frame::FrameRepr;
use sgnn_wire::sgnn::Repr;
use sgnn_wire::PacketType;

/// The mode name of the reference row.
pub(crate) const MODE: &str = "tcp-all-to-all";

/// What the TCP all-to-all measured.
#[derive(Debug, Clone)]
pub(crate) struct TcpRun {
    /// Wall time of the rounds (connection set-up excluded), seconds.
    pub seconds: f64,
    /// Each round's time, seconds.
    pub round_seconds: Vec<f64>,
    /// `[w][p]`: bytes worker `w` sent peer `p` in each round.
    pub pair_bytes: Vec<Vec<u64>>,
}

impl TcpRun {
    /// Bytes every worker sent per round, summed.
    pub fn bytes_per_round(&self) -> u64 {
        self.pair_bytes.iter().flatten().sum()
    }

    /// Bytes sent over the whole run.
    pub fn payload_bytes(&self) -> u64 {
        self.bytes_per_round() * self.round_seconds.len() as u64
    }

    /// Bytes worker `w` sent over the run (its link up, were there a switch).
    pub fn up(&self) -> Vec<u64> {
        let r = self.round_seconds.len() as u64;
        self.pair_bytes
            .iter()
            .map(|row| row.iter().sum::<u64>() * r)
            .collect()
    }

    /// Bytes worker `w` received over the run (its link down).
    pub fn down(&self) -> Vec<u64> {
        let r = self.round_seconds.len() as u64;
        (0..self.pair_bytes.len())
            .map(|p| self.pair_bytes.iter().map(|row| row[p]).sum::<u64>() * r)
            .collect()
    }

    /// Bytes on the links of a star, both ways, as the switch counts host-based's: every
    /// byte once up and once down.
    pub fn link_total(&self) -> u64 {
        2 * self.payload_bytes()
    }

    /// Mean time of a round, milliseconds.
    pub fn ms_per_layer(&self) -> f64 {
        self.round_seconds.iter().sum::<f64>() / self.round_seconds.len().max(1) as f64 * 1e3
    }
}

/// `[w][p]`: the bytes host-based's worker `w` sends worker `p` in one round of `dim` values
/// per vertex (first transmissions: one Bypass frame per segment of every boundary vertex
/// per remote worker that needs it).
pub(crate) fn pair_bytes(plan: &Plan, dim: u32) -> Result<Vec<Vec<u64>>> {
    let workers = plan.workers() as usize;
    let frame = FrameRepr {
        eth: Default::default(),
        ip: Default::default(),
        sgnn: Repr::new(PacketType::Bypass),
    }
    .frame_len() as u64;
    let mut bytes = vec![vec![0u64; workers]; workers];
    for (w, row) in bytes.iter_mut().enumerate() {
        let view = WorkerView::new(plan, w as u32, None)
            .with_context(|| format!("worker {w}'s view of the plan"))?;
        let segs = view.segments_for(dim as usize)? as u64;
        for &(_, target) in &view.host_based.sends {
            row[target as usize] += segs * frame;
        }
    }
    Ok(bytes)
}

/// Runs `rounds` rounds of the all-to-all of `pair_bytes` (`[w][p]` per round) over loopback
/// TCP.
pub(crate) fn run(pair_bytes: Vec<Vec<u64>>, rounds: usize) -> Result<TcpRun> {
    let workers = pair_bytes.len();
    let listeners: Vec<TcpListener> = (0..workers)
        .map(|_| TcpListener::bind("127.0.0.1:0"))
        .collect::<std::io::Result<_>>()
        .context("binding the TCP all-to-all's listeners on loopback")?;
    // Every ordered pair with bytes to move: the sending end (connected from w) and the
    // receiving end (accepted by p).
    let mut ends: Vec<(usize, usize, TcpStream, TcpStream)> = Vec::new();
    for (w, row) in pair_bytes.iter().enumerate() {
        for (p, &b) in row.iter().enumerate() {
            if p == w || b == 0 {
                continue;
            }
            let tx = TcpStream::connect(listeners[p].local_addr()?)
                .with_context(|| format!("connecting worker {w} to worker {p}"))?;
            let (rx, _) = listeners[p].accept()?;
            ends.push((w, p, tx, rx));
        }
    }
    let largest = pair_bytes.iter().flatten().copied().max().unwrap_or(0) as usize;
    // The same bytes for every pair: what they hold does not matter to TCP.
    let payload: Arc<Vec<u8>> = Arc::new((0..largest).map(|i| (i % 251) as u8).collect());
    // Two barriers per round: every sender and receiver, and this thread.
    let barrier = Arc::new(Barrier::new(2 * ends.len() + 1));
    let mut threads = Vec::new();
    for (w, p, mut tx, mut rx) in ends {
        let n = pair_bytes[w][p] as usize;
        let (b, data) = (barrier.clone(), payload.clone());
        threads.push(std::thread::spawn(move || -> Result<()> {
            let mut res = Ok(());
            for _ in 0..rounds {
                b.wait();
                if res.is_ok() {
                    res = tx
                        .write_all(&data[..n])
                        .with_context(|| format!("worker {w} sending {n} bytes to worker {p}"));
                    if res.is_err() {
                        // The receiver then reads end-of-stream and fails too, instead of
                        // waiting for these bytes for ever.
                        let _ = tx.shutdown(std::net::Shutdown::Both);
                    }
                }
                b.wait();
            }
            res
        }));
        let b = barrier.clone();
        threads.push(std::thread::spawn(move || -> Result<()> {
            let mut buf = vec![0u8; n];
            let mut res = Ok(());
            for _ in 0..rounds {
                b.wait();
                if res.is_ok() {
                    res = rx
                        .read_exact(&mut buf)
                        .with_context(|| format!("worker {p} receiving {n} bytes from worker {w}"));
                    if res.is_err() {
                        let _ = rx.shutdown(std::net::Shutdown::Both);
                    }
                }
                b.wait();
            }
            res
        }));
    }
    let mut round_seconds = Vec::with_capacity(rounds);
    let start = Instant::now();
    for _ in 0..rounds {
        barrier.wait();
        let t0 = Instant::now();
        barrier.wait();
        round_seconds.push(t0.elapsed().as_secs_f64());
    }
    let seconds = start.elapsed().as_secs_f64();
    for t in threads {
        match t.join() {
            Ok(r) => r?,
            Err(_) => bail!("a thread of the TCP all-to-all panicked"),
        }
    }
    Ok(TcpRun {
        seconds,
        round_seconds,
        pair_bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moves_every_pairs_bytes_and_times_every_round() {
        let bytes = vec![vec![0, 5000, 0], vec![70_000, 0, 1], vec![3, 3, 0]];
        let r = run(bytes.clone(), 3).unwrap();
        assert_eq!(r.round_seconds.len(), 3);
        assert_eq!(r.bytes_per_round(), 75_007);
        assert_eq!(r.payload_bytes(), 3 * 75_007);
        assert_eq!(r.up(), vec![15_000, 210_003, 18]);
        assert_eq!(r.down(), vec![210_009, 15_009, 3]);
        assert_eq!(r.link_total(), 2 * 3 * 75_007);
    }
}
