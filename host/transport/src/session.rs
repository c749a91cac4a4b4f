//! The application API: an [`Engine`] driven over a [`Datapath`] with the system clock.

use std::cell::Cell;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::datapath::Datapath;
use crate::engine::{Engine, EngineConfig, Layer};
use crate::error::WrongState;
use crate::stats::Stats;
use crate::view::WorkerView;
use crate::TransportError;

/// Longest the driver sleeps in one receive call, so timers are checked regularly.
const MAX_WAIT: Duration = Duration::from_millis(5);
/// Frames handed to the datapath per send call at most.
const SEND_BURST: usize = 64;
/// Receive bursts drained (without waiting) before timers are checked again: up to
/// `DRAIN_BURSTS * RECV_BURST` frames, so a long backlog still lets the daemon transmit.
const DRAIN_BURSTS: usize = 64;

/// Received frames stamped with the same clock reading at most; see [`BurstClock`].
pub const FRAMES_PER_CLOCK_READ: u32 = 16;

/// The time a received frame is handed to the engine with. Reading the system clock
/// (`Instant::now`, through the vDSO) costs about 33 ns on the machine of docs/benchmarks.md,
/// a sixth of what the engine spends on a frame, so a burst's frames share readings: the
/// clock is read for the first frame of each receive call ([`BurstClock::new_call`]) and then
/// every [`FRAMES_PER_CLOCK_READ`] frames. A burst is delivered in a tight loop, so a stamp
/// is at most that many frames' handling (a few microseconds) old; the engine's timers are
/// milliseconds. `&self` methods, so a delivery closure and the loop around it can share it.
#[derive(Debug)]
pub struct BurstClock {
    start: Instant,
    seen: Cell<u32>,
    stamp: Cell<u64>,
}

impl BurstClock {
    /// Nanoseconds count from `start`.
    pub fn new(start: Instant) -> BurstClock {
        BurstClock {
            start,
            seen: Cell::new(0),
            stamp: Cell::new(0),
        }
    }

    /// A receive call begins: the next frame reads the clock (the call may have waited).
    pub fn new_call(&self) {
        self.seen.set(0);
    }

    /// The stamp of the next received frame, in nanoseconds since `start`.
    pub fn frame(&self) -> u64 {
        let k = self.seen.get();
        if k.is_multiple_of(FRAMES_PER_CLOCK_READ) {
            self.stamp.set(self.start.elapsed().as_nanos() as u64);
        }
        self.seen.set(k.wrapping_add(1));
        self.stamp.get()
    }
}

/// One worker's session: the engine, the datapath and the clock.
///
/// ```no_run
/// # use std::sync::Arc;
/// # use sgnn_transport::{datapath::UdpDatapath, EngineConfig, Layer, Session, WorkerView};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let plan = sgnn_plan::Plan::load("plan".as_ref())?;
/// let view = Arc::new(WorkerView::new(&plan, 0, None)?);
/// let dp = UdpDatapath::bind("127.0.0.1:9100".parse()?, "127.0.0.1:9000".parse()?, 1 << 22)?;
/// let mut s = Session::new(view.clone(), EngineConfig::default(), dp);
/// s.connect()?;
/// let dim = 64;
/// let x = vec![0.5f32; view.num_local() * dim];
/// let sums = s.propagate(Layer::forward(0), dim, &x)?; // one row per local vertex
/// # let _ = sums;
/// s.finish()?;
/// # Ok(()) }
/// ```
pub struct Session<D: Datapath> {
    engine: Engine,
    dp: D,
    clock: Instant,
    out: Vec<Vec<u8>>,
}

impl<D: Datapath> Session<D> {
    /// A session for `view`'s worker over `dp`.
    pub fn new(view: Arc<WorkerView>, cfg: EngineConfig, dp: D) -> Session<D> {
        let clock = Instant::now();
        Session {
            engine: Engine::new(view, cfg, 0),
            dp,
            clock,
            out: Vec::with_capacity(SEND_BURST),
        }
    }

    fn now(&self) -> u64 {
        self.clock.elapsed().as_nanos() as u64
    }

    /// The worker's view of the plan (`local_vertices` is the row order of features and
    /// sums).
    pub fn view(&self) -> &WorkerView {
        self.engine.view()
    }

    /// Counters so far.
    pub fn stats(&self) -> Stats {
        self.engine.stats()
    }

