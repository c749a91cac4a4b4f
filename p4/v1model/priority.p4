/* priority.p4: DSCP -> egress priority queue (simple_switch --priority-queues N; the
 * highest queue number is served first). Applied to every IPv4 frame in ingress; a frame
 * the switch builds has the DSCP of the frame that caused it, so it inherits its queue.
 * Multicast replicas keep the priority of the packet they copy. Unset DSCPs use queue 0. */
#ifndef SGNN_PRIORITY_P4
#define SGNN_PRIORITY_P4

control Priority(inout headers_t hdr,
                 inout metadata_t meta,
                 inout standard_metadata_t sm) {
    @name(".set_priority") @id(5)
    action set_priority(bit<3> queue) {
        sm.priority = queue;
    }

    @name(".dscp_priority") @id(4)
    table dscp_priority {
        key = { hdr.ipv4.dscp: exact @name("dscp"); }
        actions = { set_priority; @defaultonly NoAction; }
        const default_action = NoAction();
        size = DSCP_PRIORITY_SIZE;
    }

    apply {
        sm.priority = 0;
        dscp_priority.apply();
    }
}

#endif
