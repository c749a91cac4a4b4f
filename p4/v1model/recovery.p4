/* recovery.p4: the switch's side of loss recovery (docs/host.md, "Loss recovery";
 * sgnn_switch::recovery::seq_step; softswitch::Pipeline::seq_access).
 *
 * Per worker, seq_next holds gaps ++ next (16 bits each): the NACKs sent to the worker so
 * far and the number its next sequenced Data frame should carry; seq_gap holds the range of
 * the last NACK, lo ++ hi. A sequenced Data frame (SEQ_VALID in dst_id, first pass, from
 * its worker's port) carrying number n:
 *   n == next                       in order: next = n + 1, the frame goes on;
 *   0 < n - next < SEQ_WINDOW       a gap: frames next..=n are missing (n itself is not
 *                                   processed): the frame becomes the NACK, gaps + 1,
 *                                   next = n + 1, seq_gap = next ++ n;
 *   otherwise                       late (reordered, duplicated): the frame goes on.
 * A tail probe (Ack, dst_id SEQ_PROBE, src_id: the number the worker's next frame takes,
 * from its port) is always answered with a NACK frame: a new gap next..=n-1 if the switch
 * expects less than n, else the last gap again.
 *
 * The NACK frame is an Ack with RESEND from the switch to the worker: src_id the range just
 * found (or the last one), dst_id the range before it, count the gaps so far, segment the
 * number expected next. The frame that caused it keeps its DSCP. One action holds the
 * read-modify-write of both registers (bmv2 keeps the register locks for it).
 *
 * All sent (sgnn_switch::recovery::sent_step): a probe is clean when it finds nothing
 * missing (no new gap, next == n) and its count (the NACKs its worker received) equals
 * gaps. The first clean probe of each worker for the current round and block is counted:
 * sent_done[w] holds ~(round ++ block) of the block it was counted in, sent_count holds
 * key ++ left (the workers not counted yet; a cell of another key, or with none left, starts
 * the block afresh) with key = block ^ (round[0] << 15). The probe
 * that brings left to 0 is not answered to its worker: it becomes the all-sent notice (an Ack with
 * dst_id SEND_DONE), multicast to every worker through the advance group; each replica is
 * addressed in egress (BlockSyncEgress) as a BlockAdvance replica is. A fabric's leaf counts
 * nothing and sends no notice (its count would cover its own workers only). */
#ifndef SGNN_RECOVERY_P4
#define SGNN_RECOVERY_P4

