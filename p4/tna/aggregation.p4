/* aggregation.p4: agg_table and the aggregators, with the behaviour of
 * ../v1model/aggregation.p4 in the shape of a Tofino pipeline (docs/tofino.md, "Design").
 *
 * One pass, stage by stage (the compiler's placement is in docs/tofino.md):
 *   AggLookup, beside the frame checks (no side effects):
 *   agg_table[(block, src, pass)]           -> aggregate / deliver / replicate (action data)
 *   idx = agg_base + segment, cell = seen_base + segment (tag = round ++ block earlier)
 *   Aggregation, once the checks accepted the pass:
 *   src_seen[cell]   (first-pass host frames)  duplicate?      } one stage: agg_tag does
 *   agg_tag[idx]     (aggregate)               tag fresh?      } not wait for src_seen
 *   agg_gen[idx]     (accepted aggregate)      -> GEN_SAME / GEN_FRESH / GEN_LATE
 *   agg_count[idx]   -> OP_ADD / OP_COMPLETE / OP_BYPASS / OP_TAKE (not for GEN_LATE)
 *   agg_value_0..31[idx] (4 per stage)      -> add, emit the sum and clear, take, clear
 * agg_ecn and agg_state are updated in egress (the ingress stages are full), from the
 * bridge header.
 *
 * Differences from v1model, all forced by one register access per pass:
 * - agg_tag is written by every aggregate pass before the duplicate check is known: a
 *   duplicate writes the tag its original already wrote, which changes nothing.
 * - agg_count also holds the bypassed state (COUNT_BYPASSED); agg_state is written in
 *   egress for the control plane to read, and read by nothing.
 * - Generations (docs/switch-interface.md): agg_gen is read after agg_tag, so a pass knows
 *   whether the aggregator holds its round and block. A pass whose generation is older than
 *   the one held for its round and block is late (GEN_LATE): it leaves as the Bypass
 *   (bypassed_late) and touches neither agg_count nor the lanes. As agg_tag, agg_gen keeps
 *   its value when an aggregate completes (v1model frees it to 0), so a contribution of an
 *   older generation arriving after the newer one completed is late here too, where v1model
 *   would start the freed aggregator again for it; either way it never lands in a newer
 *   generation's sum.
 * - A pass that completes an aggregate while its source feeds more aggregators (more = 1)
 *   cannot both put the sums in the packet and keep the original values for the next
 *   pass. It keeps the sums in the aggregator, goes on as the next pass, and its mirror
 *   copy (NEXT_PASS_SESSION, to RECIRC_PORT) comes back as a PASS_HARVEST pass that reads
 *   the sums out (OP_TAKE), clears the aggregator and leaves as the Result: one extra pass
 *   per such aggregate.
 * - A pass that leaves to a host (Bypass, replicas) while its source has more passes
 *   sends its mirror copy round as the next pass (v1model: an I2E clone).
 * - Lanes saturate as v1model's (|+| on int<32>); whether a lane saturated is not known
 *   after the stateful ALU, so `saturated` is not counted. */
#ifndef SGNN_TNA_AGGREGATION_P4
#define SGNN_TNA_AGGREGATION_P4

/* Lane i: its three register actions and the table that picks one from the aggregator's
 * outcome (agg_count's op, `more`, and whether the aggregator was fresh). A stateful ALU's
 * output comes from one source, so the completing pass of a fresh aggregator (a lone
 * contribution: its lanes already hold the sum) only clears the cell, and the emit action
 * always outputs the ALU's sum. */
