//! The datapath loop (`softswitch::ports::serve`) with ports in memory: a frame the pipeline
//! sends to a port the datapath cannot send on is counted as failed (`port_tx_failed`,
//! `tx_errors`), not as sent (`port_tx`), so a run that loses every frame of a port says so.

use std::collections::VecDeque;
use std::io;
use std::sync::Mutex;
use std::time::Duration;

use sgnn_wire::addressing::{worker_ip, worker_mac};
use sgnn_wire::sgnn::Repr;
use sgnn_wire::PacketType;
use softswitch::ports::{serve, EgressFaults, EgressQueues, Ports};
use softswitch::tables::PortId;
use softswitch::{Pipeline, SwitchConfig, Tables, WorkerPort};

mod common;

/// Receives what is queued; sends on port 0 and fails on every other port.
struct OnePortUp {
    incoming: VecDeque<(PortId, Vec<u8>)>,
    sent: Vec<PortId>,
}

impl Ports for OnePortUp {
    fn recv(&mut self, buf: &mut [u8], _: Duration) -> io::Result<Option<(PortId, usize)>> {
        Ok(self.incoming.pop_front().map(|(p, f)| {
            buf[..f.len()].copy_from_slice(&f);
            (p, f.len())
        }))
    }
    fn send(&mut self, port: PortId, _: &[u8]) -> io::Result<()> {
        if port == 0 {
            self.sent.push(port);
            Ok(())
        } else {
            Err(io::Error::other(format!("port {port} is down")))
        }
    }
    fn describe(&self) -> String {
        "memory, port 0 up".into()
    }
}

#[test]
fn frames_the_datapath_cannot_send_are_counted_as_failed_not_as_sent() {
    let workers: Vec<WorkerPort> = (0..2u16)
        .map(|w| WorkerPort {
            port: w,
            mac: worker_mac(w),
            ip: worker_ip(w),
        })
        .collect();
    let pipeline = Mutex::new(Pipeline::new(
        SwitchConfig {
            workers: 2,
            ..SwitchConfig::default()
        },
        Tables::for_workers(&workers),
    ));
    // Host to host: worker 1 to worker 0 (port 0, up) three times, worker 0 to worker 1
    // (port 1, down) twice.
    let ack = |from: u16, to: u16| {
        let mut s = Repr::new(PacketType::Ack);
        s.worker_id = from;
        (from, common::frame_to(from, worker_ip(to), s, None))
    };
    let frames: Vec<(PortId, Vec<u8>)> =
        vec![ack(1, 0), ack(0, 1), ack(1, 0), ack(0, 1), ack(1, 0)];
    let len = frames[1].1.len() as u64;
    let total = frames.len() as u64;
    let mut ports = OnePortUp {
        incoming: frames.into(),
        sent: Vec::new(),
    };
    let mut queues = EgressQueues::new(2, None, 64);
    let mut faults = EgressFaults::new(0.0, 0.0, 0.0, 1);
    let stats = serve(&mut ports, &pipeline, &mut queues, &mut faults, |p| {
        p.counters.rx == total
    })
    .unwrap();
    let p = pipeline.lock().unwrap();
    assert_eq!(ports.sent.len(), 3);
    assert_eq!(p.counters.forwarded, 5, "the pipeline forwarded all five");
    assert_eq!(stats.tx_errors, 2);
    assert_eq!(p.port_tx[0].packets, 3);
    assert_eq!(p.port_tx[1].packets, 0, "nothing left port 1");
    assert_eq!(p.port_tx_failed[1].packets, 2);
    assert_eq!(p.port_tx_failed[1].bytes, 2 * len);
    assert_eq!(p.port_tx_failed[0].packets, 0);
}
