/* priority.p4: DSCP -> egress queue, as ../v1model/priority.p4 (there
 * standard_metadata.priority, here the queue id). Unset DSCPs use queue 0. */
#ifndef SGNN_TNA_PRIORITY_P4
#define SGNN_TNA_PRIORITY_P4

control Priority(in headers_t hdr, inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    @name(".set_priority") @id(5)
    action set_priority(bit<3> queue) {
        ig_tm_md.qid = (QueueId_t)queue;
    }

    @name(".dscp_priority") @id(4)
    table dscp_priority {
        key = { hdr.ipv4.dscp: exact @name("dscp"); }
        actions = { set_priority; @defaultonly NoAction; }
        const default_action = NoAction();
        size = DSCP_PRIORITY_SIZE;
    }

    apply {
        ig_tm_md.qid = 0;
        dscp_priority.apply();
    }
}

#endif
