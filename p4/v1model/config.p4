/* config.p4: every size, constant and code point of the SwitchGNN v1model program.
 * Sizes and ids are fixed by docs/switch-interface.md; change them there first. */
#ifndef SGNN_CONFIG_P4
#define SGNN_CONFIG_P4

/* ---- sizes (docs/switch-interface.md, "config.p4 sizes") ---- */
const bit<32> AGGREGATORS    = 65536;   // register slots per agg_* array
const bit<32> MAX_WORKERS    = 256;     // sync_done slots, worker_table / worker_addr entries
const bit<32> AGG_TABLE_SIZE = 1048576; // agg_table entries
const bit<32> IPV4_FORWARD_SIZE  = 1024;
const bit<32> DSCP_PRIORITY_SIZE = 64;
const bit<32> EVENT_COUNTERS = 32;      // events[] (26 used, see counters.p4)
const bit<32> SEEN_CELLS     = 262144;  // src_seen cells (duplicate suppression)
const bit<32> PORTS          = 512;     // port_rx / port_tx (every 9-bit port)

/* ---- switch_config: the initial default action (docs/switch-interface.md, table 6) ---- */
const bit<16> INIT_WORKERS          = 0;
const bit<16> INIT_BLOCKS_PER_ROUND = 1;
const bit<32> INIT_ECN_THRESHOLD    = 0xffffffff;   // never marks
const bit<32> INIT_DROP_EVERY       = 0;            // off
const bit<32> INIT_DROP_PROB        = 0;            // off
const bit<48> INIT_SWITCH_MAC       = 0x02000000fffe; // 02:00:00:00:ff:fe
const bit<32> INIT_SWITCH_IP        = 0x0a0000fe;     // 10.0.0.254
const bit<32> INIT_PLAN_TAG         = 0;              // no plan loaded
/* dst_id of a daemon's start-up probe (an Ack to itself); the switch answers with
 * plan_tag in src_id (sgnn_wire::PROBE_DST). */
const bit<32> PROBE_DST             = 0xffffffff;
/* dst_id of a replicated raw vertex's copies: every neighbour of src_id on the receiving
 * worker (sgnn_wire::ALL_NEIGHBOURS; aggregation.p4's replicate). */
const bit<32> ALL_NEIGHBOURS        = 0xffffffff;

/* ---- packet replication engine ---- */
const bit<16> ADVANCE_MCAST_GROUP = 1;   // every worker, rid = worker id
const bit<32> RECIRC_CLONE_SESSION = 100; // I2E clone of the original packet for the next pass

/* ---- v1model instance types as simple_switch sets them (simple_switch.h) ---- */
/* (2 egress clone, 3 coalesced, 4 recirculated, 5 multicast replica, 6 resubmitted) */
const bit<32> INSTANCE_NORMAL        = 0;   // a frame from a host
const bit<32> INSTANCE_INGRESS_CLONE = 1;   // the recirculation clone (session 100)

/* ---- field lists (@field_list) ---- */
#define FL_RECIRC 1   // metadata carried by the I2E clone and its recirculation

/* ---- wire protocol (docs/protocol.md) ---- */
const bit<16> ETHERTYPE_IPV4     = 0x0800;
const bit<8>  IP_PROTO_SWITCHGNN = 253;
const bit<4>  SGNN_VERSION       = 1;
const bit<8>  MAX_FRAC_BITS      = 30;
const bit<16> SGNN_HEADER_LEN    = 24;   // IPv4 payload of a packet without lanes
const bit<16> SGNN_LANES_LEN     = 152;  // 24 + 32 lanes * 4 bytes
const bit<16> IPV4_HEADER_LEN    = 20;
const bit<32> ETHERNET_HEADER_LEN = 14;

typedef bit<4> sgnn_type_t;
const sgnn_type_t TYPE_DATA          = 0;
const sgnn_type_t TYPE_RESULT        = 1;
const sgnn_type_t TYPE_ACK           = 2;
const sgnn_type_t TYPE_FETCH_REQ     = 3;
const sgnn_type_t TYPE_BYPASS        = 4;
const sgnn_type_t TYPE_BLOCK_DONE    = 5;
const sgnn_type_t TYPE_BLOCK_ADVANCE = 6;

/* ---- src_seen: valid bit of a cell (the register is 33 bits: 1 ++ round ++ block) ---- */
const bit<1> SEEN_VALID = 1;

/* ---- agg_state values ---- */
const bit<8> AGG_FREE     = 0;
const bit<8> AGG_ACTIVE   = 1;
const bit<8> AGG_BYPASSED = 2;

/* ---- switch-originated IPv4 header (softswitch::Pipeline::send_to_worker) ---- */
const bit<8> SWITCH_TTL      = 64;
const bit<3> IPV4_FLAGS_DF   = 2;   // reserved, DF, MF
const bit<2> ECN_CE          = 3;

#endif
