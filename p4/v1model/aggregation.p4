/* aggregation.p4: agg_table and the aggregators (softswitch::Pipeline::data/aggregate).
 *
 * One pass of a Data packet: agg_table[(block, src, pass)] says aggregate into aggregator
 * agg_base + segment, or deliver (no aggregator: the values go to the destination's
 * worker as Bypass), or replicate (a delivery plan's raw vertex: the packet replication
 * engine sends a Bypass copy to every worker of the multicast group, dst_id ALL_NEIGHBOURS,
 * each counted delivered in egress; the worker of a copy is its egress_rid). The aggregator is 32 lane registers plus count, state, tag (round
 * and block it belongs to), generation and a sticky ECN bit, all indexed by the same slot.
 *
 * Generations (docs/switch-interface.md, "Generations"): a plan that recycles aggregators
 * gives several rows of a block the same agg_base, numbered by `generation` in send order.
 * A contribution for an older generation than the one the aggregator holds for the same
 * round and block is late: it leaves as a Bypass (bypassed_late) and the aggregator is not
 * touched. State of another round, block or generation is reclaimed.
 *
 * Duplicate suppression (docs/switch-interface.md): a Data frame from a host without
 * RESEND (so at pass 0), after its agg_table hit and before the action's effects, takes
 * cell seen_base + segment of src_seen (drop_bad_index beyond SEEN_CELLS); if the cell
 * already holds 1 ++ round ++ block the frame is a network duplicate (drop_duplicate: it
 * would be added twice and complete an aggregate early), otherwise the cell gets that
 * value. RESEND frames and recirculated passes (pass >= 1) skip the check.
 *
 * A source that feeds several aggregators (more = 1) needs one pass per aggregator, each
 * adding the ORIGINAL values. The pass requests an I2E clone (session 100): bmv2 makes it
 * from the packet buffer as it entered ingress and parses it again, so whatever this pass
 * wrote into hdr (a Result's sums, a Bypass header) is not in it. Egress gives the clone
 * pass + 1 and recirculates it. This pass's own packet becomes the Result or Bypass, or is
 * dropped. A RESEND never recirculates: it names the one pass it is resent for.
 *
 * Loss recovery (docs/host.md, "Loss recovery"): every contribution also adds its src_id
 * into agg_ids, the aggregator's contributor digest. An aggregate completed by a sequenced
 * Data frame (SEQ_VALID in dst_id, recovery.p4) is kept: state AGG_DONE, its sum, count,
 * digest, tag and generation stay, until a contribution of another round, block or
 * generation takes the aggregator over as if it were free (not counted reclaimed); another
 * first copy for the same round, block and generation changes nothing (drop_duplicate). An
 * unsequenced frame frees the aggregate as before. A pull (meta.pull: a FetchReq to the
 * switch's own address, naming a source and pass of the row) looks the row up in agg_table
 * and leaves as a Result with RESEND to the row's destination worker: count, digest (src_id)
 * and sum of what the aggregator holds for the row's round, block and generation (active or
 * kept), or count 0 with src_id 0 (nothing yet) or PULL_GONE (another generation holds it,
 * or a RESEND released it). A pull touches no register. */
#ifndef SGNN_AGGREGATION_P4
#define SGNN_AGGREGATION_P4

/* acc + x on signed 32-bit lanes, saturating at i32::MAX / i32::MIN exactly as
 * sgnn_wire::codec::accumulate: the sum overflowed iff both operands have the sign the
 * sum does not; then the result is MAX if acc >= 0, else MIN. */
bit<32> sat_add(in bit<32> acc, in bit<32> x, inout bit<1> saturated) {
    bit<32> s = acc + x;
    bit<1> overflow = ((acc ^ s) & (x ^ s))[31:31];
    saturated = saturated | overflow;
    bit<32> limit = (acc[31:31] == 1) ? 32w0x80000000 : 32w0x7fffffff;
    return (overflow == 1) ? limit : s;
}

/* Lane i: read, add, write the sum back (or 0 when the aggregate completes and the slot
 * is freed), and put the sum in the packet, which becomes the Result if complete. */
