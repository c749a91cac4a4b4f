/* switchgnn.p4: the SwitchGNN data plane for bmv2 simple_switch (v1model).
 *
 * Names, ids and behaviour: docs/switch-interface.md. Reference model, packet for packet:
 * switch-ctl/softswitch/src/pipeline/. Design and bmv2 notes: p4/README.md. */
#include <core.p4>
#include <v1model.p4>

#include "config.p4"
#include "headers.p4"
#include "counters.p4"
#include "parser.p4"
#include "switch_config.p4"
#include "admission.p4"
#include "forwarding.p4"
#include "priority.p4"
#include "drop_simulator.p4"
#include "aggregation.p4"
#include "block_sync.p4"
#include "recovery.p4"
#include "ecn.p4"

control SgnnIngress(inout headers_t hdr,
                    inout metadata_t meta,
                    inout standard_metadata_t sm) {
    SwitchConfig() switch_config;
    CheckFrame() check_frame;
    Priority() priority;
    Ipv4Forward() ipv4_forward;
    DropSimulator() drop_simulator;
    Aggregation() aggregation;
    BlockSync() block_sync;
    CurrentBlock() current_block;
    WorkerPort() worker_port;
    PortWorker() port_worker;
    Admission() admission;
    Recovery() recovery;

    apply {
        // The settings, for every pass (a recirculated pass starts with fresh metadata).
        switch_config.apply(meta);
        // Nothing leaves unless a control below sends it.
        mark_to_drop(sm);
        bool from_host = sm.instance_type == INSTANCE_NORMAL;
        if (from_host) {
            events.count(EV_RX);
            port_rx.count((bit<32>)sm.ingress_port);
        }
        check_frame.apply(hdr, meta, sm);

        // Each table is applied at one place only (bmv2: one successor per table).
        bool forward = false;
        if (!hdr.ethernet.isValid() || hdr.ethernet.ether_type != ETHERTYPE_IPV4) {
            events.count(EV_DROP_NOT_IPV4);
        } else if (!meta.ipv4_ok) {
            events.count(EV_DROP_MALFORMED);
        } else if (hdr.ipv4.protocol != IP_PROTO_SWITCHGNN) {
            forward = true;
        } else {
            bool simulated_drop = false;
            if (from_host) {
                drop_simulator.apply(meta.cfg, simulated_drop);
            }
            if (simulated_drop) {
                // counted by the drop simulator
            } else if (!meta.sgnn_ok) {
                events.count(EV_DROP_MALFORMED);
            } else {
                bit<4> t = hdr.sgnn.pkt_type;
                // What is on the ingress port: control frames and the seq check take only
                // a worker's own frames; a BlockDone also its link's peer's (a spine's leaf).
                bool known = false;
                bool link = false;
                bit<16> port_w = 0;
                if (from_host) {
                    port_worker.apply(sm, known, link, port_w);
                }
                bool own_port = known && !link && port_w == hdr.sgnn.worker_id;
                bool senders_port = known && port_w == hdr.sgnn.worker_id;
                // Whose port, whose address, whose job (admission.p4), before any control.
                bool admitted = true;
                if (from_host) {
                    admission.apply(hdr, meta, known, link, port_w, admitted);
                }
                // A Data pass or a pull goes through Aggregation, applied at one place only
                // (bmv2 wants one call site per table).
                bool run_aggregation = false;
                // Block synchronisation, applied at one place: a worker's BlockDone, or on a
                // leaf the root spine's BlockAdvance (block_sync.p4).
                bool run_sync = false;
                bool from_root = false;
                if (!admitted) {
                    // counted by admission
                } else if (t == TYPE_DATA) {
                    bool accepted = true;
                    if (from_host) {
                        // Checked once per Data packet, not on its recirculated passes.
                        events.count(EV_DATA);
                        bit<16> sync_r;
                        bit<16> sync_b;
                        current_block.apply(sync_r, sync_b);
                        // A spine's partials were gated by their leaves (a spine other
                        // than the root never learns the block; agg_tag keeps blocks apart).
                        if (meta.cfg.role != ROLE_SPINE
                                && (hdr.sgnn.round != sync_r || hdr.sgnn.block_id != sync_b)) {
                            events.count(EV_DROP_STALE);
                            accepted = false;
                        } else if (hdr.sgnn.pass != 0 && hdr.sgnn.resend == 0) {
                            events.count(EV_DROP_UNEXPECTED);
                            accepted = false;
                        } else if (hdr.sgnn.resend == 0 && own_port
                                   && hdr.sgnn.dst_id[31:31] == 1) {
                            // A sequenced first pass: in order, late, or the frame after a
                            // gap, which becomes the NACK (recovery.p4).
                            bool nack;
                            recovery.apply(hdr, meta, sm, 0, nack);
                            if (nack) {
                                accepted = false;
                            }
                        }
                    }
                    run_aggregation = accepted;
                } else if (t == TYPE_BLOCK_DONE) {
                    if (!senders_port) {
                        events.count(EV_DROP_WRONG_PORT);
                    } else {
                        run_sync = true;
                    }
                } else if (t == TYPE_BLOCK_ADVANCE && meta.cfg.role == ROLE_LEAF
                           && hdr.ipv4.dst_addr == meta.cfg.switch_ip && link) {
                    // The root spine's advance, to this leaf from a link: the root's
                    // (set_port_link(up_peer)) alone; another spine's link is not
                    // (sgnn_switch::admission::from_root).
                    if (port_w != meta.cfg.up_peer) {
                        events.count(EV_DROP_WRONG_PORT);
                    } else {
                        run_sync = true;
                        from_root = true;
                    }
                } else if (t == TYPE_RESULT && hdr.ipv4.dst_addr != meta.cfg.switch_ip
                           && link) {
                    // A spine's Result on its way to a worker under this leaf.
                    forward = true;
                } else if (t == TYPE_ACK && hdr.sgnn.dst_id == SEQ_PROBE) {
                    // A tail probe, answered with a NACK frame, or the all-sent notice to
                    // every worker (recovery.p4).
                    if (!own_port) {
                        events.count(EV_DROP_WRONG_PORT);
                    } else if ((bit<32>)hdr.sgnn.worker_id >= MAX_WORKERS) {
                        events.count(EV_DROP_UNKNOWN_WORKER);
                    } else {
                        events.count(EV_SEQ_PROBED);
                        bool answered;
                        recovery.apply(hdr, meta, sm, 1, answered);
                    }
                } else if (t == TYPE_FETCH_REQ && hdr.ipv4.dst_addr == meta.cfg.switch_ip) {
                    // A pull: the row's aggregator answers (aggregation.p4).
                    bit<16> sync_r;
                    bit<16> sync_b;
                    current_block.apply(sync_r, sync_b);
                    if (hdr.sgnn.round != sync_r || hdr.sgnn.block_id != sync_b) {
                        events.count(EV_DROP_STALE);
                    } else {
                        meta.pull = 1;
                        run_aggregation = true;
                    }
                } else if (t == TYPE_ACK || t == TYPE_FETCH_REQ || t == TYPE_BYPASS) {
                    // Host to host: forwarded byte for byte, except a daemon's start-up
                    // probe, which learns the tag of the plan the tables hold and the block
                    // the switch is at (a switch left mid-run by an earlier job is refused).
                    if (t == TYPE_ACK && hdr.sgnn.dst_id == PROBE_DST) {
                        hdr.sgnn.src_id = meta.cfg.plan_tag;
                        hdr.sgnn.job = meta.cfg.job;
                        current_block.apply(hdr.sgnn.round, hdr.sgnn.block_id);
                    }
                    forward = true;
                } else {
                    // Result, BlockAdvance: only the switch sends these.
                    events.count(EV_DROP_UNEXPECTED);
                }
                if (run_aggregation) {
                    aggregation.apply(hdr, meta, sm);
                }
                if (run_sync) {
                    block_sync.apply(hdr, meta, sm, from_root);
                }
            }
        }

        if (forward) {
            ipv4_forward.apply(hdr, meta, sm);
        }
        if (meta.to_worker == 1) {
            worker_port.apply(hdr, meta, sm);
        }
        if (meta.ipv4_ok) {
            // The queue of whatever leaves; frames the switch builds keep the DSCP of
            // the frame that caused them, so they get its queue.
            priority.apply(hdr, meta, sm);
        }
    }
}

