/* counters.p4: the event and port counters (indices EV_* in ../common/protocol.p4).
 *
 * A Tofino counter belongs to one gress and is counted by one table, once per pass. So
 * `events` (ingress) counts the one outcome of each ingress pass (meta.event), and
 * `egress_events` (egress) the one outcome of each egress pass; RX and TX are the sums of
 * port_rx and port_tx. docs/tofino.md lists which index each gress counts and which of the
 * v1model program's per-pass extra counts (data, recirculated, saturated, reclaimed) a
 * Tofino pass cannot also count. The control plane reads events + egress_events. */
#ifndef SGNN_TNA_COUNTERS_P4
#define SGNN_TNA_COUNTERS_P4

/* The one event of this pass (in either gress's metadata). */
#define EVENT(e) meta.event = e; meta.count_event = 1

control IngressCounters(in ig_metadata_t meta, in ingress_intrinsic_metadata_t ig_intr_md) {
    @name(".events") @id(1)
    Counter<bit<64>, bit<32>>(EVENT_COUNTERS, CounterType_t.PACKETS) events;

    /* Every frame received from a host, by ingress port (not recirculated passes). */
    @name(".port_rx") @id(2)
    Counter<bit<64>, bit<32>>(PORTS, CounterType_t.PACKETS_AND_BYTES) port_rx;

    /* Pinned to the stage after the last decision that sets the event (docs/tofino.md,
     * "Stages"): left to itself the compiler placed it after the lanes. */
    @hidden action count_event() { events.count(meta.event); }
    @stage(11) @hidden table event_table {
        key = { meta.count_event: exact; }
        actions = { count_event; @defaultonly NoAction; }
        const entries = { 1: count_event(); }
        const default_action = NoAction();
        size = 1;
    }

    apply {
        event_table.apply();
        if (meta.from_host) {
            port_rx.count((bit<32>)ig_intr_md.ingress_port);
        }
    }
}

control EgressCounters(in eg_metadata_t meta, in egress_intrinsic_metadata_t eg_intr_md,
                       in bool sent) {
    @name(".egress_events") @id(4)
    Counter<bit<64>, bit<32>>(EVENT_COUNTERS, CounterType_t.PACKETS) egress_events;

    /* Every frame sent to a host, by egress port (not recirculated passes). */
    @name(".port_tx") @id(3)
    Counter<bit<64>, bit<32>>(PORTS, CounterType_t.PACKETS_AND_BYTES) port_tx;

    apply {
        if (meta.count_event == 1) {
            egress_events.count(meta.event);
        }
        if (sent) {
            port_tx.count((bit<32>)eg_intr_md.egress_port);
        }
    }
}

#endif
