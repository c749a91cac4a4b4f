/* switchgnn.p4: the SwitchGNN data plane for Tofino (TNA; Tofino 2 with t2na), with the
 * tables, actions, parameters and registers of ../v1model/switchgnn.p4 under the same
 * names and ids. What differs, and why, is in docs/tofino.md ("Design"); sizes are in
 * config.p4 and ../common/protocol.p4.
 *
 * Build (docs/tofino.md): bf-p4c --target tofino --arch tna -g \
 *     --p4runtime-files out/switchgnn.p4info.txtpb -o out p4/tna/switchgnn.p4 */
#include <core.p4>
#if __TARGET_TOFINO__ == 2
#include <t2na.p4>
#else
#include <tna.p4>
#endif

#include "config.p4"
#include "headers.p4"
#include "counters.p4"
#include "parser.p4"
#include "switch_config.p4"
#include "forwarding.p4"
#include "priority.p4"
#include "drop_simulator.p4"
#include "aggregation.p4"
#include "block_sync.p4"
#include "recovery.p4"
#include "ecn.p4"

control SgnnIngress(inout headers_t hdr,
                    inout ig_metadata_t meta,
                    in ingress_intrinsic_metadata_t ig_intr_md,
                    in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                    inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                    inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    SwitchConfig() switch_config;
    CheckFrame() check_frame;
    Priority() priority;
    Ipv4Forward() ipv4_forward;
    DropSimulator() drop_simulator;
    CurrentBlock() current_block;
    AggregationTags() aggregation_tags;
    AggLookup() agg_lookup;
    Aggregation() aggregation;
    BlockSync() block_sync;
    BlockSyncPrep() block_sync_prep;
    WorkerPort() worker_port;
    PortWorker() port_worker;
    SeqOperands() seq_operands;
    Recovery() recovery;
    Pull() pull;
    IngressCounters() counters;

    /* The seq check (recovery.p4): per worker, next << 16 | gaps (v1model: gaps << 16 |
     * next), read and written by the verdict's actions, so a numbered Data frame is checked
     * before the duplicate check and the aggregators (stage 4), and the frame that reveals a
     * gap reaches none of them. With s = next - n as a signed 16-bit number and D the 32-bit
     * difference v - (n << 16) taken as signed, D = s * 2^16 + gaps whatever gaps holds: D < 0
     * iff s < 0, and D - 2^16 < 0 (the compiler's `lss.uus ... -65536`: the sign of the
     * 32-bit sum, wrapping) iff s <= 0 and s != -2^15. So a Data frame is in order (s == 0),
     * the frame after a gap (-2^15 < s < 0: 0 < n - next < SEQ_WINDOW) or late (otherwise,
     * including n - next == 2^15, as seq_step; read as exact arithmetic, the second test
     * would take that one as a gap). */
    @name(".seq_next") @id(52) Register<bit<32>, bit<32>>(MAX_WORKERS) seq_next;
    RegisterAction<bit<32>, bit<32>, bit<32>>(seq_next) seq_data = {
        void apply(inout bit<32> v, out bit<32> rv) {
            rv = 0;
            if ((int<32>)(v - meta.seq_x) < 0 && (int<32>)(v - meta.seq_x) < 32s0x10000) {
                // A gap: next = n + 1, gaps cleared until the NACK's second pass.
                rv = v ^ meta.seq_x;
                v = meta.seq_x + 32w0x10000;
            } else if ((int<32>)(v - meta.seq_x) < 32s0x10000) {
                // In order: next + 1.
                v = v + 32w0x10000;
            }
        }
    };
    /* A probe (n: the number of the worker's next frame): frames next ..= n - 1 missing iff
     * next is behind n (s < 0). */
    RegisterAction<bit<32>, bit<32>, bit<32>>(seq_next) seq_probe = {
        void apply(inout bit<32> v, out bit<32> rv) {
            rv = 0;
            if ((int<32>)(v - meta.seq_x) < 0) {
                rv = v ^ meta.seq_x;
                v = meta.seq_x;
            }
        }
    };
    /* A NACK's second pass: the gaps back, one higher (the first pass put old gaps + 1 in
     * segment); next and gaps out, for the NACK's segment and count. */
    RegisterAction<bit<32>, bit<32>, bit<32>>(seq_next) seq_add = {
        void apply(inout bit<32> v, out bit<32> rv) {
            v = v + (bit<32>)hdr.sgnn.segment;
            rv = v;
        }
    };
    /* The answers go to metadata through the action data bus, not by a move from the
     * header, so these fields stay out of the header's PHV containers (docs/tofino.md). */
    @hidden action seq_check() {
        meta.verdict = V_AGGREGATE;
        meta.seq_out = seq_data.execute((bit<32>)hdr.sgnn.worker_id);
    }
    @hidden action seq_probed() {
        meta.verdict = V_SEQ_PROBE;
        EVENT(EV_SEQ_PROBED);
        meta.seq_out = seq_probe.execute((bit<32>)hdr.sgnn.worker_id);
    }
    @hidden action seq_second_pass() {
        meta.verdict = V_SEQ_NACK;
        bit<32> held = seq_add.execute((bit<32>)hdr.sgnn.worker_id);
        hdr.sgnn.count = held[15:0];
        hdr.sgnn.segment = held[31:16];
    }

    /* The verdict's XOR keys, each 0 when a frame has what the switch expects: round ^
     * sync_round and block_id ^ sync_block (the switch's current block); for admission,
     * src_addr ^ port_addr (the address of the port's worker) and job ^ set_config's job.
     * One action: a logical table more in stage 2 (16 of 16 used on Tofino 1) pushes the
     * pipeline to 13 stages, and a hash action with all of them needs match overhead that a
     * keyless table cannot have. */
    @hidden action xor_keys() {
        meta.round_x = meta.hdr_round ^ meta.sync_round;
        meta.block_x = meta.hdr_block ^ meta.sync_block;
        meta.addr_x = hdr.ipv4.src_addr ^ meta.port_addr;
        meta.job_x = hdr.sgnn.job ^ meta.cfg.job;
    }

    @hidden action to_worker_port() {
        hdr.bridge.dst_worker = meta.dst_worker;
        ig_tm_md.ucast_egress_port = meta.worker_port;
        ig_dprsr_md.drop_ctl = 0;
    }
    @hidden action no_worker_port() {
        EVENT(EV_DROP_UNKNOWN_WORKER);
        ig_dprsr_md.drop_ctl = 1;
    }
    @hidden action to_recirc_port() {
        ig_tm_md.ucast_egress_port = RECIRC_PORT;
        ig_dprsr_md.drop_ctl = 0;
    }
    @hidden action routed() {
        EVENT(EV_FORWARDED);
        ig_tm_md.ucast_egress_port = meta.fwd_port;
        ig_dprsr_md.drop_ctl = 0;
    }
    @hidden action no_route() {
        EVENT(EV_DROP_NO_ROUTE);
    }
    /* Where the packet goes: a worker's port (a frame the switch built for it), the
     * recirculation port (its next pass), or its route (forwarded). */
    @stage(10) @hidden table out_port {
        key = {
            meta.to_worker:  ternary;
            meta.worker_hit: ternary;
            meta.to_recirc:  ternary;
            meta.verdict:    ternary;
            meta.fwd_hit:    ternary;
        }
        actions = { to_worker_port; no_worker_port; to_recirc_port; routed; no_route; NoAction; }
        const entries = {
            (1, 1, _, _, _): to_worker_port();
            (1, 0, _, _, _): no_worker_port();
            (_, _, 1, _, _): to_recirc_port();
            (_, _, _, V_FORWARD, 1): routed();
            (_, _, _, V_FORWARD, 0): no_route();
            (_, _, _, V_PASS_ON, 1): routed();
            (_, _, _, V_PASS_ON, 0): no_route();
        }
        const default_action = NoAction();
        size = 8;
    }

    @hidden action drop_for(bit<32> event) {
        meta.verdict = V_DROP;
        EVENT(event);
    }
    @hidden action go(bit<3> v) {
        meta.verdict = v;
    }

    /* What a frame is, from every check at once: one lookup where v1model has a chain of
     * ifs, in the same order (the first entry that matches decides), so the stateful ALUs
     * it gates start in stage 4 (docs/tofino.md, "Design"). Keys: Ethernet and IPv4 (ipv4 rules,
     * total_len not short), protocol, the drop simulator (its every-n-th tick and
     * drop_prob - random, 0 unless dropped), CheckFrame's SwitchGNN rules, the type, and
     * for host Data: round and block against the switch's (0 when current), pass, resend;
     * for loss recovery (recovery.p4): the pass kind (a NACK's second pass), the worker on
     * the ingress port, dst_id (SEQ_VALID, SEQ_PROBE) and whether a FetchReq is a pull. The
     * seq check's actions run seq_next here. */
    @stage(3) @hidden table verdict {
        key = {
            hdr.ethernet.isValid(): ternary;
            hdr.ethernet.ether_type: ternary;
            hdr.ipv4.isValid(): ternary;
            hdr.ipv4.version: ternary;
            hdr.ipv4.ihl: ternary;
            meta.short_by: ternary;
            hdr.ipv4.protocol: ternary;
            meta.sim_every: ternary;
            meta.sim_below: ternary;
            meta.sgnn_ok: ternary;
            hdr.sgnn.pkt_type: ternary;
            meta.host: ternary;
            meta.round_x: ternary;
            meta.block_x: ternary;
            hdr.sgnn.pass: ternary;
            hdr.sgnn.resend: ternary;
            meta.pass_kind: ternary;
            meta.port_known: ternary;
            meta.worker_x: ternary;
            hdr.sgnn.worker_id: ternary;
            hdr.sgnn.dst_id: ternary;
            meta.pull_x: ternary;
            meta.port_link: ternary;
            meta.addr_x: ternary;
            meta.job_x: ternary;
        }
        actions = { drop_for; go; seq_check; seq_probed; seq_second_pass; }
#define IPV4_OK true, ETHERTYPE_IPV4, true, 4, 5, 0
#define SGNN_KEPT IPV4_OK, IP_PROTO_SWITCHGNN, 0, 0
        // port_known, worker_x, worker_id: from the worker's own port, a known worker.
#define OWN_PORT 1, 0
        // The admission keys of a row that does not look at them.
#define ADMIT_ANY , _, _, _
#define IN_RANGE 0 &&& ~((bit<16>)MAX_WORKERS - 1)
        const entries = {
            (SGNN_KEPT, 0, _, _, _, _, _, _, _, _, _, _, _, _ ADMIT_ANY): drop_for(EV_DROP_MALFORMED);
            /* Admission (../v1model/admission.p4, sgnn_switch::admission), for every frame
             * from outside, before any other check, in its order: the port (a stranger's
             * port, or a worker's port and a frame naming another worker), the address, the
             * job (a daemon's start-up probe on its own port excepted). A link cabled to
             * another switch is trusted as cabled: only its job is checked. A ternary table
             * says "not 0" one bit at a time, so each "differs" below is a row per bit
             * (WORKER_X, ADDR_X, JOB_X); rows above take what they must not. */
#define ADMIT(t, known, wx, dst, link, ax, jx) \
    (SGNN_KEPT, 1, t, 1, _, _, _, _, _, known, wx, _, dst, _, link, ax, jx)
#define WORKER_X(b) ADMIT(_, _, (16w1 << b) &&& (16w1 << b), _, 0, _, _)
#define ADDR_X(b) ADMIT(_, _, _, _, 0, (32w1 << b) &&& (32w1 << b), _)
#define JOB_X(b) ADMIT(_, _, _, _, _, _, (16w1 << b) &&& (16w1 << b))
            ADMIT(_, 0, _, _, 0, _, _): drop_for(EV_DROP_WRONG_PORT);
            WORKER_X(0): drop_for(EV_DROP_WRONG_PORT);
            WORKER_X(1): drop_for(EV_DROP_WRONG_PORT);
            WORKER_X(2): drop_for(EV_DROP_WRONG_PORT);
            WORKER_X(3): drop_for(EV_DROP_WRONG_PORT);
            WORKER_X(4): drop_for(EV_DROP_WRONG_PORT);
            WORKER_X(5): drop_for(EV_DROP_WRONG_PORT);
            WORKER_X(6): drop_for(EV_DROP_WRONG_PORT);
            WORKER_X(7): drop_for(EV_DROP_WRONG_PORT);
            WORKER_X(8): drop_for(EV_DROP_WRONG_PORT);
            WORKER_X(9): drop_for(EV_DROP_WRONG_PORT);
            WORKER_X(10): drop_for(EV_DROP_WRONG_PORT);
            WORKER_X(11): drop_for(EV_DROP_WRONG_PORT);
            WORKER_X(12): drop_for(EV_DROP_WRONG_PORT);
            WORKER_X(13): drop_for(EV_DROP_WRONG_PORT);
            WORKER_X(14): drop_for(EV_DROP_WRONG_PORT);
            WORKER_X(15): drop_for(EV_DROP_WRONG_PORT);
            ADDR_X(0): drop_for(EV_DROP_WRONG_ADDRESS);
            ADDR_X(1): drop_for(EV_DROP_WRONG_ADDRESS);
            ADDR_X(2): drop_for(EV_DROP_WRONG_ADDRESS);
            ADDR_X(3): drop_for(EV_DROP_WRONG_ADDRESS);
            ADDR_X(4): drop_for(EV_DROP_WRONG_ADDRESS);
            ADDR_X(5): drop_for(EV_DROP_WRONG_ADDRESS);
            ADDR_X(6): drop_for(EV_DROP_WRONG_ADDRESS);
            ADDR_X(7): drop_for(EV_DROP_WRONG_ADDRESS);
            ADDR_X(8): drop_for(EV_DROP_WRONG_ADDRESS);
            ADDR_X(9): drop_for(EV_DROP_WRONG_ADDRESS);
            ADDR_X(10): drop_for(EV_DROP_WRONG_ADDRESS);
            ADDR_X(11): drop_for(EV_DROP_WRONG_ADDRESS);
            ADDR_X(12): drop_for(EV_DROP_WRONG_ADDRESS);
            ADDR_X(13): drop_for(EV_DROP_WRONG_ADDRESS);
            ADDR_X(14): drop_for(EV_DROP_WRONG_ADDRESS);
            ADDR_X(15): drop_for(EV_DROP_WRONG_ADDRESS);
            ADDR_X(16): drop_for(EV_DROP_WRONG_ADDRESS);
            ADDR_X(17): drop_for(EV_DROP_WRONG_ADDRESS);
            ADDR_X(18): drop_for(EV_DROP_WRONG_ADDRESS);
            ADDR_X(19): drop_for(EV_DROP_WRONG_ADDRESS);
            ADDR_X(20): drop_for(EV_DROP_WRONG_ADDRESS);
            ADDR_X(21): drop_for(EV_DROP_WRONG_ADDRESS);
            ADDR_X(22): drop_for(EV_DROP_WRONG_ADDRESS);
            ADDR_X(23): drop_for(EV_DROP_WRONG_ADDRESS);
            ADDR_X(24): drop_for(EV_DROP_WRONG_ADDRESS);
            ADDR_X(25): drop_for(EV_DROP_WRONG_ADDRESS);
            ADDR_X(26): drop_for(EV_DROP_WRONG_ADDRESS);
            ADDR_X(27): drop_for(EV_DROP_WRONG_ADDRESS);
            ADDR_X(28): drop_for(EV_DROP_WRONG_ADDRESS);
            ADDR_X(29): drop_for(EV_DROP_WRONG_ADDRESS);
            ADDR_X(30): drop_for(EV_DROP_WRONG_ADDRESS);
            ADDR_X(31): drop_for(EV_DROP_WRONG_ADDRESS);
            ADMIT(TYPE_ACK, _, _, PROBE_DST, 0, _, _): go(V_PASS_ON);
            JOB_X(0): drop_for(EV_DROP_FOREIGN_JOB);
            JOB_X(1): drop_for(EV_DROP_FOREIGN_JOB);
            JOB_X(2): drop_for(EV_DROP_FOREIGN_JOB);
            JOB_X(3): drop_for(EV_DROP_FOREIGN_JOB);
            JOB_X(4): drop_for(EV_DROP_FOREIGN_JOB);
            JOB_X(5): drop_for(EV_DROP_FOREIGN_JOB);
            JOB_X(6): drop_for(EV_DROP_FOREIGN_JOB);
            JOB_X(7): drop_for(EV_DROP_FOREIGN_JOB);
            JOB_X(8): drop_for(EV_DROP_FOREIGN_JOB);
            JOB_X(9): drop_for(EV_DROP_FOREIGN_JOB);
            JOB_X(10): drop_for(EV_DROP_FOREIGN_JOB);
            JOB_X(11): drop_for(EV_DROP_FOREIGN_JOB);
            JOB_X(12): drop_for(EV_DROP_FOREIGN_JOB);
            JOB_X(13): drop_for(EV_DROP_FOREIGN_JOB);
            JOB_X(14): drop_for(EV_DROP_FOREIGN_JOB);
            JOB_X(15): drop_for(EV_DROP_FOREIGN_JOB);
#undef JOB_X
#undef ADDR_X
#undef WORKER_X
#undef ADMIT
            // A numbered first pass from its worker's port: the seq check (recovery.p4).
            (SGNN_KEPT, 1, TYPE_DATA, 1, 0, 0, 0, 0, _, OWN_PORT, _, SEQ_VALID &&& SEQ_VALID, _ ADMIT_ANY):
                seq_check();
            (SGNN_KEPT, 1, TYPE_DATA, 1, 0, 0, 0, _, _, _, _, _, _, _ ADMIT_ANY): go(V_AGGREGATE);
            (SGNN_KEPT, 1, TYPE_DATA, 1, 0, 0, _, 1, _, _, _, _, _, _ ADMIT_ANY): go(V_AGGREGATE);
            (SGNN_KEPT, 1, TYPE_DATA, 1, 0, 0, _, _, _, _, _, _, _, _ ADMIT_ANY): drop_for(EV_DROP_UNEXPECTED);
            (SGNN_KEPT, 1, TYPE_DATA, 1, _, _, _, _, _, _, _, _, _, _ ADMIT_ANY): drop_for(EV_DROP_STALE);
            // A NACK's second pass (a Data frame's or a probe's).
            (SGNN_KEPT, 1, TYPE_DATA, 0, _, _, _, _, PASS_NACK, _, _, _, _, _ ADMIT_ANY): seq_second_pass();
            (SGNN_KEPT, 1, TYPE_ACK, 0, _, _, _, _, PASS_NACK, _, _, _, _, _ ADMIT_ANY): seq_second_pass();
            (SGNN_KEPT, 1, TYPE_DATA, 0, _, _, _, _, _, _, _, _, _, _ ADMIT_ANY): go(V_AGGREGATE);
            (SGNN_KEPT, 1, TYPE_BLOCK_DONE, _, _, _, _, _, _, _, _, _, _, _ ADMIT_ANY): go(V_BLOCK_DONE);
            // A tail probe: from its worker's port, a known worker; answered (recovery.p4).
            (SGNN_KEPT, 1, TYPE_ACK, 1, _, _, _, _, _, OWN_PORT, IN_RANGE, SEQ_PROBE, _ ADMIT_ANY):
                seq_probed();
            (SGNN_KEPT, 1, TYPE_ACK, 1, _, _, _, _, _, OWN_PORT, _, SEQ_PROBE, _ ADMIT_ANY):
                drop_for(EV_DROP_UNKNOWN_WORKER);
            (SGNN_KEPT, 1, TYPE_ACK, _, _, _, _, _, _, _, _, _, SEQ_PROBE, _ ADMIT_ANY):
                drop_for(EV_DROP_WRONG_PORT);
            (SGNN_KEPT, 1, TYPE_ACK, _, _, _, _, _, _, _, _, _, _, _ ADMIT_ANY): go(V_PASS_ON);
            // A pull (recovery.p4's Pull): for the switch's current block, else stale.
            (SGNN_KEPT, 1, TYPE_FETCH_REQ, _, 0, 0, _, _, _, _, _, _, _, 0 ADMIT_ANY): go(V_PULL);
            (SGNN_KEPT, 1, TYPE_FETCH_REQ, _, _, _, _, _, _, _, _, _, _, 0 ADMIT_ANY):
                drop_for(EV_DROP_STALE);
            (SGNN_KEPT, 1, TYPE_FETCH_REQ, _, _, _, _, _, _, _, _, _, _, _ ADMIT_ANY): go(V_PASS_ON);
            (SGNN_KEPT, 1, TYPE_BYPASS, _, _, _, _, _, _, _, _, _, _, _ ADMIT_ANY): go(V_PASS_ON);
            (SGNN_KEPT, 1, _, _, _, _, _, _, _, _, _, _, _, _ ADMIT_ANY): drop_for(EV_DROP_UNEXPECTED);
            // Only a host's frame gets here: the drop simulator took it.
            (IPV4_OK, IP_PROTO_SWITCHGNN, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _ ADMIT_ANY):
                drop_for(EV_DROP_SIMULATED);
            (IPV4_OK, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _ ADMIT_ANY): go(V_FORWARD);
            (true, ETHERTYPE_IPV4, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _ ADMIT_ANY):
                drop_for(EV_DROP_MALFORMED);
        }
#undef ADMIT_ANY
#undef IN_RANGE
#undef OWN_PORT
#undef SGNN_KEPT
#undef IPV4_OK
        const default_action = drop_for(EV_DROP_NOT_IPV4);
        size = 96;
    }

    /* dst_addr ^ switch_ip, through the hash unit (no field copied out of a header). */
    Hash<bit<32>>(HashAlgorithm_t.XOR32) pull_hash;
    @hidden action pull_of() {
        meta.pull_x = pull_hash.get({hdr.ipv4.dst_addr, meta.cfg.switch_ip});
    }

    Random<bit<32>>() rng;
    @hidden action draw() { meta.sim_rand = rng.get(); }

    apply {
        draw();
        switch_config.apply(meta);
        aggregation_tags.apply(hdr, meta);
        if (hdr.sgnn.isValid()) {
            if (hdr.sgnn.pkt_type == TYPE_DATA || hdr.sgnn.pkt_type == TYPE_FETCH_REQ) {
                agg_lookup.apply(hdr, meta);
            }
        }
        pull_of();
        seq_operands.apply(hdr, meta);
        current_block.apply(hdr, meta);
        port_worker.apply(meta, ig_intr_md);
        // A BlockDone's answer (a stale worker's BlockAdvance) and a NACK go to the worker
        // the frame names; a Data frame's dst_worker is agg_table's.
        if (hdr.sgnn.isValid()) {
            if (hdr.sgnn.pkt_type == TYPE_BLOCK_DONE || hdr.sgnn.pkt_type == TYPE_ACK
                || meta.pass_kind == PASS_NACK) {
                meta.dst_worker = hdr.sgnn.worker_id;
            }
        }
        // Nothing leaves unless a control below sends it.
        ig_dprsr_md.drop_ctl = 1;
        // Read at the end; set here as well as in the parser, because the compiler may
        // overlay parser-initialised metadata with extracted header bytes (it warns).
        meta.count_event = 0;
        meta.to_worker = 0;
        meta.to_recirc = 0;
        meta.seq_out = 0;
        hdr.bridge_kind.setValid();
        hdr.bridge_kind.kind = EG_BRIDGED;
        hdr.bridge.setValid();
        hdr.bridge.switch_mac = meta.cfg.switch_mac;
        hdr.bridge.switch_ip = meta.cfg.switch_ip;
        hdr.bridge.ecn_threshold = meta.cfg.ecn_threshold;
        hdr.bridge.lane_op = LANE_NONE;
        hdr.bridge.fresh = 0;
        hdr.bridge.originated = 0;
        hdr.bridge.advance_mc = 0;
        hdr.bridge.replica_mc = 0;
        hdr.bridge.result = 0;
        hdr.bridge.agg_idx = 0;
        check_frame.apply(hdr, meta);
        // The inputs of the verdict, each computed from the parser's fields, switch_config
        // and the block registers, ready by stage 2 (docs/tofino.md, "Design").
        drop_simulator.apply(hdr, meta);
        xor_keys();
        block_sync_prep.apply(hdr, meta);
        verdict.apply();
        // The port of dst_worker, looked up before the decisions below (which do not
        // change dst_worker) so it is ready for out_port.
        worker_port.apply(meta, ig_tm_md, ig_dprsr_md);

        if (meta.verdict == V_AGGREGATE && meta.seq_out[31:16] == 0) {
            aggregation.apply(hdr, meta, ig_tm_md, ig_dprsr_md);
        } else if (meta.verdict == V_BLOCK_DONE) {
            block_sync.apply(hdr, meta, ig_tm_md, ig_dprsr_md);
        } else if (meta.verdict == V_PULL) {
            pull.apply(hdr, meta);
        } else if (meta.verdict == V_PASS_ON) {
            // A daemon's start-up probe learns the plan tag and the switch's block.
            if (hdr.sgnn.pkt_type == TYPE_ACK && hdr.sgnn.dst_id == PROBE_DST) {
                hdr.sgnn.src_id = meta.cfg.plan_tag;
                hdr.sgnn.job = meta.cfg.job;
                hdr.sgnn.round = meta.sync_round;
                hdr.sgnn.block_id = meta.sync_block;
            }
        } else {
            // The seq check's second half (recovery.p4), for a numbered Data frame that
            // revealed a gap (seq_next answered: it becomes the NACK and touches no
            // aggregator, so its retransmission is its first copy), a tail probe and a NACK's
            // second pass; its tables match nothing else.
            recovery.apply(hdr, meta);
        }
        // The lookups of where a packet may go run beside the decisions above; the last
        // decision picks one.
        if (meta.verdict == V_FORWARD || meta.verdict == V_PASS_ON) {
            ipv4_forward.apply(hdr, meta, ig_tm_md, ig_dprsr_md);
        }
        out_port.apply();
        if (meta.ipv4_ok) {
            priority.apply(hdr, ig_tm_md);
        }
        counters.apply(meta, ig_intr_md);
    }
}

