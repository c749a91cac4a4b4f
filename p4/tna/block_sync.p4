/* block_sync.p4: block synchronisation, with the behaviour of ../v1model/block_sync.p4 in
 * the shape a Tofino allows (each register read or written once per pass).
 *
 * - sync_round / sync_block are read in every pass (a Data frame for another block is
 *   stale). They cannot also be written in the pass that reads them, so the BlockDone that
 *   completes a block goes round once more (PASS_ADVANCE, carrying the next round and
 *   block in src_id / dst_id); that pass writes them and sends BlockAdvance to every
 *   worker through multicast group 1. One extra pass per block.
 * - sync_done[w] holds ~(round ++ block) of the block worker w last reported (v1model: a
 *   0/1 flag cleared by every advance replica in egress). A register belongs to one gress
 *   on a Tofino, and a mark needs no clearing: a report is a duplicate iff the cell holds
 *   the current block's mark.
 * - sync_count counts first reports of the current block; the last one resets it. */
#ifndef SGNN_TNA_BLOCK_SYNC_P4
#define SGNN_TNA_BLOCK_SYNC_P4

/* The block being exchanged (written by the PASS_ADVANCE pass). */
control CurrentBlock(in headers_t hdr, inout ig_metadata_t meta) {
    @name(".sync_round") @id(37) Register<bit<16>, bit<32>>(1) sync_round;
    @name(".sync_block") @id(38) Register<bit<16>, bit<32>>(1) sync_block;

    RegisterAction<bit<16>, bit<32>, bit<16>>(sync_round) round_rw = {
        void apply(inout bit<16> v, out bit<16> rv) {
            if (meta.pass_kind == PASS_ADVANCE) {
                v = hdr.sgnn.src_id[15:0];
            }
            rv = v;
        }
    };
    RegisterAction<bit<16>, bit<32>, bit<16>>(sync_block) block_rw = {
        void apply(inout bit<16> v, out bit<16> rv) {
            if (meta.pass_kind == PASS_ADVANCE) {
                v = hdr.sgnn.dst_id[15:0];
            }
            rv = v;
        }
    };

    apply {
        meta.sync_round = round_rw.execute(0);
        meta.sync_block = block_rw.execute(0);
    }
}

