/* headers.p4: the header stack of a SwitchGNN frame (its headers are ../common/frame.p4)
 * and the metadata that travels with a packet through the pipeline. */
#ifndef SGNN_HEADERS_P4
#define SGNN_HEADERS_P4

#include "../common/frame.p4"

struct headers_t {
    ethernet_h ethernet;
    ipv4_h     ipv4;
    sgnn_h     sgnn;
    lanes_h    lanes;
}

/* The switch_config settings (set_config's parameters), loaded into every ingress pass,
 * recirculated ones included. Unicast frames and multicast replicas take the ingress
 * metadata into egress (simple_switch copies the whole PHV), so Ecn and SwitchFrameEgress
 * read them there. The I2E recirculation clone does not need them in its egress (it only
 * gets its next pass number and is recirculated) and reloads them in its next ingress
 * pass, so they are not in FL_RECIRC. */
struct config_t {
    bit<16> workers;
    bit<16> blocks_per_round;
    bit<32> ecn_threshold;
    bit<32> drop_every;
    bit<32> drop_prob;
    bit<48> switch_mac;
    bit<32> switch_ip;
    bit<32> plan_tag;
    bit<8>  role;           // ROLE_STAR, ROLE_LEAF, ROLE_SPINE
    bit<16> sync_base;      // worker id of sync_done[0]
    bit<16> up_id;          // a leaf's worker id at the root spine
    bit<16> up_peer;        // a leaf's worker_table id of the root spine
    bit<16> job;            // every SwitchGNN frame's job value (admission.p4)
}

/* meta.agg_kind (aggregation.p4). */
const bit<2> AGG_KIND_PLAIN    = 0;
const bit<2> AGG_KIND_UP       = 1;
const bit<2> AGG_KIND_PARTIALS = 2;

struct metadata_t {
    /* Pass number the I2E clone takes into its recirculation. The only field that
     * survives cloning and recirculation (both reset the rest of the metadata). */
    @field_list(FL_RECIRC)
    bit<8>  next_pass;

    /* switch_config (switch_config.p4). */
    config_t cfg;

    /* Frame checks (CheckFrame in parser.p4). */
    bool    ipv4_ok;        // IPv4 header a receiver accepts (version, IHL, lengths)
    bool    sgnn_ok;        // a SwitchGNN frame sgnn_wire::frame::parse accepts

    /* Output of the ingress controls. */
    bit<1>  to_worker;      // send to worker dst_worker (worker_table gives the port)
    bit<1>  originated;     // egress rewrites addresses and ECN, checksum recomputed
    bit<1>  advance_mc;     // block-advance replica: the worker is egress_rid
    bit<1>  replica_mc;     // replicated raw vertex (replicate): the worker is egress_rid
    bit<16> mcast_group;    // replicate's multicast group
    bit<16> dst_worker;

    /* agg_table action data. */
    bit<32> agg_base;
    bit<32> out_dst_id;
    bit<16> expected;
    bit<1>  more;
    bit<32> seen_base;      // first src_seen cell of the source in this block
    bit<16> generation;     // generation of the aggregators at agg_base this row uses
    /* Which aggregate action the row runs (aggregation.p4): AGG_KIND_PLAIN (aggregate),
     * AGG_KIND_UP (aggregate_up: the sum goes up as a partial), AGG_KIND_PARTIALS
     * (aggregate_partials: each frame adds its count). */
    bit<2>  agg_kind;

    /* Duplicate suppression: src_seen already held this round and block. */
    bit<1>  duplicate;

    /* One contribution's aggregation outcome. */
    bit<1>  complete;       // the count reached expected: emit the result
    bit<1>  saturated;      // some lane saturated
    bit<1>  result_ecn;     // sticky agg_ecn after this contribution
    bit<16> result_count;

    /* Loss recovery (recovery.p4): this frame is a pull (a FetchReq to the switch), and
     * what the seq check found. */
    bit<1>  pull;
    bit<1>  nack;           // the frame becomes a NACK frame
    bit<1>  new_gap;        // ... reporting a new gap (counted nacked)
    bit<32> nack_range;
    bit<32> nack_prev;
    bit<16> nack_gaps;
    bit<16> nack_next;
    bit<1>  all_sent;       // a clean tail probe completed the block's count: all-sent

    /* Worker addresses (egress worker_addr). */
    bit<48> worker_mac;
    bit<32> worker_ip;
}

#endif
