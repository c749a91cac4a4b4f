/* ecn.p4: congestion marking of switch-originated frames in egress, as ../v1model/ecn.p4:
 * IPv4 ECN 3 and the SwitchGNN ECN flag when the queue held more than ecn_threshold
 * packets at enqueue (enq_qdepth, in cells on a Tofino: docs/tofino.md). */
#ifndef SGNN_TNA_ECN_P4
#define SGNN_TNA_ECN_P4

control Ecn(inout eg_headers_t hdr,
            inout eg_metadata_t meta,
            in egress_intrinsic_metadata_t eg_intr_md) {
    apply {
        if ((bit<32>)eg_intr_md.enq_qdepth > hdr.bridge.ecn_threshold) {
            hdr.sgnn.ecn = 1;
            hdr.ipv4.ecn = ECN_CE;
        } else {
            hdr.ipv4.ecn = 0;
        }
    }
}

#endif
