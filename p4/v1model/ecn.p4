/* ecn.p4: congestion marking of switch-originated frames (paper 3.4).
 *
 * A frame the switch builds leaves with IPv4 ECN 3 and the SwitchGNN ECN flag set when the
 * egress queue it went through held more than ecn_threshold packets (enq_qdepth, the
 * depth of its priority queue when it was enqueued), IPv4 ECN 0 otherwise. The SwitchGNN
 * flag may already be set from the sticky agg_ecn of a Result or the flag of a bypassed
 * Data packet; ecn_marked counts every switch frame leaving with the flag set. Forwarded
 * frames are never touched. ecn_threshold is switch_config's, carried from ingress in
 * meta.cfg (4294967295 never marks: enq_qdepth is 19 bits). */
#ifndef SGNN_ECN_P4
#define SGNN_ECN_P4

control Ecn(inout headers_t hdr,
            inout metadata_t meta,
            inout standard_metadata_t sm) {
    apply {
        if ((bit<32>)sm.enq_qdepth > meta.cfg.ecn_threshold) {
            hdr.sgnn.ecn = 1;
            hdr.ipv4.ecn = ECN_CE;
        } else {
            hdr.ipv4.ecn = 0;
        }
        if (hdr.sgnn.ecn == 1) {
            events.count(EV_ECN_MARKED);
        }
    }
}

#endif
