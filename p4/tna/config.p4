/* config.p4: the sizes and constants of the SwitchGNN TNA program (Tofino 1 and 2).
 *
 * Everything both architectures share (wire code points, switch_config's initial values,
 * MAX_WORKERS and the other shared table sizes, aggregator states, the event order) is in
 * ../common/protocol.p4, which the v1model program includes too. What follows is what only
 * a Tofino has: the aggregator count and table sizes its memory holds (docs/tofino.md has
 * the compiler's measurements behind them), the recirculation port, the mirror session and
 * the internal markers of recirculated passes.
 *
 * Sizes can be overridden at compile time (bf-p4c -DSGNN_AGGREGATORS=N ...), which is how
 * docs/tofino.md measured what the lanes take. AGGREGATORS and SEEN_CELLS must be powers of
 * two: a gateway tests `index < SIZE` as a mask on the index's high bits, and any other size
 * is past a gateway's inputs (bf-p4c: "condition too complex"). */
#ifndef SGNN_TNA_CONFIG_P4
#define SGNN_TNA_CONFIG_P4

#include "../common/protocol.p4"

/* ---- sizes of the TNA program (docs/tofino.md, "Resources (measured)") ---- */
#ifdef SGNN_AGGREGATORS
const bit<32> AGGREGATORS    = SGNN_AGGREGATORS;
#else
const bit<32> AGGREGATORS    = 16384;   // register slots per agg_* array
#endif
#ifdef SGNN_AGG_TABLE_SIZE
const bit<32> AGG_TABLE_SIZE = SGNN_AGG_TABLE_SIZE;
#else
const bit<32> AGG_TABLE_SIZE = 65536;   // agg_table entries
#endif
#ifdef SGNN_SEEN_CELLS
const bit<32> SEEN_CELLS     = SGNN_SEEN_CELLS;
#else
const bit<32> SEEN_CELLS     = 65536;   // src_seen cells (duplicate suppression)
#endif

/* ---- recirculation and mirroring ---- */
/* Pipe 0's recirculation port: 68 on Tofino 1, 6 on Tofino 2. A pass that needs another
 * pass (agg_table's `more`) is sent there. */
#if __TARGET_TOFINO__ == 2
const PortId_t RECIRC_PORT = 6;
#else
const PortId_t RECIRC_PORT = 68;
#endif
/* The I2E mirror session whose copy becomes the next pass (or the harvest pass) of a
 * packet that also leaves to a host: the control plane points it at RECIRC_PORT, as it
 * points v1model's clone session 100 at the recirculation. */
const MirrorId_t NEXT_PASS_SESSION = 100;
const MirrorType_t MIRROR_NEXT_PASS = 1;

/* ---- what a recirculated pass is (flags_rsvd of a frame from RECIRC_PORT) ----
 * A host's frame must have flags_rsvd 0 (CheckFrame); the switch uses the field for its
 * own recirculated passes only. */
const bit<4> PASS_NEXT    = 0;   // the next pass of a Data packet (pass = previous + 1)
const bit<4> PASS_HARVEST = 1;   // read out an aggregate's `first` lanes and free it
const bit<4> PASS_ADVANCE = 2;   // a BlockDone that completed its block: advance
const bit<4> PASS_FINISH  = 3;   // the mirror copy of a pass that completed an aggregate
                                 // with a next pass: adds its lanes, then PASS_HARVEST
const bit<4> PASS_NACK    = 4;   // a NACK's second pass (recovery.p4): adds the gap count
                                 // back into seq_next, then leaves to the worker

/* ---- the verdict on a frame (switchgnn.p4's verdict table) ---- */
const bit<3> V_DROP       = 0;   // dropped; the table's action set the event
const bit<3> V_FORWARD    = 1;   // not SwitchGNN: routed by ipv4_forward
const bit<3> V_AGGREGATE  = 2;   // Data the aggregation takes
const bit<3> V_BLOCK_DONE = 3;   // a BlockDone (or the switch's advance pass)
const bit<3> V_PASS_ON    = 4;   // Ack, FetchReq, Bypass: routed (a probe answered)
const bit<3> V_SEQ_PROBE  = 5;   // a worker's tail probe: seq_next checked, becomes a NACK
const bit<3> V_SEQ_NACK   = 6;   // a NACK's second pass (PASS_NACK)
const bit<3> V_PULL       = 7;   // a pull: a FetchReq to the switch's own address

/* ---- what a pass does to an aggregator (agg_count's answer) ---- */
const bit<3> OP_ADD      = 0;    // contribution added, aggregate incomplete
const bit<3> OP_COMPLETE = 1;    // contribution added, aggregate complete
const bit<3> OP_BYPASS   = 2;    // aggregator released: the values go to the host
const bit<3> OP_TAKE     = 3;    // harvest: read the sums out and free the aggregator
const bit<3> OP_NONE     = 4;    // agg_count did not run (the pass touches no aggregator)
/* agg_count's value for a bypassed aggregator (v1model: agg_state BYPASSED) */
const bit<16> COUNT_BYPASSED = 0xffff;

/* ---- what agg_gen says of a pass's generation (docs/switch-interface.md, "Generations") ---- */
const bit<2> GEN_SAME  = 0;      // the aggregator holds this round, block and generation
const bit<2> GEN_FRESH = 1;      // another round, block or (older) generation: start afresh
const bit<2> GEN_LATE  = 2;      // a newer generation of this round and block holds it

/* ---- what the lanes do (agg_value_* and agg_ecn) ---- */
const bit<3> LANE_NONE  = 0;
const bit<3> LANE_ACC   = 1;     // add (or store, if the aggregator is fresh); keep
const bit<3> LANE_EMIT  = 2;     // add, put the sum in the packet, clear
const bit<3> LANE_TAKE  = 3;     // put the stored sum in the packet, clear
const bit<3> LANE_CLEAR = 4;     // clear

/* ---- egress: what the first byte before Ethernet says ----
 * EG_BRIDGED has the group bit of a MAC address set, so it is never the first byte of a
 * frame to or from a worker: egress can tell a bridge header from Ethernet by it. */
const bit<8> EG_BRIDGED = 0xeb;  // the packet itself, with ingress's bridge header
const bit<8> EG_MIRROR  = 0xea;  // the NEXT_PASS_SESSION copy, with its mirror header

#endif
