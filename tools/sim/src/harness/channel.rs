//! The harness's network: every frame a worker sends goes to the switch on the worker's
//! access link, every frame the switch emits to a worker on the switch's link to it. A link
//! delivers in the order it was given frames, [`LATENCY_NS`] plus a random delay after they
//! were sent, unless a fault says otherwise. Every fault is an option ([`Faults`]); the random
//! draws come from [`crate::hash::draw_key`] on the channel's seed, so a seed gives one run.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use sgnn_wire::{FrameRepr, PacketType};

use crate::hash::draw_key;

/// Base one-way latency of a link, ns.
pub const LATENCY_NS: u64 = 2_000;

/// The switch port a frame from nowhere enters on (no worker's).
pub const STRAY_PORT: u16 = 511;

/// Where a frame goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum To {
    /// The switch, entering on this port (worker w's is port w; [`STRAY_PORT`] is no
    /// worker's).
    Switch(u16),
    /// Worker w's daemon.
    Host(u16),
}

/// What the channel does to frames: each a probability per frame, or a delay.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Faults {
    /// Loses the frame.
    pub drop: f64,
    /// Delivers the frame twice (first transmissions of Data included: the switch drops a
    /// second first-pass copy, `src_seen`, docs/switch-interface.md).
    pub duplicate: f64,
    /// Lets the frame ignore its link's order: delivered [`LATENCY_NS`] plus its delay after it
    /// was sent, ahead of frames still queued (reordering as a multi-queue NIC or a multipath
    /// fabric makes it).
    pub reorder: f64,
    /// Uniform extra delay of every frame, 0..=`delay_ns` (queueing).
    pub delay_ns: u64,
}

impl Faults {
    /// A channel that loses, duplicates, reorders and delays nothing.
    pub const NONE: Faults = Faults {
        drop: 0.0,
        duplicate: 0.0,
        reorder: 0.0,
        delay_ns: 0,
    };
}

impl std::fmt::Display for Faults {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "drop {:.3}, duplicate {:.3}, reorder {:.3}, delay {} ns",
            self.drop, self.duplicate, self.reorder, self.delay_ns
        )
    }
}

/// A uniform value in [0, 1) from `x` (its top 53 bits).
pub fn unit(x: u64) -> f64 {
    (x >> 11) as f64 / (1u64 << 53) as f64
}

/// The random stream of the channel's faults (a name for [`draw_key`]).
const STREAM: u64 = 0x6368_616e_6e65_6c00; // "channel\0"

/// Frames the test asked the channel to lose: the next `left` frames of type `kind` to `to`.
#[derive(Debug, Clone)]
struct TargetedDrop {
    to: To,
    kind: PacketType,
    left: usize,
}

/// What the channel did, counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChannelStats {
    /// Frames given to the channel (injected ones apart).
    pub sent: u64,
    /// Lost by [`Faults::drop`] or a targeted drop.
    pub dropped: u64,
    /// Second copies made by [`Faults::duplicate`].
    pub duplicated: u64,
    /// Copies that ignored their link's order ([`Faults::reorder`]).
    pub reordered: u64,
    /// Frames delivered.
    pub delivered: u64,
}

/// (delivery time, sequence number, destination, frame).
type InFlight = (u64, u64, To, Vec<u8>);

/// The links between the workers and the switch, and the frames on them.
#[derive(Debug)]
pub struct Channel {
    /// The fault options (may be changed between events).
    pub faults: Faults,
    seed: u64,
    draws: u64,
    heap: BinaryHeap<Reverse<InFlight>>,
    seq: u64,
    /// Per link (by destination), when its last frame is delivered.
    link_free: BTreeMap<To, u64>,
    targeted: Vec<TargetedDrop>,
    /// What it did.
    pub stats: ChannelStats,
}

impl Channel {
    /// An empty channel with `faults`, its draws seeded by `seed`.
    pub fn new(faults: Faults, seed: u64) -> Channel {
        Channel {
            faults,
            seed,
            draws: 0,
            heap: BinaryHeap::new(),
            seq: 0,
            link_free: BTreeMap::new(),
            targeted: Vec::new(),
            stats: ChannelStats::default(),
        }
    }

    /// The seed of its draws.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    fn draw(&mut self) -> u64 {
        self.draws += 1;
        draw_key(self.seed, STREAM, self.draws)
    }

    /// Loses the next `n` frames of type `kind` sent to `to` (before any random fault).
    pub fn drop_next(&mut self, to: To, kind: PacketType, n: usize) {
        self.targeted.push(TargetedDrop { to, kind, left: n });
    }

    fn targeted_drop(&mut self, to: To, frame: &[u8]) -> bool {
        if !self.targeted.iter().any(|t| t.to == to && t.left > 0) {
            return false;
        }
        let Ok((r, _)) = FrameRepr::parse(frame) else {
            return false;
        };
        match self
            .targeted
            .iter_mut()
            .find(|t| t.to == to && t.left > 0 && t.kind == r.sgnn.packet_type)
        {
            Some(t) => {
                t.left -= 1;
                true
            }
            None => false,
        }
    }

    /// Puts `frame`, sent at `now`, on the link to `to`, through the faults.
    pub fn send(&mut self, now: u64, to: To, frame: Vec<u8>) {
        self.stats.sent += 1;
        if self.targeted_drop(to, &frame) {
            self.stats.dropped += 1;
            return;
        }
        if unit(self.draw()) < self.faults.drop {
            self.stats.dropped += 1;
            return;
        }
        let copies = if unit(self.draw()) < self.faults.duplicate {
            self.stats.duplicated += 1;
            2
        } else {
            1
        };
        for _ in 0..copies {
            let delay = self.draw() % (self.faults.delay_ns + 1);
            let mut at = now + LATENCY_NS + delay;
            let fifo = unit(self.draw()) >= self.faults.reorder;
            let free = self.link_free.entry(to).or_insert(0);
            if fifo {
                at = at.max(*free);
            } else {
                self.stats.reordered += 1;
            }
            *free = (*free).max(at);
            self.seq += 1;
            let frame = frame.clone();
            self.heap.push(Reverse((at, self.seq, to, frame)));
        }
    }

    /// Puts `frame` on the network at `now` from nowhere (a stranger's, or forged): no fault,
    /// no link order, delivered [`LATENCY_NS`] later.
    pub fn inject(&mut self, now: u64, to: To, frame: Vec<u8>) {
        self.seq += 1;
        self.heap
            .push(Reverse((now + LATENCY_NS, self.seq, to, frame)));
    }

    /// When the next frame is delivered.
    pub fn next_delivery(&self) -> Option<u64> {
        self.heap.peek().map(|Reverse((t, ..))| *t)
    }

    /// The next frame delivered by `now`, if any.
    pub fn pop_due(&mut self, now: u64) -> Option<(To, Vec<u8>)> {
        if self.next_delivery()? > now {
            return None;
        }
        let Reverse((_, _, to, frame)) = self.heap.pop()?;
        self.stats.delivered += 1;
        Some((to, frame))
    }

    /// Frames on the links.
    pub fn in_flight(&self) -> usize {
        self.heap.len()
    }
}
