//! [`Cluster`]: the engines of every worker and the loaded software switch on one
//! [`Channel`], in virtual time (ns), and its event loop. Each step of the loop fires every
//! engine's timers and sends what it has, then delivers the frames due next; the
//! [`Invariants`] are checked after every frame delivered and every step.

use std::sync::Arc;

use sgnn_plan::Plan;
use sgnn_transport::engine::{Engine, EngineConfig};
use sgnn_transport::{TransportError, WorkerView};
use sgnn_wire::{FrameRepr, PacketType};
use softswitch::{Emitted, Pipeline};

use super::{loaded_switch, Channel, Faults, Invariants, To, Violation};

/// A frame put on the network from nowhere, and where it goes.
pub type Injected = (To, Vec<u8>);

/// An engine that cannot go on, and why.
#[derive(Debug)]
pub struct EngineError {
    /// Its worker.
    pub worker: u16,
    /// Its error.
    pub error: TransportError,
}

impl std::fmt::Display for EngineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "worker {}: {}", self.worker, self.error)
    }
}

/// N workers' engines and the switch, on a channel.
pub struct Cluster {
    /// The plan every engine and the switch run.
    pub plan: Plan,
    /// The software switch (replace it with [`Cluster::replace_switch`]).
    pub switch: Pipeline,
    /// Worker w's engine.
    pub engines: Vec<Engine>,
    /// The network.
    pub channel: Channel,
    /// Virtual time, ns.
    pub now: u64,
    /// Workers whose daemon runs (a dead one is not polled; frames to it are lost).
    pub alive: Vec<bool>,
    /// Worker w's daemon starts at this virtual time: before it, it is not polled and frames
    /// to it are lost (a port that is not up yet).
    pub start_at: Vec<u64>,
    /// Types of the frames lost that way.
    pub lost_before_start: Vec<PacketType>,
    /// Frames injected from nowhere (forged or stray) when [`super::run_layers`] starts
    /// this round (counted from 0).
    pub inject: Option<(usize, Vec<Injected>)>,
    /// The checkers' state.
    pub invariants: Invariants,
    /// Events so far (frames delivered and steps).
    pub events: u64,
    emitted: Vec<Emitted>,
}

impl Cluster {
    /// Every worker of `plan` with engine configuration `cfg`, the switch loaded with `plan`,
    /// on a channel with `faults` seeded by `seed`.
    pub fn new(plan: Plan, cfg: EngineConfig, faults: Faults, seed: u64) -> Cluster {
        let workers = plan.workers() as usize;
        let switch = loaded_switch(&plan);
        let engines = (0..workers as u32)
            .map(|w| {
                let view = Arc::new(WorkerView::new(&plan, w, None).expect("a worker's view"));
                Engine::new(view, cfg.clone(), 0)
            })
            .collect();
        Cluster {
            plan,
            switch,
            engines,
            channel: Channel::new(faults, seed),
            now: 0,
            alive: vec![true; workers],
            start_at: vec![0; workers],
            lost_before_start: Vec::new(),
            inject: None,
            invariants: Invariants::default(),
            events: 0,
            emitted: Vec::new(),
        }
    }

    /// The run's seed (the channel's).
    pub fn seed(&self) -> u64 {
        self.channel.seed()
    }

    /// Replaces the switch (restarted, reloaded): its checkers start again.
    pub fn replace_switch(&mut self, switch: Pipeline) {
        self.switch = switch;
        self.invariants.switch_replaced();
    }

    /// Whether worker `w`'s daemon runs now.
    pub fn up(&self, w: usize) -> bool {
        self.alive[w] && self.now >= self.start_at[w]
    }

    /// Stops the run with a broken invariant (a panic naming the event, the seed and what
    /// broke).
    pub fn violated(&self, what: String) -> ! {
        let v = Violation {
            event: self.events,
            seed: self.seed(),
            now: self.now,
            what,
        };
        panic!("{v}")
    }

