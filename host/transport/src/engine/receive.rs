//! The receive path: what a frame does once parsed and counted, by packet type (probe
//! answers, hellos, NACKs, Results and pull answers, raw contributions and replicas,
//! the switch's all-sent notice, fetch requests, BlockAdvance) and by how its round and block relate to
//! where this worker is (current, next, stale); and how a block's cells complete.

use std::collections::hash_map::Entry;

use sgnn_wire::codec::{accumulate, accumulate_rows};
use sgnn_wire::recovery::SEND_DONE;
use sgnn_wire::sgnn::Repr;
use sgnn_wire::{PacketType, ALL_NEIGHBOURS, CNP, LANES, PEER_HELLO};

use super::block::succ;
use super::{Engine, Mode, Phase};

/// How a frame's (round, block) relates to where this worker is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Relation {
    Current,
    Next,
    Stale,
    Other,
}

impl Engine {
    fn relation(&self, round: u16, block: u16) -> Relation {
        let block = block as usize;
        let blocks = self.view.blocks.len();
        match (&self.phase, self.cfg.mode) {
            (Phase::Block(bs), _) => {
                if round == self.round && block == bs.b {
                    Relation::Current
                } else if (round, block) == succ(self.round, bs.b, blocks) {
                    Relation::Next
                } else if (round == self.round && block < bs.b)
                    || round == self.round.wrapping_sub(1)
                {
                    Relation::Stale
                } else {
                    Relation::Other
                }
            }
            (Phase::Host(_), _) => {
                if round == self.round {
                    Relation::Current
                } else if round == self.round.wrapping_add(1) {
                    Relation::Next
                } else if round == self.round.wrapping_sub(1) {
                    Relation::Stale
                } else {
                    Relation::Other
                }
            }
            (Phase::Idle, _) => {
                if round == self.round && (block == 0 || self.cfg.mode == Mode::HostBased) {
                    Relation::Next
                } else if round == self.round.wrapping_sub(1) {
                    Relation::Stale
                } else {
                    Relation::Other
                }
            }
            (Phase::Finishing { .. } | Phase::Finished, _) => Relation::Stale,
        }
    }

    /// What a parsed, counted frame does: probe answers and peer hellos, the baseline's final
    /// barrier, and everything else by where it belongs ([`Engine::route`]).
    pub(super) fn receive(
        &mut self,
        now: u64,
        frame: &[u8],
        s: &Repr,
        lanes: Option<&[i32; LANES]>,
    ) {
        if matches!(
            s.packet_type,
            PacketType::Ack | PacketType::FetchReq | PacketType::Bypass
        ) {
            self.heard_from(now, s.worker_id);
        }
        if s.is_probe() {
            return self.handle_probe(now, s);
        }
        if s.packet_type == PacketType::Ack && s.dst_id == PEER_HELLO {
            return self.handle_hello(now, s);
        }
        if s.packet_type == PacketType::Ack && s.dst_id == CNP {
            return self.on_cnp(now, s);
        }
        if s.packet_type == PacketType::Ack && s.flags.resend && s.worker_id == self.view.worker {
            // The switch's NACK (or its answer to a tail probe): about this worker's numbered
            // Data frames, whatever block it names.
            return self.on_nack(s);
        }
        if s.packet_type == PacketType::BlockAdvance
            && self.cfg.mode == Mode::HostBased
            && matches!(self.phase, Phase::Finishing { .. })
        {
            if (s.round, s.block_id) == (0, 0) {
                self.last_progress = now;
                self.phase = Phase::Finished;
            }
            return;
        }
        if s.packet_type == PacketType::BlockAdvance
            && self.cfg.mode == Mode::SwitchGnn
            && s.block_id as usize >= self.view.blocks.len()
        {
            // No block of this plan: a stray or forged frame (one UDP datagram from anywhere
            // must not end a job). A switch that runs another plan is caught by the plan tag
            // of the start-up probe, not here.
            self.stats.stale += 1;
            return;
        }
        self.route(now, frame, s, lanes);
    }

