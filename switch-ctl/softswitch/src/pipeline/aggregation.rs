//! Aggregation: `agg_table` and the aggregators, one pass of a Data packet at a time, and the
//! answer to a pull (`p4/v1model/aggregation.p4`; contract: `sgnn_switch::aggregation`).

use sgnn_wire::frame::FrameRepr;
use sgnn_wire::sgnn::Repr;
use sgnn_wire::{PacketType, LANES};

use sgnn_switch::block_sync::tag;
use sgnn_wire::recovery::{seq_of, PULL_GONE};

use super::switch_config::FabricRole;
use super::{agg_state, Emitted, Pipeline, Recirculation, SEEN_VALID};
use crate::tables::AggAction;

/// How an `agg_table` row counts a contribution and where its completed sum goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Weigh {
    /// One per frame; the sum goes down as a Result (`aggregate`).
    One,
    /// One per frame; the sum goes up as a partial (`aggregate_up`).
    OneUp,
    /// The frame's count (a partial); the sum goes down as a Result (`aggregate_partials`).
    Count,
}

impl Pipeline {
    /// Aggregators summing now (state `ACTIVE`), kept as they change: cheap to read per event.
    pub fn aggregators_active(&self) -> u64 {
        self.active
    }

    /// Recounts [`Pipeline::aggregators_active`] from the registers (after the control plane
    /// wrote `agg_state`).
    pub(crate) fn recount_active(&mut self) {
        self.active = self.busy_aggregators() as u64;
    }

    /// Number of aggregators not free (a finished block leaves none).
    pub fn busy_aggregators(&self) -> usize {
        self.regs
            .agg_state
            .iter()
            .filter(|&&s| s == agg_state::ACTIVE)
            .count()
    }

    /// Aggregators in use, as (busy, stale): busy ones are summing or released for the round
    /// and block being exchanged; stale ones were left active or bypassed by an earlier round
    /// or block (a contribution lost for good, its sum recovered by the hosts) and are
    /// reclaimed when the plan uses them again. A complete aggregate kept for pulls (DONE) is
    /// neither: it holds no work, and any later use takes it over as if free
    /// ([`Pipeline::aggregators_done`]). A finished run leaves no busy aggregator.
    pub fn aggregators_in_use(&self) -> (usize, usize) {
        let now = tag(self.regs.sync_round, self.regs.sync_block);
        let mut busy = 0;
        let mut stale = 0;
        for (&s, &t) in self.regs.agg_state.iter().zip(&self.regs.agg_tag) {
            match s {
                agg_state::FREE | agg_state::DONE => {}
                _ if t == now => busy += 1,
                _ => stale += 1,
            }
        }
        (busy, stale)
    }

    /// Aggregators holding a complete aggregate kept for pulls (state DONE).
    pub fn aggregators_done(&self) -> usize {
        self.regs
            .agg_state
            .iter()
            .filter(|&&s| s == agg_state::DONE)
            .count()
    }

    /// One pass of a Data packet at `r.repr.sgnn.pass`; the next pass if the action says
    /// `more` (a resend never goes on: it names the one pass it is for). Under
    /// [`super::shards`] the front stops after [`Pipeline::pass_action`] and hands the pass
    /// to the shard that owns its aggregator.
    pub(super) fn data_pass(
        &mut self,
        r: Recirculation,
        out: &mut Vec<Emitted>,
    ) -> Option<Recirculation> {
        let action = self.pass_action(&r)?;
        if let Some(d) = self.deferred.as_mut() {
            d.push(super::shards::Deferred::Pass(r, action));
            return None;
        }
        self.apply_pass(r, action, out)
    }

