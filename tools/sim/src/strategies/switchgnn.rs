//! [`SwitchGnn`]: blocks, in-network aggregation and block sync (see the module above).

use sgnn_plan::Plan;

use super::{control_pkt, data_pkt, DATA_WIRE, PRIO_DATA, PRIO_RESULT};
use crate::net::{tx_time, App, Kind, Out, Pkt, Time};

#[derive(Debug, Clone, Default)]
struct SgHost {
    block: u32,
    /// Index into the worker's sends, and the segment of that source being sent.
    send_pos: usize,
    seg: u32,
    /// Index into the worker's (block, result frames) list.
    recv_pos: usize,
    got: u64,
    /// Results of the next block that overtook our BlockAdvance.
    early: u64,
    done_sent: bool,
    ctl_pending: bool,
    finished: bool,
}

/// Counters of the switch logic.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SwitchCounters {
    /// Contributions added (passes, all segments).
    pub contributions: u64,
    /// Passes on the recirculation path.
    pub recirculations: u64,
    /// Results emitted.
    pub results: u64,
    /// Data frames of a block other than the current one (dropped by the switch).
    pub stale: u64,
    /// Largest recirculation backlog, in picoseconds of work waiting.
    pub max_recirc_backlog: Time,
    /// Largest number of aggregators in use at once.
    pub peak_aggregators: u64,
}

/// SwitchGNN: the plan's blocks, in-network aggregation, block synchronisation.
pub struct SwitchGnn<'p> {
    plan: &'p Plan,
    workers: u32,
    segments: u32,
    switch_node: u32,
    /// Per worker `(block, source index in block)` in send order.
    sends: Vec<Vec<(u32, u32)>>,
    /// Per worker `(block, result frames expected)`, blocks ascending.
    recvs: Vec<Vec<(u32, u64)>>,
    hosts: Vec<SgHost>,
    // Switch state.
    cur_block: u32,
    done_count: u32,
    counts: Vec<u32>,
    ready: Vec<Time>,
    in_use: u64,
    recirc_free: Time,
    recirc_pass: Time,
    /// Switch counters.
    pub counters: SwitchCounters,
    delivered: u64,
    total: u64,
    finished_hosts: u32,
    /// When the last worker received the last BlockAdvance.
    pub finish: Option<Time>,
}

impl<'p> SwitchGnn<'p> {
    /// The plan's layer on a switch (node `switch_node`) whose recirculation path runs at
    /// `recirc_bps`.
    pub fn new(plan: &'p Plan, switch_node: u32, recirc_bps: u64) -> SwitchGnn<'p> {
        let m = plan.workers();
        let segments = plan.manifest.segments;
        let mut sends = vec![Vec::new(); m as usize];
        let mut recvs: Vec<Vec<(u32, u64)>> = vec![Vec::new(); m as usize];
        let mut peak = 0u64;
        for (b, block) in plan.blocks.iter().enumerate() {
            for (i, &s) in block.sources.iter().enumerate() {
                sends[plan.partition[s as usize] as usize].push((b as u32, i as u32));
            }
            for slot in &block.aggregators {
                let r = &mut recvs[plan.partition[slot.dst as usize] as usize];
                match r.last_mut() {
                    Some((lb, n)) if *lb == b as u32 => *n += segments as u64,
                    _ => r.push((b as u32, segments as u64)),
                }
            }
            peak = peak.max(block.aggregators_used(segments));
        }
        assert!(
            peak <= plan.manifest.aggregators,
            "a block uses {peak} aggregators, the switch holds {}",
            plan.manifest.aggregators
        );
        let total = recvs.iter().flatten().map(|&(_, n)| n).sum::<u64>()
            + 2 * m as u64 * plan.blocks.len() as u64;
        let mut s = SwitchGnn {
            plan,
            workers: m,
            segments,
            switch_node,
            sends,
            recvs,
            hosts: vec![SgHost::default(); m as usize],
            cur_block: 0,
            done_count: 0,
            counts: vec![0; peak as usize],
            ready: vec![0; peak as usize],
            in_use: 0,
            recirc_free: 0,
            recirc_pass: tx_time(DATA_WIRE as u64, recirc_bps),
            counters: SwitchCounters::default(),
            delivered: 0,
            total,
            finished_hosts: 0,
            finish: None,
        };
        if plan.blocks.is_empty() {
            s.finish = Some(0);
            for h in &mut s.hosts {
                h.finished = true;
            }
        }
        for w in 0..m {
            s.check_done(w);
        }
        s
    }

    fn expected(&self, w: u32) -> u64 {
        let h = &self.hosts[w as usize];
        match self.recvs[w as usize].get(h.recv_pos) {
            Some(&(b, n)) if b == h.block => n,
            _ => 0,
        }
    }

    fn sent_all(&self, w: u32) -> bool {
        let h = &self.hosts[w as usize];
        self.sends[w as usize]
            .get(h.send_pos)
            .is_none_or(|&(b, _)| b != h.block)
    }

    /// Queues BlockDone if this worker's part of the block is over; `true` if it did.
    fn check_done(&mut self, w: u32) -> bool {
        let h = &self.hosts[w as usize];
        if h.finished || h.done_sent || h.got < self.expected(w) || !self.sent_all(w) {
            return false;
        }
        let h = &mut self.hosts[w as usize];
        h.done_sent = true;
        h.ctl_pending = true;
        true
    }
}

impl App for SwitchGnn<'_> {
    fn host_next(&mut self, host: u32, _now: Time) -> Option<Pkt> {
        let h = &mut self.hosts[host as usize];
        if h.ctl_pending {
            h.ctl_pending = false;
            return Some(control_pkt(
                Kind::BlockDone,
                host,
                self.switch_node,
                h.block,
            ));
        }
        let &(b, i) = self.sends[host as usize].get(h.send_pos)?;
        if b != h.block {
            return None;
        }
        let pkt = data_pkt(Kind::Data, PRIO_DATA, host, self.switch_node, b, i, h.seg);
        h.seg += 1;
        if h.seg == self.segments {
            h.seg = 0;
            h.send_pos += 1;
            self.check_done(host);
        }
        Some(pkt)
    }