#define LANE(i) \
    RegisterAction<int<32>, bit<32>, int<32>>(agg_value_##i) lane_acc_##i = { \
        void apply(inout int<32> v) { \
            if (meta.fresh == 1) { \
                v = (int<32>)hdr.lanes.v##i; \
            } else { \
                v = v |+| (int<32>)hdr.lanes.v##i; \
            } \
        } \
    }; \
    RegisterAction<int<32>, bit<32>, int<32>>(agg_value_##i) lane_emit_##i = { \
        void apply(inout int<32> v, out int<32> rv) { \
            rv = v |+| (int<32>)hdr.lanes.v##i; \
            v = 0; \
        } \
    }; \
    RegisterAction<int<32>, bit<32>, int<32>>(agg_value_##i) lane_take_##i = { \
        void apply(inout int<32> v, out int<32> rv) { \
            rv = v; \
            v = 0; \
        } \
    }; \
    @hidden action acc_##i() { lane_acc_##i.execute(meta.agg_idx); } \
    @hidden action emit_##i() { hdr.lanes.v##i = (bit<32>)lane_emit_##i.execute(meta.agg_idx); } \
    @hidden action take_##i() { hdr.lanes.v##i = (bit<32>)lane_take_##i.execute(meta.agg_idx); } \
    @hidden action clear_##i() { lane_take_##i.execute(meta.agg_idx); } \
    @hidden table lane_##i { \
        key = { meta.agg_op: exact; meta.more: exact; meta.fresh: ternary; } \
        actions = { acc_##i; emit_##i; take_##i; clear_##i; @defaultonly NoAction; } \
        const entries = { \
            (OP_ADD, 0, _): acc_##i(); \
            (OP_ADD, 1, _): acc_##i(); \
            (OP_COMPLETE, 0, 1): clear_##i(); \
            (OP_COMPLETE, 0, 0): emit_##i(); \
            (OP_COMPLETE, 1, _): acc_##i(); \
            (OP_BYPASS, 0, _): clear_##i(); \
            (OP_BYPASS, 1, _): clear_##i(); \
            (OP_TAKE, 0, _): take_##i(); \
            (OP_TAKE, 1, _): take_##i(); \
        } \
        const default_action = NoAction(); \
        size = 9; \
    }

/* The frame's tag (round ++ block), its duplicate mark (~tag) and copies of the header
 * fields later stages compute with, from the header alone:
 * applied first thing in ingress so they are ready before the aggregation chain. Two
 * actions, since a Tofino ALU inverts an aligned container, not a concatenation. */
control AggregationTags(in headers_t hdr, inout ig_metadata_t meta) {
    @hidden action make_tag() {
        meta.tag = hdr.sgnn.round ++ hdr.sgnn.block_id;
        // Copies for arithmetic: an ALU operand must sit alone in its container, which a
        // header field packed with its neighbours cannot.
        meta.hdr_worker = hdr.sgnn.worker_id;
        meta.hdr_round = hdr.sgnn.round;
        meta.hdr_block = hdr.sgnn.block_id;
    }
    @hidden action make_mark() { meta.seen_mark = ~meta.tag; }
    apply {
        make_tag();
        make_mark();
    }
}

/* agg_table and the cells of this pass, looked up first thing for every Data frame: the
 * lookup has no side effect, so it runs beside the frame checks, whose verdict gates only
 * the stateful ALUs that follow (Aggregation). */
control AggLookup(inout headers_t hdr, inout ig_metadata_t meta) {
    /* The action data; the effects follow in apply. */
    @name(".aggregate") @id(1)
    action aggregate(bit<32> agg_base, bit<32> dst_id, bit<16> dst_worker,
                     bit<16> expected, bit<1> more, bit<32> seen_base,
                     bit<16> generation) {
        meta.agg_base = agg_base;
        meta.segment = (bit<32>)hdr.sgnn.segment;
        meta.out_dst_id = dst_id;
        meta.dst_worker = dst_worker;
        meta.expected = expected;
        meta.more = more;
        meta.seen_base = seen_base;
        meta.generation = generation;
    }

    @name(".deliver") @id(2)
    action deliver(bit<32> dst_id, bit<16> dst_worker, bit<1> more, bit<32> seen_base) {
        meta.out_dst_id = dst_id;
        meta.dst_worker = dst_worker;
        meta.more = more;
        meta.segment = (bit<32>)hdr.sgnn.segment;
        meta.seen_base = seen_base;
    }

    @name(".replicate") @id(8)
    action replicate(bit<16> group, bit<1> more, bit<32> seen_base) {
        meta.mcast_group = group;
        meta.segment = (bit<32>)hdr.sgnn.segment;
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
        actions = { aggregate; deliver; replicate; @defaultonly NoAction; }
        const default_action = NoAction();
        size = AGG_TABLE_SIZE;
    }

    /* The cells of this pass, in an action of their own: a register index must be a field
     * the stage before computed, not an expression the compiler would inline. */
    @hidden action locate() {
        meta.agg_idx = meta.agg_base + meta.segment;
        meta.seen_cell = meta.seen_base + meta.segment;
        meta.expected_m1 = meta.expected - 1;
        // Set here, not (only) in the parser: the compiler may overlay a parser-initialised
        // bit with extracted header bytes. A harvest pass keeps these (it reads no agg_tag
        // and no agg_gen).
        meta.fresh = 0;
        meta.tag_fresh = 0;
        meta.gen_op = GEN_SAME;
    }
    apply {
        // `more` is read only after a hit, whose action sets it; the compiler cannot see that
        // and warns that it may be read uninitialised. Clearing it here would put agg_table
        // a stage later (a write before the table's own write).
        meta.run_kind = 0;
        switch (agg_table.apply().action_run) {
            aggregate: { meta.run_kind = 1; }
            deliver:   { meta.run_kind = 2; }
            replicate: { meta.run_kind = 3; }
        }
        locate();
    }
}

