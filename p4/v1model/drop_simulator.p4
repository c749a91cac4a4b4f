/* drop_simulator.p4: loss injected in the data plane, for tests (as p4app-switchML).
 *
 * On every SwitchGNN frame a host sends (IPv4 protocol 253 with a sound IPv4 header;
 * never a recirculated pass), before its SwitchGNN header is judged: drop_seen += 1; if
 * cfg_drop_every is nonzero and drop_seen reached it, drop_seen = 0 and the frame is
 * dropped; otherwise it is dropped when a uniform 32-bit random value is below
 * cfg_drop_prob. Both count drop_simulated. */
#ifndef SGNN_DROP_SIMULATOR_P4
#define SGNN_DROP_SIMULATOR_P4

control DropSimulator(out bool drop) {
    @name(".cfg_drop_every") @id(44) register<bit<32>>(1) cfg_drop_every;
    @name(".cfg_drop_prob")  @id(45) register<bit<32>>(1) cfg_drop_prob;
    @name(".drop_seen")      @id(48) register<bit<32>>(1) drop_seen;

    apply {
        drop = false;
        bit<32> seen;
        bit<32> every;
        drop_seen.read(seen, 0);
        cfg_drop_every.read(every, 0);
        seen = seen + 1;
        if (every != 0 && seen >= every) {
            seen = 0;
            drop = true;
        } else {
            bit<32> prob;
            bit<32> r;
            cfg_drop_prob.read(prob, 0);
            random(r, 32w0, 32w0xffffffff);
            if (r < prob) {
                drop = true;
            }
        }
        drop_seen.write(0, seen);
        if (drop) {
            events.count(EV_DROP_SIMULATED);
        }
    }
}

#endif