    fn host_recv(&mut self, host: u32, pkt: Pkt, now: Time, out: &mut Out) {
        self.delivered += 1;
        let h = &mut self.hosts[host as usize];
        match pkt.kind {
            Kind::Result if pkt.block == h.block => h.got += 1,
            Kind::Result if pkt.block == h.block + 1 => h.early += 1,
            Kind::Result => panic!("result of block {} at block {}", pkt.block, h.block),
            Kind::BlockAdvance => {
                assert_eq!(pkt.block, h.block, "advance of another block");
                if self.recvs[host as usize]
                    .get(h.recv_pos)
                    .is_some_and(|&(b, _)| b == h.block)
                {
                    h.recv_pos += 1;
                }
                h.block += 1;
                h.got = std::mem::take(&mut h.early);
                h.done_sent = false;
                if h.block as usize == self.plan.blocks.len() {
                    h.finished = true;
                    self.finished_hosts += 1;
                    if self.finished_hosts == self.workers {
                        self.finish = Some(now);
                    }
                    return;
                }
            }
            k => panic!("host {host} got {k:?}"),
        }
        self.check_done(host);
        out.kicks.push(host);
    }

    fn switch_recv(&mut self, sw: u32, pkt: Pkt, now: Time, out: &mut Out) {
        match pkt.kind {
            Kind::Data => {
                if pkt.block != self.cur_block {
                    self.counters.stale += 1;
                    return;
                }
                let block = &self.plan.blocks[pkt.block as usize];
                let passes = block.passes(pkt.a as usize);
                let k = passes.len() as u64;
                let start = self.recirc_free.max(now);
                if k > 1 {
                    self.counters.max_recirc_backlog =
                        self.counters.max_recirc_backlog.max(start - now);
                    self.recirc_free = start + (k - 1) * self.recirc_pass;
                    self.counters.recirculations += k - 1;
                }
                for (p, &row) in passes.iter().enumerate() {
                    let t = if p == 0 {
                        now
                    } else {
                        start + p as u64 * self.recirc_pass
                    };
                    let slot = block.aggregators[row as usize];
                    let agg = (row * self.segments + pkt.seg as u32) as usize;
                    if self.counts[agg] == 0 {
                        self.in_use += 1;
                        self.counters.peak_aggregators =
                            self.counters.peak_aggregators.max(self.in_use);
                    }
                    self.counts[agg] += 1;
                    self.ready[agg] = self.ready[agg].max(t);
                    self.counters.contributions += 1;
                    if self.counts[agg] == slot.expected {
                        let dst = self.plan.partition[slot.dst as usize];
                        out.emits.push((
                            self.ready[agg],
                            sw,
                            data_pkt(
                                Kind::Result,
                                PRIO_RESULT,
                                sw,
                                dst,
                                pkt.block,
                                row,
                                pkt.seg as u32,
                            ),
                        ));
                        self.counts[agg] = 0;
                        self.ready[agg] = 0;
                        self.in_use -= 1;
                        self.counters.results += 1;
                    }
                }
            }
            Kind::BlockDone => {
                self.delivered += 1;
                if pkt.block != self.cur_block {
                    self.counters.stale += 1;
                    return;
                }
                self.done_count += 1;
                if self.done_count == self.workers {
                    debug_assert_eq!(self.in_use, 0, "block advanced with open aggregators");
                    for w in 0..self.workers {
                        out.emits.push((
                            now,
                            sw,
                            control_pkt(Kind::BlockAdvance, sw, w, self.cur_block),
                        ));
                    }
                    self.cur_block += 1;
                    self.done_count = 0;
                }
            }
            k => panic!("switch got {k:?}"),
        }
    }

    fn progress(&self) -> (u64, u64) {
        (self.delivered, self.total)
    }

    /// Aggregators in use as the switch logic books them (at a frame's arrival); contributions
    /// at the time of their pass: the recirculation path is a FIFO busy without gaps until
    /// `recirc_free`, with passes completing every `recirc_pass` back from it, so
    /// `ceil((recirc_free - now) / recirc_pass)` of the counted passes are still to come.
    fn gauges(&self, now: Time) -> crate::net::Gauges {
        let pending = self
            .recirc_free
            .saturating_sub(now)
            .div_ceil(self.recirc_pass);
        crate::net::Gauges {
            aggregators_in_use: self.in_use,
            contributions: self.counters.contributions - pending,
        }
    }
}
