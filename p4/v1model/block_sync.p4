/* block_sync.p4: block synchronisation (paper 3.3; softswitch::Pipeline::block_done).
 *
 * Each worker reports BlockDone(round, block); when all `workers` workers have reported
 * the current block, the switch sends BlockAdvance(round, block) to every worker through
 * multicast group 1 (replica rid = worker id) and moves to the next block (after
 * blocks_per_round blocks, block 0 of the next round). workers and blocks_per_round are
 * switch_config's (meta.cfg). A BlockDone for an earlier
 * block comes from a worker that lost the advance: it alone gets that block's advance
 * again, unicast. One for a later block is stale.
 *
 * sync_done cannot be cleared for all workers in one pass, so each multicast replica
 * clears its own worker's entry in egress (BlockSyncEgress), before the advance leaves:
 * a worker's next BlockDone, sent after it got the advance, always finds its entry clear.
 *
 * On a leaf-spine fabric (switch_config's role; sgnn_switch::fabric): sync_done[0] is worker
 * sync_base's; a leaf whose workers are all in sends one BlockDone up to the root spine
 * (worker up_id, to worker_table[up_peer]) instead of advancing, and advances when the root's
 * BlockAdvance for its current block comes back (from_root: on its link to the root,
 * set_port_link(up_peer), alone; switchgnn.p4); the root spine counts the
 * leaves as its workers. A worker's BlockDone again while the leaf waits (the leaf's
 * BlockDone or the root's advance was lost) sends the leaf's up again; the root answers one
 * for a block it has passed with that block's advance, as a star answers a worker. */
#ifndef SGNN_BLOCK_SYNC_P4
#define SGNN_BLOCK_SYNC_P4

/* sync_done is written by ingress and egress, sync_round/sync_block are read by the Data
 * path too (a Data packet for another block is stale): declared at the top level. */
@name(".sync_round") @id(37) register<bit<16>>(1) sync_round;
@name(".sync_block") @id(38) register<bit<16>>(1) sync_block;
@name(".sync_done")  @id(39) register<bit<8>>(MAX_WORKERS) sync_done;

/* The block being exchanged. */
control CurrentBlock(out bit<16> round, out bit<16> block) {
    apply {
        sync_round.read(round, 0);
        sync_block.read(block, 0);
    }
}

control BlockSync(inout headers_t hdr,
                  inout metadata_t meta,
                  inout standard_metadata_t sm,
                  in bool from_root) {
    @name(".sync_count") @id(40) register<bit<16>>(1) sync_count;

    /* The packet becomes BlockAdvance(round, block) for `worker`: a fresh header
     * (sgnn::Repr::new), every other field 0. */
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
        hdr.sgnn.job = meta.cfg.job;
        meta.originated = 1;
    }

    apply {
        bit<16> round;
        bit<16> block;
        sync_round.read(round, 0);
        sync_block.read(block, 0);
        bool advance = false;
        if (from_root) {
            // A leaf: the root spine's BlockAdvance (sgnn_switch::fabric). For the current
            // block it advances as its own last BlockDone would on a star.
            if (hdr.sgnn.round == round && hdr.sgnn.block_id == block) {
                advance = true;
            } else {
                events.count(EV_DROP_STALE);
            }
        } else {
            bit<16> workers = meta.cfg.workers;
            // sync_done[0] is worker sync_base's (0 but on a fabric's leaf or spine).
            bit<16> w = hdr.sgnn.worker_id - meta.cfg.sync_base;
            // workers above MAX_WORKERS is a configuration error; never index past it.
            if (w >= workers || (bit<32>)w >= MAX_WORKERS) {
                events.count(EV_DROP_UNKNOWN_WORKER);
            } else if (hdr.sgnn.round < round
                    || (hdr.sgnn.round == round && hdr.sgnn.block_id < block)) {
                // The worker lost the advance: answer it alone.
                events.count(EV_BLOCK_DONE_STALE);
                bit<16> worker = hdr.sgnn.worker_id;
                make_advance(hdr.sgnn.round, hdr.sgnn.block_id, worker);
                meta.dst_worker = worker;
                meta.to_worker = 1;
            } else if (hdr.sgnn.round != round || hdr.sgnn.block_id != block) {
                events.count(EV_DROP_STALE);
            } else {
                bit<8> done;
                sync_done.read(done, (bit<32>)w);
                bit<16> count;
                sync_count.read(count, 0);
                // Complete: every worker in, before this frame (a duplicate) or with it.
                bool complete = false;
                if (done != 0) {
                    events.count(EV_BLOCK_DONE_DUPLICATE);
                    // A worker asks again for an advance it has not seen: on a leaf whose
                    // workers are all in, its BlockDone up or the root's advance was lost,
                    // so it reports up again (the root answers a block it has passed).
                    complete = count == workers;
                } else {
                    sync_done.write((bit<32>)w, 1);
                    count = count + 1;
                    events.count(EV_BLOCK_DONE);
                    sync_count.write(0, count);
                    complete = count == workers;
                    if (complete && meta.cfg.role != ROLE_LEAF) {
                        advance = true;
                    }
                }
                if (complete && meta.cfg.role == ROLE_LEAF) {
                    // A leaf reports its workers done to the root spine, as worker up_id,
                    // and waits for the root's advance.
                    make_advance(round, block, meta.cfg.up_id);
                    hdr.sgnn.pkt_type = TYPE_BLOCK_DONE;
                    meta.dst_worker = meta.cfg.up_peer;
                    meta.to_worker = 1;
                }
            }
        }
        if (advance) {
            events.count(EV_BLOCK_ADVANCE);
            make_advance(round, block, 0);   // worker_id set per replica
            meta.advance_mc = 1;
            sm.mcast_grp = ADVANCE_MCAST_GROUP;
            sync_count.write(0, 0);
            block = block + 1;
            if (block >= meta.cfg.blocks_per_round) {
                block = 0;
                round = round + 1;
            }
            sync_block.write(0, block);
            sync_round.write(0, round);
        }
    }
}

/* A block-advance replica: addressed to worker egress_rid, whose sync_done entry it
 * clears (see the top of this file). An all-sent replica (recovery.p4) is addressed the
 * same way and clears nothing. */
control BlockSyncEgress(inout headers_t hdr,
                        inout metadata_t meta,
                        inout standard_metadata_t sm) {
    apply {
        meta.dst_worker = sm.egress_rid;
        hdr.sgnn.worker_id = sm.egress_rid;
        // An all-sent notice (recovery.p4) takes the same group and leaves sync_done alone.
        // sync_done[0] is worker sync_base's (a fabric's leaf or spine).
        bit<16> i = sm.egress_rid - meta.cfg.sync_base;
        if (hdr.sgnn.pkt_type == TYPE_BLOCK_ADVANCE && (bit<32>)i < MAX_WORKERS) {
            sync_done.write((bit<32>)i, 0);
        }
    }
}

#endif
