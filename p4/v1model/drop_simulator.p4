/* drop_simulator.p4: loss injected in the data plane, for tests (as p4app-switchML).
 *
 * On every SwitchGNN frame a host sends (IPv4 protocol 253 with a sound IPv4 header;
 * never a recirculated pass), before its SwitchGNN header is judged: drop_seen += 1; if
 * drop_every (switch_config) is nonzero and drop_seen reached it, drop_seen = 0 and the
 * frame is dropped; otherwise it is dropped when a uniform 32-bit random value is below
 * drop_prob (switch_config). Both count drop_simulated. */
#ifndef SGNN_DROP_SIMULATOR_P4
#define SGNN_DROP_SIMULATOR_P4

control DropSimulator(in config_t cfg, out bool drop) {
    @name(".drop_seen") @id(48) register<bit<32>>(1) drop_seen;

    apply {
        drop = false;
        bit<32> seen;
        drop_seen.read(seen, 0);
        seen = seen + 1;
        if (cfg.drop_every != 0 && seen >= cfg.drop_every) {
            seen = 0;
            drop = true;
        } else {
            bit<32> r;
            random(r, 32w0, 32w0xffffffff);
            if (r < cfg.drop_prob) {
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