control SgnnEgress(inout eg_headers_t hdr,
                   inout eg_metadata_t meta,
                   in egress_intrinsic_metadata_t eg_intr_md,
                   in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                   inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                   inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    AggregationEgress() aggregation_egress;
    BlockSyncEgress() block_sync_egress;
    SwitchFrameEgress() switch_frame;
    Ecn() ecn;
    EgressCounters() counters;

    apply {
        bool sent = false;
        if (hdr.mirror.isValid()) {
            // The mirror copy of a pass: back to its Data header, round as the next pass
            // (or the harvest pass); the mirror session sends it to RECIRC_PORT.
            hdr.sgnn.version = hdr.mirror.version;
            hdr.sgnn.pkt_type = hdr.mirror.pkt_type;
            hdr.sgnn.ack = hdr.mirror.ack;
            hdr.sgnn.fetch = hdr.mirror.fetch;
            hdr.sgnn.ecn = hdr.mirror.ecn;
            hdr.sgnn.resend = hdr.mirror.resend;
            hdr.sgnn.flags_rsvd = hdr.mirror.next_kind;
            hdr.sgnn.dst_id = hdr.mirror.dst_id;
            hdr.sgnn.pass = hdr.mirror.pass;
            EVENT(EV_RECIRCULATED);
        } else if (hdr.bridge.isValid()) {
            if (hdr.bridge.lane_op != LANE_NONE) {
                aggregation_egress.apply(hdr, meta);
            }
            if (eg_intr_md.egress_port != RECIRC_PORT) {
                sent = true;
            }
            meta.dst_worker = hdr.bridge.dst_worker;
            if (hdr.bridge.originated == 1) {
                if (hdr.bridge.advance_mc == 1) {
                    block_sync_egress.apply(hdr, meta, eg_intr_md);
                }
                if (hdr.bridge.replica_mc == 1) {
                    meta.dst_worker = eg_intr_md.egress_rid;
                    EVENT(EV_DELIVERED);
                }
                switch_frame.apply(hdr, meta, eg_dprsr_md, sent);
                if (sent) {
                    ecn.apply(hdr, meta, eg_intr_md);
                    if (hdr.sgnn.ecn == 1 && hdr.bridge.replica_mc == 0) {
                        EVENT(EV_ECN_MARKED);
                    }
                }
            }
        }
        counters.apply(meta, eg_intr_md, sent);
    }
}

Pipeline(SgnnIngressParser(),
         SgnnIngress(),
         SgnnIngressDeparser(),
         SgnnEgressParser(),
         SgnnEgress(),
         SgnnEgressDeparser()) pipe;

Switch(pipe) main;
