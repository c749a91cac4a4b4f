//! SwitchGNN's rounds and blocks: a round is a pass over the plan's blocks in order; a block
//! sends its sources in the planned order, reports BlockDone once every cell and replicated
//! segment of it is in, and moves on when the switch advances it. The per-block state
//! (cells and their reception state, the log of numbered transmissions, the tail probe,
//! the switch's all-sent notice, timers) lives here.

use sgnn_wire::recovery::SEQ_VALID;
use sgnn_wire::PacketType;

use super::{Engine, Phase};
use crate::class::TrafficClass;

/// One cell: a destination's segment in a block.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Cell {
    pub(super) done: bool,
    /// Sources whose raw contribution is not in the cache yet.
    pub(super) missing: u32,
    /// The cell completes from its sources' raw values, fetched from their owners: a pull
    /// found its aggregate gone (another generation holds the aggregator, or a RESEND
    /// released it), or the aggregate stopped making progress.
    pub(super) raw: bool,
    /// The count of the last partial aggregate a pull returned for it.
    pub(super) partial: Option<u16>,
    /// Pull answers in a row whose partial count did not grow.
    pub(super) stuck: u8,
}

/// State of the block being exchanged (SwitchGNN mode).
#[derive(Debug)]
pub(super) struct BlockState {
    pub(super) b: usize,
    /// Next `(source index * segs + g)` to send.
    pub(super) cursor: usize,
    /// `dest index * segs + g`.
    pub(super) cells: Vec<Cell>,
    /// `raw_in index * segs + g`: replicated raw vertices received.
    pub(super) raw_done: Vec<bool>,
    /// Cells not done plus replicated raw (vertex, segment)s not received.
    pub(super) incomplete: usize,
    pub(super) fetch_at: u64,
    pub(super) fetch_backoff: u64,
    /// Set once BlockDone was sent: when to send it again.
    pub(super) done_at: Option<u64>,
    pub(super) advance_backoff: u64,
    pub(super) done_sent: u32,
    /// The number (`Engine::seq`) of this block's first Data frame.
    pub(super) seq_start: u16,
    /// Per Data frame sent in this block, by `number - seq_start`: the frame it carried
    /// (`source index * segs + g`), first transmissions and retransmissions alike.
    pub(super) log: Vec<u32>,
    /// Per frame (`source index * segs + g`): a retransmission of it is queued, not sent yet.
    pub(super) retx_pending: Vec<bool>,
    /// Retransmissions queued, not yet sent.
    pub(super) retx_queued: usize,
    /// A Data frame left since the switch last said it holds every one: a tail probe is owed.
    pub(super) tail_dirty: bool,
    /// While a tail probe is unanswered: when to send it again.
    pub(super) probe_at: Option<u64>,
    pub(super) probe_backoff: u64,
    /// The switch's all-sent notice came: it holds every Data frame every worker sends in
    /// this block.
    pub(super) all_sent: bool,
}

impl BlockState {
    /// A cell or replica came in: the fetch timer restarts, shorter once the switch said it
    /// holds every worker's frames (what is still missing then was lost on its way here).
    pub(super) fn progressed(&mut self, now: u64, fetch_timeout: u64) {
        let t = if self.all_sent {
            fetch_timeout / 2
        } else {
            fetch_timeout
        };
        self.fetch_at = now + t;
        self.fetch_backoff = fetch_timeout;
    }
}

/// The (round, block) after `block` of `round` in a plan of `blocks` blocks.
pub(super) fn succ(round: u16, block: usize, blocks: usize) -> (u16, usize) {
    if block + 1 < blocks {
        (round, block + 1)
    } else {
        (round.wrapping_add(1), 0)
    }
}

impl Engine {
    /// Starts a round's exchange at its first block (a plan without blocks completes it at
    /// once).
    pub(super) fn start_blocks(&mut self, now: u64) {
        if self.view.blocks.is_empty() {
            self.complete_round(now);
        } else {
            self.enter_block(now, 0);
        }
    }

    /// Queues the block's next first transmission, in the planned send order (sources, then
    /// segments).
    pub(super) fn next_block_data(&mut self) {
        let view = self.view.clone();
        let Some(cur) = self.cur.as_ref() else { return };
        let s = cur.segs as usize;
        let Phase::Block(bs) = &mut self.phase else {
            return;
        };
        let block = &view.blocks[bs.b];
        if bs.cursor >= block.sources.len() * s {
            return;
        }
        let k = bs.cursor;
        bs.cursor += 1;
        self.queue_data(TrafficClass::Data, k);
    }

    /// Queues frame `k` (`source index * segs + g`) of the running block in `class`: a Data
    /// frame numbered when it leaves (`SEQ_VALID` now, the number in `poll_transmit`).
    pub(super) fn queue_data(&mut self, class: TrafficClass, k: usize) {
        let view = self.view.clone();
        let Some(cur) = self.cur.as_ref() else { return };
        let s = cur.segs as usize;
        let b = self.block_index();
        let (i, g) = (k / s, k % s);
        let src = view.blocks[b].sources[i];
        let (lanes, sat) = view
            .contribution_of(&cur.enc, s, &src, g)
            .expect("the view lists only sources this worker sends");
        self.stats.saturated_lanes += sat as u64;
        let mut h = self.header(PacketType::Data, b, g as u16);
        h.src_id = src.vertex;
        h.dst_id = SEQ_VALID;
        h.count = src.pass_len as u16;
        self.emit(class, self.cfg.switch_ip, h, Some(&lanes));
    }

