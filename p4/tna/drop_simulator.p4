/* drop_simulator.p4: loss injected in the data plane, as ../v1model/drop_simulator.p4.
 * One stateful ALU: drop_seen counts frames and wraps to 0 (dropping the frame) when it
 * reaches drop_every. Tofino's ALU compares the register with drop_every - 1, so with
 * drop_every 0 (off) one frame in 2^32 is dropped where v1model drops none
 * (docs/tofino.md). */
#ifndef SGNN_TNA_DROP_SIMULATOR_P4
#define SGNN_TNA_DROP_SIMULATOR_P4

control DropSimulator(in headers_t hdr, inout ig_metadata_t meta) {
    @name(".drop_seen") @id(48) Register<bit<32>, bit<32>>(1) drop_seen;

    RegisterAction<bit<32>, bit<32>, bit<1>>(drop_seen) tick = {
        void apply(inout bit<32> seen, out bit<1> every) {
            if (meta.cfg.drop_every == 0) {
                every = 0;
            } else if (seen + 1 >= meta.cfg.drop_every) {
                seen = 0;
                every = 1;
            } else {
                seen = seen + 1;
                every = 0;
            }
        }
    };

    /* r < drop_prob as a table can test it: the saturating difference is not 0. */
    @hidden action below_by() { meta.sim_below = meta.cfg.drop_prob |-| meta.sim_rand; }
    @hidden action tick_now() { meta.sim_every = tick.execute(0); }

    /* Both look at a host's SwitchGNN frames only (a key, not a gateway around them), and
     * are pinned as early as the compiler can place them: the verdict waits for them
     * (docs/tofino.md, "Stages"). */
    @stage(2) @hidden table tick_table {
        key = { meta.host: exact; hdr.ipv4.protocol: exact; }
        actions = { tick_now; @defaultonly NoAction; }
        const entries = { (1, IP_PROTO_SWITCHGNN): tick_now(); }
        const default_action = NoAction();
        size = 1;
    }
    @stage(2) @hidden table below_table {
        key = { meta.host: exact; hdr.ipv4.protocol: exact; }
        actions = { below_by; @defaultonly NoAction; }
        const entries = { (1, IP_PROTO_SWITCHGNN): below_by(); }
        const default_action = NoAction();
        size = 1;
    }

    /* Sets meta.sim_every and meta.sim_below (meta.sim_rand is drawn first thing in
     * ingress); the verdict table (switchgnn.p4) drops the frame when either is not 0. */
    apply {
        tick_table.apply();
        below_table.apply();
    }
}

#endif