    /// The `agg_table` row of a pass, and for a host's first copy the duplicate check
    /// (`src_seen`): what a pass reads before it touches an aggregator. None: dropped and
    /// counted.
    pub(super) fn pass_action(&mut self, r: &Recirculation) -> Option<AggAction> {
        let s = r.repr.sgnn;
        let pass = s.pass;
        let Some(&action) = self.tables.agg_table.get(&(s.block_id, s.src_id, pass)) else {
            self.counters.drop_no_entry += 1;
            return None;
        };
        // A host's first copy of (source, segment) in this round and block goes on; a
        // network duplicate would be added twice and complete an aggregate early.
        if pass == 0 && !r.resend {
            let idx = action.seen_base() as u64 + s.segment as u64;
            if idx >= self.regs.src_seen.len() as u64 {
                self.counters.drop_bad_index += 1;
                return None;
            }
            let mark = SEEN_VALID | tag(s.round, s.block_id) as u64;
            if self.regs.src_seen[idx as usize] == mark {
                self.counters.drop_duplicate += 1;
                return None;
            }
            self.regs.src_seen[idx as usize] = mark;
        }
        Some(action)
    }

    /// What a pass does with its row: the aggregator (or the hosts' copies), then the next
    /// pass if the row says `more`.
    pub(super) fn apply_pass(
        &mut self,
        r: Recirculation,
        action: AggAction,
        out: &mut Vec<Emitted>,
    ) -> Option<Recirculation> {
        let pass = r.repr.sgnn.pass;
        let resend = r.resend;
        match action {
            AggAction::Deliver {
                dst_id, dst_worker, ..
            } => {
                self.counters.delivered += 1;
                self.bypass(&r.repr, dst_id, dst_worker, &r.lanes, out);
            }
            AggAction::Aggregate(p) => {
                self.aggregate(&r.repr, p, Weigh::One, resend, &r.lanes, out)
            }
            AggAction::Up(p) => self.aggregate(&r.repr, p, Weigh::OneUp, resend, &r.lanes, out),
            AggAction::Partials(p) => {
                self.aggregate(&r.repr, p, Weigh::Count, resend, &r.lanes, out)
            }
            AggAction::Replicate { group, .. } => self.replicate(&r.repr, group, &r.lanes, out),
        }
        if !action.more() || resend || pass == u8::MAX {
            return None;
        }
        self.counters.recirculated += 1;
        Some(r)
    }

    pub(super) fn bypass(
        &mut self,
        repr: &FrameRepr,
        dst_id: u32,
        dst_worker: u16,
        lanes: &[i32; LANES],
        out: &mut Vec<Emitted>,
    ) {
        let mut b = repr.sgnn;
        b.packet_type = PacketType::Bypass;
        b.flags.ack = false;
        b.flags.fetch = false;
        b.dst_id = dst_id;
        b.pass = 0;
        self.send_to_worker(dst_worker, b, Some(lanes), repr.ip.dscp, out);
    }

    /// The packet replication engine's copies of a raw contribution: one Bypass per replica
    /// of `group`, rewritten in egress for worker `rid`, with `dst_id` "every neighbour of the
    /// source" ([`sgnn_wire::ALL_NEIGHBOURS`]). Each copy counts as `delivered`.
    fn replicate(
        &mut self,
        repr: &FrameRepr,
        group: u16,
        lanes: &[i32; LANES],
        out: &mut Vec<Emitted>,
    ) {
        let replicas = self
            .tables
            .multicast_groups
            .get(&group)
            .cloned()
            .unwrap_or_default();
        let mut b = repr.sgnn;
        b.packet_type = PacketType::Bypass;
        b.flags.ack = false;
        b.flags.fetch = false;
        b.dst_id = sgnn_wire::ALL_NEIGHBOURS;
        b.pass = 0;
        for r in replicas {
            self.counters.delivered += 1;
            self.egress_to_worker(r.port, r.rid, b, Some(lanes), repr.ip.dscp, out);
        }
    }

