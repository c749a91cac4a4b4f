//! The admission rule (`sgnn_switch::admission`, docs/host.md "Threat model") through the
//! real `softswitch` binary over loopback UDP: issue 31's forged frames (a Bypass from a
//! stranger's own UDP socket, a worker speaking for another, another worker's address,
//! another job's frame, a stranger's BlockDone) reach no daemon and are counted by reason;
//! the same Bypass from its worker's port with the job is delivered; the start-up probe
//! learns the job.

use std::net::UdpSocket;
use std::time::Duration;

use sgnn_wire::addressing::worker_ip;
use sgnn_wire::sgnn::Repr;
use sgnn_wire::{FrameRepr, PacketType, LANES, PROBE_DST};

mod common;
use common::{frame, frame_to};

const JOB: u16 = 4242;

fn bypass(from: u16, job: u16) -> Repr {
    let mut s = Repr::new(PacketType::Bypass);
    s.worker_id = from;
    s.src_id = 7;
    s.dst_id = 9;
    s.job = job;
    s
}

/// The next datagram on `sock` within a short wait, if any.
fn next(sock: &UdpSocket) -> Option<Vec<u8>> {
    let mut buf = [0u8; 2048];
    match sock.recv(&mut buf) {
        Ok(n) => Some(buf[..n].to_vec()),
        Err(_) => None,
    }
}

#[test]
fn only_a_workers_own_frames_with_its_address_and_the_job_get_through() {
    let (plan, dir, workers) = common::saved_plan_and_sockets();
    for w in &workers {
        w.set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
    }
    let stats = dir.path().join("stats.json");
    let (mut child, _lines, switch) = common::start_udp_switch(
        dir.path(),
        JOB,
        &workers,
        &["--stats-json".as_ref(), stats.as_os_str()],
    );
    // An unprivileged process's own socket: the software switch puts it on no worker's port.
    let stranger = UdpSocket::bind("127.0.0.1:0").unwrap();
    let lanes = [5i32; LANES];
    let to1 = worker_ip(1);

    // The forged Bypass of issue 31, from the stranger, well formed and with the job.
    stranger
        .send_to(&frame_to(0, to1, bypass(0, JOB), Some(&lanes)), &switch)
        .unwrap();
    // Worker 0 speaking for worker 2.
    workers[0]
        .send_to(&frame_to(2, to1, bypass(2, JOB), Some(&lanes)), &switch)
        .unwrap();
    // Worker 0's own id with worker 2's address.
    let mut f = frame_to(2, to1, bypass(0, JOB), Some(&lanes));
    let (mut r, _) = FrameRepr::parse(&f).unwrap();
    r.sgnn.worker_id = 0;
    r.emit(Some(&lanes), &mut f).unwrap();
    workers[0].send_to(&f, &switch).unwrap();
    // Another job's frame from the right port.
    workers[0]
        .send_to(&frame_to(0, to1, bypass(0, JOB + 1), Some(&lanes)), &switch)
        .unwrap();
    // A stranger's BlockDone for worker 0.
    let mut done = Repr::new(PacketType::BlockDone);
    done.job = JOB;
    stranger.send_to(&frame(0, done, None), &switch).unwrap();
    assert!(
        next(&workers[1]).is_none(),
        "no forged frame reaches worker 1"
    );

    // The same Bypass from its worker's port, with the job: delivered byte for byte.
    let good = frame_to(0, to1, bypass(0, JOB), Some(&lanes));
    workers[0].send_to(&good, &switch).unwrap();
    assert_eq!(next(&workers[1]).as_deref(), Some(&good[..]));

    // A start-up probe (job 0: the daemon does not know it yet) is answered with the job.
    let mut probe = Repr::new(PacketType::Ack);
    probe.worker_id = 2;
    probe.dst_id = PROBE_DST;
    workers[2]
        .send_to(&frame_to(2, worker_ip(2), probe, None), &switch)
        .unwrap();
    let answer = next(&workers[2]).expect("the probe is answered");
    let (a, _) = FrameRepr::parse(&answer).unwrap();
    assert_eq!(a.sgnn.job, JOB);
    assert_eq!(a.sgnn.src_id, plan.tag());
    // The same probe from a stranger is not.
    stranger
        .send_to(&frame_to(2, worker_ip(2), probe, None), &switch)
        .unwrap();
    assert!(next(&workers[2]).is_none());

    drop(child.stdin.take());
    assert!(child.wait().unwrap().success());
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    let c = &json;
    assert_eq!(c["drop_wrong_port"], 4, "{c}");
    assert_eq!(c["drop_wrong_address"], 1, "{c}");
    assert_eq!(c["drop_foreign_job"], 1, "{c}");
    assert_eq!(c["forwarded"], 2, "the good Bypass and the probe: {c}");
    assert_eq!(c["block_done"], 0, "{c}");
}
