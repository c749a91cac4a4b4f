/* drop_simulator.p4: loss injected in the data plane, as ../v1model/drop_simulator.p4.
 * One stateful ALU: drop_seen counts frames and wraps to 0 (dropping the frame) when it
 * reaches drop_every. Tofino's ALU compares the register with drop_every - 1, so with
 * drop_every 0 (off) one frame in 2^32 is dropped where v1model drops none
 * (docs/tofino.md). */
#ifndef SGNN_TNA_DROP_SIMULATOR_P4
#define SGNN_TNA_DROP_SIMULATOR_P4

control DropSimulator(in config_t cfg, out bool drop) {
    @name(".drop_seen") @id(48) Register<bit<32>, bit<32>>(1) drop_seen;
    Random<bit<32>>() rng;

    RegisterAction<bit<32>, bit<32>, bit<1>>(drop_seen) tick = {
        void apply(inout bit<32> seen, out bit<1> every) {
            if (seen >= cfg.drop_every_m1) {
                seen = 0;
                every = 1;
            } else {
                seen = seen + 1;
                every = 0;
            }
        }
    };

    bit<32> below = 0;
    @hidden action below_by(bit<32> r) { below = cfg.drop_prob |-| r; }

    apply {
        bit<1> every = tick.execute(0);
        bit<32> r = rng.get();
        // r < drop_prob, as a gateway can test it: the saturating difference, computed in
        // an action (a gateway compares a field with constants), is not 0.
        below_by(r);
        drop = false;
        if (every == 1) {
            drop = true;
        }
        if (below != 0) {
            drop = true;
        }
    }
}

#endif