control BlockSync(inout headers_t hdr,
                  inout ig_metadata_t meta,
                  inout ingress_intrinsic_metadata_for_tm_t ig_tm_md,
                  inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    @name(".sync_done")  @id(39) Register<bit<32>, bit<32>>(MAX_WORKERS) sync_done;
    @name(".sync_count") @id(40) Register<bit<16>, bit<32>>(1) sync_count;

    RegisterAction<bit<32>, bit<32>, bit<1>>(sync_done) take_done = {
        void apply(inout bit<32> v, out bit<1> dup) {
            if (v == meta.seen_mark) {
                dup = 1;
            } else {
                dup = 0;
            }
            v = meta.seen_mark;
        }
    };
    RegisterAction<bit<16>, bit<32>, bit<1>>(sync_count) count_done = {
        void apply(inout bit<16> v, out bit<1> last) {
            if (v + 1 >= meta.cfg.workers) {
                v = 0;
                last = 1;
            } else {
                v = v + 1;
                last = 0;
            }
        }
    };

    /* The packet becomes BlockAdvance(round, block) for `worker`. */
    @hidden action make_advance(bit<16> worker) {
        hdr.sgnn.version = SGNN_VERSION;
        hdr.sgnn.pkt_type = TYPE_BLOCK_ADVANCE;
        hdr.sgnn.ack = 0;
        hdr.sgnn.fetch = 0;
        hdr.sgnn.ecn = 0;
        hdr.sgnn.resend = 0;
        hdr.sgnn.flags_rsvd = 0;
        hdr.sgnn.worker_id = worker;
        hdr.sgnn.src_id = 0;
        hdr.sgnn.dst_id = 0;
        hdr.sgnn.count = 0;
        hdr.sgnn.segment = 0;
        hdr.sgnn.pass = 0;
        hdr.sgnn.frac_bits = 0;
        // job: the frame's own (the job of the frame it is made from).
        hdr.bridge.originated = 1;
    }
    /* PASS_ADVANCE: CurrentBlock has moved to the next block; tell every worker. */
    @hidden action advance() {
        EVENT(EV_BLOCK_ADVANCE);
        make_advance(0);
        hdr.bridge.advance_mc = 1;
        ig_tm_md.mcast_grp_a = (MulticastGroupId_t)ADVANCE_MCAST_GROUP;
        ig_dprsr_md.drop_ctl = 0;
    }
    /* The worker lost the advance: answer it alone. */
    @hidden action answer_behind() {
        EVENT(EV_BLOCK_DONE_STALE);
        make_advance(hdr.sgnn.worker_id);
        meta.to_worker = 1;
    }
    @hidden action refuse(bit<32> event) {
        EVENT(event);
    }
    @hidden action report() {
        meta.bs_report = 1;
    }

    /* v1model's chain of checks as one lookup, the first matching entry deciding (each
     * "is it 0" a ternary match; BlockSyncPrep computed the inputs beside the frame checks):
     * the switch's own advance pass; not from the port of the worker it names (a stray or
     * forged frame); an unknown worker; behind the switch's block (answered); another
     * block (stale); else a report, which sync_done and sync_count take. */
    @hidden table bs_verdict {
        key = {
            meta.host:          exact;
            meta.port_known:    ternary;
            meta.worker_x:      ternary;
            meta.cfg.workers:   ternary;
            meta.over_workers:  ternary;
            hdr.sgnn.worker_id: ternary;
            meta.round_behind:  ternary;
            meta.round_x:       ternary;
            meta.block_behind:  ternary;
            meta.block_x:       ternary;
        }
        actions = { advance; answer_behind; refuse; report; @defaultonly NoAction; }
#define KNOWN 1, 1, 0
#define IN_RANGE 0, 0 &&& ~((bit<16>)MAX_WORKERS - 1)
        const entries = {
            (0, _, _, _, _, _, _, _, _, _): advance();
            (1, 0, _, _, _, _, _, _, _, _): refuse(EV_DROP_WRONG_PORT);
            (KNOWN, 0, _, _, _, _, _, _): refuse(EV_DROP_UNKNOWN_WORKER);
            (KNOWN, _, IN_RANGE, 0, 0, 0, 0): report();
            (KNOWN, _, IN_RANGE, 0, 0, 0, _): refuse(EV_DROP_STALE);
            (KNOWN, _, IN_RANGE, 0, 0, _, _): answer_behind();
            (KNOWN, _, IN_RANGE, 0, _, _, _): refuse(EV_DROP_STALE);
            (KNOWN, _, IN_RANGE, _, _, _, _): answer_behind();
            (KNOWN, _, _, _, _, _, _, _): refuse(EV_DROP_UNKNOWN_WORKER);
            (1, _, _, _, _, _, _, _, _, _): refuse(EV_DROP_WRONG_PORT);
        }
#undef IN_RANGE
#undef KNOWN
        const default_action = NoAction();
        size = 10;
    }

    /* The last report of a block: round once more (PASS_ADVANCE) to move CurrentBlock, with
     * the next round and block BlockSyncPrep computed. */
    @hidden action go_advance() {
        hdr.sgnn.src_id = (bit<32>)meta.next_round;
        hdr.sgnn.dst_id = (bit<32>)meta.next_block;
        hdr.sgnn.flags_rsvd = PASS_ADVANCE;
        meta.to_recirc = 1;
    }

    apply {
        bs_verdict.apply();
        if (meta.bs_report == 1) {
            bit<1> dup = take_done.execute((bit<32>)hdr.sgnn.worker_id);
            if (dup == 1) {
                EVENT(EV_BLOCK_DONE_DUPLICATE);
            } else {
                EVENT(EV_BLOCK_DONE);
                bit<1> last = count_done.execute(0);
                if (last == 1) {
                    go_advance();
                }
            }
        }
    }
}

/* What BlockSync's checks and its advance read, computed for every frame beside the frame
 * checks (no side effects), so BlockSync's verdict is one lookup two stages in. */
control BlockSyncPrep(in headers_t hdr, inout ig_metadata_t meta) {
    @hidden action differences() {
        meta.over_workers = meta.hdr_worker_p1 |-| meta.cfg.workers;
        meta.round_behind = meta.sync_round |-| meta.hdr_round;
        meta.block_behind = meta.sync_block |-| meta.hdr_block;
        meta.worker_x = meta.port_worker ^ meta.hdr_worker;
    }
    @hidden action next_of() {
        meta.next_block = meta.hdr_block + 1;
        meta.next_round = meta.hdr_round;
    }
    @hidden action left_of() { meta.blocks_left = meta.cfg.blocks_per_round |-| meta.next_block; }
    @hidden action wrap() {
        meta.next_block = 0;
        meta.next_round = meta.hdr_round + 1;
    }
    apply {
        differences();
        next_of();
        left_of();
        if (meta.blocks_left == 0) {
            wrap();
        }
    }
}

/* A block-advance replica: addressed to worker egress_rid. */
control BlockSyncEgress(inout eg_headers_t hdr,
                        inout eg_metadata_t meta,
                        in egress_intrinsic_metadata_t eg_intr_md) {
    apply {
        meta.dst_worker = eg_intr_md.egress_rid;
        hdr.sgnn.worker_id = eg_intr_md.egress_rid;
    }
}

#endif
