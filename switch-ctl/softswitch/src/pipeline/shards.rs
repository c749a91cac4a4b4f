//! Shards: the pipeline over several threads, with no lock on the per-frame path.
//!
//! The switch's state splits in two by who touches it (docs/switch-interface.md, "The
//! software switch on several cores"):
//! - **the front** (the caller's thread): parsing, the drop simulator, admission, block
//!   synchronisation, the seq check and tail probes, forwarding, and for a Data frame's first
//!   pass its `agg_table` row and the duplicate check (`src_seen`). All of it is per worker or
//!   global, and all of it is cheap next to an aggregator pass;
//! - **the aggregator shards** (one thread each): every pass that reaches an aggregator, and
//!   every pull that reads one. Shard `k` of `n` owns the aggregators whose index is `k` mod
//!   `n` (`agg_base + segment`: the segments of one row spread over the shards), and only it
//!   reads or writes their registers.
//!
//! A pass whose row says `more` goes on in the shard that owns the next pass's aggregator:
//! its own, or another's over that shard's channel, as the hardware's recirculation port
//! carries a pass to the next. Frames of other packets may run between two passes of one
//! packet, as on the hardware and in the simulator; one packet's passes stay in order, and so
//! do the frames they emit. Fed one frame at a time ([`Shards::flush`] after each), the shards
//! emit exactly what one [`Pipeline`] emits, frame for frame, with the same counters and
//! registers (`bmv2-tests/tests/shards.rs` checks it on every differential scenario).
//!
//! Each thread holds a whole [`Pipeline`] (tables and registers); the control plane writes
//! all of them ([`Shards::control`]), and [`Shards::snapshot`] merges them into the one
//! switch a reader expects: the front's state, each aggregator from its owner, counters
//! summed.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;

use sgnn_switch::aggregation::{AggAction, AggregateParams};
use sgnn_wire::frame::FrameRepr;

use super::{Counters, Emitted, Pipeline, Recirculation};
use crate::tables::PortId;

/// Work the front hands to the shard that owns its aggregator.
#[derive(Debug, Clone)]
pub(crate) enum Deferred {
    /// A pass, with its `agg_table` row (and its duplicate check done).
    Pass(Recirculation, AggAction),
    /// A pull of an `aggregate` row's aggregator (its stale and role checks done).
    Pull(FrameRepr, AggregateParams),
}

impl Deferred {
    /// The shard that owns what this touches ([`pass_owner`]; a pull reads its row's
    /// aggregator).
    fn owner(&self, n: usize) -> usize {
        match self {
            Deferred::Pass(r, a) => pass_owner(r, a, n),
            Deferred::Pull(repr, p) => agg_owner(p, repr.sgnn.segment, n),
        }
    }
}

/// The shard of `n` that owns a pass: its aggregator's index mod `n`, or for a row with no
/// aggregator (`deliver`, `replicate`) the source's id mod `n`.
fn pass_owner(r: &Recirculation, a: &AggAction, n: usize) -> usize {
    match a {
        AggAction::Aggregate(p) | AggAction::Up(p) | AggAction::Partials(p) => {
            agg_owner(p, r.repr.sgnn.segment, n)
        }
        AggAction::Deliver { .. } | AggAction::Replicate { .. } => r.repr.sgnn.src_id as usize % n,
    }
}

/// The shard of `n` that owns aggregator `agg_base + segment`.
fn agg_owner(p: &AggregateParams, segment: u16, n: usize) -> usize {
    ((p.agg_base as u64 + segment as u64) % n as u64) as usize
}

/// A control-plane change, applied to every copy of the pipeline.
type ControlFn = Arc<dyn Fn(&mut Pipeline) + Send + Sync>;

enum Msg {
    /// Passes and pulls, with the egress queue depths the front last had (for ECN).
    Work(Vec<Deferred>, Option<Vec<u32>>),
    /// A control-plane change.
    Control(ControlFn),
    /// A copy of the shard's pipeline, for [`Shards::snapshot`].
    Snapshot(Sender<Pipeline>),
    /// The end of the thread (each shard holds every shard's sender, so the channels never
    /// close by themselves).
    Stop,
}