control Aggregation(inout headers_t hdr,
                    inout ig_metadata_t meta,
                    inout ingress_intrinsic_metadata_for_tm_t ig_tm_md,
                    inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    @name(".agg_value_0") @id(1) Register<int<32>, bit<32>>(AGGREGATORS) agg_value_0;
    @name(".agg_value_1") @id(2) Register<int<32>, bit<32>>(AGGREGATORS) agg_value_1;
    @name(".agg_value_2") @id(3) Register<int<32>, bit<32>>(AGGREGATORS) agg_value_2;
    @name(".agg_value_3") @id(4) Register<int<32>, bit<32>>(AGGREGATORS) agg_value_3;
    @name(".agg_value_4") @id(5) Register<int<32>, bit<32>>(AGGREGATORS) agg_value_4;
    @name(".agg_value_5") @id(6) Register<int<32>, bit<32>>(AGGREGATORS) agg_value_5;
    @name(".agg_value_6") @id(7) Register<int<32>, bit<32>>(AGGREGATORS) agg_value_6;
    @name(".agg_value_7") @id(8) Register<int<32>, bit<32>>(AGGREGATORS) agg_value_7;
    @name(".agg_value_8") @id(9) Register<int<32>, bit<32>>(AGGREGATORS) agg_value_8;
    @name(".agg_value_9") @id(10) Register<int<32>, bit<32>>(AGGREGATORS) agg_value_9;
    @name(".agg_value_10") @id(11) Register<int<32>, bit<32>>(AGGREGATORS) agg_value_10;
    @name(".agg_value_11") @id(12) Register<int<32>, bit<32>>(AGGREGATORS) agg_value_11;
    @name(".agg_value_12") @id(13) Register<int<32>, bit<32>>(AGGREGATORS) agg_value_12;
    @name(".agg_value_13") @id(14) Register<int<32>, bit<32>>(AGGREGATORS) agg_value_13;
    @name(".agg_value_14") @id(15) Register<int<32>, bit<32>>(AGGREGATORS) agg_value_14;
    @name(".agg_value_15") @id(16) Register<int<32>, bit<32>>(AGGREGATORS) agg_value_15;
    @name(".agg_value_16") @id(17) Register<int<32>, bit<32>>(AGGREGATORS) agg_value_16;
    @name(".agg_value_17") @id(18) Register<int<32>, bit<32>>(AGGREGATORS) agg_value_17;
    @name(".agg_value_18") @id(19) Register<int<32>, bit<32>>(AGGREGATORS) agg_value_18;
    @name(".agg_value_19") @id(20) Register<int<32>, bit<32>>(AGGREGATORS) agg_value_19;
    @name(".agg_value_20") @id(21) Register<int<32>, bit<32>>(AGGREGATORS) agg_value_20;
    @name(".agg_value_21") @id(22) Register<int<32>, bit<32>>(AGGREGATORS) agg_value_21;
    @name(".agg_value_22") @id(23) Register<int<32>, bit<32>>(AGGREGATORS) agg_value_22;
    @name(".agg_value_23") @id(24) Register<int<32>, bit<32>>(AGGREGATORS) agg_value_23;
    @name(".agg_value_24") @id(25) Register<int<32>, bit<32>>(AGGREGATORS) agg_value_24;
    @name(".agg_value_25") @id(26) Register<int<32>, bit<32>>(AGGREGATORS) agg_value_25;
    @name(".agg_value_26") @id(27) Register<int<32>, bit<32>>(AGGREGATORS) agg_value_26;
    @name(".agg_value_27") @id(28) Register<int<32>, bit<32>>(AGGREGATORS) agg_value_27;
    @name(".agg_value_28") @id(29) Register<int<32>, bit<32>>(AGGREGATORS) agg_value_28;
    @name(".agg_value_29") @id(30) Register<int<32>, bit<32>>(AGGREGATORS) agg_value_29;
    @name(".agg_value_30") @id(31) Register<int<32>, bit<32>>(AGGREGATORS) agg_value_30;
    @name(".agg_value_31") @id(32) Register<int<32>, bit<32>>(AGGREGATORS) agg_value_31;
    @name(".agg_count") @id(33) Register<bit<16>, bit<32>>(AGGREGATORS) agg_count;
    @name(".agg_tag")   @id(35) Register<bit<32>, bit<32>>(AGGREGATORS) agg_tag;
    @name(".src_seen")  @id(49) Register<bit<32>, bit<32>>(SEEN_CELLS)  src_seen;
    @name(".agg_gen")   @id(50) Register<bit<16>, bit<32>>(AGGREGATORS) agg_gen;
    /* Loss recovery (docs/host.md, "Loss recovery", "On a Tofino"): declared for the
     * contract; the v1model program and the software switch implement it. agg_ids is the
     * contributor digest (one SALU beside agg_count: v = v + src_id, or src_id when fresh);
     * seq_next and seq_gap are the per-worker sequence check (two SALUs in the stage of
     * src_seen, keyed by worker). */
    @name(".agg_ids")   @id(51) Register<bit<32>, bit<32>>(AGGREGATORS) agg_ids;
    @name(".seq_next")  @id(52) Register<bit<32>, bit<32>>(MAX_WORKERS) seq_next;
    @name(".seq_gap")   @id(53) Register<bit<32>, bit<32>>(MAX_WORKERS) seq_gap;

    /* src_seen: a first-pass copy is a duplicate when its cell holds its block's mark. */
    RegisterAction<bit<32>, bit<32>, bit<1>>(src_seen) take_seen = {
        void apply(inout bit<32> v, out bit<1> dup) {
            if (v == meta.seen_mark) {
                dup = 1;
            } else {
                dup = 0;
            }
            v = meta.seen_mark;
        }
    };

    /* agg_tag: the aggregator's tag is fresh when it last served another round or block
     * (the leftover of a loss, or an aggregator reused by a later block). */
    RegisterAction<bit<32>, bit<32>, bit<1>>(agg_tag) take_tag = {
        void apply(inout bit<32> v, out bit<1> fresh) {
            if (v != meta.tag) {
                fresh = 1;
            } else {
                fresh = 0;
            }
            v = meta.tag;
        }
    };

    @hidden action check_seen() { meta.duplicate = take_seen.execute(meta.seen_cell); }
    @hidden action check_tag()  { meta.tag_fresh = take_tag.execute(meta.agg_idx); }

    /* agg_gen, once the tag's answer is known: another round or block takes the
     * aggregator for this generation; in the same round and block, an older generation
     * than the one held is late (the aggregator is left alone), a newer one takes it. */
    RegisterAction<bit<16>, bit<32>, bit<2>>(agg_gen) gen_take = {
        void apply(inout bit<16> v, out bit<2> op) {
            v = meta.generation;
            op = GEN_FRESH;
        }
    };
    RegisterAction<bit<16>, bit<32>, bit<2>>(agg_gen) gen_check = {
        void apply(inout bit<16> v, out bit<2> op) {
            if (v > meta.generation) {
                op = GEN_LATE;
            } else if (v == meta.generation) {
                op = GEN_SAME;
            } else {
                v = meta.generation;
                op = GEN_FRESH;
            }
        }
    };
    @hidden action gen_fresh() { meta.gen_op = gen_take.execute(meta.agg_idx); }
    @hidden action gen_same_tag() { meta.gen_op = gen_check.execute(meta.agg_idx); }
    @hidden table gen_table {
        key = { meta.tag_fresh: exact; }
        actions = { gen_fresh; gen_same_tag; @defaultonly NoAction; }
        // Entries, not a default action (which cannot address a register through the hash
        // distribution unit).
        const entries = {
            1: gen_fresh();
            0: gen_same_tag();
        }
        const default_action = NoAction();
        size = 2;
    }

    /* agg_count: the count, or COUNT_BYPASSED. */
    RegisterAction<bit<16>, bit<32>, bit<2>>(agg_count) count_add = {
        void apply(inout bit<16> v, out bit<2> op) {
            if (v == COUNT_BYPASSED) {
                op = OP_BYPASS;
            } else if (v >= meta.expected_m1) {
                v = 0;
                op = OP_COMPLETE;
            } else {
                v = v + 1;
                op = OP_ADD;
            }
        }
    };
    RegisterAction<bit<16>, bit<32>, bit<2>>(agg_count) count_fresh = {
        void apply(inout bit<16> v, out bit<2> op) {
            if (meta.done_now == 1) {
                v = 0;
                op = OP_COMPLETE;
            } else {
                v = 1;
                op = OP_ADD;
            }
        }
    };
    RegisterAction<bit<16>, bit<32>, bit<2>>(agg_count) count_resend = {
        void apply(inout bit<16> v, out bit<2> op) {
            v = COUNT_BYPASSED;
            op = OP_BYPASS;
        }
    };
    RegisterAction<bit<16>, bit<32>, bit<2>>(agg_count) count_harvest = {
        void apply(inout bit<16> v, out bit<2> op) {
            if (v == COUNT_BYPASSED) {
                op = OP_BYPASS;
            } else {
                op = OP_TAKE;
            }
        }
    };
    @hidden action op_add()     { meta.agg_op = count_add.execute(meta.agg_idx); }
    @hidden action op_fresh() {
        meta.agg_op = count_fresh.execute(meta.agg_idx);
        meta.fresh = 1;
    }
    @hidden action op_resend()  { meta.agg_op = count_resend.execute(meta.agg_idx); }
    @hidden action op_harvest() { meta.agg_op = count_harvest.execute(meta.agg_idx); }

    @hidden table count_table {
        key = {
            meta.pass_kind:  ternary;
            hdr.sgnn.resend: ternary;
            meta.gen_op:     ternary;
        }
        actions = { op_add; op_fresh; op_resend; op_harvest; @defaultonly NoAction; }
        // The catch-all is an entry, not the default action: a default action cannot
        // address a register through the hash distribution unit.
        const entries = {
            (PASS_HARVEST, _, _): op_harvest();
            (_, 1, _): op_resend();
            (_, _, GEN_FRESH): op_fresh();
            (_, _, _): op_add();
        }
        const default_action = NoAction();
        size = 4;
    }

    LANE(0)
    LANE(1)
    LANE(2)
    LANE(3)
    LANE(4)
    LANE(5)
    LANE(6)
    LANE(7)
    LANE(8)
    LANE(9)
    LANE(10)
    LANE(11)
    LANE(12)
    LANE(13)
    LANE(14)
    LANE(15)
    LANE(16)
    LANE(17)
    LANE(18)
    LANE(19)
    LANE(20)
    LANE(21)
    LANE(22)
    LANE(23)
    LANE(24)
    LANE(25)
    LANE(26)
    LANE(27)
    LANE(28)
    LANE(29)
    LANE(30)
    LANE(31)

    /* What egress does to agg_ecn and agg_state: the lanes' operation, for the bridge. */
    @hidden action set_lane_op(bit<3> op) {
        hdr.bridge.lane_op = op;
    }
    @hidden table lane_op_table {
        key = { meta.agg_op: exact; meta.more: exact; }
        actions = { set_lane_op; }
        const entries = {
            (OP_ADD, 0): set_lane_op(LANE_ACC);
            (OP_ADD, 1): set_lane_op(LANE_ACC);
            (OP_COMPLETE, 0): set_lane_op(LANE_EMIT);
            (OP_COMPLETE, 1): set_lane_op(LANE_ACC);
            (OP_BYPASS, 0): set_lane_op(LANE_CLEAR);
            (OP_BYPASS, 1): set_lane_op(LANE_CLEAR);
            (OP_TAKE, 0): set_lane_op(LANE_TAKE);
            (OP_TAKE, 1): set_lane_op(LANE_TAKE);
        }
        const default_action = set_lane_op(LANE_NONE);
        size = 8;
    }

    /* The packet becomes a Bypass to the destination's worker. */
    @hidden action make_bypass() {
        hdr.sgnn.pkt_type = TYPE_BYPASS;
        hdr.sgnn.ack = 0;
        hdr.sgnn.fetch = 0;
        hdr.sgnn.dst_id = meta.out_dst_id;
        hdr.sgnn.pass = 0;
        hdr.bridge.originated = 1;
    }

    /* The packet (its lanes hold the sums) becomes the Result; its ECN flag is set in
     * egress from agg_ecn. */
    @hidden action make_result() {
        hdr.sgnn.version = SGNN_VERSION;
        hdr.sgnn.pkt_type = TYPE_RESULT;
        hdr.sgnn.ack = 0;
        hdr.sgnn.fetch = 0;
        hdr.sgnn.ecn = 0;
        hdr.sgnn.resend = 0;
        hdr.sgnn.flags_rsvd = 0;
        hdr.sgnn.worker_id = meta.dst_worker;
        hdr.sgnn.dst_id = meta.out_dst_id;
        hdr.sgnn.count = meta.expected;
        hdr.sgnn.pass = 0;
        hdr.sgnn.reserved = 0;
        hdr.bridge.originated = 1;
        hdr.bridge.result = 1;
    }

    /* The mirror copy of this pass comes back as pass `pass` of kind `kind`. */
    @hidden action mirror_as(bit<4> kind, bit<8> pass) {
        meta.mirror_next = 1;
        meta.mirror_session = NEXT_PASS_SESSION;
        meta.mirror_hdr_kind = EG_MIRROR;
        meta.mirror_kind = kind;
        meta.mirror_dst_id = hdr.sgnn.dst_id;
        meta.mirror_pass = pass;
        meta.mirror_ecn = hdr.sgnn.ecn;
        meta.mirror_resend = hdr.sgnn.resend;
    }

    apply {
        bit<8> pass = hdr.sgnn.pass;
        // Tofino computes no boolean into a variable: conditions are gateways, so flags are
        // set by if-statements.
        bool harvest = false;
        if (meta.pass_kind == PASS_HARVEST) {
            harvest = true;
        }

        bit<2> run = meta.run_kind;
        if (run == 0) {
            EVENT(EV_DROP_NO_ENTRY);
        }
        // `more` is agg_table's action data: known only from here on.
        bool next_pass = false;
        if (meta.more == 1 && hdr.sgnn.resend == 0 && pass != 255) {
            next_pass = true;
        }

        meta.done_now = 0;
        if (meta.expected <= 1) {
            meta.done_now = 1;
        }

        // In the same stage as src_seen (see the top of this file): on agg_table's verdict,
        // not on the duplicate check's, which the same stage cannot know.
        if (meta.run_kind == 1 && !harvest && meta.agg_idx < AGGREGATORS) {
            check_tag();
        }
        // Duplicate suppression of first-pass host frames (as v1model).
        if (run != 0 && meta.from_host && hdr.sgnn.resend == 0 && pass == 0) {
            if (meta.seen_cell >= SEEN_CELLS) {
                EVENT(EV_DROP_BAD_INDEX);
                run = 0;
            } else {
                check_seen();
                if (meta.duplicate == 1) {
                    EVENT(EV_DROP_DUPLICATE);
                    run = 0;
                }
            }
        }

        meta.agg_op = OP_ADD;
        bool late = false;
        if (run == 1) {
            if (meta.agg_idx >= AGGREGATORS) {
                EVENT(EV_DROP_BAD_INDEX);
                run = 0;
            } else {
                // A harvest pass reads the sums its own pass left: no generation to check.
                if (!harvest) {
                    gen_table.apply();
                }
                if (meta.gen_op == GEN_LATE) {
                    late = true;
                } else {
                    count_table.apply();
                    lane_0.apply();
                    lane_1.apply();
                    lane_2.apply();
                    lane_3.apply();
                    lane_4.apply();
                    lane_5.apply();
                    lane_6.apply();
                    lane_7.apply();
                    lane_8.apply();
                    lane_9.apply();
                    lane_10.apply();
                    lane_11.apply();
                    lane_12.apply();
                    lane_13.apply();
                    lane_14.apply();
                    lane_15.apply();
                    lane_16.apply();
                    lane_17.apply();
                    lane_18.apply();
                    lane_19.apply();
                    lane_20.apply();
                    lane_21.apply();
                    lane_22.apply();
                    lane_23.apply();
                    lane_24.apply();
                    lane_25.apply();
                    lane_26.apply();
                    lane_27.apply();
                    lane_28.apply();
                    lane_29.apply();
                    lane_30.apply();
                    lane_31.apply();
                    lane_op_table.apply();
                    hdr.bridge.agg_idx = meta.agg_idx;
                    hdr.bridge.fresh = meta.fresh;
                }
            }
        }

        if (run == 1) {
            if (late) {
                // A newer generation of this round and block holds the aggregator: to the
                // host, the aggregator untouched (lane_op stays LANE_NONE for egress).
                EVENT(EV_BYPASSED_LATE);
                if (next_pass) {
                    mirror_as(PASS_NEXT, pass + 1);   // before the Bypass rewrite
                }
                make_bypass();
                meta.to_worker = 1;
            } else if (meta.agg_op == OP_BYPASS) {
                if (harvest) {
                    // A RESEND released the aggregator before the harvest: nothing to send.
                    EVENT(EV_BYPASSED);
                } else {
                    EVENT(EV_BYPASSED);
                    if (next_pass) {
                        mirror_as(PASS_NEXT, pass + 1);   // before the Bypass rewrite
                    }
                    make_bypass();
                    meta.to_worker = 1;
                }
            } else if (meta.agg_op == OP_TAKE) {
                EVENT(EV_RESULTS);
                make_result();
                meta.to_worker = 1;
            } else if (meta.agg_op == OP_COMPLETE && meta.more == 0) {
                EVENT(EV_RESULTS);
                make_result();
                meta.to_worker = 1;
            } else {
                EVENT(EV_AGGREGATED);
                if (meta.agg_op == OP_COMPLETE) {
                    // The sums stay in the aggregator; the copy harvests them.
                    mirror_as(PASS_HARVEST, pass);
                }
                if (next_pass) {
                    hdr.sgnn.pass = pass + 1;
                    hdr.sgnn.flags_rsvd = PASS_NEXT;
                    meta.to_recirc = 1;
                }
            }
        } else if (run == 2) {
            EVENT(EV_DELIVERED);
            if (next_pass) {
                mirror_as(PASS_NEXT, pass + 1);
            }
            make_bypass();
            meta.to_worker = 1;
        } else if (run == 3) {
            // One Bypass per worker of the group, addressed in egress (egress_rid).
            if (next_pass) {
                mirror_as(PASS_NEXT, pass + 1);
            }
            meta.out_dst_id = ALL_NEIGHBOURS;
            make_bypass();
            hdr.bridge.replica_mc = 1;
            ig_tm_md.mcast_grp_a = meta.mcast_group;
            ig_dprsr_md.drop_ctl = 0;
        }
        if (meta.mirror_next == 1) {
            ig_dprsr_md.mirror_type = MIRROR_NEXT_PASS;
        }
    }
}