    /// The engine (for inspection).
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The datapath (for its counters).
    pub fn datapath(&self) -> &D {
        &self.dp
    }

    /// Waits until the switch answered the start-up probe (routes this worker's address back
    /// to it). Fails after the stall timeout with a message saying what to check.
    pub fn connect(&mut self) -> Result<(), TransportError> {
        self.drive(|e| e.connected())
    }

    /// Propagates one layer: `features` holds `dim` values for each local vertex (ascending
    /// vertex id); returns, in the same layout, the sum over every neighbour (local and
    /// remote) of its features, exact up to the fixed-point codec. Every worker must call
    /// `propagate` the same number of times in the same order (each call is one round).
    pub fn propagate(
        &mut self,
        layer: Layer,
        dim: usize,
        features: &[f32],
    ) -> Result<Vec<f32>, TransportError> {
        let now = self.now();
        self.engine.start_round(now, layer, dim, features)?;
        self.drive(|e| !e.busy())?;
        self.engine
            .take_sums()
            .ok_or_else(|| WrongState::NoSums.into())
    }

    /// Keeps the session alive between rounds for up to `budget`: receives, answers peers'
    /// fetches and fires timers, without starting a round. A daemon serving a training process
    /// calls it while it waits for the next request, so a worker that finished a round still
    /// answers the workers that have not (otherwise host-based recovery deadlocks: the slower
    /// workers' fetches reach a daemon that is not reading).
    pub fn idle(&mut self, budget: Duration) -> Result<(), TransportError> {
        let deadline = Instant::now() + budget;
        self.drive(|_| Instant::now() >= deadline)
    }

    /// Ends the session (the baseline runs its final barrier here).
    pub fn finish(&mut self) -> Result<(), TransportError> {
        let now = self.now();
        self.engine.finish(now)?;
        self.drive(|e| e.finished())
    }

    fn flush(&mut self) -> Result<(), TransportError> {
        if !self.out.is_empty() {
            self.dp.send_burst(&self.out)?;
            for f in self.out.drain(..) {
                self.engine.recycle(f);
            }
        }
        Ok(())
    }

    fn drive(&mut self, done: impl Fn(&Engine) -> bool) -> Result<(), TransportError> {
        loop {
            let now = self.now();
            self.engine.handle_timeout(now)?;
            while let Some((_, f)) = self.engine.poll_transmit(now) {
                self.out.push(f);
                if self.out.len() >= SEND_BURST {
                    self.flush()?;
                }
            }
            self.flush()?;
            if let Some(e) = self.engine.take_error() {
                return Err(e);
            }
            if done(&self.engine) {
                return Ok(());
            }
            let wait = self
                .engine
                .poll_timeout(now)
                .map_or(MAX_WAIT, |t| {
                    Duration::from_nanos(t.saturating_sub(self.now()))
                })
                .min(MAX_WAIT);
            let Session {
                engine, dp, clock, ..
            } = self;
            let stamps = BurstClock::new(*clock);
            let mut deliver = |f: &[u8]| engine.handle_frame(stamps.frame(), f);
            // Drain what is already queued before the next timeout check: after this process
            // was descheduled (a loaded machine), the timers have expired but the frames that
            // answer them are waiting in the receive queue. Firing fetches and resends first
            // would re-request everything in flight and start a retransmission storm.
            stamps.new_call();
            let mut got = dp.recv_burst(wait, &mut deliver)?;
            let mut bursts = 1;
            while got > 0 && bursts < DRAIN_BURSTS {
                stamps.new_call();
                got = dp.recv_burst(Duration::ZERO, &mut deliver)?;
                bursts += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A burst's frames share a reading, a new reading comes every `FRAMES_PER_CLOCK_READ`
    /// frames, and a new receive call always reads the clock again.
    #[test]
    fn burst_clock_reads_once_per_call_and_every_few_frames() {
        let c = BurstClock::new(Instant::now());
        let first = c.frame();
        std::thread::sleep(Duration::from_millis(2));
        for _ in 1..FRAMES_PER_CLOCK_READ {
            assert_eq!(c.frame(), first, "the same reading within the first frames");
        }
        let next = c.frame();
        assert!(
            next > first,
            "read again after {FRAMES_PER_CLOCK_READ} frames"
        );
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(c.frame(), next);
        c.new_call();
        assert!(c.frame() > next, "a new call reads the clock");
    }
}
