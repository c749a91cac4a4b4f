//! [`ScheduledTraffic`]: host-to-host traffic from a precomputed per-host schedule, the engine of the
//! host-only strategies (`g3`, `supergcn`, `hermod`, `emma`, `grappa`, `dgs`). The switch only
//! forwards.
//!
//! A schedule is, per host, a list of [`Run`]s: `frames` frames of one size to one destination.
//! A run may carry a condition ([`Cond`]): not before a time (a phase of a clock-driven
//! schedule, e.g. Hermod's matchings), and/or not before the host has received `need` *gated*
//! frames from one peer (a data dependency, e.g. the next step of a ring all-reduce, or the
//! answer to a request). Frames of a run marked `gated` count toward the receiver's gate
//! counter of their sender.
//!
//! In-order schedules send their runs strictly one after another (a blocked head blocks the
//! host); out-of-order schedules send from the first run whose condition holds (a server that
//! answers requests as they complete). The schedule is built once; sending costs no allocation.

use crate::net::{App, Kind, Out, Pkt, Time};

/// No condition.
pub const NO_COND: u32 = u32::MAX;

/// A run of frames to one destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    /// Destination host.
    pub dst: u32,
    /// Frames in the run.
    pub frames: u32,
    /// Wire bytes of each frame.
    pub wire: u32,
    /// Index into the schedule's conditions, or [`NO_COND`].
    pub cond: u32,
    /// Priority queue of the frames.
    pub prio: u8,
    /// The frames count toward the receiver's gate counter of this sender.
    pub gated: bool,
}

/// When a run may start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cond {
    /// Not before this time.
    pub not_before: Time,
    /// Not before `need` gated frames from host `from` arrived (`need = 0`: no gate).
    pub from: u32,
    /// Gated frames needed.
    pub need: u64,
}

/// Per-host schedules, built by a strategy.
#[derive(Debug, Clone, Default)]
pub struct Schedule {
    /// Runs of host `h`: `runs[off[h]..off[h + 1]]`.
    pub runs: Vec<Run>,
    /// Offsets, `hosts + 1` entries.
    pub off: Vec<usize>,
    /// Conditions referenced by runs.
    pub conds: Vec<Cond>,
}

impl Schedule {
    /// An empty schedule; add each host's runs with [`Schedule::push`] then
    /// [`Schedule::end_host`], hosts in order.
    pub fn new() -> Schedule {
        Schedule {
            runs: Vec::new(),
            off: vec![0],
            conds: Vec::new(),
        }
    }

    /// Appends a run to the host being built (empty runs are skipped).
    pub fn push(&mut self, run: Run) {
        if run.frames > 0 {
            self.runs.push(run);
        }
    }

    /// Registers a condition and returns its index.
    pub fn cond(&mut self, c: Cond) -> u32 {
        self.conds.push(c);
        (self.conds.len() - 1) as u32
    }

    /// Closes the host being built.
    pub fn end_host(&mut self) {
        self.off.push(self.runs.len());
    }

    /// Hosts closed so far.
    pub fn hosts(&self) -> u32 {
        (self.off.len() - 1) as u32
    }

    /// Runs of host `h`.
    pub fn host_runs(&self, h: u32) -> &[Run] {
        &self.runs[self.off[h as usize]..self.off[h as usize + 1]]
    }

    /// Round-robin over destinations one vector (`segments` data frames) at a time, starting
    /// at the next worker, as [`crate::strategies::HostBased`] does: `vectors(w, d)` is the
    /// number of vectors `w` sends to `d`. Adds every host's runs (and closes them).
    pub fn round_robin(
        &mut self,
        workers: u32,
        segments: u32,
        wire: u32,
        prio: u8,
        vectors: impl Fn(u32, u32) -> u64,
    ) {
        let m = workers as usize;
        let mut left = vec![0u64; m];
        let mut active: Vec<u32> = Vec::with_capacity(m);
        for w in 0..m {
            active.clear();
            for k in 1..m {
                let d = (w + k) % m;
                left[d] = vectors(w as u32, d as u32);
                if left[d] > 0 {
                    active.push(d as u32);
                }
            }
            while !active.is_empty() {
                active.retain(|&d| {
                    self.runs.push(Run {
                        dst: d,
                        frames: segments,
                        wire,
                        cond: NO_COND,
                        prio,
                        gated: false,
                    });
                    left[d as usize] -= 1;
                    left[d as usize] > 0
                });
            }
            self.end_host();
        }
    }
}

#[derive(Debug, Clone, Default)]
struct ExHost {
    /// First run not finished (in-order: the run being sent).
    head: usize,
    /// Frames sent of the head run (in-order).
    sent: u32,
    got: u64,
    expected: u64,
}

