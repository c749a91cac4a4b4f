/* parser.p4: the parsers and deparsers of both gresses, and CheckFrame.
 *
 * Ingress extracts as ../v1model/parser.p4 does and never rejects; the IPv4 checksum is
 * verified by the parser's checksum engine on SwitchGNN frames. A frame from the
 * recirculation port is one of the switch's own passes: flags_rsvd says which (config.p4).
 * Egress parses the bridge or mirror header ingress put in front of Ethernet, and the
 * headers up to the SwitchGNN header (the lanes ride as payload: egress never reads them). */
#ifndef SGNN_TNA_PARSER_P4
#define SGNN_TNA_PARSER_P4

parser SgnnIngressParser(packet_in pkt,
                         out headers_t hdr,
                         out ig_metadata_t meta,
                         out ingress_intrinsic_metadata_t ig_intr_md) {
    Checksum() ipv4_csum;

    state start {
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        transition select(ig_intr_md.ingress_port) {
            RECIRC_PORT: start_own_pass;
            default: start_from_host;
        }
    }

    state start_own_pass {
        meta.from_host = false;
        meta.host = 0;
        transition init_metadata;
    }

    state start_from_host {
        meta.from_host = true;
        meta.host = 1;
        transition init_metadata;
    }

    state init_metadata {
        meta.pass_kind = PASS_NEXT;
        meta.csum_ok = false;
        meta.ipv4_ok = false;
        meta.sgnn_ok = 0;
        meta.to_worker = 0;
        meta.to_recirc = 0;
        meta.duplicate = 0;
        meta.fresh = 0;
        meta.tag_fresh = 0;
        meta.gen_op = GEN_SAME;
        meta.mirror_next = 0;
        meta.count_event = 0;
        meta.more = 0;
        meta.agg_op = OP_NONE;
        meta.do_seen = 0;
        meta.do_tag = 0;
        meta.next_pass = 0;
        meta.idx_ok = 0;
        meta.seen_bad = 0;
        meta.recirc_next = 0;
        meta.bs_report = 0;
        meta.done_now = 0;
        meta.fwd_hit = 0;
        meta.worker_hit = 0;
        meta.sim_every = 0;
        meta.sim_below = 0;
        meta.seq_out = 0;
        transition parse_ethernet;
    }

    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        ipv4_csum.add(hdr.ipv4);
        meta.csum_ok = ipv4_csum.verify();
        transition select(hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.protocol) {
            (4, 5, IP_PROTO_SWITCHGNN): parse_sgnn;
            default: accept;
        }
    }

    state parse_sgnn {
        pkt.extract(hdr.sgnn);
        transition select(ig_intr_md.ingress_port) {
            RECIRC_PORT: parse_own_pass;
            default: parse_payload;
        }
    }

    state parse_own_pass {
        meta.pass_kind = hdr.sgnn.flags_rsvd;
        transition parse_payload;
    }

    state parse_payload {
        transition select(hdr.sgnn.pkt_type) {
            TYPE_DATA: parse_lanes;
            TYPE_RESULT: parse_lanes;
            TYPE_BYPASS: parse_lanes;
            default: accept;
        }
    }

    state parse_lanes {
        pkt.extract(hdr.lanes);
        transition accept;
    }
}

/* What sgnn_wire accepts (../v1model/parser.p4's CheckFrame), less the check of the
 * frame's length against the bytes received: a Tofino ingress does not know the packet
 * length. A frame shorter than its headers fails extraction instead (the lanes header is
 * then invalid, which the length rule below catches for Data).
 *
 * A Tofino computes no boolean expression into a variable and its gateways compare no
 * booleans, so the rules are if-statements, and the header's own rules (version, type
 * against the ack and fetch flags) are one lookup in a constant table. */