    /// Acts on a parsed, counted frame according to where it belongs.
    pub(super) fn route(&mut self, now: u64, frame: &[u8], s: &Repr, lanes: Option<&[i32; LANES]>) {
        let raw_here = s.packet_type == PacketType::Bypass
            && s.round == self.cur_round()
            && matches!(self.phase, Phase::Block(_));
        match self.relation(s.round, s.block_id) {
            Relation::Current => self.dispatch(now, s, lanes),
            Relation::Next => {
                let waiting = matches!(&self.phase, Phase::Block(bs) if bs.done_at.is_some());
                if waiting && self.cfg.under_leaf && s.packet_type != PacketType::BlockAdvance {
                    // Other leaves run ahead of ours (EngineConfig::under_leaf): kept.
                    self.keep_early(frame);
                } else if waiting {
                    // The switch only produces or forwards next-block traffic after it
                    // advanced: our BlockAdvance was lost.
                    self.stats.implicit_advances += 1;
                    self.advance(now);
                    self.route(now, frame, s, lanes);
                } else if matches!(self.phase, Phase::Idle | Phase::Host(_)) {
                    if s.packet_type == PacketType::BlockAdvance {
                        self.stats.stale += 1;
                    } else {
                        self.keep_early(frame);
                    }
                } else {
                    self.stats.unexpected += 1;
                }
            }
            // A peer may still fetch from the previous round (baseline), and a raw
            // contribution of this round is useful whatever block it is tagged with.
            Relation::Stale if s.packet_type == PacketType::FetchReq => self.serve_fetch(s),
            Relation::Stale | Relation::Other if raw_here => self.dispatch(now, s, lanes),
            Relation::Stale | Relation::Other => self.stats.stale += 1,
        }
    }

    /// Keeps a frame that came before its block or round (up to `early_buffer_frames`), for
    /// [`Engine::replay_early`].
    fn keep_early(&mut self, frame: &[u8]) {
        if self.early.len() < self.cfg.early_buffer_frames {
            self.stats.early_buffered += 1;
            self.early.push(frame.to_vec());
        }
    }

    /// Handles the frames kept by [`Engine::keep_early`], now that their block or round runs
    /// (those still ahead are kept again).
    pub(super) fn replay_early(&mut self, now: u64) {
        for f in std::mem::take(&mut self.early) {
            self.handle_frame(now, &f);
        }
    }

    fn dispatch(&mut self, now: u64, s: &Repr, lanes: Option<&[i32; LANES]>) {
        match s.packet_type {
            PacketType::Result => {
                if let Some(l) = lanes {
                    self.on_result(now, s, l)
                }
            }
            PacketType::Bypass => {
                if let Some(l) = lanes {
                    self.on_raw(now, s, l)
                }
            }
            PacketType::Ack if s.dst_id == SEND_DONE => self.on_all_sent(now),
            PacketType::Ack => self.stats.unexpected += 1,
            PacketType::FetchReq => self.serve_fetch(s),
            PacketType::BlockAdvance => self.on_advance(now),
            PacketType::Data | PacketType::BlockDone => self.stats.unexpected += 1,
        }
    }

    fn on_result(&mut self, now: u64, s: &Repr, lanes: &[i32; LANES]) {
        let view = self.view.clone();
        let Phase::Block(bs) = &self.phase else {
            self.stats.unexpected += 1;
            return;
        };
        let segs = self.segs();
        let block = &view.blocks[bs.b];
        let Some(&d) = block.dest_index.get(&s.dst_id) else {
            self.stats.unexpected += 1;
            return;
        };
        let expected = block.dests[d as usize].expected;
        if s.segment as usize >= segs || s.count as u32 > expected {
            self.stats.unexpected += 1;
            return;
        }
        if (s.count as u32) < expected {
            // Only a pull's answer (RESEND) may carry less than the whole aggregate.
            if s.flags.resend {
                let k = d as usize * segs + s.segment as usize;
                self.on_pull_partial(now, k, s);
            } else {
                self.stats.unexpected += 1;
            }
            return;
        }
        let k = d as usize * segs + s.segment as usize;
        if bs.cells[k].done {
            self.stats.results_ignored += 1;
            return;
        }
        self.stats.results_used += 1;
        if s.flags.resend {
            self.stats.pulled_results += 1;
        }
        self.finish_cell(now, k, lanes, true);
    }

