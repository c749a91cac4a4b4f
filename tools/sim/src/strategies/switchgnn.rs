//! [`SwitchGnn`]: blocks, in-network aggregation and block sync (see the module above).

use sgnn_plan::Plan;

use super::{control_pkt, data_pkt, DATA_WIRE, PRIO_DATA, PRIO_RESULT};
use crate::net::{tx_time, App, Kind, Out, Pkt, Time};
use crate::topology::{flow_hash, Tiers, Topology};

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
    /// Largest number of aggregators in use at once on one switch.
    pub peak_aggregators: u64,
    /// Largest number of aggregators in use at once, per switch (index among switches).
    pub peak_aggregators_per_switch: Vec<u64>,
    /// Results a leaf completed itself (every contributor under the destination's leaf) and
    /// sent straight down; on a star, every result.
    pub leaf_results: u64,
    /// Partial aggregates leaves sent up to a spine.
    pub leaf_partials: u64,
    /// Partial aggregates spines added.
    pub spine_partials: u64,
    /// Results spines completed and sent down.
    pub spine_results: u64,
}

/// Aggregators and recirculation path of one switch.
#[derive(Debug, Clone, Default)]
struct SwState {
    counts: Vec<u32>,
    ready: Vec<Time>,
    in_use: u64,
    recirc_free: Time,
}

/// Who aggregates what: the fabric's tiers and, for the current block, each leaf's share of
/// every aggregator row.
#[derive(Debug, Clone)]
struct Levels {
    /// Node id of switch index 0 (= number of hosts).
    first_switch: u32,
    tiers: Tiers,
    /// Leaf index of each switch (`u32::MAX` for a spine).
    leaf_index: Vec<u32>,
    /// Leaf index of each worker.
    host_leaf: Vec<u32>,
    /// Per (row, leaf), `row * leaves + leaf`: contributions of that leaf's workers to the
    /// row in the current block (the leaf's expected count).
    local: Vec<u32>,
    /// Per row: leaves that send a partial up (the spine's expected count), or 0 if the
    /// destination's leaf is the only contributing leaf and finishes the row itself.
    partials: Vec<u32>,
}

impl Levels {
    fn new(tiers: Tiers) -> Levels {
        let first_switch = tiers.leaf_of.len() as u32;
        let switches = tiers.leaves.len() + tiers.spines.len();
        let mut leaf_index = vec![u32::MAX; switches];
        for (i, &l) in tiers.leaves.iter().enumerate() {
            leaf_index[(l - first_switch) as usize] = i as u32;
        }
        let host_leaf = tiers
            .leaf_of
            .iter()
            .map(|&l| leaf_index[(l - first_switch) as usize])
            .collect();
        Levels {
            first_switch,
            tiers,
            leaf_index,
            host_leaf,
            local: Vec::new(),
            partials: Vec::new(),
        }
    }

    /// Each leaf's expected count per row of block `b`, and which rows go up to a spine.
    fn load_block(&mut self, plan: &Plan, b: usize) {
        let block = &plan.blocks[b];
        let nl = self.tiers.leaves.len();
        let rows = block.aggregators.len();
        self.local.clear();
        self.local.resize(rows * nl, 0);
        for (i, &u) in block.sources.iter().enumerate() {
            let l = self.host_leaf[plan.partition[u as usize] as usize] as usize;
            for &row in block.passes(i) {
                self.local[row as usize * nl + l] += 1;
            }
        }
        self.partials.clear();
        for (row, slot) in block.aggregators.iter().enumerate() {
            let local = &self.local[row * nl..(row + 1) * nl];
            debug_assert_eq!(local.iter().sum::<u32>(), slot.expected);
            let leaves = local.iter().filter(|&&n| n > 0).count() as u32;
            let dl = self.host_leaf[plan.partition[slot.dst as usize] as usize] as usize;
            let alone = leaves == 1 && local[dl] > 0;
            self.partials.push(if alone { 0 } else { leaves });
        }
    }

    /// The spine that finishes `(block, row, seg)` (hash of the three).
    fn spine_for(&self, block: u32, row: u32, seg: u32) -> u32 {
        let spines = &self.tiers.spines;
        spines[(flow_hash(block, row, seg as u64) % spines.len() as u64) as usize]
    }
}

