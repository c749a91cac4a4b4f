/* switch_config.p4: the settings of the control plane, as the default action of the
 * keyless table switch_config (docs/switch-interface.md, table 6, action 7).
 *
 * They were registers (cfg_*) in an earlier draft; bmv2's P4Runtime server (PI) does not
 * implement register writes, so everything the control plane sets lives in a table. The
 * default action is not const: the control plane replaces it (P4Runtime MODIFY with
 * is_default_action, or simple_switch_CLI table_set_default switch_config set_config ...).
 * It is the table's only action and @defaultonly: a keyless table holds no entries.
 *
 * Applied first in every ingress pass (recirculated ones too); the values travel in
 * meta.cfg to the drop simulator and block sync (ingress) and to the switch-frame rewrite
 * and ECN marking (egress). */
#ifndef SGNN_SWITCH_CONFIG_P4
#define SGNN_SWITCH_CONFIG_P4

control SwitchConfig(inout metadata_t meta) {
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
        meta.cfg.role = role;
        meta.cfg.sync_base = sync_base;
        meta.cfg.up_id = up_id;
        meta.cfg.up_peer = up_peer;
        meta.cfg.job = job;
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