    fn aggregate(
        &mut self,
        repr: &FrameRepr,
        p: sgnn_switch::aggregation::AggregateParams,
        weigh: Weigh,
        resend: bool,
        lanes: &[i32; LANES],
        out: &mut Vec<Emitted>,
    ) {
        let s = repr.sgnn;
        let idx = p.agg_base as u64 + s.segment as u64;
        if idx >= self.config.aggregators as u64 {
            self.counters.drop_bad_index += 1;
            return;
        }
        let i = idx as usize;
        let t = tag(s.round, s.block_id);
        let g = p.generation;
        let held = self.regs.agg_state[i] != agg_state::FREE;
        // A contribution for a generation older than the one this round and block has moved
        // on to: its row was recycled. To the host, the aggregator untouched.
        if held && self.regs.agg_tag[i] == t && self.regs.agg_gen[i] > g {
            self.counters.bypassed_late += 1;
            self.bypass(repr, p.dst_id, p.dst_worker, lanes, out);
            return;
        }
        // An aggregator holding another round's, block's or (older) generation's state is a
        // leftover of loss: reclaim. A kept complete aggregate (DONE) is no leftover: it is
        // taken over as if free.
        if held && (self.regs.agg_tag[i] != t || self.regs.agg_gen[i] != g) {
            if self.regs.agg_state[i] != agg_state::DONE {
                self.counters.reclaimed += 1;
            }
            self.release(i, agg_state::FREE, 0, 0);
        }
        if resend || self.regs.agg_state[i] == agg_state::BYPASSED {
            // Release (partial sums are refetched by the receiver) and go to the host.
            self.release(i, agg_state::BYPASSED, t, g);
            self.counters.bypassed += 1;
            self.bypass(repr, p.dst_id, p.dst_worker, lanes, out);
            return;
        }
        if self.regs.agg_state[i] == agg_state::DONE {
            // The aggregate is complete: a further first copy cannot be a contribution it
            // lacks (src_seen lets one copy of a source through per block).
            self.counters.drop_duplicate += 1;
            return;
        }
        if self.regs.agg_state[i] == agg_state::FREE {
            self.active += 1;
            self.regs.agg_state[i] = agg_state::ACTIVE;
            self.regs.agg_tag[i] = t;
            self.regs.agg_gen[i] = g;
        }
        let sat = sgnn_wire::codec::accumulate(&mut self.regs.agg_values[i], lanes);
        self.counters.saturated += (sat > 0) as u64;
        self.regs.agg_count[i] = self.regs.agg_count[i].wrapping_add(match weigh {
            Weigh::Count => s.count,
            Weigh::One | Weigh::OneUp => 1,
        });
        self.regs.agg_ids[i] = self.regs.agg_ids[i].wrapping_add(s.src_id);
        self.regs.agg_ecn[i] |= s.flags.ecn as u8;
        self.counters.aggregated += 1;
        if self.regs.agg_count[i] >= p.expected {
            let up = weigh == Weigh::OneUp;
            // A leaf's share goes up as a partial: a Data frame (unsequenced) whose count is
            // the contributions it holds, named for the spine's table by `dst_id`.
            let mut r = Repr::new(if up {
                PacketType::Data
            } else {
                PacketType::Result
            });
            r.worker_id = p.dst_worker;
            r.src_id = if up { p.dst_id } else { s.src_id };
            r.dst_id = if up { 0 } else { p.dst_id };
            r.block_id = s.block_id;
            r.count = self.regs.agg_count[i];
            r.round = s.round;
            r.segment = s.segment;
            r.frac_bits = s.frac_bits;
            r.flags.ecn = self.regs.agg_ecn[i] != 0;
            let sum = self.regs.agg_values[i];
            if seq_of(s.dst_id).is_some() {
                // Completed by a sequenced frame: kept for a pull until the aggregator is
                // reused.
                self.active -= 1;
                self.regs.agg_state[i] = agg_state::DONE;
            } else {
                self.release(i, agg_state::FREE, 0, 0);
            }
            // On a leaf, a partial sent up counts too: its share of the aggregate is complete.
            self.counters.results += 1;
            self.send_to_worker(p.dst_worker, r, Some(&sum), repr.ip.dscp, out);
        }
    }

    fn release(&mut self, i: usize, state: u8, t: u32, g: u16) {
        if self.regs.agg_state[i] == agg_state::ACTIVE {
            self.active -= 1;
        }
        self.regs.agg_values[i] = [0; LANES];
        self.regs.agg_count[i] = 0;
        self.regs.agg_ids[i] = 0;
        self.regs.agg_ecn[i] = 0;
        self.regs.agg_state[i] = state;
        self.regs.agg_tag[i] = t;
        self.regs.agg_gen[i] = g;
    }

