/* headers.p4: the header stacks of a SwitchGNN frame (its headers are ../common/frame.p4),
 * the bridge and mirror headers that carry state from ingress to
 * egress, and the metadata of each gress. */
#ifndef SGNN_TNA_HEADERS_P4
#define SGNN_TNA_HEADERS_P4

#include "../common/frame.p4"

/* Ingress -> egress, in front of Ethernet (never on the wire). Its first byte says what
 * follows (EG_BRIDGED; a mirror copy starts with EG_MIRROR instead), so it is a header of
 * its own: the egress parser looks at it before extracting anything. */
header bridge_kind_h {
    bit<8>  kind;           // EG_BRIDGED
}

/* What egress needs of switch_config and of this pass. @flexible: the compiler lays the
 * fields out to suit the actions that write them (different actions set different flags,
 * and a Tofino action writes a container from one source, contiguously). */
@flexible
header bridge_h {
    bit<48> switch_mac;
    bit<32> switch_ip;
    bit<32> ecn_threshold;
    bit<16> dst_worker;
    bit<32> agg_idx;        // the aggregator of this pass (agg_ecn, agg_state)
    bit<3>  lane_op;        // LANE_* applied to the lanes, applied by egress to agg_ecn
    bit<1>  fresh;          // the aggregator belonged to another round, block or generation
    bit<1>  originated;     // a frame the switch builds: egress addresses it
    bit<1>  advance_mc;     // a block-advance replica: the worker is egress_rid
    bit<1>  replica_mc;     // a replicated raw vertex's copy: the worker is egress_rid
    bit<1>  result;         // a Result: its ECN flag is agg_ecn's sticky bit
}

/* The NEXT_PASS_SESSION copy's header: what ingress changed in the frame that the next
 * pass (or the harvest pass) needs back. Its second and third bytes are the first two of
 * the SwitchGNN header, in that header's layout, so egress restores them with one aligned
 * copy (a Tofino action writes a container from one source: constants and shifted fields
 * together are refused). */
header mirror_h {
    bit<8>  kind;           // EG_MIRROR
    bit<4>  version;        // the frame's own
    bit<4>  pkt_type;       // TYPE_DATA
    bit<1>  ack;            // 0
    bit<1>  fetch;          // 0
    bit<1>  ecn;            // the Data frame's own
    bit<1>  resend;         // the Data frame's own
    bit<4>  next_kind;      // PASS_NEXT or PASS_HARVEST: the pass's flags_rsvd
    bit<32> dst_id;         // the Data frame's own dst_id
    bit<8>  pass;           // the pass the copy runs next
}

/* Two lanes of one aggregator in one register (aggregation.p4, PAIR): `first` is lane 2k,
 * `second` lane 2k + 1. */
struct lane_pair_t {
    int<32> first;
    int<32> second;
}

struct headers_t {
    bridge_kind_h bridge_kind;
    bridge_h   bridge;
    ethernet_h ethernet;
    ipv4_h     ipv4;
    sgnn_h     sgnn;
    lanes_h    lanes;
}

/* Egress parses no lanes: the sums were written in ingress and ride as payload. */
struct eg_headers_t {
    bridge_kind_h bridge_kind;
    bridge_h   bridge;
    mirror_h   mirror;
    ethernet_h ethernet;
    ipv4_h     ipv4;
    sgnn_h     sgnn;
}

/* switch_config's settings (set_config's parameters), loaded in every ingress pass. */
struct config_t {
    bit<16> workers;
    bit<16> blocks_per_round;
    bit<32> ecn_threshold;
    bit<32> drop_every;
    bit<32> drop_prob;
    bit<48> switch_mac;
    bit<32> switch_ip;
    bit<32> plan_tag;
    bit<16> job;            // the job value the admission rule checks
}

struct ig_metadata_t {
    config_t cfg;

    /* Parser. */
    bool    from_host;      // not a recirculated pass
    bit<1>  host;           // from_host, as a table key
    bit<4>  pass_kind;      // PASS_* of a recirculated pass
    bool    csum_ok;

    /* Frame checks, and the frame verdict they add up to (switchgnn.p4). */
    bool    ipv4_ok;
    bit<1>  sgnn_ok;
    bit<16> short_by;       // IPV4_HEADER_LEN - total_len, saturated: 0 when long enough
    bit<1>  sim_every;      // the drop simulator's every-n-th frame
    bit<32> sim_rand;       // a random number, drawn first thing in ingress
    bit<32> sim_below;      // drop_prob - random, saturated: not 0 drops the frame
    bit<16> round_x;        // round ^ sync_round: 0 when the frame is for this round
    bit<16> block_x;        // block_id ^ sync_block
    bit<3>  verdict;        // V_*

    /* Output of the ingress controls. */
    bit<1>  to_worker;
    bit<1>  to_recirc;
    bit<16> dst_worker;
    bit<16> mcast_group;
    bit<1>  port_known;     // port_worker hit: the ingress port is a worker's
    bit<16> port_worker;    // that worker
    bit<32> port_addr;      // and its address, WORKER_NET | port_worker (set_port_worker)
    bit<1>  port_link;      // port_worker's set_port_link: a link cabled to another switch