#define ADD_LANE(i) \
        agg_value_##i.read(acc, idx); \
        sum = sat_add(acc, hdr.lanes.v##i, meta.saturated); \
        hdr.lanes.v##i = sum; \
        agg_value_##i.write(idx, (clear == 1) ? 32w0 : sum);

/* Lane i of a pull's answer: what the aggregator holds for the row, or 0. */
#define PULL_LANE(i) \
        agg_value_##i.read(acc, idx); \
        hdr.lanes.v##i = holds ? acc : 32w0;

control Aggregation(inout headers_t hdr,
                    inout metadata_t meta,
                    inout standard_metadata_t sm) {
    @name(".agg_value_0") @id(1) register<bit<32>>(AGGREGATORS) agg_value_0;
    @name(".agg_value_1") @id(2) register<bit<32>>(AGGREGATORS) agg_value_1;
    @name(".agg_value_2") @id(3) register<bit<32>>(AGGREGATORS) agg_value_2;
    @name(".agg_value_3") @id(4) register<bit<32>>(AGGREGATORS) agg_value_3;
    @name(".agg_value_4") @id(5) register<bit<32>>(AGGREGATORS) agg_value_4;
    @name(".agg_value_5") @id(6) register<bit<32>>(AGGREGATORS) agg_value_5;
    @name(".agg_value_6") @id(7) register<bit<32>>(AGGREGATORS) agg_value_6;
    @name(".agg_value_7") @id(8) register<bit<32>>(AGGREGATORS) agg_value_7;
    @name(".agg_value_8") @id(9) register<bit<32>>(AGGREGATORS) agg_value_8;
    @name(".agg_value_9") @id(10) register<bit<32>>(AGGREGATORS) agg_value_9;
    @name(".agg_value_10") @id(11) register<bit<32>>(AGGREGATORS) agg_value_10;
    @name(".agg_value_11") @id(12) register<bit<32>>(AGGREGATORS) agg_value_11;
    @name(".agg_value_12") @id(13) register<bit<32>>(AGGREGATORS) agg_value_12;
    @name(".agg_value_13") @id(14) register<bit<32>>(AGGREGATORS) agg_value_13;
    @name(".agg_value_14") @id(15) register<bit<32>>(AGGREGATORS) agg_value_14;
    @name(".agg_value_15") @id(16) register<bit<32>>(AGGREGATORS) agg_value_15;
    @name(".agg_value_16") @id(17) register<bit<32>>(AGGREGATORS) agg_value_16;
    @name(".agg_value_17") @id(18) register<bit<32>>(AGGREGATORS) agg_value_17;
    @name(".agg_value_18") @id(19) register<bit<32>>(AGGREGATORS) agg_value_18;
    @name(".agg_value_19") @id(20) register<bit<32>>(AGGREGATORS) agg_value_19;
    @name(".agg_value_20") @id(21) register<bit<32>>(AGGREGATORS) agg_value_20;
    @name(".agg_value_21") @id(22) register<bit<32>>(AGGREGATORS) agg_value_21;
    @name(".agg_value_22") @id(23) register<bit<32>>(AGGREGATORS) agg_value_22;
    @name(".agg_value_23") @id(24) register<bit<32>>(AGGREGATORS) agg_value_23;
    @name(".agg_value_24") @id(25) register<bit<32>>(AGGREGATORS) agg_value_24;
    @name(".agg_value_25") @id(26) register<bit<32>>(AGGREGATORS) agg_value_25;
    @name(".agg_value_26") @id(27) register<bit<32>>(AGGREGATORS) agg_value_26;
    @name(".agg_value_27") @id(28) register<bit<32>>(AGGREGATORS) agg_value_27;
    @name(".agg_value_28") @id(29) register<bit<32>>(AGGREGATORS) agg_value_28;
    @name(".agg_value_29") @id(30) register<bit<32>>(AGGREGATORS) agg_value_29;
    @name(".agg_value_30") @id(31) register<bit<32>>(AGGREGATORS) agg_value_30;
    @name(".agg_value_31") @id(32) register<bit<32>>(AGGREGATORS) agg_value_31;
    @name(".agg_count") @id(33) register<bit<16>>(AGGREGATORS) agg_count;
    @name(".agg_state") @id(34) register<bit<8>>(AGGREGATORS)  agg_state;
    @name(".agg_tag")   @id(35) register<bit<32>>(AGGREGATORS) agg_tag;
    @name(".agg_ecn")   @id(36) register<bit<8>>(AGGREGATORS)  agg_ecn;
    @name(".src_seen")  @id(49) register<bit<33>>(SEEN_CELLS)  src_seen;
    @name(".agg_gen")   @id(50) register<bit<16>>(AGGREGATORS) agg_gen;
    @name(".agg_ids")   @id(51) register<bit<32>>(AGGREGATORS) agg_ids;

    /* The actions only load their data; the effects follow in apply, after the duplicate
     * check (which needs seen_base, so it cannot come before the lookup). */
    @name(".aggregate") @id(1)
    action aggregate(bit<32> agg_base, bit<32> dst_id, bit<16> dst_worker,
                     bit<16> expected, bit<1> more, bit<32> seen_base,
                     bit<16> generation) {
        meta.agg_base = agg_base;
        meta.out_dst_id = dst_id;
        meta.dst_worker = dst_worker;
        meta.expected = expected;
        meta.more = more;
        meta.seen_base = seen_base;
        meta.generation = generation;
        meta.agg_kind = AGG_KIND_PLAIN;
    }

    /* A leaf's share of an aggregate split between leaves and a spine (sgnn_switch::fabric):
     * added as aggregate adds; at `expected` the sum leaves as a partial (make_partial). */
    @name(".aggregate_up") @id(10)
    action aggregate_up(bit<32> agg_base, bit<32> dst_id, bit<16> dst_worker,
                        bit<16> expected, bit<1> more, bit<32> seen_base,
                        bit<16> generation) {
        aggregate(agg_base, dst_id, dst_worker, expected, more, seen_base, generation);
        meta.agg_kind = AGG_KIND_UP;
    }

    /* A spine's sum of leaves' partials: each frame adds its count (the contributions the
     * partial holds), so expected and the Result's count are contributions. */
    @name(".aggregate_partials") @id(11)
    action aggregate_partials(bit<32> agg_base, bit<32> dst_id, bit<16> dst_worker,
                              bit<16> expected, bit<1> more, bit<32> seen_base,
                              bit<16> generation) {
        aggregate(agg_base, dst_id, dst_worker, expected, more, seen_base, generation);
        meta.agg_kind = AGG_KIND_PARTIALS;
    }

    @name(".deliver") @id(2)
    action deliver(bit<32> dst_id, bit<16> dst_worker, bit<1> more, bit<32> seen_base) {
        meta.out_dst_id = dst_id;
        meta.dst_worker = dst_worker;
        meta.more = more;
        meta.seen_base = seen_base;
    }

    @name(".replicate") @id(8)
    action replicate(bit<16> group, bit<1> more, bit<32> seen_base) {
        meta.mcast_group = group;
        meta.more = more;
        meta.seen_base = seen_base;
    }

    @name(".agg_table") @id(1)
    table agg_table {
        key = {
            hdr.sgnn.block_id: exact @name("block_id");
            hdr.sgnn.src_id:   exact @name("src_id");
            hdr.sgnn.pass:     exact @name("pass");
        }
        actions = {
            aggregate; aggregate_up; aggregate_partials; deliver; replicate;
            @defaultonly NoAction;
        }
        const default_action = NoAction();
        size = AGG_TABLE_SIZE;
    }

    /* Cell `cell` of src_seen for the first-pass copy marked `mark`: a duplicate when the
     * cell already holds the mark; afterwards it holds it either way (writing the same
     * value to a duplicate's cell changes nothing). One action: bmv2 holds the register
     * lock for the read-compare-write. */
    @hidden action take_seen(bit<32> cell, bit<33> mark) {
        bit<33> held;
        src_seen.read(held, cell);
        meta.duplicate = (held == mark) ? 1w1 : 1w0;
        src_seen.write(cell, mark);
    }

    /* Empties slot idx and leaves it in `state` for round/block `tag`, generation `gen`. */
    @hidden action release(bit<32> idx, bit<8> state, bit<32> tag, bit<16> gen) {
        agg_value_0.write(idx, 0);
        agg_value_1.write(idx, 0);
        agg_value_2.write(idx, 0);
        agg_value_3.write(idx, 0);
        agg_value_4.write(idx, 0);
        agg_value_5.write(idx, 0);
        agg_value_6.write(idx, 0);
        agg_value_7.write(idx, 0);
        agg_value_8.write(idx, 0);
        agg_value_9.write(idx, 0);
        agg_value_10.write(idx, 0);
        agg_value_11.write(idx, 0);
        agg_value_12.write(idx, 0);
        agg_value_13.write(idx, 0);
        agg_value_14.write(idx, 0);
        agg_value_15.write(idx, 0);
        agg_value_16.write(idx, 0);
        agg_value_17.write(idx, 0);
        agg_value_18.write(idx, 0);
        agg_value_19.write(idx, 0);
        agg_value_20.write(idx, 0);
        agg_value_21.write(idx, 0);
        agg_value_22.write(idx, 0);
        agg_value_23.write(idx, 0);
        agg_value_24.write(idx, 0);
        agg_value_25.write(idx, 0);
        agg_value_26.write(idx, 0);
        agg_value_27.write(idx, 0);
        agg_value_28.write(idx, 0);
        agg_value_29.write(idx, 0);
        agg_value_30.write(idx, 0);
        agg_value_31.write(idx, 0);
        agg_count.write(idx, 0);
        agg_ids.write(idx, 0);
        agg_ecn.write(idx, 0);
        agg_state.write(idx, state);
        agg_tag.write(idx, tag);
        agg_gen.write(idx, gen);
    }

    /* One contribution into slot idx (active for round/block `tag`, generation `gen`). One
     * action, so bmv2 holds the register locks for the whole read-modify-write. The
     * aggregate this completes is kept (AGG_DONE) when the frame is sequenced, else freed. */
    @hidden action accumulate(bit<32> idx, bit<32> tag, bit<16> gen) {
        bit<16> count;
        agg_count.read(count, idx);
        count = count + ((meta.agg_kind == AGG_KIND_PARTIALS) ? hdr.sgnn.count : 16w1);
        meta.result_count = count;
        meta.complete = (count >= meta.expected) ? 1w1 : 1w0;
        bit<1> clear = (meta.complete == 1 && hdr.sgnn.dst_id[31:31] == 0) ? 1w1 : 1w0;
        agg_count.write(idx, (clear == 1) ? 16w0 : count);

        bit<8> ecn;
        agg_ecn.read(ecn, idx);
        ecn = ecn | (bit<8>)hdr.sgnn.ecn;
        meta.result_ecn = (ecn != 0) ? 1w1 : 1w0;
        agg_ecn.write(idx, (clear == 1) ? 8w0 : ecn);

        bit<32> ids;
        agg_ids.read(ids, idx);
        agg_ids.write(idx, (clear == 1) ? 32w0 : ids + hdr.sgnn.src_id);

        agg_state.write(idx, (meta.complete == 0) ? AGG_ACTIVE
                             : ((clear == 1) ? AGG_FREE : AGG_DONE));
        agg_tag.write(idx, (clear == 1) ? 32w0 : tag);
        agg_gen.write(idx, (clear == 1) ? 16w0 : gen);

        bit<32> acc;
        bit<32> sum;
        meta.saturated = 0;
        ADD_LANE(0)
        ADD_LANE(1)
        ADD_LANE(2)
        ADD_LANE(3)
        ADD_LANE(4)
        ADD_LANE(5)
        ADD_LANE(6)
        ADD_LANE(7)
        ADD_LANE(8)
        ADD_LANE(9)
        ADD_LANE(10)
        ADD_LANE(11)
        ADD_LANE(12)
        ADD_LANE(13)
        ADD_LANE(14)
        ADD_LANE(15)
        ADD_LANE(16)
        ADD_LANE(17)
        ADD_LANE(18)
        ADD_LANE(19)
        ADD_LANE(20)
        ADD_LANE(21)
        ADD_LANE(22)
        ADD_LANE(23)
        ADD_LANE(24)
        ADD_LANE(25)
        ADD_LANE(26)
        ADD_LANE(27)
        ADD_LANE(28)
        ADD_LANE(29)
        ADD_LANE(30)
        ADD_LANE(31)
    }

    /* A pull's answer (see the top of this file): the FetchReq becomes a Result with RESEND
     * to the row's worker, lanes added. One action for the reads of the slot. */
    @hidden action pull_answer(bit<32> idx, bit<32> tag, bool not_here) {
        bit<8> state;
        bit<32> held;
        bit<16> held_gen;
        bit<16> count;
        bit<32> ids;
        agg_state.read(state, idx);
        agg_tag.read(held, idx);
        agg_gen.read(held_gen, idx);
        agg_count.read(count, idx);
        agg_ids.read(ids, idx);
        bool ours = state != AGG_FREE && held == tag;
        bool holds = !not_here && ours && held_gen == meta.generation
                     && (state == AGG_ACTIVE || state == AGG_DONE);
        bool gone = not_here || (ours && (held_gen > meta.generation
                             || (held_gen == meta.generation && state == AGG_BYPASSED)));
        hdr.lanes.setValid();
        bit<32> acc;
        PULL_LANE(0)
        PULL_LANE(1)
        PULL_LANE(2)
        PULL_LANE(3)
        PULL_LANE(4)
        PULL_LANE(5)
        PULL_LANE(6)
        PULL_LANE(7)
        PULL_LANE(8)
        PULL_LANE(9)
        PULL_LANE(10)
        PULL_LANE(11)
        PULL_LANE(12)
        PULL_LANE(13)
        PULL_LANE(14)
        PULL_LANE(15)
        PULL_LANE(16)
        PULL_LANE(17)
        PULL_LANE(18)
        PULL_LANE(19)
        PULL_LANE(20)
        PULL_LANE(21)
        PULL_LANE(22)
        PULL_LANE(23)
        PULL_LANE(24)
        PULL_LANE(25)
        PULL_LANE(26)
        PULL_LANE(27)
        PULL_LANE(28)
        PULL_LANE(29)
        PULL_LANE(30)
        PULL_LANE(31)
        hdr.sgnn.version = SGNN_VERSION;
        hdr.sgnn.pkt_type = TYPE_RESULT;
        hdr.sgnn.ack = 0;
        hdr.sgnn.fetch = 0;
        hdr.sgnn.ecn = 0;
        hdr.sgnn.resend = 1;
        hdr.sgnn.flags_rsvd = 0;
        hdr.sgnn.worker_id = meta.dst_worker;
        hdr.sgnn.src_id = holds ? ids : (gone ? PULL_GONE : 32w0);
        hdr.sgnn.dst_id = meta.out_dst_id;
        hdr.sgnn.count = holds ? count : 16w0;
        hdr.sgnn.pass = 0;
        hdr.sgnn.job = meta.cfg.job;
        hdr.ipv4.total_len = IPV4_HEADER_LEN + SGNN_LANES_LEN;
        meta.to_worker = 1;
        meta.originated = 1;
    }

    /* The packet becomes a Bypass to the destination's worker (sgnn::Repr of the Data
     * with type Bypass, IS_ACK/IS_FETCH clear, dst_id of the action, pass 0; worker_id,
     * ECN and RESEND stay as sent). */
    @hidden action make_bypass() {
        hdr.sgnn.pkt_type = TYPE_BYPASS;
        hdr.sgnn.ack = 0;
        hdr.sgnn.fetch = 0;
        hdr.sgnn.dst_id = meta.out_dst_id;
        hdr.sgnn.pass = 0;
        meta.to_worker = 1;
        meta.originated = 1;
    }

    /* The packet (its lanes already hold the sums) becomes the Result. */
    @hidden action make_result() {
        hdr.sgnn.version = SGNN_VERSION;
        hdr.sgnn.pkt_type = TYPE_RESULT;
        hdr.sgnn.ack = 0;
        hdr.sgnn.fetch = 0;
        hdr.sgnn.ecn = meta.result_ecn;
        hdr.sgnn.resend = 0;
        hdr.sgnn.flags_rsvd = 0;
        hdr.sgnn.worker_id = meta.dst_worker;
        hdr.sgnn.dst_id = meta.out_dst_id;
        hdr.sgnn.count = meta.result_count;
        hdr.sgnn.pass = 0;
        hdr.sgnn.job = meta.cfg.job;
        meta.to_worker = 1;
        meta.originated = 1;
    }

    /* The packet (its lanes already hold the sums) becomes a leaf's partial: a Data frame,
     * unsequenced (dst_id 0), named for the spine's agg_table by src_id (the row's dst_id
     * parameter), counting the contributions it holds, to the spine (worker_table[dst_worker]). */
    @hidden action make_partial() {
        hdr.sgnn.version = SGNN_VERSION;
        hdr.sgnn.pkt_type = TYPE_DATA;
        hdr.sgnn.ack = 0;
        hdr.sgnn.fetch = 0;
        hdr.sgnn.ecn = meta.result_ecn;
        hdr.sgnn.resend = 0;
        hdr.sgnn.flags_rsvd = 0;
        hdr.sgnn.worker_id = meta.dst_worker;
        hdr.sgnn.src_id = meta.out_dst_id;
        hdr.sgnn.dst_id = 0;
        hdr.sgnn.count = meta.result_count;
        hdr.sgnn.pass = 0;
        hdr.sgnn.job = meta.cfg.job;
        meta.to_worker = 1;
        meta.originated = 1;
    }

    apply {
        // Read before this pass rewrites the header.
        bit<1> resend = hdr.sgnn.resend;
        bit<8> pass = hdr.sgnn.pass;
        meta.more = 0;

        // 0: no effect (miss, duplicate, bad src_seen cell), 1: aggregate, 2: deliver,
        // 3: replicate.
        bit<2> run = 0;
        bool hit = true;
        switch (agg_table.apply().action_run) {
            aggregate: { run = 1; }
            aggregate_up: { run = 1; }
            aggregate_partials: { run = 1; }
            deliver:   { run = 2; }
            replicate: { run = 3; }
            default:   { hit = false; }
        }
        // A leaf answers a pull of an aggregate that is not its own (no row here, or the
        // leaf's share of a split row) gone, to the requester: it takes the raw path.
        bool gone_here = meta.pull == 1 && meta.cfg.role == ROLE_LEAF
                         && (!hit || (run == 1 && meta.agg_kind != AGG_KIND_PLAIN));
        if (!hit && !gone_here) {
            events.count(EV_DROP_NO_ENTRY);
        }

        // A pull reads the row's aggregator and leaves as the answer: no duplicate check, no
        // effect, no next pass (Pipeline::pull).
        if (meta.pull == 1) {
            if (gone_here) {
                meta.dst_worker = hdr.sgnn.worker_id;
                meta.out_dst_id = hdr.sgnn.dst_id;
                pull_answer(0, 0, true);
                events.count(EV_PULLED);
            } else if (run == 2 || run == 3 || meta.agg_kind != AGG_KIND_PLAIN) {
                // A fabric row (a spine's sum of partials) is not pulled.
                events.count(EV_DROP_UNEXPECTED);
            } else if (run == 1) {
                bit<33> pslot = (bit<33>)meta.agg_base + (bit<33>)hdr.sgnn.segment;
                if (pslot >= (bit<33>)AGGREGATORS) {
                    events.count(EV_DROP_BAD_INDEX);
                } else {
                    pull_answer(pslot[31:0], hdr.sgnn.round ++ hdr.sgnn.block_id, false);
                    events.count(EV_PULLED);
                }
            }
            run = 0;
        }

        // Duplicate suppression, before the action's effects (Pipeline::data).
        if (run != 0 && sm.instance_type == INSTANCE_NORMAL && resend == 0 && pass == 0) {
            bit<33> cell = (bit<33>)meta.seen_base + (bit<33>)hdr.sgnn.segment;
            if (cell >= (bit<33>)SEEN_CELLS) {
                events.count(EV_DROP_BAD_INDEX);
                run = 0;
            } else {
                take_seen(cell[31:0], SEEN_VALID ++ hdr.sgnn.round ++ hdr.sgnn.block_id);
                if (meta.duplicate == 1) {
                    events.count(EV_DROP_DUPLICATE);
                    run = 0;
                }
            }
        }

        if (run == 1) {
            bit<33> slot = (bit<33>)meta.agg_base + (bit<33>)hdr.sgnn.segment;
            if (slot >= (bit<33>)AGGREGATORS) {
                events.count(EV_DROP_BAD_INDEX);
            } else {
                bit<32> idx = slot[31:0];
                bit<32> tag = hdr.sgnn.round ++ hdr.sgnn.block_id;
                bit<16> gen = meta.generation;
                bit<8> state;
                bit<32> held;
                bit<16> held_gen;
                agg_state.read(state, idx);
                agg_tag.read(held, idx);
                agg_gen.read(held_gen, idx);
                if (state != AGG_FREE && held == tag && held_gen > gen) {
                    // Late: this round and block moved the aggregator on to a newer
                    // generation (the row was recycled). To the host, the slot untouched.
                    events.count(EV_BYPASSED_LATE);
                    make_bypass();
                } else {
                    // State of another round, block or generation is a leftover of loss:
                    // reclaim. A kept complete aggregate is taken over as if free.
                    if (state != AGG_FREE && (held != tag || held_gen != gen)) {
                        if (state != AGG_DONE) {
                            events.count(EV_RECLAIMED);
                        }
                        release(idx, AGG_FREE, 0, 0);
                        state = AGG_FREE;
                    }
                    if (resend == 1 || state == AGG_BYPASSED) {
                        // Release (the receiver refetches partial sums) and go to the host.
                        release(idx, AGG_BYPASSED, tag, gen);
                        events.count(EV_BYPASSED);
                        make_bypass();
                    } else if (state == AGG_DONE) {
                        // Complete already: another first copy is no contribution it lacks.
                        events.count(EV_DROP_DUPLICATE);
                    } else {
                        accumulate(idx, tag, gen);
                        if (meta.saturated == 1) {
                            events.count(EV_SATURATED);
                        }
                        events.count(EV_AGGREGATED);
                        if (meta.complete == 1) {
                            // On a leaf, a partial sent up counts too: its share is complete.
                            events.count(EV_RESULTS);
                            if (meta.agg_kind == AGG_KIND_UP) {
                                make_partial();
                            } else {
                                make_result();
                            }
                        }
                    }
                }
            }
        } else if (run == 2) {
            events.count(EV_DELIVERED);
            make_bypass();
        } else if (run == 3) {
            // One Bypass per replica of the group (Pipeline::replicate), addressed in egress.
            meta.out_dst_id = ALL_NEIGHBOURS;
            make_bypass();
            meta.to_worker = 0;
            meta.replica_mc = 1;
            sm.mcast_grp = meta.mcast_group;
        }

        // Next pass, with the original values (see the top of this file). Not after a miss
        // or a suppressed duplicate; after an aggregator index beyond AGGREGATORS, yes (the
        // model's loop goes on with `more`).
        if (run != 0 && meta.more == 1 && resend == 0 && pass != 255) {
            meta.next_pass = pass + 1;
            events.count(EV_RECIRCULATED);
            clone_preserving_field_list(CloneType.I2E, RECIRC_CLONE_SESSION, FL_RECIRC);
        }
    }
}

#undef ADD_LANE
#undef PULL_LANE

#endif