control Recovery(inout headers_t hdr,
                 inout metadata_t meta,
                 inout standard_metadata_t sm,
                 in bit<1> probe,
                 out bool nack) {
    @name(".seq_next") @id(52) register<bit<32>>(MAX_WORKERS) seq_next;
    @name(".seq_gap")  @id(53) register<bit<32>>(MAX_WORKERS) seq_gap;
    @name(".sent_done")  @id(54) register<bit<32>>(MAX_WORKERS) sent_done;
    @name(".sent_count") @id(55) register<bit<32>>(1) sent_count;

    /* A clean probe of the current round and block: count it once per worker (down, from
     * workers - 1 for the block's first). */
    @hidden action sent_access(bit<32> w, bit<16> round, bit<16> block) {
        bit<32> done;
        bit<32> count;
        sent_done.read(done, w);
        sent_count.read(count, 0);
        bit<32> mark = ~(round ++ block);
        bit<16> key = block ^ ((round & 16w1) << 15);
        bit<16> left = (count[31:16] == key && count[15:0] != 0) ? count[15:0] - 1
                                                                 : meta.cfg.workers - 1;
        bool fresh = done != mark;
        sent_done.write(w, mark);
        sent_count.write(0, fresh ? key ++ left : count);
        meta.all_sent = (fresh && left == 0) ? 1w1 : 1w0;
    }

    /* The probe becomes the all-sent notice: a fresh Ack header (sgnn::Repr::new) with
     * dst_id SEND_DONE, the round and block kept, worker_id set per replica in egress. */
    @hidden action make_all_sent() {
        hdr.sgnn.version = SGNN_VERSION;
        hdr.sgnn.pkt_type = TYPE_ACK;
        hdr.sgnn.ack = 1;
        hdr.sgnn.fetch = 0;
        hdr.sgnn.ecn = 0;
        hdr.sgnn.resend = 0;
        hdr.sgnn.flags_rsvd = 0;
        hdr.sgnn.worker_id = 0;
        hdr.sgnn.src_id = 0;
        hdr.sgnn.dst_id = SEND_DONE;
        hdr.sgnn.count = 0;
        hdr.sgnn.segment = 0;
        hdr.sgnn.pass = 0;
        hdr.sgnn.frac_bits = 0;
        hdr.sgnn.job = meta.cfg.job;
        hdr.lanes.setInvalid();
        hdr.ipv4.total_len = IPV4_HEADER_LEN + SGNN_HEADER_LEN;
        meta.advance_mc = 1;
        meta.originated = 1;
        sm.mcast_grp = ADVANCE_MCAST_GROUP;
    }

    @hidden action seq_access(bit<32> w, bit<16> n) {
        bit<32> held;
        bit<32> last_gap;
        seq_next.read(held, w);
        seq_gap.read(last_gap, w);
        bit<16> gaps = held[31:16];
        bit<16> next = held[15:0];
        // A probe says every number before n was sent; a Data frame that it is n.
        bit<16> last = (probe == 1) ? n - 1 : n;
        bit<16> d = last - next;
        bool gap = (probe == 1) ? (d < SEQ_WINDOW && n != next) : (d != 0 && d < SEQ_WINDOW);
        bit<32> gap_range = gap ? next ++ last : last_gap;
        bit<16> gaps_now = gap ? gaps + 1 : gaps;
        bit<16> next_now = gap ? last + 1 : ((probe == 0 && d == 0) ? n + 1 : next);
        seq_next.write(w, gaps_now ++ next_now);
        seq_gap.write(w, gap_range);
        meta.new_gap = gap ? 1w1 : 1w0;
        meta.nack = (gap || probe == 1) ? 1w1 : 1w0;
        meta.nack_range = gap_range;
        meta.nack_prev = last_gap;
        meta.nack_gaps = gaps_now;
        meta.nack_next = next_now;
    }

    /* The frame (a Data frame after a gap, or a tail probe) becomes the NACK to its worker:
     * a fresh Ack header (sgnn::Repr::new) with RESEND, no lanes. */
    @hidden action make_nack() {
        hdr.sgnn.version = SGNN_VERSION;
        hdr.sgnn.pkt_type = TYPE_ACK;
        hdr.sgnn.ack = 1;
        hdr.sgnn.fetch = 0;
        hdr.sgnn.ecn = 0;
        hdr.sgnn.resend = 1;
        hdr.sgnn.flags_rsvd = 0;
        hdr.sgnn.src_id = meta.nack_range;
        hdr.sgnn.dst_id = meta.nack_prev;
        hdr.sgnn.count = meta.nack_gaps;
        hdr.sgnn.segment = meta.nack_next;
        hdr.sgnn.pass = 0;
        hdr.sgnn.frac_bits = 0;
        hdr.sgnn.job = meta.cfg.job;
        hdr.lanes.setInvalid();
        hdr.ipv4.total_len = IPV4_HEADER_LEN + SGNN_HEADER_LEN;
        meta.dst_worker = hdr.sgnn.worker_id;
        meta.to_worker = 1;
        meta.originated = 1;
    }

    apply {
        meta.new_gap = 0;
        meta.all_sent = 0;
        // The number: a Data frame's dst_id, a probe's src_id (low 16 bits).
        bit<16> n = (probe == 1) ? hdr.sgnn.src_id[15:0] : hdr.sgnn.dst_id[15:0];
        seq_access((bit<32>)hdr.sgnn.worker_id, n);
        nack = meta.nack == 1;
        // A leaf counts no probe and sends no notice: its count would cover its own
        // workers only, not contributions still coming from other leaves.
        if (probe == 1 && meta.cfg.role != ROLE_LEAF && meta.new_gap == 0
                && meta.nack_next == n && meta.nack_gaps == hdr.sgnn.count) {
            bit<16> round;
            bit<16> block;
            sync_round.read(round, 0);
            sync_block.read(block, 0);
            if (hdr.sgnn.round == round && hdr.sgnn.block_id == block) {
                sent_access((bit<32>)hdr.sgnn.worker_id, round, block);
            }
        }
        if (meta.all_sent == 1) {
            events.count(EV_ALL_SENT);
            make_all_sent();
        } else if (meta.nack == 1) {
            if (meta.new_gap == 1) {
                events.count(EV_NACKED);
            }
            make_nack();
        }
    }
}

#endif
