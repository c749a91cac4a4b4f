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
            if (v >= meta.cfg.workers_m1) {
                v = 0;
                last = 1;
            } else {
                v = v + 1;
                last = 0;
            }
        }
    };

    /* The packet becomes BlockAdvance(round, block) for `worker`. */
    @hidden action make_advance(bit<16> round, bit<16> block, bit<16> worker) {
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
        hdr.sgnn.block_id = block;
        hdr.sgnn.count = 0;
        hdr.sgnn.round = round;
        hdr.sgnn.segment = 0;
        hdr.sgnn.pass = 0;
        hdr.sgnn.frac_bits = 0;
        hdr.sgnn.reserved = 0;
        hdr.bridge.originated = 1;
    }

    /* The orderings the chain below tests, computed in actions: a gateway compares a
     * field with constants, and a local computed in apply would be inlined into it. */
    bit<16> over_workers = 0;
    bit<16> round_behind = 0;
    bit<16> block_behind = 0;
    bit<16> next_block = 0;
    bit<16> next_round = 0;
    bit<16> blocks_left = 0;
    @hidden action differences() {
        over_workers = meta.hdr_worker |-| meta.cfg.workers_m1;
        round_behind = meta.sync_round |-| meta.hdr_round;
        block_behind = meta.sync_block |-| meta.hdr_block;
    }
    @hidden action next_of(bit<16> block, bit<16> round) {
        next_block = block + 1;
        next_round = round;
    }
    @hidden action left_of() { blocks_left = meta.cfg.blocks_per_round |-| next_block; }

    apply {
        // Gateways compare fields with constants: the orderings below are saturating
        // differences, not 0 when the first operand is the larger.
        differences();
        bool unknown_worker = false;
        if (over_workers != 0 || meta.cfg.workers == 0) {
            unknown_worker = true;
        }
        if (hdr.sgnn.worker_id >= (bit<16>)MAX_WORKERS) {
            unknown_worker = true;
        }
        bool behind = false;
        if (round_behind != 0) {
            behind = true;
        } else if (hdr.sgnn.round == meta.sync_round && block_behind != 0) {
            behind = true;
        }

        bool wrong_port = false;
        if (meta.port_known == 0) {
            wrong_port = true;
        } else if (meta.port_worker != hdr.sgnn.worker_id) {
            wrong_port = true;
        }

        if (!meta.from_host) {
            // PASS_ADVANCE: CurrentBlock has moved to the next block; tell every worker.
            EVENT(EV_BLOCK_ADVANCE);
            make_advance(hdr.sgnn.round, hdr.sgnn.block_id, 0);
            hdr.bridge.advance_mc = 1;
            ig_tm_md.mcast_grp_a = (MulticastGroupId_t)ADVANCE_MCAST_GROUP;
            ig_dprsr_md.drop_ctl = 0;
        } else if (wrong_port) {
            // Not from the port of the worker it names: a stray or forged frame.
            EVENT(EV_DROP_WRONG_PORT);
        } else if (unknown_worker) {
            EVENT(EV_DROP_UNKNOWN_WORKER);
        } else if (behind) {
            // The worker lost the advance: answer it alone.
            EVENT(EV_BLOCK_DONE_STALE);
            meta.dst_worker = hdr.sgnn.worker_id;
            make_advance(hdr.sgnn.round, hdr.sgnn.block_id, hdr.sgnn.worker_id);
            meta.to_worker = 1;
        } else if (hdr.sgnn.round != meta.sync_round
                || hdr.sgnn.block_id != meta.sync_block) {
            EVENT(EV_DROP_STALE);
        } else {
            bit<1> dup = take_done.execute((bit<32>)hdr.sgnn.worker_id);
            if (dup == 1) {
                EVENT(EV_BLOCK_DONE_DUPLICATE);
            } else {
                EVENT(EV_BLOCK_DONE);
                bit<1> last = count_done.execute(0);
                if (last == 1) {
                    // Round once more to move CurrentBlock (see the top of this file).
                    next_of(meta.hdr_block, meta.hdr_round);
                    left_of();
                    if (blocks_left == 0) {
                        next_block = 0;
                        next_round = next_round + 1;
                    }
                    hdr.sgnn.src_id = (bit<32>)next_round;
                    hdr.sgnn.dst_id = (bit<32>)next_block;
                    hdr.sgnn.flags_rsvd = PASS_ADVANCE;
                    meta.to_recirc = 1;
                }
            }
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
