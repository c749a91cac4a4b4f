/* protocol.p4: the constants every SwitchGNN data plane shares (v1model for bmv2 in
 * p4/v1model, TNA for Tofino in p4/tna): the wire protocol's code points, switch_config's
 * initial values, the shared table sizes, the aggregator states and the event counter order.
 * Each architecture's config.p4 includes this file and adds what only it has (the aggregator
 * count and table sizes its memory allows, clone sessions, recirculation ports).
 * bmv2-tests/tests/p4_source.rs checks every value here against the Rust side. */
#ifndef SGNN_PROTOCOL_P4
#define SGNN_PROTOCOL_P4

/* ---- sizes every architecture shares (docs/switch-interface.md, "config.p4 sizes") ---- */
const bit<32> MAX_WORKERS    = 256;     // sync_done slots, worker_table / worker_addr entries
const bit<32> IPV4_FORWARD_SIZE  = 1024;
const bit<32> DSCP_PRIORITY_SIZE = 64;
const bit<32> EVENT_COUNTERS = 64;      // events[] (34 used, below)
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
const bit<8>  INIT_ROLE             = 0;              // ROLE_STAR
const bit<16> INIT_SYNC_BASE        = 0;
const bit<16> INIT_UP_ID            = 0;
const bit<16> INIT_UP_PEER          = 0;
const bit<16> INIT_JOB              = 0;              // before any load
/* set_config's role (sgnn_switch::config::role; docs/switch-interface.md, "Leaf-spine
 * fabric"): every worker on this switch, a leaf, or a spine of a leaf-spine fabric. */
const bit<8>  ROLE_STAR             = 0;
const bit<8>  ROLE_LEAF             = 1;
const bit<8>  ROLE_SPINE            = 2;
/* dst_id of a daemon's start-up probe (an Ack to itself); the switch answers with
 * plan_tag in src_id (sgnn_wire::PROBE_DST). */
const bit<32> PROBE_DST             = 0xffffffff;
/* dst_id of a replicated raw vertex's copies: every neighbour of src_id on the receiving
 * worker (sgnn_wire::ALL_NEIGHBOURS; aggregation.p4's replicate). */
const bit<32> ALL_NEIGHBOURS        = 0xffffffff;

/* ---- loss recovery (sgnn_wire::recovery, docs/host.md "Loss recovery", recovery.p4) ---- */
/* A Data frame whose dst_id has bit 31 set carries its sender's transmission number in the
 * low 16 bits (SEQ_VALID); the switch checks the order and keeps the aggregates such frames
 * complete (AGG_DONE) for pulls. */
const bit<32> SEQ_VALID             = 0x80000000;
/* dst_id of a daemon's tail probe (an Ack to the switch; src_id: its next number, count: the
 * NACKs it has received). */
const bit<32> SEQ_PROBE             = 0xfffffffd;
/* dst_id of the switch's all-sent notice (an Ack to every worker through the advance group,
 * once per block, when every worker's tail probe of the block was clean: recovery.p4). */
const bit<32> SEND_DONE             = 0xfffffffc;
/* src_id of a pull's answer when another generation holds the aggregator or a RESEND
 * released it (count 0): the receiver fetches the sources raw. */
const bit<32> PULL_GONE             = 0xffffffff;
/* A number d ahead of the expected one (mod 2^16) is a gap when 0 < d < SEQ_WINDOW. */
const bit<16> SEQ_WINDOW            = 0x8000;

/* Worker w's IPv4 address is WORKER_NET | w (sgnn_wire::addressing::worker_ip): a frame on
 * a worker's port must come from it (admission.p4). */
const bit<32> WORKER_NET            = 0x0a010000;     // 10.1.0.0/16

/* ---- packet replication engine ---- */
const bit<16> ADVANCE_MCAST_GROUP = 1;   // every worker, rid = worker id

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

/* ---- agg_state values ---- */
const bit<8> AGG_FREE     = 0;
const bit<8> AGG_ACTIVE   = 1;
const bit<8> AGG_BYPASSED = 2;
const bit<8> AGG_DONE     = 3;   // complete, kept for a pull until the aggregator is reused

/* ---- switch-originated IPv4 header (softswitch::Pipeline::send_to_worker) ---- */
const bit<8> SWITCH_TTL      = 64;
const bit<3> IPV4_FLAGS_DF   = 2;   // reserved, DF, MF
const bit<2> ECN_CE          = 3;

/* ---- events[] indices, in the order of softswitch::Counters (docs/switch-interface.md) ---- */
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
const bit<32> EV_DROP_WRONG_PORT      = 26;   // not from its worker's port (admission.p4)
const bit<32> EV_BYPASSED_LATE        = 27;   // a contribution for an older generation than
                                              // its aggregator holds: to the host, untouched
const bit<32> EV_NACKED               = 28;   // a gap in a worker's sequenced Data: a NACK
const bit<32> EV_SEQ_PROBED           = 29;   // a tail probe answered
const bit<32> EV_PULLED               = 30;   // a pull (FetchReq to the switch) answered
const bit<32> EV_ALL_SENT             = 31;   // an all-sent notice multicast (recovery.p4)
const bit<32> EV_DROP_WRONG_ADDRESS   = 32;   // on a worker's port, another IPv4 source
const bit<32> EV_DROP_FOREIGN_JOB     = 33;   // another job value than set_config's

#endif
