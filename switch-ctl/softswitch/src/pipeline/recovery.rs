//! Loss recovery, the switch's side: the per-worker sequence check, the NACK, the tail probe
//! and the all-sent notice (`p4/v1model/recovery.p4`; contract: `sgnn_switch::recovery`).

use sgnn_wire::frame::FrameRepr;
use sgnn_wire::sgnn::Repr;
use sgnn_wire::PacketType;

use sgnn_switch::recovery::{probe_clean, sent_step, seq_step, Nack, SentOutcome, SeqOutcome};
use sgnn_wire::recovery::SEND_DONE;

use super::config::MAX_WORKERS;
use super::switch_config::FabricRole;
use super::{Emitted, Pipeline};
use crate::tables::PortId;

impl Pipeline {
    /// One access to worker `w`'s `seq_next` and `seq_gap` for number `n` (a Data frame's, or
    /// a tail probe's next number); see `sgnn_switch::recovery::seq_step`.
    pub(super) fn seq_access(&mut self, w: u16, n: u16, probe: bool) -> SeqOutcome {
        let w = w as usize;
        if w >= MAX_WORKERS {
            return SeqOutcome::InOrder;
        }
        let (next, gap, o) = seq_step(self.regs.seq_next[w], self.regs.seq_gap[w], n, probe);
        self.regs.seq_next[w] = next;
        self.regs.seq_gap[w] = gap;
        o
    }

    /// The NACK frame to the worker `cause` came from (a Data frame after a gap, or a tail
    /// probe): an Ack with RESEND (`sgnn_switch::recovery`).
    pub(super) fn send_nack(&mut self, cause: &FrameRepr, k: Nack, out: &mut Vec<Emitted>) {
        let c = cause.sgnn;
        let mut a = Repr::new(PacketType::Ack);
        a.flags.resend = true;
        a.worker_id = c.worker_id;
        a.src_id = k.range;
        a.dst_id = k.prev;
        a.block_id = c.block_id;
        a.round = c.round;
        a.count = k.gaps;
        a.segment = k.next;
        self.counters.nacked += k.new_gap as u64;
        self.send_to_worker(c.worker_id, a, None, cause.ip.dscp, out);
    }

    /// A worker's tail probe: from its own port only; always answered with a NACK frame.
    pub(super) fn seq_probe(&mut self, ingress: PortId, repr: FrameRepr, out: &mut Vec<Emitted>) {
        let s = repr.sgnn;
        if !self.on_its_port(ingress, s.worker_id) {
            self.counters.drop_wrong_port += 1;
            return;
        }
        if s.worker_id as usize >= MAX_WORKERS {
            self.counters.drop_unknown_worker += 1;
            return;
        }
        self.counters.seq_probed += 1;
        let n = s.src_id as u16;
        let o = self.seq_access(s.worker_id, n, true);
        let current = (s.round, s.block_id) == (self.regs.sync_round, self.regs.sync_block);
        // A leaf's count would cover its own workers only, and its notice would tell them
        // that contributions still on their way from other leaves were lost: a leaf counts
        // nothing and sends no notice (its workers pull after the fetch timeout).
        let leaf = matches!(self.config.role, FabricRole::Leaf { .. });
        if current && !leaf && probe_clean(n, s.count, o) {
            let w = s.worker_id as usize;
            let (done, count, sent) = sent_step(
                self.regs.sent_done[w],
                self.regs.sent_count,
                s.round,
                s.block_id,
                self.config.workers,
            );
            self.regs.sent_done[w] = done;
            self.regs.sent_count = count;
            if sent == SentOutcome::AllSent {
                self.all_sent(&repr, out);
                return;
            }
        }
        if let SeqOutcome::Nack(k) = o {
            self.send_nack(&repr, k, out);
        }
    }

    /// The probe that completed the count becomes the all-sent notice: one replica per
    /// worker of the advance group, rewritten in egress for worker `rid`
    /// (`sgnn_switch::recovery`, "All sent").
    fn all_sent(&mut self, cause: &FrameRepr, out: &mut Vec<Emitted>) {
        self.counters.all_sent += 1;
        for r in self.advance_replicas() {
            let mut a = Repr::new(PacketType::Ack);
            a.worker_id = r.rid;
            a.dst_id = SEND_DONE;
            a.round = cause.sgnn.round;
            a.block_id = cause.sgnn.block_id;
            self.egress_to_worker(r.port, r.rid, a, None, cause.ip.dscp, out);
        }
    }
}