control SgnnEgress(inout headers_t hdr,
                   inout metadata_t meta,
                   inout standard_metadata_t sm) {
    BlockSyncEgress() block_sync_egress;
    SwitchFrameEgress() switch_frame;
    Ecn() ecn;

    apply {
        if (sm.instance_type == INSTANCE_INGRESS_CLONE) {
            // The original Data packet, for its next pass (aggregation.p4).
            hdr.sgnn.pass = meta.next_pass;
            recirculate_preserving_field_list(FL_RECIRC);
        } else {
            bool sent = true;
            if (meta.originated == 1) {
                if (meta.advance_mc == 1) {
                    // Clears sync_done[egress_rid] even if worker_addr then drops the
                    // replica: the model clears every entry whatever it sends.
                    block_sync_egress.apply(hdr, meta, sm);
                }
                if (meta.replica_mc == 1) {
                    // A replicated raw vertex's copy for worker egress_rid (aggregation.p4).
                    meta.dst_worker = sm.egress_rid;
                    events.count(EV_DELIVERED);
                }
                switch_frame.apply(hdr, meta, sm, sent);
                if (sent) {
                    ecn.apply(hdr, meta, sm);
                }
            }
            if (sent) {
                events.count(EV_TX);
                port_tx.count((bit<32>)sm.egress_port);
            }
        }
    }
}

V1Switch(SgnnParser(),
         SgnnVerifyChecksum(),
         SgnnIngress(),
         SgnnEgress(),
         SgnnComputeChecksum(),
         SgnnDeparser()) main;