    /* Admission (switchgnn.p4's verdict; ../v1model/admission.p4), from xor_keys. */
    bit<32> addr_x;         // src_addr ^ port_addr: 0 when from the port's worker's address
    bit<16> job_x;          // job ^ set_config's job: 0 when the frame is this job's

    /* agg_table action data and what follows from it. */
    bit<2>  run_kind;       // agg_table's action: 0 miss, 1 aggregate, 2 deliver, 3 replicate
    bit<32> segment;        // hdr.sgnn.segment widened (in agg_table's actions), so the
                            // index sums are 32-bit adds of 32-bit containers
    bit<32> agg_base;
    bit<32> out_dst_id;
    bit<16> expected;
    bit<16> expected_m1;
    bit<1>  more;
    bit<32> seen_base;
    bit<16> generation;     // of the aggregators at agg_base this row uses
    bit<32> agg_idx;
    bit<32> seen_cell;
    bit<16> hdr_worker_p1;  // worker_id + 1
    bit<16> hdr_worker;     // hdr.sgnn.worker_id, round and block_id, copied for the
    bit<16> hdr_round;      // ALU (AggregationTags)
    bit<16> hdr_block;
    bit<32> tag;            // round ++ block
    bit<32> seen_mark;      // ~(round ++ block): a cell never holds it before its block
    bit<1>  done_now;       // expected <= 1: the first contribution completes

    bit<1>  duplicate;
    bit<1>  tag_fresh;      // agg_tag held another round or block
    bit<2>  gen_op;         // GEN_*: agg_gen's verdict on this pass's generation
    bit<1>  fresh;          // start the aggregator afresh (set with agg_count's op)
    bit<3>  agg_op;         // OP_*
    bit<8>  pass_next;      // hdr.sgnn.pass + 1
    bit<1>  do_seen;        // a first-pass host copy with an agg_table row: src_seen checks it
    bit<1>  do_tag;         // an aggregate pass (not a harvest): agg_tag and agg_gen check it
    bit<1>  next_pass;      // more, not a resend, pass < 255: the source goes on
    bit<1>  idx_ok;         // an aggregate pass whose index is in range
    bit<1>  seen_bad;       // its src_seen cell is out of range
    bit<1>  recirc_next;    // the packet itself goes round as the next pass

    /* The pass's copy for its next pass (mirror). */
    bit<1>  mirror_next;
    MirrorId_t mirror_session;  // NEXT_PASS_SESSION (the deparser takes no constants)
    bit<8>  mirror_hdr_kind;    // EG_MIRROR, likewise
    bit<4>  mirror_kind;
    bit<32> mirror_dst_id;
    bit<8>  mirror_pass;
    bit<1>  mirror_ecn;
    bit<1>  mirror_resend;

    /* Loss recovery (recovery.p4): the seq check's operands and answers. */
    bit<32> seq_x;          // n << 16: a numbered Data frame's n (dst_id's), a probe's (src_id's)
    bit<32> seq_out;        // seq_next's answer: (old next ^ n) << 16 | old gaps on a gap,
                            // else 0; a second pass: the new next << 16 | gaps
    bit<32> seq_range;      // the gap found: old next ++ the last number the frame vouches
                            // for (n for Data, n - 1 for a probe)
    bit<32> seq_prev;       // seq_gap's answer: the gap before (or the last gap, repeated)
    bit<32> pull_x;         // dst_addr ^ switch_ip: 0 for a FetchReq to the switch (a pull)
    bit<16> seq_delta;      // old gaps + 1: what the NACK's second pass adds back

    /* Block sync. */
    bit<16> sync_round;
    bit<16> sync_block;
    bit<16> over_workers;   // worker_id - (workers - 1), saturated: 0 when a known worker
    bit<16> round_behind;   // sync_round - round, saturated: not 0 when the worker is behind
    bit<16> block_behind;   // sync_block - block_id, saturated
    bit<16> worker_x;       // port_worker ^ worker_id: 0 when from its worker's port
    bit<16> next_block;     // the block after this one, and its round
    bit<16> next_round;
    bit<16> blocks_left;    // blocks_per_round - next_block, saturated
    bit<1>  bs_report;      // a BlockDone the checks accept: sync_done takes it

    /* Where the packet goes (SgnnIngress's last decision). */
    bit<1>  fwd_hit;        // ipv4_forward has a route
    PortId_t fwd_port;
    bit<1>  worker_hit;     // worker_table has dst_worker's port
    PortId_t worker_port;

    /* The event this pass counts in events (one per pass: docs/tofino.md). */
    bit<1>  count_event;
    bit<32> event;
}

struct eg_metadata_t {
    bit<16> dst_worker;
    bit<48> worker_mac;
    bit<32> worker_ip;
    bit<8>  result_ecn;     // agg_ecn's sticky value (bit 0)
    bit<8>  state_out;
    bit<1>  count_event;
    bit<32> event;
}

#endif
