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
 *   agg_ids[idx]     (beside agg_count)      the contributor digest (loss recovery)
 *   agg_pair_0..15[idx] (4 per stage)       -> set, add, add and emit the odd lanes, take
 *                                              the even lanes and clear (PAIR, below)
 *   outcome, beside the pairs               -> Result, harvest pass, Bypass, next pass
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
 * - Lanes are pairs, and a stateful ALU outputs one lane: a completed aggregate's even
 *   lanes leave in a harvest pass, and a completing pass with a next pass leaves its lanes
 *   to its mirror copy (PASS_FINISH) to add; see PAIR below.
 * - A pass that leaves to a host (Bypass, replicas) while its source has more passes
 *   sends its mirror copy round as the next pass (v1model: an I2E clone).
 * - Lanes saturate as v1model's (|+| on int<32>); whether a lane saturated is not known
 *   after the stateful ALU, so `saturated` is not counted. */
#ifndef SGNN_TNA_AGGREGATION_P4
#define SGNN_TNA_AGGREGATION_P4

/* Lane pair k: lanes a = 2k (`first`) and b = 2k + 1 (`second`) of one aggregator in one
 * register, so one stateful ALU adds two lanes (as p4app-switchML's Processor does) and the
 * 32 lanes take 16 ALUs, four stages. A Tofino 1 stateful ALU takes two PHV inputs (the two
 * lanes) and outputs one 32-bit value per pass, and a register has at most four register
 * actions, so (docs/tofino.md, "Lane pairs"):
 * - set / add: a fresh aggregator stores the lanes, any other adds them (the table decides:
 *   the ALU has no input left for the fresh flag);
 * - add_emit: the completing pass adds both and puts `second`'s sum in the packet; it then
 *   goes round as a harvest pass (PASS_HARVEST) whose take puts `first`'s sum in the packet
 *   and clears the pair. Every aggregate a Tofino 1 completes costs one harvest pass.
 * - A pass that completes an aggregate and has a next pass (more = 1) must keep its lanes
 *   for that pass: it adds nothing, and its mirror copy, which carries the same lanes, comes
 *   back as PASS_FINISH to add_emit them, then harvests. Two extra passes.
 * - take also clears: a bypassed aggregator, and a lone contribution (a fresh aggregator its
 *   first contribution completes), whose packet already holds the sums. */
#define PAIR(k, a, b, st) \
    RegisterAction<lane_pair_t, bit<32>, int<32>>(agg_pair_##k) pair_set_##k = { \
        void apply(inout lane_pair_t p) { \
            p.first = (int<32>)hdr.lanes.v##a; \
            p.second = (int<32>)hdr.lanes.v##b; \
        } \
    }; \
    RegisterAction<lane_pair_t, bit<32>, int<32>>(agg_pair_##k) pair_add_##k = { \
        void apply(inout lane_pair_t p) { \
            p.first = p.first |+| (int<32>)hdr.lanes.v##a; \
            p.second = p.second |+| (int<32>)hdr.lanes.v##b; \
        } \
    }; \
    RegisterAction<lane_pair_t, bit<32>, int<32>>(agg_pair_##k) pair_add_emit_##k = { \
        void apply(inout lane_pair_t p, out int<32> rv) { \
            p.first = p.first |+| (int<32>)hdr.lanes.v##a; \
            p.second = p.second |+| (int<32>)hdr.lanes.v##b; \
            rv = p.second; \
        } \
    }; \
    RegisterAction<lane_pair_t, bit<32>, int<32>>(agg_pair_##k) pair_take_##k = { \
        void apply(inout lane_pair_t p, out int<32> rv) { \
            rv = p.first; \
            p.first = 0; \
            p.second = 0; \
        } \
    }; \
    @hidden action set_##k() { pair_set_##k.execute(meta.agg_idx); } \
    @hidden action add_##k() { pair_add_##k.execute(meta.agg_idx); } \
    @hidden action add_emit_##k() { \
        hdr.lanes.v##b = (bit<32>)pair_add_emit_##k.execute(meta.agg_idx); \
    } \
    @hidden action take_##k() { \
        hdr.lanes.v##a = (bit<32>)pair_take_##k.execute(meta.agg_idx); \
    } \
    @hidden action clear_##k() { pair_take_##k.execute(meta.agg_idx); } \
    @stage(st) @hidden table pair_##k { \
        key = { \
            meta.agg_op: exact; \
            meta.more: ternary; \
            meta.fresh: ternary; \
            meta.pass_kind: ternary; \
        } \
        actions = { \
            set_##k; add_##k; add_emit_##k; take_##k; clear_##k; @defaultonly NoAction; \
        } \
        const entries = { \
            (OP_ADD, _, 1, _): set_##k(); \
            (OP_ADD, _, 0, _): add_##k(); \
            (OP_COMPLETE, _, 1, _): clear_##k(); \
            (OP_COMPLETE, 0, 0, _): add_emit_##k(); \
            (OP_BYPASS, _, _, _): clear_##k(); \
            (OP_TAKE, _, _, PASS_FINISH): add_emit_##k(); \
            (OP_TAKE, _, _, _): take_##k(); \
        } \
        const default_action = NoAction(); \
        size = 8; \
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
        meta.pass_next = hdr.sgnn.pass + 1;
        meta.hdr_worker_p1 = hdr.sgnn.worker_id + 1;
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
        meta.agg_op = OP_NONE;
        meta.idx_ok = 0;
        meta.seen_bad = 0;
        meta.duplicate = 0;
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
        // What the stage after the verdict does, as one bit each (gateways read few bytes).
        if (meta.run_kind != 0 && meta.from_host && hdr.sgnn.resend == 0 && hdr.sgnn.pass == 0) {
            meta.do_seen = 1;
        }
        if (meta.run_kind == 1 && meta.pass_kind != PASS_HARVEST && meta.pass_kind != PASS_FINISH) {
            meta.do_tag = 1;
        }
        if (meta.more == 1 && hdr.sgnn.resend == 0 && hdr.sgnn.pass != 255) {
            meta.next_pass = 1;
        }
        // A lone contribution (expected 1) completes its aggregator on arrival (agg_count's
        // fresh action reads this).
        if (meta.expected <= 1) {
            meta.done_now = 1;
        }
    }
}

