/* forwarding.p4: where frames go and how switch frames are addressed.
 *
 * Ingress: ipv4_forward (plain IPv4 and host-to-host SwitchGNN: Ack, FetchReq, Bypass,
 * forwarded byte for byte), worker_table (the port of a worker the switch sends to) and
 * port_worker (what is at the other end of a port: a worker, a link cabled to another
 * switch, or, with no entry, a stranger; admission.p4).
 * Egress: worker_addr and the rewrite of the Ethernet and IPv4 headers of every frame the
 * switch originates (softswitch::Pipeline::send_to_worker), with switch_config's switch_mac
 * and switch_ip (meta.cfg). */
#ifndef SGNN_FORWARDING_P4
#define SGNN_FORWARDING_P4

control Ipv4Forward(inout headers_t hdr,
                    inout metadata_t meta,
                    inout standard_metadata_t sm) {
    @name(".forward") @id(4)
    action forward(bit<9> port) {
        sm.egress_spec = port;
        events.count(EV_FORWARDED);
    }

    @name(".ipv4_forward") @id(3)
    table ipv4_forward {
        key = { hdr.ipv4.dst_addr: exact @name("dst_addr"); }
        actions = { forward; @defaultonly NoAction; }
        const default_action = NoAction();
        size = IPV4_FORWARD_SIZE;
    }

    apply {
        if (!ipv4_forward.apply().hit) {
            events.count(EV_DROP_NO_ROUTE);   // egress_spec stays the drop port
        }
    }
}

/* What is at the other end of the ingress port (sgnn_switch::forwarding::PortEnd): a
 * worker (set_port_worker, the inverse of worker_table), or a link the fabric plan cables to
 * another switch (set_port_link, with that switch's peer id). `known` is false for a port
 * with no entry: a stranger's, on every role (admission.p4). `worker` is the port's sender:
 * a BlockDone counts only if it comes in on the port of the worker, or the link of the
 * peer, it names (a stray or forged frame must not advance, or be answered for, another). */
control PortWorker(in standard_metadata_t sm,
                   out bool known,
                   out bool link,
                   out bit<16> worker) {
    bit<16> w = 0;
    bool l = false;
    @name(".set_port_worker") @id(9)
    action set_port_worker(bit<16> worker_id) {
        w = worker_id;
    }

    @name(".set_port_link") @id(12)
    action set_port_link(bit<16> peer_id) {
        w = peer_id;
        l = true;
    }

    @name(".port_worker") @id(7)
    table port_worker {
        key = { sm.ingress_port: exact @name("port"); }
        actions = { set_port_worker; set_port_link; @defaultonly NoAction; }
        const default_action = NoAction();
        size = MAX_WORKERS;
    }

    apply {
        known = port_worker.apply().hit;
        link = l;
        worker = w;
    }
}

/* The port of meta.dst_worker, for unicast frames the switch builds (Result, Bypass, the
 * block-advance answering a stale block-done). Block-advance to all workers uses
 * multicast group 1 instead. */
control WorkerPort(inout headers_t hdr,
                   inout metadata_t meta,
                   inout standard_metadata_t sm) {
    @name(".set_worker") @id(3)
    action set_worker(bit<9> port) {
        sm.egress_spec = port;
    }

    @name(".worker_table") @id(2)
    table worker_table {
        key = { meta.dst_worker: exact @name("worker_id"); }
        actions = { set_worker; @defaultonly NoAction; }
        const default_action = NoAction();
        size = MAX_WORKERS;
    }

    apply {
        if (!worker_table.apply().hit) {
            events.count(EV_DROP_UNKNOWN_WORKER);
            mark_to_drop(sm);
        }
    }
}

/* Addresses a switch frame to meta.dst_worker (egress_rid for multicast replicas, set by
 * BlockSyncEgress before this runs). A worker without a worker_addr entry: the frame is
 * dropped and counted drop_unknown_worker (sent = false; it is then neither ECN-marked
 * nor counted as sent), as Pipeline::egress_to_worker. */
control SwitchFrameEgress(inout headers_t hdr,
                          inout metadata_t meta,
                          inout standard_metadata_t sm,
                          out bool sent) {
    @name(".set_worker_addr") @id(6)
    action set_worker_addr(bit<48> mac, bit<32> ip) {
        meta.worker_mac = mac;
        meta.worker_ip = ip;
    }

    @name(".worker_addr") @id(5)
    table worker_addr {
        key = { meta.dst_worker: exact @name("worker_id"); }
        actions = { set_worker_addr; @defaultonly NoAction; }
        const default_action = NoAction();
        size = MAX_WORKERS;
    }

    apply {
        sent = worker_addr.apply().hit;
        if (!sent) {
            events.count(EV_DROP_UNKNOWN_WORKER);
            mark_to_drop(sm);
            return;
        }

        hdr.ethernet.dst_addr = meta.worker_mac;
        hdr.ethernet.src_addr = meta.cfg.switch_mac;
        hdr.ethernet.ether_type = ETHERTYPE_IPV4;

        // Every IPv4 field as sgnn_wire::ipv4::Repr::emit writes it; DSCP stays that of
        // the frame that caused this one, ECN is set by Ecn, the checksum in
        // SgnnComputeChecksum. The length is the one ingress left: most frames are
        // rewritten in place (Data -> Result/Bypass, BlockDone -> BlockAdvance keep their
        // length); a NACK drops the lanes and a pull's answer adds them (recovery.p4,
        // aggregation.p4), each setting total_len.
        hdr.ipv4.version = 4;
        hdr.ipv4.ihl = 5;
        hdr.ipv4.identification = 0;
        hdr.ipv4.flags = IPV4_FLAGS_DF;
        hdr.ipv4.frag_offset = 0;
        hdr.ipv4.ttl = SWITCH_TTL;
        hdr.ipv4.protocol = IP_PROTO_SWITCHGNN;
        hdr.ipv4.src_addr = meta.cfg.switch_ip;
        hdr.ipv4.dst_addr = meta.worker_ip;

        // Drop Ethernet padding the causing frame may have had: the frame is exactly
        // 14 + total length bytes, as the software switch builds it.
        truncate(ETHERNET_HEADER_LEN + (bit<32>)hdr.ipv4.total_len);
    }
}

#endif