    /// A pull: a FetchReq to the switch's own address for the row `agg_table[(block, src,
    /// pass)]` feeds, segment `segment`. Answered to the row's destination worker with a
    /// Result carrying RESEND: what the aggregator holds for this round, block and generation
    /// (a kept complete aggregate, or a partial: its sum, `count` and contributor digest in
    /// `src_id`), nothing (`count` 0, `src_id` 0), or `src_id` `PULL_GONE` when another
    /// generation holds it or a RESEND released it.
    pub(super) fn pull(&mut self, repr: FrameRepr, out: &mut Vec<Emitted>) {
        let s = repr.sgnn;
        if (s.round, s.block_id) != (self.regs.sync_round, self.regs.sync_block) {
            self.counters.drop_stale += 1;
            return;
        }
        let action = self.tables.agg_table.get(&(s.block_id, s.src_id, s.pass));
        if matches!(self.config.role, FabricRole::Leaf { .. })
            && matches!(
                action,
                None | Some(AggAction::Up(_)) | Some(AggAction::Partials(_))
            )
        {
            // On a leaf, an aggregate that is not this leaf's own (its row lives on a spine,
            // or here only as the leaf's share) cannot be read: the requester is told it is
            // gone and takes its sources' raw values.
            let gone = (0, PULL_GONE, [0; LANES]);
            self.answer_pull(&repr, s.worker_id, s.dst_id, gone, out);
            return;
        }
        let Some(&action) = action else {
            self.counters.drop_no_entry += 1;
            return;
        };
        let AggAction::Aggregate(p) = action else {
            self.counters.drop_unexpected += 1;
            return;
        };
        if let Some(d) = self.deferred.as_mut() {
            d.push(super::shards::Deferred::Pull(repr, p));
            return;
        }
        self.pull_read(repr, p, out);
    }

    /// A pull's read of its aggregator (`p`: the row's parameters) and the answer.
    pub(super) fn pull_read(
        &mut self,
        repr: FrameRepr,
        p: sgnn_switch::aggregation::AggregateParams,
        out: &mut Vec<Emitted>,
    ) {
        let s = repr.sgnn;
        let idx = p.agg_base as u64 + s.segment as u64;
        if idx >= self.config.aggregators as u64 {
            self.counters.drop_bad_index += 1;
            return;
        }
        let i = idx as usize;
        let state = self.regs.agg_state[i];
        let ours = state != agg_state::FREE && self.regs.agg_tag[i] == tag(s.round, s.block_id);
        let gen = self.regs.agg_gen[i];
        let (count, ids, lanes) = if ours
            && gen == p.generation
            && (state == agg_state::ACTIVE || state == agg_state::DONE)
        {
            (
                self.regs.agg_count[i],
                self.regs.agg_ids[i],
                self.regs.agg_values[i],
            )
        } else if ours
            && (gen > p.generation || (gen == p.generation && state == agg_state::BYPASSED))
        {
            (0, PULL_GONE, [0; LANES])
        } else {
            (0, 0, [0; LANES])
        };
        self.answer_pull(&repr, p.dst_worker, p.dst_id, (count, ids, lanes), out);
    }

    /// The answer to `pull`: a Result with RESEND for `dst_id` to `worker` (the row's
    /// destination worker, or on a leaf the requester), carrying `count`, the contributor
    /// digest (or `PULL_GONE`) in `src_id`, and the sum.
    fn answer_pull(
        &mut self,
        pull: &FrameRepr,
        worker: u16,
        dst_id: u32,
        (count, ids, lanes): (u16, u32, [i32; LANES]),
        out: &mut Vec<Emitted>,
    ) {
        let s = pull.sgnn;
        let mut r = Repr::new(PacketType::Result);
        r.flags.resend = true;
        r.worker_id = worker;
        r.src_id = ids;
        r.dst_id = dst_id;
        r.block_id = s.block_id;
        r.count = count;
        r.round = s.round;
        r.segment = s.segment;
        r.frac_bits = s.frac_bits;
        self.counters.pulled += 1;
        self.send_to_worker(worker, r, Some(&lanes), pull.ip.dscp, out);
    }
}
