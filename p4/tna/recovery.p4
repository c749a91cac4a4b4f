/* recovery.p4: the switch's side of loss recovery (docs/host.md, "Loss recovery"), with the
 * behaviour of ../v1model/recovery.p4 (sgnn_switch::recovery::seq_step) in the shape of a
 * Tofino pipeline (docs/tofino.md, "Loss recovery").
 *
 * seq_next[w] is one 32-bit register read and written once per pass by one stateful ALU,
 * and a Tofino ALU writes its word from one operation: it can add a constant to the word, or
 * set it from the packet, but not set one half from the packet while it adds 1 to the other
 * (the gap: next = n + 1 and gaps + 1). So on a Tofino seq_next holds next << 16 | gaps (the
 * halves of v1model's gaps << 16 | next swapped: its comparisons see next in the high half,
 * where the low half cannot change their sign), and a gap takes two passes:
 *
 *   pass 1 (SgnnIngress's verdict, stage 3, then this control): the seq check. In order:
 *     next + 1, and the frame goes on to Aggregation. A gap: seq_next = (n + 1) << 16 (gaps
 *     cleared); its answer (old next ^ n) << 16 | old gaps tells the NACK the gap's first
 *     number and the old count; seq_gap takes the gap (old next ++ n) and answers the gap
 *     before. The frame (its type, lanes and IPv4 header kept) carries src_id = the gap,
 *     dst_id = the gap before and segment = old gaps + 1 round as PASS_NACK.
 *   pass 2 (PASS_NACK): seq_next += segment, which puts the gaps back one higher, and answers
 *     next << 16 | gaps: the NACK's segment and count. The frame leaves as the NACK (an Ack
 *     with RESEND, no lanes) to the worker's port.
 * A tail probe takes the same two passes: pass 1 checks (a gap: seq_next = n << 16, the gap
 * old next ..= n - 1), pass 2 adds its count (0 when nothing was missing) and reads next and
 * gaps for the answer (and, when nothing was missing, seq_gap again for src_id).
 *
 * The additions commute, so a second gap of the same worker whose first pass comes between
 * the two passes of the first (its first pass sees gaps 0 and adds 1) still leaves the count
 * right, and recirculation keeps the second passes in the order of the first ones, so each
 * NACK carries its own count. The one inexactness: if both of two such NACKs are pending
 * while the count wraps past 65535, the carry moves next one number on (the next in-order
 * frame then reads as late, which is processed as usual). */
#ifndef SGNN_TNA_RECOVERY_P4
#define SGNN_TNA_RECOVERY_P4

/* What a NACK's first pass leaves in `pass` for its second (a Data frame's gap: 0). */
const bit<8> PASS_MARK_NEW_GAP = 1;   // a probe that found a gap: the second pass counts it
const bit<8> PASS_MARK_CLEAN   = 2;   // a probe that found none: src_id = seq_gap, again

/* The seq check's operand n << 16, for every frame from its header (no side effects), so the
 * verdict's stateful ALU (seq_next, SgnnIngress) finds it ready in stage 3. Through the hash
 * unit's identity, not a move: a field moved from the SwitchGNN header joins that header's
 * PHV constraints, and with them the program no longer allocates (docs/tofino.md). */
control SeqOperands(in headers_t hdr, inout ig_metadata_t meta) {
    Hash<bit<16>>(HashAlgorithm_t.IDENTITY) data_n;
    Hash<bit<16>>(HashAlgorithm_t.IDENTITY) probe_n;
    @hidden action of_data() {
        meta.seq_x[31:16] = data_n.get({hdr.sgnn.dst_id[15:0]});
        meta.seq_x[15:0] = 0;
    }
    @hidden action of_probe() {
        meta.seq_x[31:16] = probe_n.get({hdr.sgnn.src_id[15:0]});
        meta.seq_x[15:0] = 0;
    }
    /* A table passes 32 bits of hash output: one table per source, in exclusive branches
     * so both fit one stage (ternary keys: stage 0's SRAM is agg_table's). */
    @hidden table data_operand {
        key = { meta.host: ternary; }
        actions = { of_data; @defaultonly NoAction; }
        const entries = { 1: of_data(); }
        const default_action = NoAction();
        size = 1;
    }
    @hidden table probe_operand {
        key = { meta.host: ternary; }
        actions = { of_probe; @defaultonly NoAction; }
        const entries = { 1: of_probe(); }
        const default_action = NoAction();
        size = 1;
    }
    apply {
        if (hdr.sgnn.isValid()) {
            if (hdr.sgnn.pkt_type == TYPE_DATA) {
                data_operand.apply();
            } else if (hdr.sgnn.pkt_type == TYPE_ACK) {
                probe_operand.apply();
            }
        }
    }
}

