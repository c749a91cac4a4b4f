/* parser.p4: parser, checksum verification, the frame checks, checksum update, deparser.
 *
 * The parser only extracts; it never rejects. bmv2 hands a packet whose extraction failed
 * to ingress with standard_metadata.parser_error set, and a bad IPv4 checksum with
 * checksum_error set, so ingress can count every reason where sgnn_wire::frame::parse
 * (and softswitch::Pipeline::process) would: not IPv4 -> drop_not_ipv4; a broken IPv4
 * header -> drop_malformed; IPv4 of another protocol -> forwarded; a SwitchGNN frame is
 * passed through the drop simulator first and only then judged malformed or not. */
#ifndef SGNN_PARSER_P4
#define SGNN_PARSER_P4

parser SgnnParser(packet_in pkt,
                  out headers_t hdr,
                  inout metadata_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        // Only an option-less IPv4 header can carry SwitchGNN (fixed offset).
        transition select(hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.protocol) {
            (4, 5, IP_PROTO_SWITCHGNN): parse_sgnn;
            default: accept;
        }
    }

    state parse_sgnn {
        pkt.extract(hdr.sgnn);
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

/* The IPv4 checksum is checked only where the Rust parser checks it: on SwitchGNN frames.
 * Other IPv4 is forwarded whatever its checksum. */
control SgnnVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        verify_checksum(hdr.ipv4.isValid() && hdr.ipv4.protocol == IP_PROTO_SWITCHGNN,
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
              hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
              hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

/* What sgnn_wire accepts, as two flags (docs/protocol.md, "Validation rules"):
 * ipv4_ok: ipv4::Packet::new_checked (20 header bytes, version 4, IHL 5, 20 <= total
 *          length <= bytes after Ethernet; padding after it is ignored);
 * sgnn_ok: the rest of frame::parse: checksum, no fragment, version 1, type 0..6,
 *          reserved flag bits 0 (the job field is admission.p4's), IS_ACK iff Ack, IS_FETCH iff
 *          FetchReq, frac_bits <= 30, IPv4 payload exactly 24 or 152 bytes for the type.
 * Every check is a plain comparison, so the order of the Rust checks does not matter: all
 * failures count the same drop_malformed. */
control CheckFrame(in headers_t hdr,
                   inout metadata_t meta,
                   in standard_metadata_t sm) {
    apply {
        meta.ipv4_ok = hdr.ipv4.isValid()
            && hdr.ipv4.version == 4
            && hdr.ipv4.ihl == 5
            && hdr.ipv4.total_len >= IPV4_HEADER_LEN
            && (bit<32>)hdr.ipv4.total_len + ETHERNET_HEADER_LEN <= sm.packet_length;

        bit<16> expected_len = SGNN_HEADER_LEN;
        if (hdr.sgnn.pkt_type == TYPE_DATA || hdr.sgnn.pkt_type == TYPE_RESULT
                || hdr.sgnn.pkt_type == TYPE_BYPASS) {
            expected_len = SGNN_LANES_LEN;
        }
        // A truncated frame fails the length check too; parser_error is checked so an
        // extraction failure can never pass as valid.
        meta.sgnn_ok = meta.ipv4_ok
            && hdr.ipv4.protocol == IP_PROTO_SWITCHGNN
            && sm.parser_error == error.NoError
            && sm.checksum_error == 0
            && hdr.ipv4.flags[0:0] == 0 && hdr.ipv4.frag_offset == 0
            && hdr.sgnn.isValid()
            && hdr.sgnn.version == SGNN_VERSION
            && hdr.sgnn.pkt_type <= TYPE_BLOCK_ADVANCE
            && hdr.sgnn.flags_rsvd == 0
            && (hdr.sgnn.ack == 1) == (hdr.sgnn.pkt_type == TYPE_ACK)
            && (hdr.sgnn.fetch == 1) == (hdr.sgnn.pkt_type == TYPE_FETCH_REQ)
            && hdr.sgnn.frac_bits <= MAX_FRAC_BITS
            && hdr.ipv4.total_len - IPV4_HEADER_LEN == expected_len;
    }
}

/* Only frames the switch builds (Result, Bypass, BlockAdvance) get a fresh checksum;
 * forwarded frames and the recirculation clones keep their bytes. */
control SgnnComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(meta.originated == 1 && hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
              hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
              hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control SgnnDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.sgnn);
        pkt.emit(hdr.lanes);
    }
}

#endif
