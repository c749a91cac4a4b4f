/* counters.p4: the counters ingress and egress share (their indices, EV_*, are in
 * ../common/protocol.p4). Declared at the top level because
 * both pipelines count into them (bmv2 allows it; a TNA program would split them). */
#ifndef SGNN_COUNTERS_P4
#define SGNN_COUNTERS_P4

@name(".events") @id(1)
counter(EVENT_COUNTERS, CounterType.packets) events;

/* Every frame received from a host, by ingress port (not recirculated passes). */
@name(".port_rx") @id(2)
counter(PORTS, CounterType.packets_and_bytes) port_rx;

/* Every frame sent to a host, by egress port (not the recirculation clones). */
@name(".port_tx") @id(3)
counter(PORTS, CounterType.packets_and_bytes) port_tx;

#endif
