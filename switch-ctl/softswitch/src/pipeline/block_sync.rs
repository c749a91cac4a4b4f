//! Block synchronisation: BlockDone counted per worker, BlockAdvance multicast when all are
//! in, a leaf's report to the root spine (`p4/v1model/block_sync.p4`; contract:
//! `sgnn_switch::block_sync`).

use sgnn_wire::frame::FrameRepr;
use sgnn_wire::sgnn::Repr;
use sgnn_wire::PacketType;

use super::switch_config::FabricRole;
use super::{Emitted, Pipeline};
use crate::tables::{PortId, Replica, ADVANCE_GROUP};

impl Pipeline {
    /// The replicas of the advance group (every worker), which BlockAdvance and the all-sent
    /// notice go to.
    pub(super) fn advance_replicas(&self) -> Vec<Replica> {
        self.tables
            .multicast_groups
            .get(&ADVANCE_GROUP)
            .cloned()
            .unwrap_or_default()
    }

    pub(super) fn block_done(&mut self, ingress: PortId, repr: FrameRepr, out: &mut Vec<Emitted>) {
        let s = repr.sgnn;
        // port_worker first: only the sender on the ingress port (its worker, or the switch
        // at the other end of its link: a spine's leaf) may report for itself.
        if self.tables.port_worker.get(&ingress).map(|e| e.sender()) != Some(s.worker_id) {
            self.counters.drop_wrong_port += 1;
            return;
        }
        let w = s.worker_id.wrapping_sub(self.config.role.sync_base()) as usize;
        if w >= self.regs.sync_done.len() {
            self.counters.drop_unknown_worker += 1;
            return;
        }
        let cur = (self.regs.sync_round, self.regs.sync_block);
        let advance = |round: u16, block: u16| {
            let mut a = Repr::new(PacketType::BlockAdvance);
            a.round = round;
            a.block_id = block;
            a
        };
        if (s.round, s.block_id) < cur {
            // A worker that lost the advance asks again: answer it alone.
            self.counters.block_done_stale += 1;
            let mut a = advance(s.round, s.block_id);
            a.worker_id = s.worker_id;
            self.send_to_worker(s.worker_id, a, None, repr.ip.dscp, out);
            return;
        }
        if (s.round, s.block_id) > cur {
            self.counters.drop_stale += 1;
            return;
        }
        if self.regs.sync_done[w] {
            self.counters.block_done_duplicate += 1;
            // A worker asks again for an advance it has not seen. A leaf whose workers are
            // all in has sent its BlockDone up: that, or the root's advance, was lost. It
            // sends it up again; the root answers a block it has passed with its advance.
            if self.all_in() {
                self.report_up(cur, repr.ip.dscp, out);
            }
            return;
        }
        self.regs.sync_done[w] = true;
        self.regs.sync_count += 1;
        self.counters.block_done += 1;
        if self.all_in() && !self.report_up(cur, repr.ip.dscp, out) {
            self.advance(repr.ip.dscp, out);
        }
    }

    /// Every worker (on a spine, every leaf) has reported the current block.
    fn all_in(&self) -> bool {
        self.regs.sync_count as usize == self.regs.sync_done.len()
    }

    /// On a leaf: BlockDone for `cur` up to the root spine, as the leaf's peer id there (it
    /// then waits for the root's advance). Whether this switch is a leaf.
    fn report_up(&mut self, cur: (u16, u16), dscp: u8, out: &mut Vec<Emitted>) -> bool {
        let FabricRole::Leaf { id, root, .. } = self.config.role else {
            return false;
        };
        let mut d = Repr::new(PacketType::BlockDone);
        d.worker_id = id;
        d.round = cur.0;
        d.block_id = cur.1;
        self.send_to_worker(root, d, None, dscp, out);
        true
    }

    /// The root spine's BlockAdvance reaches a leaf: for the leaf's current block it advances
    /// as a star's switch does when its last worker is done.
    pub(super) fn root_advance(&mut self, repr: FrameRepr, out: &mut Vec<Emitted>) {
        let s = repr.sgnn;
        if (s.round, s.block_id) != (self.regs.sync_round, self.regs.sync_block) {
            self.counters.drop_stale += 1;
            return;
        }
        self.advance(repr.ip.dscp, out);
    }

    /// Advances to the next block: BlockAdvance for the current one to every replica of the
    /// advance group.
    fn advance(&mut self, dscp: u8, out: &mut Vec<Emitted>) {
        let cur = (self.regs.sync_round, self.regs.sync_block);
        let base = self.config.role.sync_base();
        self.counters.block_advance += 1;
        // Multicast: one replica per worker, rewritten in egress for worker `rid`, whose
        // egress also clears `sync_done[rid]` (one pass cannot clear every cell).
        for r in self.advance_replicas() {
            if let Some(d) = self
                .regs
                .sync_done
                .get_mut(r.rid.wrapping_sub(base) as usize)
            {
                *d = false;
            }
            let mut a = Repr::new(PacketType::BlockAdvance);
            a.round = cur.0;
            a.block_id = cur.1;
            a.worker_id = r.rid;
            self.egress_to_worker(r.port, r.rid, a, None, dscp, out);
        }
        self.regs.sync_count = 0;
        self.regs.sync_block += 1;
        if self.regs.sync_block >= self.config.blocks_per_round {
            self.regs.sync_block = 0;
            self.regs.sync_round = self.regs.sync_round.wrapping_add(1);
        }
    }
}
