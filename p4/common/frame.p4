/* frame.p4: the bytes of a SwitchGNN frame on the wire (docs/protocol.md), shared by the
 * v1model and TNA programs: Ethernet, IPv4, the SwitchGNN header and the value lanes. Each
 * architecture's headers.p4 includes it and adds its own header stack and metadata. */
#ifndef SGNN_COMMON_FRAME_P4
#define SGNN_COMMON_FRAME_P4

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

/* The 24-byte SwitchGNN header, field for field as contract/wire/src/sgnn.rs. */
header sgnn_h {
    bit<4>  version;
    bit<4>  pkt_type;
    bit<1>  ack;            // IS_ACK
    bit<1>  fetch;          // IS_FETCH
    bit<1>  ecn;
    bit<1>  resend;
    bit<4>  flags_rsvd;     // 0 on the wire; TNA marks its own recirculated passes here (tna/config.p4)
    bit<16> worker_id;
    bit<32> src_id;
    bit<32> dst_id;
    bit<16> block_id;
    bit<16> count;
    bit<16> round;
    bit<16> segment;
    bit<8>  pass;
    bit<8>  frac_bits;
    bit<16> job;            // the job value (set_config's job; admission.p4)
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

#endif