    fn block_index(&self) -> usize {
        match &self.phase {
            Phase::Block(bs) => bs.b,
            _ => 0,
        }
    }

    fn enter_block(&mut self, now: u64, b: usize) {
        let view = self.view.clone();
        let block = &view.blocks[b];
        let cur = self.cur.as_ref().expect("round running");
        let s = cur.segs as usize;
        let mut cells = vec![Cell::default(); block.dests.len() * s];
        for d in 0..block.dests.len() {
            for g in 0..s {
                let missing = block
                    .sources_of(d)
                    .iter()
                    .filter(|src| !cur.raw.contains_key(&(src.vertex, g as u16)))
                    .count() as u32;
                cells[d * s + g] = Cell {
                    missing,
                    ..Cell::default()
                };
            }
        }
        let raw_done = vec![false; block.raw_in.len() * s];
        if self.cfg.pacing == crate::rate::Pacing::Planned {
            let share = view.pace.get(b).copied().unwrap_or(1.0);
            self.rate.set_planned_share(now, share);
        }
        self.phase = Phase::Block(BlockState {
            b,
            cursor: 0,
            incomplete: cells.len() + raw_done.len(),
            cells,
            raw_done,
            fetch_at: now + self.cfg.fetch_timeout_ns,
            fetch_backoff: self.cfg.fetch_timeout_ns,
            done_at: None,
            advance_backoff: self.cfg.advance_timeout_ns,
            done_sent: 0,
            seq_start: self.seq,
            log: Vec::new(),
            retx_pending: vec![false; block.sources.len() * s],
            retx_queued: 0,
            tail_dirty: false,
            probe_at: None,
            probe_backoff: self.cfg.resend_timeout_ns,
            all_sent: false,
        });
        // A worker with nothing to send in this block probes at once: the switch counts
        // every worker's clean probe before it says all is sent.
        if block.sources.is_empty() {
            if let Phase::Block(bs) = &mut self.phase {
                bs.tail_dirty = true;
            }
            self.send_tail_probe(now, false);
        }
        // Raw copies cached in earlier blocks of this round may already complete cells.
        let ready: Vec<usize> = match &self.phase {
            Phase::Block(bs) => bs
                .cells
                .iter()
                .enumerate()
                .filter(|(_, c)| c.missing == 0)
                .map(|(k, _)| k)
                .collect(),
            _ => unreachable!(),
        };
        for k in ready {
            self.complete_cell_raw(now, k);
        }
        self.check_block_done(now);
    }

    pub(super) fn check_block_done(&mut self, now: u64) {
        if self.data_pending() {
            return;
        }
        let Phase::Block(bs) = &mut self.phase else {
            return;
        };
        if bs.incomplete == 0 && bs.done_at.is_none() {
            bs.done_at = Some(now + self.cfg.advance_timeout_ns);
            bs.done_sent = 1;
            let b = bs.b;
            self.send_block_done(self.round, b);
        }
    }

    /// The switch advanced the current block.
    pub(super) fn advance(&mut self, now: u64) {
        let Phase::Block(bs) = &self.phase else {
            return;
        };
        let b = bs.b;
        self.last_progress = now;
        // Retransmissions of the block not sent yet are stale now (the switch would drop
        // them): unsent, they take no number, so they leave no gap.
        self.queues[TrafficClass::Recovery.index()].retain(|q| !q.is_numbered_data());
        tracing::info!(
            "worker {}: block {b} of round {} advanced by the switch",
            self.view.worker,
            self.round
        );
        if b + 1 < self.view.blocks.len() {
            self.enter_block(now, b + 1);
            // Frames of that block kept while this worker's leaf had not advanced
            // (EngineConfig::under_leaf); on a star none are kept here.
            self.replay_early(now);
        } else {
            self.complete_round(now);
        }
    }

    pub(super) fn on_advance(&mut self, now: u64) {
        match &self.phase {
            Phase::Block(bs) if bs.done_at.is_some() => self.advance(now),
            Phase::Block(bs) => {
                // The switch advances a block only when every worker reported it done, and
                // it admits a worker's BlockDone from that worker's port only
                // (sgnn_switch::admission): an advance before this worker's report did not
                // come from its switch's synchronisation. One frame must not end a job; a
                // switch that restarted mid-run is found by the health probes.
                let b = bs.b;
                self.stats.unexpected += 1;
                tracing::warn!(
                    "worker {}: ignored a BlockAdvance for block {b} of round {} before this worker reported it done (not from the switch's synchronisation)",
                    self.view.worker,
                    self.round
                );
            }
            _ => self.stats.stale += 1,
        }
    }
}
