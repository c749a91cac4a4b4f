/* headers.p4: the bytes of a SwitchGNN frame (docs/protocol.md) and the metadata that
 * travels with a packet through the pipeline. */
#ifndef SGNN_HEADERS_P4
#define SGNN_HEADERS_P4

header ethernet_h {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

/* IHL 5 only: SwitchGNN frames carry no options, and an IPv4 header with options is
 * malformed for the switch (as for sgnn_wire::ipv4::Packet::new_checked). */
header ipv4_h {
    bit<4>  version;
    bit<4>  ihl;
    bit<6>  dscp;
    bit<2>  ecn;
    bit<16> total_len;
    bit<16> identification;
    bit<3>  flags;          // reserved, DF, MF
    bit<13> frag_offset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdr_checksum;
    bit<32> src_addr;
    bit<32> dst_addr;
}

/* The 24-byte SwitchGNN header, field for field as host/wire/src/sgnn.rs. */
header sgnn_h {
    bit<4>  version;
    bit<4>  pkt_type;
    bit<1>  ack;            // IS_ACK
    bit<1>  fetch;          // IS_FETCH
    bit<1>  ecn;
    bit<1>  resend;
    bit<4>  flags_rsvd;     // must be 0
    bit<16> worker_id;
    bit<32> src_id;
    bit<32> dst_id;
    bit<16> block_id;
    bit<16> count;
    bit<16> round;
    bit<16> segment;
    bit<8>  pass;
    bit<8>  frac_bits;
    bit<16> reserved;       // must be 0
}

/* 32 signed 32-bit lanes (two's complement, big-endian): one aggregator. */
header lanes_h {
    bit<32> v0;  bit<32> v1;  bit<32> v2;  bit<32> v3;
    bit<32> v4;  bit<32> v5;  bit<32> v6;  bit<32> v7;
    bit<32> v8;  bit<32> v9;  bit<32> v10; bit<32> v11;
    bit<32> v12; bit<32> v13; bit<32> v14; bit<32> v15;
    bit<32> v16; bit<32> v17; bit<32> v18; bit<32> v19;
    bit<32> v20; bit<32> v21; bit<32> v22; bit<32> v23;
    bit<32> v24; bit<32> v25; bit<32> v26; bit<32> v27;
    bit<32> v28; bit<32> v29; bit<32> v30; bit<32> v31;
}

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
}

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

    /* Duplicate suppression: src_seen already held this round and block. */
    bit<1>  duplicate;

    /* One contribution's aggregation outcome. */
    bit<1>  complete;       // the count reached expected: emit the result
    bit<1>  saturated;      // some lane saturated
    bit<1>  result_ecn;     // sticky agg_ecn after this contribution
    bit<16> result_count;

    /* Worker addresses (egress worker_addr). */
    bit<48> worker_mac;
    bit<32> worker_ip;
}

#endif
