/* config.p4: every size, constant and code point of the SwitchGNN v1model program.
 * Sizes and ids are fixed by docs/switch-interface.md; change them there first. */
#ifndef SGNN_CONFIG_P4
#define SGNN_CONFIG_P4

#include "../common/protocol.p4"

/* ---- sizes of the v1model program (docs/switch-interface.md, "config.p4 sizes") ---- */
const bit<32> AGGREGATORS    = 65536;   // register slots per agg_* array
const bit<32> AGG_TABLE_SIZE = 1048576; // agg_table entries
const bit<32> SEEN_CELLS     = 262144;  // src_seen cells (duplicate suppression)

/* ---- packet replication engine (v1model) ---- */
const bit<32> RECIRC_CLONE_SESSION = 100; // I2E clone of the original packet for the next pass

/* ---- v1model instance types as simple_switch sets them (simple_switch.h) ---- */
/* (2 egress clone, 3 coalesced, 4 recirculated, 5 multicast replica, 6 resubmitted) */
const bit<32> INSTANCE_NORMAL        = 0;   // a frame from a host
const bit<32> INSTANCE_INGRESS_CLONE = 1;   // the recirculation clone (session 100)

/* ---- field lists (@field_list) ---- */
#define FL_RECIRC 1   // metadata carried by the I2E clone and its recirculation

/* ---- src_seen: valid bit of a cell (the register is 33 bits: 1 ++ round ++ block) ---- */
const bit<1> SEEN_VALID = 1;

#endif