/* agg_ecn (the sticky ECN bit of an aggregate) and agg_state (for the control plane), in
 * egress from the bridge header: the same operation as the lanes. */
control AggregationEgress(inout eg_headers_t hdr, inout eg_metadata_t meta) {
    @name(".agg_ecn")   @id(36) Register<bit<8>, bit<32>>(AGGREGATORS) agg_ecn;
    @name(".agg_state") @id(34) Register<bit<8>, bit<32>>(AGGREGATORS) agg_state;

    RegisterAction<bit<8>, bit<32>, bit<8>>(agg_ecn) ecn_acc = {
        void apply(inout bit<8> v) {
            if (hdr.bridge.fresh == 1) {
                v = (bit<8>)hdr.sgnn.ecn;
            } else {
                v = v | (bit<8>)hdr.sgnn.ecn;
            }
        }
    };
    /* One output source per stateful ALU (as the lanes): a fresh aggregator's completing
     * pass takes its own ECN bit and only clears the cell. */
    RegisterAction<bit<8>, bit<32>, bit<8>>(agg_ecn) ecn_emit = {
        void apply(inout bit<8> v, out bit<8> rv) {
            rv = v | (bit<8>)hdr.sgnn.ecn;
            v = 0;
        }
    };
    RegisterAction<bit<8>, bit<32>, bit<8>>(agg_ecn) ecn_take = {
        void apply(inout bit<8> v, out bit<8> rv) {
            rv = v;
            v = 0;
        }
    };
    @hidden action e_acc()   { ecn_acc.execute(hdr.bridge.agg_idx); }
    @hidden action e_emit()  { meta.result_ecn = ecn_emit.execute(hdr.bridge.agg_idx); }
    @hidden action e_take()  { meta.result_ecn = ecn_take.execute(hdr.bridge.agg_idx); }
    @hidden action e_clear() { ecn_take.execute(hdr.bridge.agg_idx); }
    @hidden action e_emit_fresh() {
        ecn_take.execute(hdr.bridge.agg_idx);
        meta.result_ecn = (bit<8>)hdr.sgnn.ecn;
    }
    @hidden table ecn_table {
        key = { hdr.bridge.lane_op: exact; hdr.bridge.fresh: ternary; }
        actions = { e_acc; e_emit; e_emit_fresh; e_take; e_clear; @defaultonly NoAction; }
        const entries = {
            (LANE_ACC, _): e_acc();
            (LANE_EMIT, 1): e_emit_fresh();
            (LANE_EMIT, 0): e_emit();
            (LANE_TAKE, _): e_take();
            (LANE_CLEAR, _): e_clear();
        }
        const default_action = NoAction();
        size = 5;
    }

    RegisterAction<bit<8>, bit<32>, bit<8>>(agg_state) state_active = {
        void apply(inout bit<8> v) { v = AGG_ACTIVE; }
    };
    RegisterAction<bit<8>, bit<32>, bit<8>>(agg_state) state_free = {
        void apply(inout bit<8> v) { v = AGG_FREE; }
    };
    RegisterAction<bit<8>, bit<32>, bit<8>>(agg_state) state_bypassed = {
        void apply(inout bit<8> v) { v = AGG_BYPASSED; }
    };
    @hidden action s_active()   { state_active.execute(hdr.bridge.agg_idx); }
    @hidden action s_free()     { state_free.execute(hdr.bridge.agg_idx); }
    @hidden action s_bypassed() { state_bypassed.execute(hdr.bridge.agg_idx); }
    @hidden table state_table {
        key = { hdr.bridge.lane_op: exact; }
        actions = { s_active; s_free; s_bypassed; @defaultonly NoAction; }
        const entries = {
            LANE_ACC: s_active();
            LANE_EMIT: s_free();
            LANE_TAKE: s_free();
            LANE_CLEAR: s_bypassed();
        }
        const default_action = NoAction();
        size = 4;
    }

    apply {
        ecn_table.apply();
        state_table.apply();
        if (hdr.bridge.result == 1) {
            hdr.sgnn.ecn = meta.result_ecn[0:0];
        }
    }
}

#undef LANE

#endif
