/* counters.p4: the counters ingress and egress share. Declared at the top level because
 * both pipelines count into them (bmv2 allows it; a TNA program would split them). */
#ifndef SGNN_COUNTERS_P4
#define SGNN_COUNTERS_P4

/* events[] indices, in the order of softswitch::Counters (docs/switch-interface.md). */
const bit<32> EV_RX                   = 0;
const bit<32> EV_TX                   = 1;
const bit<32> EV_DATA                 = 2;
const bit<32> EV_AGGREGATED           = 3;
const bit<32> EV_RESULTS              = 4;
const bit<32> EV_RECIRCULATED         = 5;
const bit<32> EV_BYPASSED             = 6;
const bit<32> EV_DELIVERED            = 7;
const bit<32> EV_RECLAIMED            = 8;
const bit<32> EV_FORWARDED            = 9;
const bit<32> EV_BLOCK_DONE           = 10;
const bit<32> EV_BLOCK_DONE_DUPLICATE = 11;
const bit<32> EV_BLOCK_DONE_STALE     = 12;
const bit<32> EV_BLOCK_ADVANCE        = 13;
const bit<32> EV_ECN_MARKED           = 14;
const bit<32> EV_DROP_SIMULATED       = 15;
const bit<32> EV_DROP_NOT_IPV4        = 16;
const bit<32> EV_DROP_NO_ROUTE        = 17;
const bit<32> EV_DROP_MALFORMED       = 18;
const bit<32> EV_DROP_UNEXPECTED      = 19;
const bit<32> EV_DROP_STALE           = 20;
const bit<32> EV_DROP_NO_ENTRY        = 21;
const bit<32> EV_DROP_BAD_INDEX       = 22;
const bit<32> EV_DROP_UNKNOWN_WORKER  = 23;
const bit<32> EV_SATURATED            = 24;   // contributions with at least one saturated lane
const bit<32> EV_DROP_DUPLICATE       = 25;   // a second first-pass copy of (source, segment)

@name(".events") @id(1)
counter(EVENT_COUNTERS, CounterType.packets) events;

/* Every frame received from a host, by ingress port (not recirculated passes). */
@name(".port_rx") @id(2)
counter(PORTS, CounterType.packets_and_bytes) port_rx;

/* Every frame sent to a host, by egress port (not the recirculation clones). */
@name(".port_tx") @id(3)
counter(PORTS, CounterType.packets_and_bytes) port_tx;

#endif