    /// A raw contribution: a switch Bypass, a fetch reply, or a baseline frame.
    fn on_raw(&mut self, now: u64, s: &Repr, lanes: &[i32; LANES]) {
        let view = self.view.clone();
        let segs = self.segs();
        let g = s.segment;
        if g as usize >= segs {
            self.stats.unexpected += 1;
            return;
        }
        let src = s.src_id;
        // The source's place among the remote vertices with neighbours here: found once and
        // handed on, so the handlers below index its neighbours without a second search.
        let at = view.host_based.consumers.position(src);
        if at.is_none() && !view.partials_in.contains(&src) {
            // Not a remote neighbour of any vertex here, nor a partial for one.
            self.stats.unexpected += 1;
            return;
        }
        let Some(cur) = self.cur.as_mut() else {
            self.stats.unexpected += 1;
            return;
        };
        match self.cfg.mode {
            Mode::SwitchGnn if s.dst_id == ALL_NEIGHBOURS => self.on_replica(now, s, lanes, at),
            Mode::SwitchGnn => {
                // Only remote sources that feed some destination here in some block are ours
                // to cache (validated against the current block below).
                if let Entry::Vacant(slot) = cur.raw.entry((src, g)) {
                    slot.insert(*lanes);
                    self.stats.raw_cached += 1;
                    self.last_progress = now;
                    if let Phase::Block(bs) = &mut self.phase {
                        let block = &view.blocks[bs.b];
                        if let Some(ds) = block.feeds.get(src) {
                            let mut ready = Vec::new();
                            for &d in ds {
                                let k = d as usize * segs + g as usize;
                                let c = &mut bs.cells[k];
                                if !c.done {
                                    c.missing -= 1;
                                    if c.missing == 0 {
                                        ready.push(k);
                                    }
                                }
                            }
                            if !ready.is_empty() {
                                bs.progressed(now, self.cfg.fetch_timeout_ns);
                            }
                            for k in ready {
                                self.complete_cell_raw(now, k);
                            }
                        }
                    }
                } else {
                    self.stats.raw_duplicate += 1;
                }
            }
            Mode::HostBased => self.on_host_raw(now, s, lanes, at),
        }
    }

    pub(super) fn complete_cell_raw(&mut self, now: u64, k: usize) {
        let view = self.view.clone();
        let Phase::Block(bs) = &self.phase else {
            return;
        };
        let cur = self.cur.as_ref().expect("round running");
        let segs = cur.segs as usize;
        let (d, g) = (k / segs, (k % segs) as u16);
        let mut sum = [0i32; LANES];
        let mut sat = 0;
        for src in view.blocks[bs.b].sources_of(d) {
            let x = cur.raw.get(&(src.vertex, g)).expect("cell complete");
            sat += accumulate(&mut sum, x);
        }
        self.stats.saturated_lanes += sat as u64;
        self.finish_cell(now, k, &sum, false);
    }

    /// A replicated raw vertex (the switch's copy, or its owner's answer to a fetch): added
    /// once per segment into every local neighbour of it. `at` is the source's position in
    /// `host_based.consumers` ([`crate::view::MultiIndex::position`]).
    fn on_replica(&mut self, now: u64, s: &Repr, lanes: &[i32; LANES], at: Option<usize>) {
        let view = self.view.clone();
        let segs = self.segs();
        let Phase::Block(bs) = &mut self.phase else {
            self.stats.stale += 1;
            return;
        };
        let Some(&i) = view.blocks[bs.b].raw_in_index.get(&s.src_id) else {
            // Not replicated to this worker in this block: a late copy of an earlier block's
            // (already added) or a stray frame.
            self.stats.stale += 1;
            return;
        };
        let k = i as usize * segs + s.segment as usize;
        if bs.raw_done[k] {
            self.stats.raw_duplicate += 1;
            return;
        }
        bs.raw_done[k] = true;
        bs.incomplete -= 1;
        bs.progressed(now, self.cfg.fetch_timeout_ns);
        let cur = self.cur.as_mut().expect("round running");
        let g = s.segment as usize;
        let consumers = at.and_then(|i| view.host_based.consumers.values_at(i));
        let rows = consumers
            .unwrap_or(&[])
            .iter()
            .map(|&j| j as usize * segs + g);
        let sat = accumulate_rows(&mut cur.acc, rows, lanes);
        self.stats.saturated_lanes += sat as u64;
        self.stats.replicas_used += 1;
        self.last_progress = now;
        self.check_block_done(now);
    }

    /// Adds a cell's value (a Result or the sum of its raw contributions, never both) into
    /// the destination's sum and marks it done.
    fn finish_cell(&mut self, now: u64, k: usize, value: &[i32; LANES], by_result: bool) {
        let view = self.view.clone();
        let Phase::Block(bs) = &mut self.phase else {
            return;
        };
        let cur = self.cur.as_mut().expect("round running");
        let segs = cur.segs as usize;
        let (d, g) = (k / segs, k % segs);
        debug_assert!(!bs.cells[k].done);
        bs.cells[k].done = true;
        bs.incomplete -= 1;
        bs.progressed(now, self.cfg.fetch_timeout_ns);
        let block = &view.blocks[bs.b];
        let dest = block.dests[d];
        let sat = accumulate(&mut cur.acc[dest.local as usize * segs + g], value);
        self.stats.saturated_lanes += sat as u64;
        if by_result {
            cur.cells_by_result += 1;
            self.stats.cells_by_result += 1;
        } else {
            cur.cells_by_raw += 1;
            self.stats.cells_by_raw += 1;
        }
        self.last_progress = now;
        self.check_block_done(now);
    }
}