control Aggregation(inout headers_t hdr,
                    inout ig_metadata_t meta,
                    inout ingress_intrinsic_metadata_for_tm_t ig_tm_md,
                    inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    @name(".agg_pair_0") @id(1) Register<lane_pair_t, bit<32>>(AGGREGATORS) agg_pair_0;
    @name(".agg_pair_1") @id(2) Register<lane_pair_t, bit<32>>(AGGREGATORS) agg_pair_1;
    @name(".agg_pair_2") @id(3) Register<lane_pair_t, bit<32>>(AGGREGATORS) agg_pair_2;
    @name(".agg_pair_3") @id(4) Register<lane_pair_t, bit<32>>(AGGREGATORS) agg_pair_3;
    @name(".agg_pair_4") @id(5) Register<lane_pair_t, bit<32>>(AGGREGATORS) agg_pair_4;
    @name(".agg_pair_5") @id(6) Register<lane_pair_t, bit<32>>(AGGREGATORS) agg_pair_5;
    @name(".agg_pair_6") @id(7) Register<lane_pair_t, bit<32>>(AGGREGATORS) agg_pair_6;
    @name(".agg_pair_7") @id(8) Register<lane_pair_t, bit<32>>(AGGREGATORS) agg_pair_7;
    @name(".agg_pair_8") @id(9) Register<lane_pair_t, bit<32>>(AGGREGATORS) agg_pair_8;
    @name(".agg_pair_9") @id(10) Register<lane_pair_t, bit<32>>(AGGREGATORS) agg_pair_9;
    @name(".agg_pair_10") @id(11) Register<lane_pair_t, bit<32>>(AGGREGATORS) agg_pair_10;
    @name(".agg_pair_11") @id(12) Register<lane_pair_t, bit<32>>(AGGREGATORS) agg_pair_11;
    @name(".agg_pair_12") @id(13) Register<lane_pair_t, bit<32>>(AGGREGATORS) agg_pair_12;
    @name(".agg_pair_13") @id(14) Register<lane_pair_t, bit<32>>(AGGREGATORS) agg_pair_13;
    @name(".agg_pair_14") @id(15) Register<lane_pair_t, bit<32>>(AGGREGATORS) agg_pair_14;
    @name(".agg_pair_15") @id(16) Register<lane_pair_t, bit<32>>(AGGREGATORS) agg_pair_15;
    @name(".agg_count") @id(33) Register<bit<16>, bit<32>>(AGGREGATORS) agg_count;
    @name(".agg_tag")   @id(35) Register<bit<32>, bit<32>>(AGGREGATORS) agg_tag;
    @name(".src_seen")  @id(49) Register<bit<32>, bit<32>>(SEEN_CELLS)  src_seen;
    @name(".agg_gen")   @id(50) Register<bit<16>, bit<32>>(AGGREGATORS) agg_gen;
    /* Loss recovery (docs/host.md, "Loss recovery", "On a Tofino"): agg_ids, the
     * contributor digest (ids_table, beside agg_count); seq_next and seq_gap, the
     * per-worker seq check, are in switchgnn.p4 and recovery.p4. */
    @name(".agg_ids")   @id(51) Register<bit<32>, bit<32>>(AGGREGATORS) agg_ids;

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
    @stage(5) @hidden table gen_table {
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
    RegisterAction<bit<16>, bit<32>, bit<3>>(agg_count) count_add = {
        void apply(inout bit<16> v, out bit<3> op) {
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
    RegisterAction<bit<16>, bit<32>, bit<3>>(agg_count) count_fresh = {
        void apply(inout bit<16> v, out bit<3> op) {
            if (meta.done_now == 1) {
                v = 0;
                op = OP_COMPLETE;
            } else {
                v = 1;
                op = OP_ADD;
            }
        }
    };
    RegisterAction<bit<16>, bit<32>, bit<3>>(agg_count) count_resend = {
        void apply(inout bit<16> v, out bit<3> op) {
            v = COUNT_BYPASSED;
            op = OP_BYPASS;
        }
    };
    RegisterAction<bit<16>, bit<32>, bit<3>>(agg_count) count_harvest = {
        void apply(inout bit<16> v, out bit<3> op) {
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

    /* Only a pass that may touch the aggregator counts: its index is in range, it is not a
     * duplicate and not late. Keys rather than gateways, so the count is one stage after
     * agg_gen. */
    @stage(6) @hidden table count_table {
        key = {
            meta.idx_ok:     exact;
            meta.duplicate:  exact;
            meta.gen_op:     ternary;
            meta.pass_kind:  ternary;
            hdr.sgnn.resend: ternary;
        }
        actions = { op_add; op_fresh; op_resend; op_harvest; NoAction; }
        // The catch-all is an entry, not the default action: a default action cannot
        // address a register through the hash distribution unit.
        const entries = {
            (1, 0, GEN_LATE, _, _): NoAction();
            (1, 0, _, PASS_HARVEST, _): op_harvest();
            (1, 0, _, PASS_FINISH, _): op_harvest();
            (1, 0, _, _, 1): op_resend();
            (1, 0, GEN_FRESH, _, _): op_fresh();
            (1, 0, _, _, _): op_add();
        }
        const default_action = NoAction();
        size = 6;
    }

    /* agg_ids: the sum of the src_ids of the contributions an aggregator holds (v1model's
     * digest), one stateful ALU beside agg_count, keyed as agg_count's table: the same stage
     * cannot know agg_count's answer, so the digest is not cleared when the aggregate
     * completes (v1model clears it unless a numbered frame completed it) but restarts with
     * the next fresh contribution, and a contribution to a bypassed aggregator adds to it
     * (v1model: a bypassed aggregator's digest is 0). Nothing in the data plane reads it yet
     * (a pull would, recovery's third slice); the control plane may. */
    RegisterAction<bit<32>, bit<32>, bit<32>>(agg_ids) ids_add = {
        void apply(inout bit<32> v) { v = v + hdr.sgnn.src_id; }
    };
    RegisterAction<bit<32>, bit<32>, bit<32>>(agg_ids) ids_set = {
        void apply(inout bit<32> v) { v = hdr.sgnn.src_id; }
    };
    RegisterAction<bit<32>, bit<32>, bit<32>>(agg_ids) ids_clear = {
        void apply(inout bit<32> v) { v = 0; }
    };
    @hidden action digest_add()   { ids_add.execute(meta.agg_idx); }
    @hidden action digest_set()   { ids_set.execute(meta.agg_idx); }
    @hidden action digest_clear() { ids_clear.execute(meta.agg_idx); }
    @stage(6) @hidden table ids_table {
        key = {
            meta.idx_ok:     exact;
            meta.duplicate:  exact;
            meta.gen_op:     ternary;
            meta.pass_kind:  ternary;
            hdr.sgnn.resend: ternary;
        }
        actions = { digest_add; digest_set; digest_clear; NoAction; }
        // As count_table's: a harvest pass and PASS_FINISH (whose source's completing pass
        // added its id) add nothing; a RESEND releases the aggregator.
        const entries = {
            (1, 0, GEN_LATE, _, _): NoAction();
            (1, 0, _, PASS_HARVEST, _): NoAction();
            (1, 0, _, PASS_FINISH, _): NoAction();
            (1, 0, _, _, 1): digest_clear();
            (1, 0, GEN_FRESH, _, _): digest_set();
            (1, 0, _, _, _): digest_add();
        }
        const default_action = NoAction();
        size = 6;
    }

    PAIR(0, 0, 1, 7)
    PAIR(1, 2, 3, 7)
    PAIR(2, 4, 5, 7)
    PAIR(3, 6, 7, 7)
    PAIR(4, 8, 9, 8)
    PAIR(5, 10, 11, 8)
    PAIR(6, 12, 13, 8)
    PAIR(7, 14, 15, 8)
    PAIR(8, 16, 17, 9)
    PAIR(9, 18, 19, 9)
    PAIR(10, 20, 21, 9)
    PAIR(11, 22, 23, 9)
    PAIR(12, 24, 25, 10)
    PAIR(13, 26, 27, 10)
    PAIR(14, 28, 29, 10)
    PAIR(15, 30, 31, 10)

    /* What egress does to agg_ecn and agg_state: the lanes' operation, for the bridge. */
    @hidden action set_lane_op(bit<3> op) {
        hdr.bridge.lane_op = op;
    }
    @hidden table lane_op_table {
        key = {
            meta.agg_op: exact;
            meta.more: ternary;
            meta.fresh: ternary;
            meta.pass_kind: ternary;
        }
        actions = { set_lane_op; }
        // LANE_EMIT and LANE_TAKE mark the pass that leaves as the Result: a lone
        // contribution's, or the last harvest pass.
        const entries = {
            (OP_ADD, _, _, _): set_lane_op(LANE_ACC);
            (OP_COMPLETE, 0, 1, _): set_lane_op(LANE_EMIT);
            (OP_COMPLETE, _, _, _): set_lane_op(LANE_ACC);
            (OP_BYPASS, _, _, _): set_lane_op(LANE_CLEAR);
            (OP_TAKE, _, _, PASS_FINISH): set_lane_op(LANE_NONE);
            (OP_TAKE, _, _, _): set_lane_op(LANE_TAKE);
        }
        const default_action = set_lane_op(LANE_NONE);
        size = 6;
    }

    /* ---- What the pass does, once agg_count has spoken: the outcome table ---- */

    /* The packet becomes a Bypass to the destination's worker. */
    @hidden action bypass(bit<32> event) {
        EVENT(event);
        hdr.sgnn.pkt_type = TYPE_BYPASS;
        hdr.sgnn.ack = 0;
        hdr.sgnn.fetch = 0;
        hdr.sgnn.dst_id = meta.out_dst_id;
        hdr.sgnn.pass = 0;
        hdr.bridge.originated = 1;
        meta.to_worker = 1;
    }
    /* The same, and its mirror copy comes back as the next pass. An action reads the
     * fields as they were before it, so the copy keeps the Data header's dst_id and pass. */
    @hidden action bypass_and_next(bit<32> event) {
        EVENT(event);
        meta.mirror_session = NEXT_PASS_SESSION;
        meta.mirror_hdr_kind = EG_MIRROR;
        meta.mirror_kind = PASS_NEXT;
        meta.mirror_dst_id = hdr.sgnn.dst_id;
        meta.mirror_pass = meta.pass_next;
        meta.mirror_ecn = hdr.sgnn.ecn;
        meta.mirror_resend = hdr.sgnn.resend;
        ig_dprsr_md.mirror_type = MIRROR_NEXT_PASS;
        hdr.sgnn.pkt_type = TYPE_BYPASS;
        hdr.sgnn.ack = 0;
        hdr.sgnn.fetch = 0;
        hdr.sgnn.dst_id = meta.out_dst_id;
        hdr.sgnn.pass = 0;
        hdr.bridge.originated = 1;
        meta.to_worker = 1;
    }
    /* One Bypass per worker of the group, addressed in egress (egress_rid). */
    @hidden action replicate_out() {
        EVENT(EV_DELIVERED);
        hdr.sgnn.pkt_type = TYPE_BYPASS;
        hdr.sgnn.ack = 0;
        hdr.sgnn.fetch = 0;
        hdr.sgnn.dst_id = ALL_NEIGHBOURS;
        hdr.sgnn.pass = 0;
        hdr.bridge.originated = 1;
        hdr.bridge.replica_mc = 1;
        ig_tm_md.mcast_grp_a = meta.mcast_group;
        ig_dprsr_md.drop_ctl = 0;
    }
    @hidden action replicate_and_next() {
        EVENT(EV_DELIVERED);
        meta.mirror_session = NEXT_PASS_SESSION;
        meta.mirror_hdr_kind = EG_MIRROR;
        meta.mirror_kind = PASS_NEXT;
        meta.mirror_dst_id = hdr.sgnn.dst_id;
        meta.mirror_pass = meta.pass_next;
        meta.mirror_ecn = hdr.sgnn.ecn;
        meta.mirror_resend = hdr.sgnn.resend;
        ig_dprsr_md.mirror_type = MIRROR_NEXT_PASS;
        hdr.sgnn.pkt_type = TYPE_BYPASS;
        hdr.sgnn.ack = 0;
        hdr.sgnn.fetch = 0;
        hdr.sgnn.dst_id = ALL_NEIGHBOURS;
        hdr.sgnn.pass = 0;
        hdr.bridge.originated = 1;
        hdr.bridge.replica_mc = 1;
        ig_tm_md.mcast_grp_a = meta.mcast_group;
        ig_dprsr_md.drop_ctl = 0;
    }
    /* The packet (its lanes hold the sums) becomes the Result; its ECN flag is set in
     * egress from agg_ecn. */
    @hidden action result() {
        EVENT(EV_RESULTS);
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
        // job: the frame's own (the job of the frame it is made from).
        hdr.bridge.originated = 1;
        hdr.bridge.result = 1;
        meta.to_worker = 1;
    }
    /* Round again as `kind` (a harvest pass), the same pass number. */
    @hidden action again_as(bit<32> event, bit<4> kind) {
        EVENT(event);
        hdr.sgnn.flags_rsvd = kind;
        meta.to_recirc = 1;
    }
    /* Added: on to the next pass, and if `finish`, the mirror copy (the same lanes) comes
     * back as PASS_FINISH to add them to the completed aggregate and emit it. */
    @hidden action added(bit<1> next, bit<1> finish) {
        EVENT(EV_AGGREGATED);
        meta.mirror_session = NEXT_PASS_SESSION;
        meta.mirror_hdr_kind = EG_MIRROR;
        meta.mirror_kind = PASS_FINISH;
        meta.mirror_dst_id = hdr.sgnn.dst_id;
        meta.mirror_pass = hdr.sgnn.pass;
        meta.mirror_ecn = hdr.sgnn.ecn;
        meta.mirror_resend = hdr.sgnn.resend;
        meta.mirror_next = finish;
        meta.to_recirc = next;
        meta.recirc_next = next;
    }
    @hidden action refuse(bit<32> event) {
        EVENT(event);
    }

    /* What v1model's aggregation decides with a chain of ifs, as one lookup (the first entry
     * that matches decides), so a pass's outcome is known one stage after agg_count and in
     * parallel with the lanes. */
    @stage(7) @hidden table outcome {
        key = {
            meta.run_kind:  ternary;
            meta.seen_bad:  ternary;
            meta.duplicate: ternary;
            meta.idx_ok:    ternary;
            meta.gen_op:    ternary;
            meta.agg_op:    ternary;
            meta.more:      ternary;
            meta.fresh:     ternary;
            meta.pass_kind: ternary;
            meta.next_pass: ternary;
        }
        actions = {
            bypass; bypass_and_next; replicate_out; replicate_and_next; result; again_as;
            added; refuse; @defaultonly NoAction;
        }
        const entries = {
            (0, _, _, _, _, _, _, _, _, _): refuse(EV_DROP_NO_ENTRY);
            (_, 1, _, _, _, _, _, _, _, _): refuse(EV_DROP_BAD_INDEX);
            (_, _, 1, _, _, _, _, _, _, _): refuse(EV_DROP_DUPLICATE);
            (1, _, _, 0, _, _, _, _, _, _): refuse(EV_DROP_BAD_INDEX);
            // A newer generation of this round and block holds the aggregator: to the
            // host, the aggregator untouched (lane_op stays LANE_NONE for egress).
            (1, _, _, _, GEN_LATE, _, _, _, _, 1): bypass_and_next(EV_BYPASSED_LATE);
            (1, _, _, _, GEN_LATE, _, _, _, _, _): bypass(EV_BYPASSED_LATE);
            // A RESEND released the aggregator before a harvest: nothing to send.
            (1, _, _, _, _, OP_BYPASS, _, _, PASS_HARVEST, _): refuse(EV_BYPASSED);
            (1, _, _, _, _, OP_BYPASS, _, _, PASS_FINISH, _): refuse(EV_BYPASSED);
            (1, _, _, _, _, OP_BYPASS, _, _, _, 1): bypass_and_next(EV_BYPASSED);
            (1, _, _, _, _, OP_BYPASS, _, _, _, _): bypass(EV_BYPASSED);
            // PASS_FINISH added its lanes and emitted the odd sums: harvest the even ones.
            (1, _, _, _, _, OP_TAKE, _, _, PASS_FINISH, _): again_as(EV_AGGREGATED, PASS_HARVEST);
            (1, _, _, _, _, OP_TAKE, _, _, _, _): result();
            // A lone contribution: its own lanes are the sums.
            (1, _, _, _, _, OP_COMPLETE, 0, 1, _, _): result();
            // The odd lanes hold their sums; a harvest pass reads the even ones.
            (1, _, _, _, _, OP_COMPLETE, 0, _, _, _): again_as(EV_AGGREGATED, PASS_HARVEST);
            (1, _, _, _, _, OP_COMPLETE, _, _, _, 1): added(1, 1);
            (1, _, _, _, _, OP_COMPLETE, _, _, _, _): added(0, 1);
            (1, _, _, _, _, _, _, _, _, 1): added(1, 0);
            (1, _, _, _, _, _, _, _, _, _): added(0, 0);
            (2, _, _, _, _, _, _, _, _, 1): bypass_and_next(EV_DELIVERED);
            (2, _, _, _, _, _, _, _, _, _): bypass(EV_DELIVERED);
            (3, _, _, _, _, _, _, _, _, 1): replicate_and_next();
            (3, _, _, _, _, _, _, _, _, _): replicate_out();
        }
        const default_action = NoAction();
        size = 24;
    }

    @hidden action index_ok() { meta.idx_ok = 1; }
    @hidden action seen_out_of_range() { meta.seen_bad = 1; }

    apply {
        // Stage after the verdict: the duplicate check and the tag, on agg_table's verdict
        // and AggFlags' (the same stage cannot know the duplicate check's answer).
        if (meta.do_seen == 1) {
            if (meta.seen_cell < SEEN_CELLS) {
                check_seen();
            } else {
                seen_out_of_range();
            }
        }
        if (meta.run_kind == 1 && meta.agg_idx < AGGREGATORS) {
            index_ok();
            if (meta.do_tag == 1) {
                check_tag();
            }
        }
        // Then the generation (not for a harvest pass: it reads the sums its own pass left),
        // the count, and the lanes, each keyed on what the stage before decided.
        if (meta.do_tag == 1 && meta.idx_ok == 1 && meta.duplicate == 0 && meta.seen_bad == 0) {
            gen_table.apply();
        }
        if (meta.seen_bad == 0) {
            count_table.apply();
            ids_table.apply();
        }
        pair_0.apply();
        pair_1.apply();
        pair_2.apply();
        pair_3.apply();
        pair_4.apply();
        pair_5.apply();
        pair_6.apply();
        pair_7.apply();
        pair_8.apply();
        pair_9.apply();
        pair_10.apply();
        pair_11.apply();
        pair_12.apply();
        pair_13.apply();
        pair_14.apply();
        pair_15.apply();
        lane_op_table.apply();
        hdr.bridge.agg_idx = meta.agg_idx;
        hdr.bridge.fresh = meta.fresh;
        outcome.apply();
        if (meta.recirc_next == 1) {
            hdr.sgnn.pass = meta.pass_next;
            hdr.sgnn.flags_rsvd = PASS_NEXT;
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

#undef PAIR

#endif
