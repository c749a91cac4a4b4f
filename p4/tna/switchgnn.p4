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
    WorkerPort() worker_port;
    PortWorker() port_worker;
    IngressCounters() counters;

    apply {
        switch_config.apply(meta);
        aggregation_tags.apply(hdr, meta);
        if (hdr.sgnn.isValid() && hdr.sgnn.pkt_type == TYPE_DATA) {
            agg_lookup.apply(hdr, meta);
        }
        current_block.apply(hdr, meta);
        port_worker.apply(meta, ig_intr_md);
        // Nothing leaves unless a control below sends it.
        ig_dprsr_md.drop_ctl = 1;
        // Read at the end; set here as well as in the parser, because the compiler may
        // overlay parser-initialised metadata with extracted header bytes (it warns).
        meta.count_event = 0;
        meta.to_worker = 0;
        meta.to_recirc = 0;
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

        bool forward = false;
        if (!hdr.ethernet.isValid() || hdr.ethernet.ether_type != ETHERTYPE_IPV4) {
            EVENT(EV_DROP_NOT_IPV4);
        } else if (!meta.ipv4_ok) {
            EVENT(EV_DROP_MALFORMED);
        } else if (hdr.ipv4.protocol != IP_PROTO_SWITCHGNN) {
            forward = true;
        } else {
            bool simulated_drop = false;
            if (meta.from_host) {
                drop_simulator.apply(meta.cfg, simulated_drop);
            }
            if (simulated_drop) {
                EVENT(EV_DROP_SIMULATED);
            } else if (!meta.sgnn_ok) {
                EVENT(EV_DROP_MALFORMED);
            } else {
                bit<4> t = hdr.sgnn.pkt_type;
                if (t == TYPE_DATA) {
                    bool accepted = true;
                    if (meta.from_host) {
                        if (hdr.sgnn.round != meta.sync_round
                                || hdr.sgnn.block_id != meta.sync_block) {
                            EVENT(EV_DROP_STALE);
                            accepted = false;
                        } else if (hdr.sgnn.pass != 0 && hdr.sgnn.resend == 0) {
                            EVENT(EV_DROP_UNEXPECTED);
                            accepted = false;
                        }
                    }
                    if (accepted) {
                        aggregation.apply(hdr, meta, ig_tm_md, ig_dprsr_md);
                    }
                } else if (t == TYPE_BLOCK_DONE) {
                    block_sync.apply(hdr, meta, ig_tm_md, ig_dprsr_md);
                } else if (t == TYPE_ACK || t == TYPE_FETCH_REQ || t == TYPE_BYPASS) {
                    // A daemon's start-up probe learns the plan tag and the switch's block.
                    if (t == TYPE_ACK && hdr.sgnn.dst_id == PROBE_DST) {
                        hdr.sgnn.src_id = meta.cfg.plan_tag;
                        hdr.sgnn.round = meta.sync_round;
                        hdr.sgnn.block_id = meta.sync_block;
                    }
                    forward = true;
                } else {
                    EVENT(EV_DROP_UNEXPECTED);
                }
            }
        }

        if (forward) {
            ipv4_forward.apply(hdr, meta, ig_tm_md, ig_dprsr_md);
        }
        if (meta.to_worker == 1) {
            hdr.bridge.dst_worker = meta.dst_worker;
            worker_port.apply(meta, ig_tm_md, ig_dprsr_md);
        }
        if (meta.to_recirc == 1) {
            ig_tm_md.ucast_egress_port = RECIRC_PORT;
            ig_dprsr_md.drop_ctl = 0;
        }
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
