//! SwitchGNN's rounds and blocks: a round is a pass over the plan's blocks in order; a block
//! sends its sources in the planned order, reports BlockDone once every cell and replicated
//! segment of it is in, and moves on when the switch advances it. The per-block state
//! (cells, reception and send bitmaps, timers) lives here.

use sgnn_wire::PacketType;

use super::{Engine, Phase};
use crate::class::TrafficClass;
use crate::TransportError;

/// One cell: a destination's segment in a block.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Cell {
    pub(super) done: bool,
    /// Sources whose raw contribution is not in the cache yet.
    pub(super) missing: u32,
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
    /// Send bitmap, `flat pass index * segs + g`: acknowledged.
    pub(super) acked: Vec<bool>,
    pub(super) unacked: usize,
    pub(super) fetch_at: u64,
    pub(super) fetch_backoff: u64,
    pub(super) resend_at: Option<u64>,
    pub(super) resend_backoff: u64,
    /// Set once BlockDone was sent: when to send it again.
    pub(super) done_at: Option<u64>,
    pub(super) advance_backoff: u64,
    pub(super) done_sent: u32,
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
        let (i, g) = (bs.cursor / s, bs.cursor % s);
        bs.cursor += 1;
        let src = block.sources[i];
        let (lanes, sat) = view
            .contribution(&cur.enc, s, src.vertex, g)
            .expect("the view lists only sources this worker sends");
        self.stats.saturated_lanes += sat as u64;
        let mut h = self.header(PacketType::Data, self.block_index(), g as u16);
        h.src_id = src.vertex;
        h.count = src.pass_len as u16;
        self.emit(TrafficClass::Data, self.cfg.switch_ip, h, Some(&lanes));
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
                    done: false,
                    missing,
                };
            }
        }
        let acked = vec![false; block.passes.len() * s];
        let raw_done = vec![false; block.raw_in.len() * s];
        self.phase = Phase::Block(BlockState {
            b,
            cursor: 0,
            incomplete: cells.len() + raw_done.len(),
            cells,
            raw_done,
            unacked: acked.len(),
            acked,
            fetch_at: now + self.cfg.fetch_timeout_ns,
            fetch_backoff: self.cfg.fetch_timeout_ns,
            resend_at: None,
            resend_backoff: self.cfg.resend_timeout_ns,
            done_at: None,
            advance_backoff: self.cfg.advance_timeout_ns,
            done_sent: 0,
        });
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
        tracing::info!(
            "worker {}: block {b} of round {} advanced by the switch",
            self.view.worker,
            self.round
        );
        if b + 1 < self.view.blocks.len() {
            self.enter_block(now, b + 1);
        } else {
            self.complete_round(now);
        }
    }

    pub(super) fn on_advance(&mut self, now: u64) {
        match &self.phase {
            Phase::Block(bs) if bs.done_at.is_some() => self.advance(now),
            Phase::Block(bs) => {
                let b = bs.b;
                self.fatal.get_or_insert(TransportError::Protocol(format!(
                    "the switch advanced block {b} of round {} before worker {} reported it done: another process uses worker id {}, or the switch was restarted mid-run",
                    self.round, self.view.worker, self.view.worker
                )));
            }
            _ => self.stats.stale += 1,
        }
    }
}
