//! [`SwitchGnn`]: blocks, in-network aggregation and block sync (see the module above).

use std::collections::{HashMap, HashSet, VecDeque};

use sgnn_plan::Plan;

use super::{
    control_pkt, data_pkt, passes_pending, Occupancy, CONTROL_WIRE, DATA_WIRE, PRIO_DATA,
    PRIO_RESULT,
};
use sgnn_transport::rate::RateController;

use crate::cc::{rate_samples, CcConfig};
use crate::host::{Deadline, HostCounters, MAX_BACKOFF, PRIO_RECOVERY, TOKEN_HOST};
use crate::net::{tx_time, App, Kind, Out, Pkt, Time, PS_PER_NS};
use crate::topology::{flow_hash, Tiers, Topology};
use crate::SimError;

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
    // Host logic: recovery and rate control (see `SgHostLogic`).
    /// Raw contributions held: (vertex, segment), for the whole layer.
    cache: HashSet<(u32, u16)>,
    /// Cells being fetched: cell index -> sources still missing.
    pending: HashMap<u32, u32>,
    /// Frames at the recovery priority: fetch requests and replies.
    recovery: VecDeque<Pkt>,
    /// Last progress (own transmission or a cell completed), for the fetch timeout.
    last_progress: Time,
    /// When BlockDone was last queued.
    done_at: Time,
    fetch_backoff: Time,
    advance_backoff: Time,
    deadline: Deadline,
    rc: Option<RateController>,
}

/// Counters of the switch logic.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SwitchCounters {
    /// Contributions added (passes, all segments).
    pub contributions: u64,
    /// Passes on the recirculation path.
    pub recirculations: u64,
    /// Of them, harvest passes (a TNA switch's lane pairs: `SimConfig::harvest_passes`).
    pub harvest_passes: u64,
    /// Results emitted.
    pub results: u64,
    /// Data frames of a block other than the current one (dropped by the switch).
    pub stale: u64,
    /// Largest recirculation backlog, in picoseconds of work waiting.
    pub max_recirc_backlog: Time,
    /// Largest number of aggregators in use at once on one switch (each counted from the
    /// arrival of the first frame that feeds it to its last contribution's pass).
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
    /// Aggregators still holding a partial sum when their block advanced (released then).
    pub released: u64,
    /// BlockDone of a block the switch had already advanced, answered with its BlockAdvance.
    pub advance_resends: u64,
    /// Recycled aggregators (`--recycle`) that a contribution of a newer generation reached
    /// while the older generation's sum was still incomplete: where the P4 switch would
    /// reclaim the aggregator and the older sum's receiver would fetch its contributions. The
    /// simulator counts them and completes both sums as if they had not met, so the time is
    /// exact only when this is 0 (the planner's slack held).
    pub generation_conflicts: u64,
}

impl SwitchCounters {
    /// Switch `si` has had `peak` aggregators in use at once.
    pub(crate) fn note_peak(&mut self, si: usize, peak: u64) {
        let p = &mut self.peak_aggregators_per_switch[si];
        *p = (*p).max(peak);
        self.peak_aggregators = self.peak_aggregators.max(peak);
    }
}