/* After seq_next (the verdict, stage 3), for the frames it turned into NACKs (a Data frame
 * after a gap, a tail probe, a NACK's second pass): a branch of its own, beside Aggregation
 * and BlockSync, so the compiler places its tables beside theirs. */
control Recovery(inout headers_t hdr, inout ig_metadata_t meta) {
    @name(".seq_gap") @id(53) Register<bit<32>, bit<32>>(MAX_WORKERS) seq_gap;

    /* A gap: the new range, and the old one (the NACK's previous range). */
    RegisterAction<bit<32>, bit<32>, bit<32>>(seq_gap) gap_write = {
        void apply(inout bit<32> v, out bit<32> rv) {
            rv = v;
            v = meta.seq_range;
        }
    };
    /* A probe that finds nothing missing: the last gap, repeated. */
    RegisterAction<bit<32>, bit<32>, bit<32>>(seq_gap) gap_read = {
        void apply(inout bit<32> v, out bit<32> rv) {
            rv = v;
        }
    };
    @hidden action write_gap() { meta.seq_prev = gap_write.execute((bit<32>)meta.hdr_worker); }
    @hidden action read_gap()  { meta.seq_prev = gap_read.execute((bit<32>)meta.hdr_worker); }
    /* seq_out is 0 unless seq_next found a gap. A probe that finds nothing missing answers
     * the last gap in both ranges: dst_id from its first pass, src_id from its second (a
     * gap found between the two makes src_id that gap and dst_id the one before, which is
     * what a NACK says). */
    @hidden table gap_table {
        key = {
            meta.verdict:   exact;
            meta.seq_out[31:16]: ternary;
            meta.pass_next: ternary;
        }
        actions = { write_gap; read_gap; NoAction; }
        const entries = {
            (V_AGGREGATE, 0, _): NoAction();
            (V_AGGREGATE, _, _): write_gap();
            (V_SEQ_PROBE, 0, _): read_gap();
            (V_SEQ_PROBE, _, _): write_gap();
            (V_SEQ_NACK, _, PASS_MARK_CLEAN + 1): read_gap();
        }
        const default_action = NoAction();
        size = 5;
    }

    /* From seq_next's answer: the gap (old next ++ the last number the frame vouches for: n
     * for Data, n - 1 for a probe) and the count the second pass adds (old gaps + 1). */
    @hidden action unpack_data() {
        meta.seq_range[31:16] = meta.seq_out[31:16] ^ meta.seq_x[31:16];
        meta.seq_range[15:0] = meta.seq_x[31:16];
        meta.seq_delta = meta.seq_out[15:0] + 1;
    }
    @hidden action unpack_probe() {
        meta.seq_range[31:16] = meta.seq_out[31:16] ^ meta.seq_x[31:16];
        meta.seq_range[15:0] = meta.seq_x[31:16] - 1;
        meta.seq_delta = meta.seq_out[15:0] + 1;
    }
    @hidden table unpack_table {
        key = { meta.verdict: exact; }
        actions = { unpack_data; unpack_probe; @defaultonly NoAction; }
        const entries = {
            V_AGGREGATE: unpack_data();
            V_SEQ_PROBE: unpack_probe();
        }
        const default_action = NoAction();
        size = 2;
    }

    /* The count the second pass adds, carried in segment. Into the header through the hash
     * unit's identity, not by a move (SeqOperands says why). */
    Hash<bit<16>>(HashAlgorithm_t.IDENTITY) count_of;
    @hidden action carry_count() { hdr.sgnn.segment = count_of.get({meta.seq_delta}); }
    @hidden action carry_nothing() { hdr.sgnn.segment = 0; }
    @hidden table count_table {
        key = {
            meta.verdict: exact;
            meta.seq_out[31:16]: ternary;
        }
        actions = { carry_count; carry_nothing; NoAction; }
        const entries = {
            (V_AGGREGATE, 0): NoAction();
            (V_AGGREGATE, _): carry_count();
            (V_SEQ_PROBE, 0): carry_nothing();
            (V_SEQ_PROBE, _): carry_count();
        }
        const default_action = NoAction();
        size = 4;
    }

    /* seq_gap's answer into the header: the range before (dst_id) in the first pass, the
     * last gap again (src_id) in a clean probe's second pass. */
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) prev_of;
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) last_of;
    @hidden action prev_to_dst() { hdr.sgnn.dst_id = prev_of.get({meta.seq_prev}); }
    @hidden action last_to_src() { hdr.sgnn.src_id = last_of.get({meta.seq_prev}); }
    @hidden table prev_table {
        key = {
            meta.verdict: exact;
            meta.seq_out[31:16]: ternary;
        }
        actions = { prev_to_dst; NoAction; }
        const entries = {
            (V_AGGREGATE, 0): NoAction();
            (V_AGGREGATE, _): prev_to_dst();
            (V_SEQ_PROBE, _): prev_to_dst();
        }
        const default_action = NoAction();
        size = 3;
    }
    @hidden table last_table {
        key = { meta.verdict: exact; meta.pass_next: exact; }
        actions = { last_to_src; @defaultonly NoAction; }
        const entries = { (V_SEQ_NACK, PASS_MARK_CLEAN + 1): last_to_src(); }
        const default_action = NoAction();
        size = 1;
    }

    /* Pass 1: the frame keeps its type and IPv4 header (egress recomputes no checksum for a
     * recirculated pass) and carries the NACK's ranges round (src_id this gap, dst_id the
     * one before) with the count in segment; `pass` marks a probe's new gap (which the
     * second pass counts: nacked) or a probe that found none (whose second pass reads
     * seq_gap again for src_id). */
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) range_of;
    @hidden action data_gap() {
        EVENT(EV_NACKED);
        hdr.sgnn.src_id = range_of.get({meta.seq_range});
        hdr.sgnn.flags_rsvd = PASS_NACK;
        meta.to_recirc = 1;
    }
    @hidden action probe_gap() {
        hdr.sgnn.src_id = range_of.get({meta.seq_range});
        hdr.sgnn.pass = PASS_MARK_NEW_GAP;
        hdr.sgnn.flags_rsvd = PASS_NACK;
        meta.to_recirc = 1;
    }
    @hidden action probe_clean() {
        hdr.sgnn.pass = PASS_MARK_CLEAN;
        hdr.sgnn.flags_rsvd = PASS_NACK;
        meta.to_recirc = 1;
    }
    /* Pass 2: the NACK (sgnn::Repr::new: an Ack with RESEND, no lanes) to its worker; the
     * verdict's action wrote count and segment from seq_next's answer. */
    @hidden action nack_out() {
        hdr.sgnn.version = SGNN_VERSION;
        hdr.sgnn.pkt_type = TYPE_ACK;
        hdr.sgnn.ack = 1;
        hdr.sgnn.fetch = 0;
        hdr.sgnn.ecn = 0;
        hdr.sgnn.resend = 1;
        hdr.sgnn.flags_rsvd = 0;
        hdr.sgnn.pass = 0;
        hdr.sgnn.frac_bits = 0;
        // job: the frame's own (the job of the frame it is made from).
        hdr.lanes.setInvalid();
        hdr.ipv4.total_len = IPV4_HEADER_LEN + SGNN_HEADER_LEN;
        hdr.bridge.originated = 1;
        meta.to_worker = 1;
    }
    @hidden action nack_out_new_gap() {
        EVENT(EV_NACKED);
        nack_out();
    }
    @hidden table nack_frame {
        key = {
            meta.verdict:   exact;
            meta.seq_out[31:16]: ternary;
            meta.pass_next: ternary;
        }
        actions = {
            data_gap; probe_gap; probe_clean; nack_out; nack_out_new_gap; NoAction;
        }
        const entries = {
            (V_AGGREGATE, 0, _): NoAction();
            (V_AGGREGATE, _, _): data_gap();
            (V_SEQ_PROBE, 0, _): probe_clean();
            (V_SEQ_PROBE, _, _): probe_gap();
            (V_SEQ_NACK, _, PASS_MARK_NEW_GAP + 1): nack_out_new_gap();
            (V_SEQ_NACK, _, _): nack_out();
        }
        const default_action = NoAction();
        size = 6;
    }

    apply {
        unpack_table.apply();
        gap_table.apply();
        count_table.apply();
        prev_table.apply();
        last_table.apply();
        nack_frame.apply();
    }
}

