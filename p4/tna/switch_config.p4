/* switch_config.p4: the control plane's settings, as the default action of the keyless
 * table switch_config (docs/switch-interface.md, table 6, action 7), as in
 * ../v1model/switch_config.p4. Applied first in every ingress pass; egress gets what it
 * needs (addresses, ECN threshold) in the bridge header. */
#ifndef SGNN_TNA_SWITCH_CONFIG_P4
#define SGNN_TNA_SWITCH_CONFIG_P4

control SwitchConfig(inout ig_metadata_t meta) {
    @name(".set_config") @id(7)
    action set_config(bit<16> workers, bit<16> blocks_per_round, bit<32> ecn_threshold,
                      bit<32> drop_every, bit<32> drop_prob, bit<48> switch_mac,
                      bit<32> switch_ip, bit<32> plan_tag, bit<8> role,
                      bit<16> sync_base, bit<16> up_id, bit<16> up_peer, bit<16> job) {
        meta.cfg.workers = workers;
        meta.cfg.blocks_per_round = blocks_per_round;
        meta.cfg.ecn_threshold = ecn_threshold;
        meta.cfg.drop_every = drop_every;
        meta.cfg.drop_prob = drop_prob;
        meta.cfg.switch_mac = switch_mac;
        meta.cfg.switch_ip = switch_ip;
        meta.cfg.plan_tag = plan_tag;
        meta.cfg.job = job;
        // role, sync_base, up_id, up_peer: the leaf-spine fabric's roles are not in the TNA
        // program (docs/tofino.md, "Names and widths"); a Tofino is a star's switch.
        // job: checked by the admission rows of switchgnn.p4's verdict (job_x); a probe's
        // answer tells the daemon this job. Frames the switch makes keep the job of the frame
        // they are made from (an admitted frame's: this job).
        // Nothing computed from the parameters: arithmetic on action data takes the
        // compiler a second stage, and every check waits for this table.
    }

    @name(".switch_config") @id(6)
    table switch_config {
        actions = { @defaultonly set_config; }
        default_action = set_config(INIT_WORKERS, INIT_BLOCKS_PER_ROUND, INIT_ECN_THRESHOLD,
                                    INIT_DROP_EVERY, INIT_DROP_PROB, INIT_SWITCH_MAC,
                                    INIT_SWITCH_IP, INIT_PLAN_TAG, INIT_ROLE,
                                    INIT_SYNC_BASE, INIT_UP_ID, INIT_UP_PEER, INIT_JOB);
        size = 1;
    }

    apply {
        switch_config.apply();
    }
}

#endif