/// Aggregators and recirculation path of one switch.
#[derive(Debug, Clone, Default)]
struct SwState {
    counts: Vec<u32>,
    ready: Vec<Time>,
    occ: Occupancy,
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
            let l = self.host_leaf[plan.owner(u).expect("a verified plan") as usize] as usize;
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
    // Host logic.
    /// Per cell index (`row * segments + segment`) of the block: `block + 1` once its owner
    /// has it (by Result or from raw values); each cell has one owner, so one array serves all
    /// hosts (a stale entry can only belong to a host that already finished that block).
    cell_block: Vec<u32>,
    timeout: Option<Time>,
    fetch_seen: HashSet<(u32, u16)>,
    /// Host counters.
    pub host_counters: HostCounters,
    // Switch: which workers' BlockDone the current block has.
    done_from: Vec<bool>,
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
    ) -> Result<SwitchGnn<'p>, SimError> {
        let tiers = topo
            .tiers()
            .map_err(|e| SimError::NotAFabric(Box::new(e)))?;
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
                sends[plan.owner(s).expect("a verified plan") as usize].push((b as u32, i as u32));
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
            occ: Occupancy::default(),
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
            cell_block: vec![0; peak as usize],
            timeout: None,
            fetch_seen: HashSet::new(),
            host_counters: HostCounters::default(),
            done_from: vec![false; m as usize],
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

    /// A spine adds a leaf's partial aggregate (`a` = row) and, once every contributing leaf's
    /// is in, sends the Result down to the destination's worker.
    fn spine_partial(&mut self, sw: u32, pkt: Pkt, now: Time, out: &mut Out) {
        let si = (sw - self.levels.first_switch) as usize;
        let row = pkt.a;
        let agg = (row * self.segments + pkt.seg as u32) as usize;
        let st = &mut self.switches[si];
        if st.counts[agg] == 0 {
            st.occ.book(now);
            self.counters.note_peak(si, st.occ.peak);
        }
        st.counts[agg] += 1;
        st.ready[agg] = st.ready[agg].max(now);
        self.counters.spine_partials += 1;
        if st.counts[agg] == self.levels.partials[row as usize] {
            let ready = st.ready[agg];
            st.counts[agg] = 0;
            st.ready[agg] = 0;
            st.occ.complete(now, ready);
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

    /// Host logic: rate control (`cc`, `None` = the paper's "SwitchGNN w/o CC") for hosts
    /// whose links run at `link_bps[h]`, and loss recovery after `timeout` (`None`: none).
    pub fn with_host_logic(
        mut self,
        cc: Option<CcConfig>,
        link_bps: &[u64],
        timeout: Option<Time>,
    ) -> Self {
        assert_eq!(link_bps.len(), self.hosts.len());
        for (h, &bps) in self.hosts.iter_mut().zip(link_bps) {
            h.rc = cc.map(|c| RateController::new(c.rate_config(bps, DATA_WIRE as u64), 0));
            h.fetch_backoff = timeout.unwrap_or(0);
            h.advance_backoff = timeout.unwrap_or(0);
        }
        self.timeout = timeout;
        self
    }

    /// Rate samples `(time, bit/s)` of every host (empty lists without rate control).
    pub fn rate_samples(&self) -> Vec<Vec<(Time, u64)>> {
        self.hosts
            .iter()
            .map(|h| {
                h.rc.as_ref()
                    .map_or_else(Vec::new, |r| rate_samples(&r.samples))
            })
            .collect()
    }

    /// Host counters, rate halvings included.
    pub fn host_counters(&self) -> HostCounters {
        let mut c = self.host_counters.clone();
        c.rate_decreases = self
            .hosts
            .iter()
            .filter_map(|h| h.rc.as_ref())
            .map(|r| r.decreases)
            .sum();
        c
    }

    fn owner(&self, block: u32, row: u32) -> u32 {
        let slot = self.plan.blocks[block as usize].aggregators[row as usize];
        self.plan.partition[slot.dst as usize]
    }

    /// Cell `idx` of the host's current block is complete.
    fn cell_done(&mut self, host: u32, idx: u32, now: Time) {
        let h = &mut self.hosts[host as usize];
        self.cell_block[idx as usize] = h.block + 1;
        h.got += 1;
        h.last_progress = now;
        h.fetch_backoff = self.timeout.unwrap_or(0);
        self.delivered += 1;
    }

    /// Fetch timeout of `host`: every missing cell of its block asks the owners of its
    /// sources not held yet for their raw values (one request per source and segment); cells
    /// whose sources are all held complete at once.
    fn fetch(&mut self, host: u32, now: Time) {
        let b = self.hosts[host as usize].block;
        let block = &self.plan.blocks[b as usize];
        let segs = self.segments;
        self.fetch_seen.clear();
        self.hosts[host as usize].pending.clear();
        let mut requests = 0;
        for (i, &s) in block.sources.iter().enumerate() {
            let src_owner = self.plan.owner(s).expect("a verified plan");
            for &row in block.passes(i) {
                if self.owner(b, row) != host {
                    continue;
                }
                for g in 0..segs {
                    let idx = row * segs + g;
                    let h = &mut self.hosts[host as usize];
                    if self.cell_block[idx as usize] == b + 1 || h.cache.contains(&(s, g as u16)) {
                        continue;
                    }
                    *h.pending.entry(idx).or_insert(0) += 1;
                    if self.fetch_seen.insert((i as u32, g as u16)) {
                        requests += 1;
                        h.recovery.push_back(Pkt {
                            kind: Kind::Fetch,
                            prio: PRIO_RECOVERY,
                            ecn: false,
                            seg: g as u16,
                            wire: CONTROL_WIRE,
                            src: host,
                            dst: src_owner,
                            block: b,
                            a: i as u32,
                        });
                    }
                }
            }
        }
        self.host_counters.fetch_requests += requests;
        // Missing cells whose sources are all held already.
        for row in 0..block.aggregators.len() as u32 {
            if self.owner(b, row) != host {
                continue;
            }
            for g in 0..segs {
                let idx = row * segs + g;
                if self.cell_block[idx as usize] != b + 1
                    && !self.hosts[host as usize].pending.contains_key(&idx)
                {
                    self.host_counters.cells_by_fetch += 1;
                    self.cell_done(host, idx, now);
                }
            }
        }
    }

    /// The host's protocol deadline: BlockDone again, or fetch, or (still sending) later.
    fn deadline(&self, host: u32) -> Option<Time> {
        let h = &self.hosts[host as usize];
        if h.finished || self.timeout.is_none() {
            return None;
        }
        Some(if h.done_sent && !h.ctl_pending {
            h.done_at + h.advance_backoff
        } else {
            h.last_progress + h.fetch_backoff
        })
    }

    fn has_frame(&self, host: u32) -> bool {
        let h = &self.hosts[host as usize];
        h.ctl_pending || !h.recovery.is_empty() || !self.sent_all(host)
    }

    /// The next frame of `host`, rate control aside.
    fn next_frame(&mut self, host: u32, now: Time) -> Option<Pkt> {
        let h = &mut self.hosts[host as usize];
        if h.ctl_pending {
            h.ctl_pending = false;
            h.done_at = now;
            return Some(control_pkt(
                Kind::BlockDone,
                host,
                self.switch_node,
                h.block,
            ));
        }
        if let Some(p) = h.recovery.pop_front() {
            return Some(p);
        }
        let &(b, i) = self.sends[host as usize].get(h.send_pos)?;
        if b != h.block {
            return None;
        }
        let leaf = self.levels.tiers.leaf_of[host as usize];
        let pkt = data_pkt(Kind::Data, PRIO_DATA, host, leaf, b, i, h.seg);
        h.last_progress = now;
        h.seg += 1;
        if h.seg == self.segments {
            h.seg = 0;
            h.send_pos += 1;
            self.check_done(host);
        }
        Some(pkt)
    }
}

impl App for SwitchGnn<'_> {
    fn host_next(&mut self, host: u32, now: Time) -> Option<Pkt> {
        let ns = now / PS_PER_NS;
        if self.hosts[host as usize]
            .rc
            .as_ref()
            .is_some_and(|r| r.ready_at(ns, DATA_WIRE as u64) > ns)
        {
            return None;
        }
        let pkt = self.next_frame(host, now)?;
        if let Some(rc) = &mut self.hosts[host as usize].rc {
            // Frames are spaced one by one at the rate (the bucket holds one data frame).
            rc.try_send(ns, pkt.wire as u64);
        }
        Some(pkt)
    }

    fn host_wake(&self, host: u32, now: Time) -> Option<Time> {
        let t = self.hosts[host as usize]
            .rc
            .as_ref()?
            .ready_at(now / PS_PER_NS, DATA_WIRE as u64)
            * PS_PER_NS;
        (t > now && self.has_frame(host)).then_some(t)
    }

    fn start(&mut self, out: &mut Out) {
        for w in 0..self.workers {
            if let Some(t) = self.deadline(w) {
                self.hosts[w as usize].deadline.arm(w, t, out);
            }
        }
    }

    fn done(&self) -> bool {
        self.finish.is_some()
    }

    fn timer(&mut self, node: u32, token: u64, now: Time, out: &mut Out) {
        debug_assert_eq!(token, TOKEN_HOST);
        let host = node;
        if !self.hosts[host as usize].deadline.fire(now) {
            return;
        }
        let Some(due) = self.deadline(host) else {
            return;
        };
        let base = self.timeout.expect("deadline() needs a timeout");
        if now >= due {
            let expected = self.expected(host);
            let sent_all = self.sent_all(host);
            let h = &mut self.hosts[host as usize];
            if h.done_sent && !h.ctl_pending {
                // No BlockAdvance: BlockDone again (the switch answers a finished block's).
                h.ctl_pending = true;
                h.last_progress = now;
                h.advance_backoff = (h.advance_backoff * 2).min(base * MAX_BACKOFF);
                self.host_counters.block_done_resends += 1;
                out.kicks.push(host);
            } else if !h.done_sent && sent_all && h.got < expected {
                h.last_progress = now;
                h.fetch_backoff = (h.fetch_backoff * 2).min(base * MAX_BACKOFF);
                if let Some(rc) = &mut h.rc {
                    rc.on_congestion(now / PS_PER_NS);
                }
                self.host_counters.fetch_timeouts += 1;
                self.fetch(host, now);
                self.check_done(host);
                out.kicks.push(host);
            } else {
                // Still sending (or BlockDone queued): nothing is overdue.
                h.last_progress = now;
            }
        }
        if let Some(t) = self.deadline(host) {
            self.hosts[host as usize]
                .deadline
                .arm(host, t.max(now), out);
        }
    }

    fn host_recv(&mut self, host: u32, pkt: Pkt, now: Time, out: &mut Out) {
        let expected = self.expected(host);
        let segs = self.segments;
        let h = &mut self.hosts[host as usize];
        match pkt.kind {
            Kind::Result => {
                if pkt.ecn {
                    if let Some(rc) = &mut h.rc {
                        self.host_counters.ecn_signals += 1;
                        rc.on_congestion(now / PS_PER_NS);
                    }
                }
                let idx = pkt.a * segs + pkt.seg as u32;
                if pkt.block == h.block {
                    if h.got < expected && self.cell_block[idx as usize] != h.block + 1 {
                        h.pending.remove(&idx);
                        self.cell_done(host, idx, now);
                    } else {
                        self.host_counters.duplicates += 1;
                        return;
                    }
                } else if pkt.block == h.block + 1 {
                    // The switch advanced and our BlockAdvance is late or lost.
                    if self.cell_block[idx as usize] != h.block + 2 {
                        self.cell_block[idx as usize] = h.block + 2;
                        h.early += 1;
                        self.delivered += 1;
                    } else {
                        self.host_counters.duplicates += 1;
                    }
                    return;
                } else {
                    self.host_counters.stale += 1;
                    return;
                }
            }
            Kind::BlockAdvance => {
                if pkt.block != h.block {
                    debug_assert!(pkt.block < h.block, "advance of a future block");
                    self.host_counters.stale += 1;
                    return;
                }
                self.delivered += 1;
                if self.recvs[host as usize]
                    .get(h.recv_pos)
                    .is_some_and(|&(b, _)| b == h.block)
                {
                    h.recv_pos += 1;
                }
                h.block += 1;
                h.got = std::mem::take(&mut h.early);
                h.done_sent = false;
                h.ctl_pending = false;
                h.pending.clear();
                h.last_progress = now;
                h.fetch_backoff = self.timeout.unwrap_or(0);
                h.advance_backoff = self.timeout.unwrap_or(0);
                if h.block as usize == self.plan.blocks.len() {
                    h.finished = true;
                    self.finished_hosts += 1;
                    if self.finished_hosts == self.workers {
                        self.finish = Some(now);
                    }
                    return;
                }
            }
            Kind::Fetch => {
                // A peer misses our source `a` of block `block`: send it straight back.
                h.recovery.push_back(data_pkt(
                    Kind::Raw,
                    PRIO_RECOVERY,
                    host,
                    pkt.src,
                    pkt.block,
                    pkt.a,
                    pkt.seg as u32,
                ));
                self.host_counters.fetch_replies += 1;
                out.kicks.push(host);
                return;
            }
            Kind::Raw => {
                let b = pkt.block;
                let block = &self.plan.blocks[b as usize];
                let s = block.sources[pkt.a as usize];
                if !h.cache.insert((s, pkt.seg)) {
                    self.host_counters.duplicates += 1;
                    return;
                }
                self.host_counters.fetched_new += 1;
                if b != h.block || h.got >= expected {
                    return;
                }
                for &row in block.passes(pkt.a as usize) {
                    let idx = row * segs + pkt.seg as u32;
                    let h = &mut self.hosts[host as usize];
                    if self.cell_block[idx as usize] == b + 1 {
                        continue;
                    }
                    let Some(m) = h.pending.get_mut(&idx) else {
                        continue;
                    };
                    *m -= 1;
                    if *m == 0 {
                        h.pending.remove(&idx);
                        self.host_counters.cells_by_fetch += 1;
                        self.cell_done(host, idx, now);
                    }
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
                        st.occ.book(now);
                        self.counters.note_peak(si, st.occ.peak);
                    }
                    st.counts[agg] += 1;
                    st.ready[agg] = st.ready[agg].max(t);
                    self.counters.contributions += 1;
                    if st.counts[agg] == self.levels.local[row as usize * nl + li as usize] {
                        let ready = st.ready[agg];
                        st.counts[agg] = 0;
                        st.ready[agg] = 0;
                        st.occ.complete(now, ready);
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
                if pkt.block < self.cur_block {
                    // Its BlockAdvance was lost: send it again to this worker.
                    self.counters.advance_resends += 1;
                    out.emits.push((
                        now,
                        sw,
                        control_pkt(Kind::BlockAdvance, sw, pkt.src, pkt.block),
                    ));
                    return;
                }
                if pkt.block != self.cur_block
                    || std::mem::replace(&mut self.done_from[pkt.src as usize], true)
                {
                    self.counters.stale += 1;
                    return;
                }
                self.delivered += 1;
                self.done_count += 1;
                if self.done_count == self.workers {
                    let mut released = 0;
                    for st in &mut self.switches {
                        if st.occ.open() > 0 {
                            // Lost contributions left partial sums: release them.
                            released += st.occ.release_open();
                            st.counts.fill(0);
                            st.ready.fill(0);
                        }
                    }
                    self.counters.released += released;
                    self.done_from.fill(false);
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

    /// Aggregators in use on all switches ([`Occupancy`]: from the arrival of the first frame
    /// that feeds one to its last contribution's pass); contributions at the time of their
    /// pass: each switch's recirculation path is
    /// a FIFO busy without gaps until its `recirc_free`, with passes completing every
    /// `recirc_pass` back from it, so `ceil((recirc_free - now) / recirc_pass)` of the counted
    /// passes are still to come.
    fn gauges(&self, now: Time) -> crate::net::Gauges {
        let pending: u64 = self
            .switches
            .iter()
            .map(|st| passes_pending(st.recirc_free, now, self.recirc_pass))
            .sum();
        crate::net::Gauges {
            aggregators_in_use: self.switches.iter().map(|st| st.occ.in_use(now)).sum(),
            contributions: self.counters.contributions - pending,
        }
    }
}