control CheckFrame(in headers_t hdr, inout ig_metadata_t meta) {
    @hidden action sgnn_frame_ok() {
        meta.sgnn_ok = 1;
    }

    /* Every rule of a SwitchGNN frame in one table, so its verdict is known one stage after
     * the parser (the frame verdict in switchgnn.p4 reads it with the IPv4 rules):
     * - (version, type, ack, fetch): the combinations sgnn_wire accepts, ack set exactly on
     *   Acks, fetch exactly on FetchReqs (the job field, bytes 22..24, is any value: this
     *   program does not check it yet, docs/tofino.md);
     * - the IPv4 payload is the SwitchGNN header, and the lanes where the type has them;
     * - not a fragment, frac_bits <= MAX_FRAC_BITS (31 is refused first; the entries that
     *   accept match 0..31), a valid IPv4 checksum;
     * - flags_rsvd 0, unless the frame is one of the switch's own passes. */
    @stage(0) @hidden table sgnn_frame {
        key = {
            hdr.sgnn.version:      ternary;
            hdr.sgnn.pkt_type:     ternary;
            hdr.sgnn.ack:          ternary;
            hdr.sgnn.fetch:        ternary;
            hdr.sgnn.frac_bits:    ternary;
            hdr.sgnn.flags_rsvd:   ternary;
            hdr.lanes.isValid():   ternary;
            hdr.ipv4.total_len:    ternary;
            hdr.ipv4.flags:        ternary;
            hdr.ipv4.frag_offset:  ternary;
            meta.csum_ok:          ternary;
            meta.host:             ternary;
        }
        actions = { sgnn_frame_ok; NoAction; }
        const entries = {
            (_, _, _, _, MAX_FRAC_BITS + 1, _, _, _, _, _, _, _): NoAction();
#define SGNN_FRAME_OK(t, ack, fetch) \
            (SGNN_VERSION, t, ack, fetch, 0 &&& 0xe0, 0, true, IPV4_HEADER_LEN + SGNN_LANES_LEN, \
             0 &&& 1, 0, true, _): sgnn_frame_ok(); \
            (SGNN_VERSION, t, ack, fetch, 0 &&& 0xe0, _, true, IPV4_HEADER_LEN + SGNN_LANES_LEN, \
             0 &&& 1, 0, true, 0): sgnn_frame_ok(); \
            (SGNN_VERSION, t, ack, fetch, 0 &&& 0xe0, 0, false, IPV4_HEADER_LEN + SGNN_HEADER_LEN, \
             0 &&& 1, 0, true, _): sgnn_frame_ok(); \
            (SGNN_VERSION, t, ack, fetch, 0 &&& 0xe0, _, false, IPV4_HEADER_LEN + SGNN_HEADER_LEN, \
             0 &&& 1, 0, true, 0): sgnn_frame_ok();
            SGNN_FRAME_OK(TYPE_DATA, 0, 0)
            SGNN_FRAME_OK(TYPE_RESULT, 0, 0)
            SGNN_FRAME_OK(TYPE_ACK, 1, 0)
            SGNN_FRAME_OK(TYPE_FETCH_REQ, 0, 1)
            SGNN_FRAME_OK(TYPE_BYPASS, 0, 0)
            SGNN_FRAME_OK(TYPE_BLOCK_DONE, 0, 0)
            SGNN_FRAME_OK(TYPE_BLOCK_ADVANCE, 0, 0)
#undef SGNN_FRAME_OK
        }
        const default_action = NoAction();
        size = 32;
    }

    /* total_len >= IPV4_HEADER_LEN as a table can test it: the saturating shortfall,
     * computed in an action, is 0 (the frame verdict keys on it). */
    @hidden action ipv4_short_by() { meta.short_by = IPV4_HEADER_LEN |-| hdr.ipv4.total_len; }

    apply {
        meta.sgnn_ok = 0;
        ipv4_short_by();
        if (hdr.sgnn.isValid()) {
            sgnn_frame.apply();
        }
        // For the priority queues, which serve every well-formed IPv4 frame.
        meta.ipv4_ok = false;
        if (hdr.ipv4.isValid() && hdr.ipv4.version == 4 && hdr.ipv4.ihl == 5) {
            if (meta.short_by == 0) {
                meta.ipv4_ok = true;
            }
        }
    }
}

control SgnnIngressDeparser(packet_out pkt,
                            inout headers_t hdr,
                            in ig_metadata_t meta,
                            in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    Mirror() mirror;

    apply {
        if (ig_dprsr_md.mirror_type == MIRROR_NEXT_PASS) {
            mirror.emit<mirror_h>(meta.mirror_session,
                {meta.mirror_hdr_kind, hdr.sgnn.version, TYPE_DATA, 0, 0,
                 meta.mirror_ecn, meta.mirror_resend, meta.mirror_kind,
                 meta.mirror_dst_id, meta.mirror_pass});
        }
        pkt.emit(hdr);
    }
}

parser SgnnEgressParser(packet_in pkt,
                        out eg_headers_t hdr,
                        out eg_metadata_t meta,
                        out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        pkt.extract(eg_intr_md);
        meta.dst_worker = 0;
        meta.result_ecn = 0;
        meta.state_out = AGG_FREE;
        meta.count_event = 0;
        transition select(pkt.lookahead<bit<8>>()) {
            EG_MIRROR: parse_mirror;
            default: parse_bridge;
        }
    }

    /* Whether a mirror copy holds the bridge header ingress emitted is the Tofino's
     * business: both are parsed. */
    state parse_mirror {
        pkt.extract(hdr.mirror);
        transition select(pkt.lookahead<bit<8>>()) {
            EG_BRIDGED: parse_bridge;
            default: parse_ethernet;
        }
    }

    state parse_bridge {
        pkt.extract(hdr.bridge_kind);
        pkt.extract(hdr.bridge);
        transition parse_ethernet;
    }

    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.protocol) {
            (4, 5, IP_PROTO_SWITCHGNN): parse_sgnn;
            default: accept;
        }
    }

    state parse_sgnn {
        pkt.extract(hdr.sgnn);
        transition accept;
    }
}

/* Frames the switch builds get a fresh IPv4 checksum (addresses rewritten in egress);
 * forwarded frames and recirculated passes keep their bytes. */
control SgnnEgressDeparser(packet_out pkt,
                           inout eg_headers_t hdr,
                           in eg_metadata_t meta,
                           in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    Checksum() ipv4_csum;

    apply {
        if (hdr.bridge.originated == 1) {
            hdr.ipv4.hdr_checksum = ipv4_csum.update({
                hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
                hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
                hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
                hdr.ipv4.src_addr, hdr.ipv4.dst_addr });
        }
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.sgnn);
    }
}

#endif