/* A pull (a FetchReq to the switch's own address, naming a row of agg_table and a segment):
 * answered PULL_GONE, a Result with RESEND, count 0 and zero lanes, to the row's worker, who
 * then completes the cell from its sources' raw values. v1model answers with what the
 * aggregator holds (docs/tofino.md, "Loss recovery": reading the aggregator takes a register
 * action on agg_count and on each lane pair that they do not have free, and two passes). */
control Pull(inout headers_t hdr, inout ig_metadata_t meta) {
    @hidden action answer_gone() {
        EVENT(EV_PULLED);
        hdr.sgnn.version = SGNN_VERSION;
        hdr.sgnn.pkt_type = TYPE_RESULT;
        hdr.sgnn.ack = 0;
        hdr.sgnn.fetch = 0;
        hdr.sgnn.ecn = 0;
        hdr.sgnn.resend = 1;
        hdr.sgnn.flags_rsvd = 0;
        hdr.sgnn.worker_id = meta.dst_worker;
        hdr.sgnn.src_id = PULL_GONE;
        hdr.sgnn.dst_id = meta.out_dst_id;
        hdr.sgnn.count = 0;
        hdr.sgnn.pass = 0;
        // job: the frame's own (the job of the frame it is made from).
        hdr.lanes.setValid();
        hdr.lanes.v0 = 0; hdr.lanes.v1 = 0; hdr.lanes.v2 = 0; hdr.lanes.v3 = 0;
        hdr.lanes.v4 = 0; hdr.lanes.v5 = 0; hdr.lanes.v6 = 0; hdr.lanes.v7 = 0;
        hdr.lanes.v8 = 0; hdr.lanes.v9 = 0; hdr.lanes.v10 = 0; hdr.lanes.v11 = 0;
        hdr.lanes.v12 = 0; hdr.lanes.v13 = 0; hdr.lanes.v14 = 0; hdr.lanes.v15 = 0;
        hdr.lanes.v16 = 0; hdr.lanes.v17 = 0; hdr.lanes.v18 = 0; hdr.lanes.v19 = 0;
        hdr.lanes.v20 = 0; hdr.lanes.v21 = 0; hdr.lanes.v22 = 0; hdr.lanes.v23 = 0;
        hdr.lanes.v24 = 0; hdr.lanes.v25 = 0; hdr.lanes.v26 = 0; hdr.lanes.v27 = 0;
        hdr.lanes.v28 = 0; hdr.lanes.v29 = 0; hdr.lanes.v30 = 0; hdr.lanes.v31 = 0;
        hdr.ipv4.total_len = IPV4_HEADER_LEN + SGNN_LANES_LEN;
        hdr.bridge.originated = 1;
        meta.to_worker = 1;
    }
    @hidden action refuse_pull(bit<32> event) {
        EVENT(event);
    }
    /* As v1model: no row, no answer (drop_no_entry); a row that delivers or replicates has
     * no aggregator (drop_unexpected); an index beyond the aggregators, drop_bad_index. */
    @hidden table pull_table {
        key = {
            meta.run_kind: ternary;
            meta.agg_idx:  ternary;
        }
        actions = { answer_gone; refuse_pull; @defaultonly NoAction; }
        const entries = {
            (0, _): refuse_pull(EV_DROP_NO_ENTRY);
            (1, 0 &&& ~(AGGREGATORS - 1)): answer_gone();
            (1, _): refuse_pull(EV_DROP_BAD_INDEX);
            (_, _): refuse_pull(EV_DROP_UNEXPECTED);
        }
        const default_action = NoAction();
        size = 4;
    }
    apply {
        pull_table.apply();
    }
}

#endif