/// SwitchGNN: the plan's blocks, in-network aggregation, block synchronisation.
pub struct SwitchGnn<'p> {
    plan: &'p Plan,
    workers: u32,
    segments: u32,
    /// The root switch: BlockDone goes here (the star's switch, spine 0 of a fabric).
    switch_node: u32,
    /// Per worker `(block, source index in block)` in send order.
    sends: Vec<Vec<(u32, u32)>>,
    /// Per worker `(block, result frames expected)`, blocks ascending.
    recvs: Vec<Vec<(u32, u64)>>,
    hosts: Vec<SgHost>,
    // Switch state.
    cur_block: u32,
    done_count: u32,
    levels: Levels,
    switches: Vec<SwState>,
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
    /// The plan's layer on a star: every worker on one switch (node `switch_node`, which is
    /// `plan.workers()`), whose recirculation path runs at `recirc_bps`.
    pub fn new(plan: &'p Plan, switch_node: u32, recirc_bps: u64) -> SwitchGnn<'p> {
        assert_eq!(
            switch_node,
            plan.workers(),
            "the star's switch follows the hosts"
        );
        let tiers = Tiers {
            leaf_of: vec![switch_node; plan.workers() as usize],
            leaves: vec![switch_node],
            spines: Vec::new(),
        };
        Self::with_tiers(plan, tiers, recirc_bps)
    }

    /// The plan's layer on `topo`: a star, or a leaf-spine fabric with two-level aggregation
    /// (leaves aggregate their workers' contributions, a spine per `(block, row, segment)`
    /// finishes what spans leaves). Every switch holds the plan's aggregators and has its own
    /// recirculation path at `recirc_bps`.
    pub fn on_topology(
        plan: &'p Plan,
        topo: &Topology,
        recirc_bps: u64,
    ) -> Result<SwitchGnn<'p>, String> {
        let tiers = topo
            .tiers()
            .map_err(|e| format!("switchgnn needs a star or a leaf-spine fabric: {e}"))?;
        Ok(Self::with_tiers(plan, tiers, recirc_bps))
    }

    fn with_tiers(plan: &'p Plan, tiers: Tiers, recirc_bps: u64) -> SwitchGnn<'p> {
        let m = plan.workers();
        assert_eq!(tiers.leaf_of.len(), m as usize, "one host per worker");
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
        let switch_node = *tiers.spines.first().unwrap_or(&tiers.leaves[0]);
        let switches = tiers.leaves.len() + tiers.spines.len();
        let mut levels = Levels::new(tiers);
        if !plan.blocks.is_empty() {
            levels.load_block(plan, 0);
        }
        let state = SwState {
            counts: vec![0; peak as usize],
            ready: vec![0; peak as usize],
            in_use: 0,
            recirc_free: 0,
        };
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
            levels,
            switches: vec![state; switches],
            recirc_pass: tx_time(DATA_WIRE as u64, recirc_bps),
            counters: SwitchCounters {
                peak_aggregators_per_switch: vec![0; switches],
                ..SwitchCounters::default()
            },
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

impl SwitchGnn<'_> {
    /// A spine adds a leaf's partial aggregate (`a` = row) and, once every contributing leaf's
    /// is in, sends the Result down to the destination's worker.
    fn spine_partial(&mut self, sw: u32, pkt: Pkt, now: Time, out: &mut Out) {
        let si = (sw - self.levels.first_switch) as usize;
        let row = pkt.a;
        let agg = (row * self.segments + pkt.seg as u32) as usize;
        let st = &mut self.switches[si];
        if st.counts[agg] == 0 {
            st.in_use += 1;
            let peak = &mut self.counters.peak_aggregators_per_switch[si];
            *peak = (*peak).max(st.in_use);
            self.counters.peak_aggregators = self.counters.peak_aggregators.max(st.in_use);
        }
        st.counts[agg] += 1;
        st.ready[agg] = st.ready[agg].max(now);
        self.counters.spine_partials += 1;
        if st.counts[agg] == self.levels.partials[row as usize] {
            let ready = st.ready[agg];
            st.counts[agg] = 0;
            st.ready[agg] = 0;
            st.in_use -= 1;
            self.counters.results += 1;
            self.counters.spine_results += 1;
            let slot = self.plan.blocks[pkt.block as usize].aggregators[row as usize];
            let dst = self.plan.partition[slot.dst as usize];
            out.emits.push((
                ready,
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
        }
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
        let leaf = self.levels.tiers.leaf_of[host as usize];
        let pkt = data_pkt(Kind::Data, PRIO_DATA, host, leaf, b, i, h.seg);
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
        let si = (sw - self.levels.first_switch) as usize;
        match pkt.kind {
            Kind::Data => {
                if pkt.block != self.cur_block {
                    self.counters.stale += 1;
                    return;
                }
                let li = self.levels.leaf_index[si];
                if li == u32::MAX {
                    self.spine_partial(sw, pkt, now, out);
                    return;
                }
                let nl = self.levels.tiers.leaves.len();
                let block = &self.plan.blocks[pkt.block as usize];
                let passes = block.passes(pkt.a as usize);
                let k = passes.len() as u64;
                let st = &mut self.switches[si];
                let start = st.recirc_free.max(now);
                if k > 1 {
                    self.counters.max_recirc_backlog =
                        self.counters.max_recirc_backlog.max(start - now);
                    st.recirc_free = start + (k - 1) * self.recirc_pass;
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
                    if st.counts[agg] == 0 {
                        st.in_use += 1;
                        let peak = &mut self.counters.peak_aggregators_per_switch[si];
                        *peak = (*peak).max(st.in_use);
                        self.counters.peak_aggregators =
                            self.counters.peak_aggregators.max(st.in_use);
                    }
                    st.counts[agg] += 1;
                    st.ready[agg] = st.ready[agg].max(t);
                    self.counters.contributions += 1;
                    if st.counts[agg] == self.levels.local[row as usize * nl + li as usize] {
                        let ready = st.ready[agg];
                        st.counts[agg] = 0;
                        st.ready[agg] = 0;
                        st.in_use -= 1;
                        let seg = pkt.seg as u32;
                        let frame = if self.levels.partials[row as usize] == 0 {
                            // Every contributor is under the destination's leaf: done here.
                            self.counters.results += 1;
                            self.counters.leaf_results += 1;
                            let dst = self.plan.partition[slot.dst as usize];
                            data_pkt(Kind::Result, PRIO_RESULT, sw, dst, pkt.block, row, seg)
                        } else {
                            // A partial aggregate up to the row's spine (`a` = row).
                            self.counters.leaf_partials += 1;
                            let spine = self.levels.spine_for(pkt.block, row, seg);
                            data_pkt(Kind::Data, PRIO_DATA, sw, spine, pkt.block, row, seg)
                        };
                        out.emits.push((ready, sw, frame));
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
                    debug_assert!(
                        self.switches.iter().all(|s| s.in_use == 0),
                        "block advanced with open aggregators"
                    );
                    // A star's switch tells every worker; a fabric's root tells every leaf,
                    // which tells its workers (multicast replicates at the last hop).
                    let to = if self.levels.tiers.spines.is_empty() {
                        0..self.workers
                    } else {
                        0..self.levels.tiers.leaves.len() as u32
                    };
                    for i in to {
                        let dst = if self.levels.tiers.spines.is_empty() {
                            i
                        } else {
                            self.levels.tiers.leaves[i as usize]
                        };
                        out.emits.push((
                            now,
                            sw,
                            control_pkt(Kind::BlockAdvance, sw, dst, self.cur_block),
                        ));
                    }
                    self.cur_block += 1;
                    self.done_count = 0;
                    if (self.cur_block as usize) < self.plan.blocks.len() {
                        self.levels.load_block(self.plan, self.cur_block as usize);
                    }
                }
            }
            Kind::BlockAdvance => {
                // A leaf replicates the root's BlockAdvance to its workers.
                for (w, &l) in self.levels.tiers.leaf_of.iter().enumerate() {
                    if l == sw {
                        out.emits.push((
                            now,
                            sw,
                            control_pkt(Kind::BlockAdvance, sw, w as u32, pkt.block),
                        ));
                    }
                }
            }
            k => panic!("switch got {k:?}"),
        }
    }

    fn progress(&self) -> (u64, u64) {
        (self.delivered, self.total)
    }
}