/// One [`Pipeline`] run by a front (the caller's thread) and `n` aggregator shards (threads).
pub struct Shards {
    front: Pipeline,
    to: Vec<Sender<Msg>>,
    emitted: Receiver<Vec<Emitted>>,
    /// Messages sent to shards and not yet handled (work, control): 0 when every pass of
    /// every frame given so far has run and its frames are in `emitted`.
    in_flight: Arc<AtomicUsize>,
    threads: Vec<JoinHandle<()>>,
    batches: Vec<Vec<Deferred>>,
}

impl std::fmt::Debug for Shards {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shards")
            .field("shards", &self.to.len())
            .field("in_flight", &self.in_flight.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl Shards {
    /// `pipeline` (tables loaded, registers as they are) run by the caller's thread as the
    /// front and `shards` threads (at least 1) for the aggregators.
    pub fn new(pipeline: Pipeline, shards: usize) -> Shards {
        let n = shards.max(1);
        let in_flight = Arc::new(AtomicUsize::new(0));
        let (emit_tx, emitted) = channel();
        let (senders, receivers): (Vec<_>, Vec<_>) = (0..n).map(|_| channel::<Msg>()).unzip();
        let threads = receivers
            .into_iter()
            .enumerate()
            .map(|(me, rx)| {
                let mut copy = pipeline.clone();
                copy.deferred = None;
                // Counts start at 0 in every shard: the front keeps what came before.
                copy.counters = Counters::default();
                copy.port_tx.fill(Default::default());
                let shard = Shard {
                    me,
                    pipeline: copy,
                    peers: senders.clone(),
                    emitted: emit_tx.clone(),
                    in_flight: in_flight.clone(),
                };
                std::thread::Builder::new()
                    .name(format!("agg-shard-{me}"))
                    .spawn(move || shard.run(rx))
                    .expect("spawn an aggregator shard")
            })
            .collect();
        let mut front = pipeline;
        front.deferred = Some(Vec::new());
        Shards {
            front,
            to: senders,
            emitted,
            in_flight,
            threads,
            batches: (0..n).map(|_| Vec::new()).collect(),
        }
    }

    /// The front's part of a frame received on `ingress`: what the front emits goes to `out`
    /// now; its aggregator passes wait for [`Shards::dispatch`] (a burst's worth at a time).
    pub fn process(&mut self, ingress: PortId, frame: &[u8], out: &mut Vec<Emitted>) {
        let next = self.front.ingress(ingress, frame, out);
        debug_assert!(next.is_none(), "the front defers every pass");
        let n = self.to.len();
        if let Some(d) = self.front.deferred.as_mut() {
            for w in d.drain(..) {
                self.batches[w.owner(n)].push(w);
            }
        }
    }

    /// Sends the passes gathered since the last dispatch to their shards.
    pub fn dispatch(&mut self) {
        let depths = (!self.front.queue_depth.is_empty()).then(|| self.front.queue_depth.clone());
        for (k, b) in self.batches.iter_mut().enumerate() {
            if !b.is_empty() {
                self.in_flight.fetch_add(1, Ordering::AcqRel);
                let work = Msg::Work(std::mem::take(b), depths.clone());
                self.to[k].send(work).expect("aggregator shard alive");
            }
        }
    }

    /// Appends what the shards emitted so far to `out`, without waiting.
    pub fn collect(&mut self, out: &mut Vec<Emitted>) {
        while let Ok(v) = self.emitted.try_recv() {
            out.extend(v);
        }
    }

    /// Dispatches, waits until every pass given so far has run, and appends what the shards
    /// emitted to `out`.
    pub fn flush(&mut self, out: &mut Vec<Emitted>) {
        self.dispatch();
        let mut spins = 0u32;
        while self.in_flight.load(Ordering::Acquire) != 0 {
            spins += 1;
            if spins < 1000 {
                std::hint::spin_loop();
            } else {
                // A shard that died (a panic) would leave its work in flight for ever.
                assert!(
                    !self.threads.iter().any(|t| t.is_finished()),
                    "an aggregator shard stopped with work in flight"
                );
                std::thread::yield_now();
            }
        }
        self.collect(out);
    }

    /// Applies a control-plane change (a table or register write) to the front and to every
    /// shard, after the work given so far (what that work emits goes to `out`).
    pub fn control(
        &mut self,
        f: impl Fn(&mut Pipeline) + Send + Sync + 'static,
        out: &mut Vec<Emitted>,
    ) {
        self.flush(out);
        let f: ControlFn = Arc::new(f);
        f(&mut self.front);
        for t in &self.to {
            self.in_flight.fetch_add(1, Ordering::AcqRel);
            t.send(Msg::Control(f.clone()))
                .expect("aggregator shard alive");
        }
        self.flush(out);
    }

    /// The switch as one [`Pipeline`], after the work given so far: the front's tables,
    /// settings and per-worker registers, each aggregator's registers from the shard that
    /// owns it, and counters summed over the threads.
    pub fn snapshot(&mut self, out: &mut Vec<Emitted>) -> Pipeline {
        self.flush(out);
        let n = self.to.len();
        let copies: Vec<Pipeline> = self
            .to
            .iter()
            .map(|t| {
                let (tx, rx) = channel();
                t.send(Msg::Snapshot(tx)).expect("aggregator shard alive");
                rx.recv().expect("aggregator shard answers")
            })
            .collect();
        let mut p = self.front.clone();
        p.deferred = None;
        for (k, c) in copies.iter().enumerate() {
            let (r, cr) = (&mut p.regs, &c.regs);
            for i in (k..r.agg_state.len()).step_by(n) {
                r.agg_values[i] = cr.agg_values[i];
                r.agg_count[i] = cr.agg_count[i];
                r.agg_state[i] = cr.agg_state[i];
                r.agg_tag[i] = cr.agg_tag[i];
                r.agg_gen[i] = cr.agg_gen[i];
                r.agg_ecn[i] = cr.agg_ecn[i];
                r.agg_ids[i] = cr.agg_ids[i];
            }
            p.counters.add(&c.counters);
            for (a, b) in p.port_tx.iter_mut().zip(&c.port_tx) {
                a.packets += b.packets;
                a.bytes += b.bytes;
            }
        }
        p.recount_active();
        p
    }
}

impl Drop for Shards {
    fn drop(&mut self) {
        for t in &self.to {
            let _ = t.send(Msg::Stop);
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// One aggregator shard's thread.
struct Shard {
    me: usize,
    pipeline: Pipeline,
    peers: Vec<Sender<Msg>>,
    emitted: Sender<Vec<Emitted>>,
    in_flight: Arc<AtomicUsize>,
}

impl Shard {
    fn run(mut self, rx: Receiver<Msg>) {
        let n = self.peers.len();
        let mut out = Vec::new();
        let mut handoff: Vec<Vec<Deferred>> = (0..n).map(|_| Vec::new()).collect();
        let mut queue = VecDeque::new();
        while let Ok(msg) = rx.recv() {
            match msg {
                Msg::Control(f) => f(&mut self.pipeline),
                Msg::Snapshot(tx) => {
                    let _ = tx.send(self.pipeline.clone());
                    continue;
                }
                Msg::Stop => return,
                Msg::Work(batch, depths) => {
                    if let Some(d) = depths {
                        self.pipeline.queue_depth = d;
                    }
                    queue.extend(batch);
                    while let Some(w) = queue.pop_front() {
                        match w {
                            Deferred::Pull(repr, p) => self.pipeline.pull_read(repr, p, &mut out),
                            Deferred::Pass(r, a) => self.passes(r, a, &mut handoff, &mut out),
                        }
                    }
                    // What these passes emitted before the passes they hand on, so one
                    // packet's frames stay in the order of its passes.
                    if !out.is_empty() {
                        let _ = self.emitted.send(std::mem::take(&mut out));
                    }
                    for (k, b) in handoff.iter_mut().enumerate() {
                        if !b.is_empty() {
                            self.in_flight.fetch_add(1, Ordering::AcqRel);
                            let _ = self.peers[k].send(Msg::Work(std::mem::take(b), None));
                        }
                    }
                }
            }
            self.in_flight.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// A pass and the passes after it that this shard owns; the first one another shard
    /// owns goes to `handoff`.
    fn passes(
        &mut self,
        r: Recirculation,
        a: AggAction,
        handoff: &mut [Vec<Deferred>],
        out: &mut Vec<Emitted>,
    ) {
        let n = handoff.len();
        let mut next = self.pipeline.apply_pass(r, a, out);
        while let Some(mut r) = next {
            r.repr.sgnn.pass += 1;
            let Some(a) = self.pipeline.pass_action(&r) else {
                return;
            };
            let k = pass_owner(&r, &a, n);
            if k != self.me {
                handoff[k].push(Deferred::Pass(r, a));
                return;
            }
            next = self.pipeline.apply_pass(r, a, out);
        }
    }
}

impl Counters {
    /// Adds `o`'s counts (another thread's share of the same switch) to these.
    pub fn add(&mut self, o: &Counters) {
        // Every field named: a counter added to the struct does not compile here until it
        // is summed.
        let Counters {
            rx,
            tx,
            data,
            aggregated,
            results,
            recirculated,
            bypassed,
            delivered,
            reclaimed,
            forwarded,
            block_done,
            block_done_duplicate,
            block_done_stale,
            block_advance,
            ecn_marked,
            drop_simulated,
            drop_not_ipv4,
            drop_no_route,
            drop_malformed,
            drop_unexpected,
            drop_stale,
            drop_no_entry,
            drop_bad_index,
            drop_unknown_worker,
            saturated,
            drop_duplicate,
            drop_wrong_port,
            bypassed_late,
            nacked,
            seq_probed,
            pulled,
            all_sent,
            drop_wrong_address,
            drop_foreign_job,
        } = o;
        self.rx += rx;
        self.tx += tx;
        self.data += data;
        self.aggregated += aggregated;
        self.results += results;
        self.recirculated += recirculated;
        self.bypassed += bypassed;
        self.delivered += delivered;
        self.reclaimed += reclaimed;
        self.forwarded += forwarded;
        self.block_done += block_done;
        self.block_done_duplicate += block_done_duplicate;
        self.block_done_stale += block_done_stale;
        self.block_advance += block_advance;
        self.ecn_marked += ecn_marked;
        self.drop_simulated += drop_simulated;
        self.drop_not_ipv4 += drop_not_ipv4;
        self.drop_no_route += drop_no_route;
        self.drop_malformed += drop_malformed;
        self.drop_unexpected += drop_unexpected;
        self.drop_stale += drop_stale;
        self.drop_no_entry += drop_no_entry;
        self.drop_bad_index += drop_bad_index;
        self.drop_unknown_worker += drop_unknown_worker;
        self.saturated += saturated;
        self.drop_duplicate += drop_duplicate;
        self.drop_wrong_port += drop_wrong_port;
        self.bypassed_late += bypassed_late;
        self.nacked += nacked;
        self.seq_probed += seq_probed;
        self.pulled += pulled;
        self.all_sent += all_sent;
        self.drop_wrong_address += drop_wrong_address;
        self.drop_foreign_job += drop_foreign_job;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{SwitchConfig, Tables};

    /// A shard that dies is reported at the next wait, not waited for for ever.
    #[test]
    #[should_panic(expected = "an aggregator shard stopped with work in flight")]
    fn a_dead_shard_is_reported_not_waited_for() {
        let p = Pipeline::new(SwitchConfig::default(), Tables::default());
        let mut s = Shards::new(p, 2);
        s.control(
            |_| {
                if std::thread::current().name() == Some("agg-shard-1") {
                    panic!("a shard's bug");
                }
            },
            &mut Vec::new(),
        );
    }
}