/// Host-to-host traffic following a [`Schedule`].
pub struct ScheduledTraffic {
    sched: Schedule,
    in_order: bool,
    /// Out-of-order schedules: frames sent of every run.
    run_sent: Vec<u32>,
    /// Gated frames received by `h` from `s`: `gate[h * M + s]`.
    gate: Vec<u64>,
    hosts: Vec<ExHost>,
    workers: u32,
    delivered: u64,
    total: u64,
    /// Distinct `not_before` times > 0 (a timer kicks every host then).
    starts: Vec<Time>,
    /// When the last expected frame arrived.
    pub finish: Option<Time>,
}

impl ScheduledTraffic {
    /// Runs `sched` (one entry per host); `in_order` as in the module doc.
    pub fn new(sched: Schedule, in_order: bool) -> ScheduledTraffic {
        let m = sched.hosts();
        let mut hosts = vec![ExHost::default(); m as usize];
        for r in &sched.runs {
            hosts[r.dst as usize].expected += r.frames as u64;
        }
        let total = hosts.iter().map(|h| h.expected).sum();
        let mut starts: Vec<Time> = sched
            .conds
            .iter()
            .map(|c| c.not_before)
            .filter(|&t| t > 0)
            .collect();
        starts.sort_unstable();
        starts.dedup();
        ScheduledTraffic {
            run_sent: if in_order {
                Vec::new()
            } else {
                vec![0; sched.runs.len()]
            },
            in_order,
            gate: vec![0; (m * m) as usize],
            hosts,
            workers: m,
            delivered: 0,
            total,
            starts,
            finish: if total == 0 { Some(0) } else { None },
            sched,
        }
    }

    /// The schedule.
    pub fn schedule(&self) -> &Schedule {
        &self.sched
    }

    fn ready(&self, host: u32, run: &Run, now: Time) -> bool {
        if run.cond == NO_COND {
            return true;
        }
        let c = &self.sched.conds[run.cond as usize];
        now >= c.not_before
            && (c.need == 0 || self.gate[(host * self.workers + c.from) as usize] >= c.need)
    }

    fn pkt(host: u32, run: &Run, i: usize, frame: u32) -> Pkt {
        Pkt {
            kind: Kind::Raw,
            prio: run.prio,
            ecn: false,
            seg: frame as u16,
            wire: run.wire,
            src: host,
            dst: run.dst,
            block: u32::from(run.gated),
            a: i as u32,
        }
    }
}

impl App for ScheduledTraffic {
    fn start(&mut self, out: &mut Out) {
        for (i, &t) in self.starts.iter().enumerate() {
            out.timers.push((t, 0, i as u64));
        }
    }

    fn timer(&mut self, _node: u32, _token: u64, _now: Time, out: &mut Out) {
        out.kicks.extend(0..self.workers);
    }

    fn host_next(&mut self, host: u32, now: Time) -> Option<Pkt> {
        let lo = self.sched.off[host as usize];
        let hi = self.sched.off[host as usize + 1];
        let head = self.hosts[host as usize].head;
        if self.in_order {
            let i = lo + head;
            if i >= hi {
                return None;
            }
            let run = self.sched.runs[i];
            let h = &self.hosts[host as usize];
            if h.sent == 0 && !self.ready(host, &run, now) {
                return None;
            }
            let frame = h.sent;
            let h = &mut self.hosts[host as usize];
            h.sent += 1;
            if h.sent == run.frames {
                h.sent = 0;
                h.head += 1;
            }
            return Some(Self::pkt(host, &run, i, frame));
        }
        let mut i = lo + head;
        while i < hi {
            let run = self.sched.runs[i];
            let sent = self.run_sent[i];
            if sent < run.frames && (sent > 0 || self.ready(host, &run, now)) {
                self.run_sent[i] += 1;
                if i == lo + head && self.run_sent[i] == run.frames {
                    let h = &mut self.hosts[host as usize];
                    while lo + h.head < hi
                        && self.run_sent[lo + h.head] == self.sched.runs[lo + h.head].frames
                    {
                        h.head += 1;
                    }
                }
                return Some(Self::pkt(host, &run, i, sent));
            }
            i += 1;
        }
        None
    }

    fn host_recv(&mut self, host: u32, pkt: Pkt, now: Time, out: &mut Out) {
        debug_assert_eq!(pkt.kind, Kind::Raw);
        self.hosts[host as usize].got += 1;
        self.delivered += 1;
        if pkt.block == 1 {
            self.gate[(host * self.workers + pkt.src) as usize] += 1;
            out.kicks.push(host);
        }
        if self.delivered == self.total {
            self.finish = Some(now);
        }
    }

    fn switch_recv(&mut self, sw: u32, pkt: Pkt, _now: Time, _out: &mut Out) {
        panic!("host-to-host traffic addressed to switch {sw}: {pkt:?}");
    }

    fn progress(&self) -> (u64, u64) {
        (self.delivered, self.total)
    }
}