    fn check(&mut self, r: Result<(), String>) {
        if let Err(what) = r {
            self.violated(what);
        }
    }

    /// Runs the switch on a frame that arrived on `port`, pass by pass (what
    /// `Pipeline::process` does), checking each pass's contributions, and sends what it
    /// emits.
    fn switch_frame(&mut self, port: u16, frame: &[u8]) {
        let data = match FrameRepr::parse(frame) {
            Ok((r, _)) if r.sgnn.packet_type == PacketType::Data => Some((
                (r.sgnn.round, r.sgnn.block_id, r.sgnn.src_id, r.sgnn.segment),
                r.sgnn.pass,
            )),
            _ => None,
        };
        let mut out = std::mem::take(&mut self.emitted);
        let before = self.switch.counters.aggregated;
        let mut next = self.switch.ingress(port, frame, &mut out);
        let mut counted = self.switch.counters.aggregated - before;
        let mut pass = data.map_or(0, |(_, p)| p);
        loop {
            if let Some((key, _)) = data {
                let r = self.invariants.pass(self.events, key, pass, counted);
                self.check(r);
            }
            let Some(r) = next else { break };
            pass = r.pass().wrapping_add(1);
            let before = self.switch.counters.aggregated;
            next = self.switch.recirculate(r, &mut out);
            counted = self.switch.counters.aggregated - before;
        }
        for e in out.drain(..) {
            self.channel.send(self.now, To::Host(e.port), e.frame);
        }
        self.emitted = out;
    }

    fn after_event(&mut self) {
        let r = self.invariants.after_event(&self.switch, &self.engines);
        self.check(r);
    }

    /// Runs until `step` says stop (asked after every step, once every engine has fired its
    /// timers and sent what it had); returns the first engine error. Panics when virtual
    /// time would pass `limit` (nothing finished) or an invariant breaks.
    pub fn run(
        &mut self,
        limit: u64,
        mut step: impl FnMut(&mut Cluster) -> bool,
    ) -> Result<(), EngineError> {
        loop {
            // Transmit and fire timers at `now`.
            self.events += 1;
            for w in 0..self.engines.len() {
                if !self.up(w) {
                    continue;
                }
                if let Err(error) = self.engines[w].handle_timeout(self.now) {
                    let worker = w as u16;
                    return Err(EngineError { worker, error });
                }
                while let Some((_, f)) = self.engines[w].poll_transmit(self.now) {
                    self.channel.send(self.now, To::Switch(w as u16), f);
                }
                if let Some(error) = self.engines[w].take_error() {
                    let worker = w as u16;
                    return Err(EngineError { worker, error });
                }
            }
            self.after_event();
            if step(self) {
                return Ok(());
            }
            let mut next = self.channel.next_delivery();
            for w in 0..self.engines.len() {
                if self.up(w) {
                    if let Some(t) = self.engines[w].poll_timeout(self.now) {
                        next = Some(next.map_or(t, |n: u64| n.min(t)));
                    }
                } else if self.alive[w] {
                    let t = self.start_at[w];
                    next = Some(next.map_or(t, |n: u64| n.min(t)));
                }
            }
            let next = next.expect("something to wait for");
            assert!(
                next <= limit,
                "virtual time limit reached: nothing finished (seed {}, event {})",
                self.seed(),
                self.events
            );
            self.now = self.now.max(next);
            while let Some((to, frame)) = self.channel.pop_due(self.now) {
                self.events += 1;
                match to {
                    To::Switch(port) => self.switch_frame(port, &frame),
                    To::Host(w) => {
                        if self.up(w as usize) {
                            self.engines[w as usize].handle_frame(self.now, &frame);
                        } else if self.alive[w as usize] {
                            if let Ok((r, _)) = FrameRepr::parse(&frame) {
                                self.lost_before_start.push(r.sgnn.packet_type);
                            }
                        }
                    }
                }
                self.after_event();
            }
        }
    }
}
