/* forwarding.p4: where frames go and how switch frames are addressed, as
 * ../v1model/forwarding.p4: ipv4_forward, worker_table and port_worker in ingress, worker_addr and the
 * rewrite of switch frames in egress. */
#ifndef SGNN_TNA_FORWARDING_P4
#define SGNN_TNA_FORWARDING_P4

control Ipv4Forward(inout headers_t hdr,
                    inout ig_metadata_t meta,
                    inout ingress_intrinsic_metadata_for_tm_t ig_tm_md,
                    inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    @name(".forward") @id(4)
    action forward(bit<9> port) {
        meta.fwd_hit = 1;
        meta.fwd_port = port;
    }

    @name(".ipv4_forward") @id(3)
    table ipv4_forward {
        key = { hdr.ipv4.dst_addr: exact @name("dst_addr"); }
        actions = { forward; @defaultonly NoAction; }
        const default_action = NoAction();
        size = IPV4_FORWARD_SIZE;
    }

    /* The route is used, and counted, by SgnnIngress's last decision. */
    apply {
        ipv4_forward.apply();
    }
}

/* The worker on the ingress port (../v1model/forwarding.p4's PortWorker): looked up for
 * every frame at the top of ingress, so BlockSync's verdict does not wait for it. */
control PortWorker(inout ig_metadata_t meta, in ingress_intrinsic_metadata_t ig_intr_md) {
    @name(".set_port_worker") @id(9)
    action set_port_worker(bit<16> worker_id) {
        meta.port_known = 1;
        meta.port_worker = worker_id;
        // Moves, no arithmetic on action data (a second stage): WORKER_NET's low half is 0.
        meta.port_addr[31:16] = WORKER_NET[31:16];
        meta.port_addr[15:0] = worker_id;
    }

    /* A link cabled to another switch (../v1model/forwarding.p4): the admission rule trusts
     * it as cabled (only its job is checked). The TNA program plays no fabric role yet
     * (docs/tofino.md): the verdict's checks of a worker's own port (port_known) do not
     * match a link. */
    @name(".set_port_link") @id(12)
    action set_port_link(bit<16> peer_id) {
        meta.port_known = 0;
        meta.port_link = 1;
    }

    @name(".port_worker") @id(7)
    table port_worker {
        key = { ig_intr_md.ingress_port: exact @name("port"); }
        actions = { set_port_worker; set_port_link; @defaultonly NoAction; }
        const default_action = NoAction();
        size = MAX_WORKERS;
    }

    apply {
        meta.port_known = 0;
        meta.port_worker = 0;
        meta.port_addr = 0;
        meta.port_link = 0;
        port_worker.apply();
    }
}

/* The port of meta.dst_worker for unicast frames the switch builds. */
control WorkerPort(inout ig_metadata_t meta,
                   inout ingress_intrinsic_metadata_for_tm_t ig_tm_md,
                   inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    @name(".set_worker") @id(3)
    action set_worker(bit<9> port) {
        meta.worker_hit = 1;
        meta.worker_port = port;
    }

    @name(".worker_table") @id(2)
    @stage(4)
    table worker_table {
        key = { meta.dst_worker: exact @name("worker_id"); }
        actions = { set_worker; @defaultonly NoAction; }
        const default_action = NoAction();
        size = MAX_WORKERS;
    }

    /* Looked up for every packet once dst_worker is final; used by SgnnIngress's last
     * decision. */
    apply {
        worker_table.apply();
    }
}

/* Addresses a switch frame to meta.dst_worker; a worker without a worker_addr entry: the
 * frame is dropped and counted drop_unknown_worker (sent = false). */
control SwitchFrameEgress(inout eg_headers_t hdr,
                          inout eg_metadata_t meta,
                          inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
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
            EVENT(EV_DROP_UNKNOWN_WORKER);
            eg_dprsr_md.drop_ctl = 1;
        } else {
            hdr.ethernet.dst_addr = meta.worker_mac;
            hdr.ethernet.src_addr = hdr.bridge.switch_mac;
            hdr.ethernet.ether_type = ETHERTYPE_IPV4;
            hdr.ipv4.version = 4;
            hdr.ipv4.ihl = 5;
            hdr.ipv4.identification = 0;
            hdr.ipv4.flags = IPV4_FLAGS_DF;
            hdr.ipv4.frag_offset = 0;
            hdr.ipv4.ttl = SWITCH_TTL;
            hdr.ipv4.protocol = IP_PROTO_SWITCHGNN;
            hdr.ipv4.src_addr = hdr.bridge.switch_ip;
            hdr.ipv4.dst_addr = meta.worker_ip;
        }
    }
}

#endif
