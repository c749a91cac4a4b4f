/* ecn.p4: congestion marking of switch-originated frames in egress, as ../v1model/ecn.p4:
 * IPv4 ECN 3 and the SwitchGNN ECN flag when the queue held more than ecn_threshold
 * packets at enqueue (enq_qdepth, in cells on a Tofino: docs/tofino.md). */
#ifndef SGNN_TNA_ECN_P4
#define SGNN_TNA_ECN_P4

control Ecn(inout eg_headers_t hdr,
            inout eg_metadata_t meta,
            in egress_intrinsic_metadata_t eg_intr_md) {
    /* depth > threshold, as a gateway can test it: a gateway compares a field with
     * constants, so the saturating difference is computed first (32-bit operands). */
    bit<32> depth = 0;
    bit<32> threshold = 0;
    bit<32> over = 0;
    @hidden action widen() {
        depth = (bit<32>)eg_intr_md.enq_qdepth;
        threshold = hdr.bridge.ecn_threshold;
    }
    @hidden action excess() { over = depth |-| threshold; }

    apply {
        widen();
        excess();
        if (over != 0) {
            hdr.sgnn.ecn = 1;
            hdr.ipv4.ecn = ECN_CE;
        } else {
            hdr.ipv4.ecn = 0;
        }
    }
}

#endif
