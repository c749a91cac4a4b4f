/* admission.p4: which SwitchGNN frames the switch takes in at all, whatever their type
 * (sgnn_switch::admission; the software switch's Pipeline::ingress). Applied to every frame
 * from outside (not to the switch's own recirculated passes), before any other control acts
 * on it, in this order:
 * 1. the port: a frame on a worker's port (port_worker's set_port_worker) must name that
 *    worker; a link the fabric plan cables to another switch (set_port_link: a leaf's
 *    uplink, a spine's port to a leaf) is trusted as cabled; a port with no entry is a
 *    stranger's and takes nothing (drop_wrong_port), whatever the switch's role;
 * 2. the address: a frame on a worker's port must come from WORKER_NET | worker
 *    (drop_wrong_address);
 * 3. the job: the frame's job value must be set_config's job (drop_foreign_job), except a
 *    daemon's start-up probe on its own port, whose answer tells it the job.
 * A leaf takes a BlockAdvance only on its link to the root spine (port_w == up_peer), not on
 * another spine's (drop_wrong_port; sgnn_switch::admission::from_root): switchgnn.p4 checks
 * it where it dispatches the BlockAdvance. */
#ifndef SGNN_ADMISSION_P4
#define SGNN_ADMISSION_P4

control Admission(in headers_t hdr,
                  in metadata_t meta,
                  in bool known,
                  in bool link,
                  in bit<16> port_w,
                  out bool admitted) {
    apply {
        admitted = false;
        bool probe = hdr.sgnn.pkt_type == TYPE_ACK && hdr.sgnn.dst_id == PROBE_DST;
        if (!link && (!known || hdr.sgnn.worker_id != port_w)) {
            events.count(EV_DROP_WRONG_PORT);
        } else if (!link && hdr.ipv4.src_addr != (WORKER_NET | (bit<32>)port_w)) {
            events.count(EV_DROP_WRONG_ADDRESS);
        } else if (hdr.sgnn.job != meta.cfg.job && (link || !probe)) {
            events.count(EV_DROP_FOREIGN_JOB);
        } else {
            admitted = true;
        }
    }
}

#endif
