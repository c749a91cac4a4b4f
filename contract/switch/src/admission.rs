//! `p4/v1model/admission.p4`: which SwitchGNN frames the switch takes in at all, whatever
//! their type. One rule, applied before any other control looks at a frame from outside (a
//! recirculated pass is the switch's own and is not checked again):
//!
//! 1. **The port.** A frame on a worker's port (`port_worker`) must name that worker in
//!    `worker_id`; a frame on a port of no worker is refused on a star's switch, where every
//!    port is a worker's ([`Refusal::WrongPort`]). On a leaf or a spine a port of no worker is
//!    a link to another switch (its uplinks; every port of a spine), trusted as cabled: the
//!    other switch applied this rule to the frame where it entered the fabric.
//! 2. **The address.** A frame on a worker's port must carry that worker's IPv4 source,
//!    [`sgnn_wire::addressing::worker_ip`] ([`Refusal::WrongAddress`]).
//! 3. **The job.** Every frame must carry the job value the switch was loaded with
//!    (`set_config`'s `job`, [`crate::config::Settings::job`]), except a daemon's start-up
//!    probe from its own port: the answer tells it the value ([`Refusal::ForeignJob`]).
//!
//! What it buys (docs/host.md, "Threat model"): a process that can send to the switch but is
//! not a worker's port (another UDP socket on the machine, another host on the segment)
//! cannot add to a sum, forward a frame to a daemon, or move block synchronisation; a worker
//! cannot speak for another; frames of a stale or foreign job are dropped. It does not
//! authenticate: whoever owns a worker's port (root on that worker's machine, or a device
//! spliced into its link) and learns the job value (it is in every frame) is that worker.

use sgnn_wire::addressing::worker_ip;
use sgnn_wire::sgnn::Repr;

use crate::config::Role;
use crate::counters::Event;

/// What the ingress port is, from `port_worker` and the switch's role.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Port {
    /// The port of worker `.0` (`port_worker` holds it, on a star or a leaf).
    Worker(u16),
    /// A link to another switch: a leaf's port of no worker, any port of a spine.
    Link,
    /// A star's port of no worker (the software switch's UDP datagrams from an unknown
    /// address arrive on one).
    Stranger,
}

impl Port {
    /// The port `port_worker` maps to `worker` (or to nothing) on a switch of `role`.
    pub fn classify(role: Role, worker: Option<u16>) -> Port {
        match (role, worker) {
            (Role::Spine { .. }, _) => Port::Link,
            (_, Some(w)) => Port::Worker(w),
            (Role::Leaf { .. }, None) => Port::Link,
            (Role::Star, None) => Port::Stranger,
        }
    }
}

/// Why a frame was refused; each is counted by its own event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// From a stranger's port, or naming another worker than the port's.
    WrongPort,
    /// On a worker's port with another IPv4 source than the worker's.
    WrongAddress,
    /// Another job value than the switch's.
    ForeignJob,
}

impl Refusal {
    /// The event counter it increments.
    pub fn event(self) -> Event {
        match self {
            Refusal::WrongPort => Event::DropWrongPort,
            Refusal::WrongAddress => Event::DropWrongAddress,
            Refusal::ForeignJob => Event::DropForeignJob,
        }
    }
}

/// The rule (see the module): `Ok` when a SwitchGNN frame with header `s` and IPv4 source
/// `ip_src` that came in on `port` may go on to the switch's other controls, on a switch
/// loaded with job value `job`. Checked in this order: port, address, job.
pub fn admit(port: Port, job: u16, ip_src: [u8; 4], s: &Repr) -> Result<(), Refusal> {
    match port {
        Port::Stranger => return Err(Refusal::WrongPort),
        Port::Worker(w) => {
            if s.worker_id != w {
                return Err(Refusal::WrongPort);
            }
            if ip_src != worker_ip(w) {
                return Err(Refusal::WrongAddress);
            }
            // A daemon's start-up probe ([`Repr::is_probe`]): admitted whatever its job
            // value, from its worker's port only.
            if s.is_probe() {
                return Ok(());
            }
        }
        Port::Link => {}
    }
    if s.job != job {
        return Err(Refusal::ForeignJob);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use sgnn_wire::{PacketType, PROBE_DST};

    fn frame(t: PacketType, worker: u16, job: u16) -> Repr {
        let mut s = Repr::new(t);
        s.worker_id = worker;
        s.job = job;
        s
    }

    #[test]
    fn every_type_from_its_workers_port_with_its_address_and_the_job_only() {
        let types = [
            PacketType::Data,
            PacketType::Result,
            PacketType::Ack,
            PacketType::FetchReq,
            PacketType::Bypass,
            PacketType::BlockDone,
            PacketType::BlockAdvance,
        ];
        for t in types {
            let s = frame(t, 2, 7);
            assert_eq!(admit(Port::Worker(2), 7, worker_ip(2), &s), Ok(()));
            assert_eq!(
                admit(Port::Worker(1), 7, worker_ip(2), &s),
                Err(Refusal::WrongPort),
                "{t:?} naming worker 2 on worker 1's port"
            );
            assert_eq!(
                admit(Port::Stranger, 7, worker_ip(2), &s),
                Err(Refusal::WrongPort),
                "{t:?} from a stranger"
            );
            assert_eq!(
                admit(Port::Worker(2), 7, worker_ip(1), &s),
                Err(Refusal::WrongAddress),
                "{t:?} with worker 1's address on worker 2's port"
            );
            assert_eq!(
                admit(Port::Worker(2), 8, worker_ip(2), &s),
                Err(Refusal::ForeignJob),
                "{t:?} of another job"
            );
            assert_eq!(admit(Port::Link, 7, [1, 2, 3, 4], &s), Ok(()));
            assert_eq!(
                admit(Port::Link, 8, [1, 2, 3, 4], &s),
                Err(Refusal::ForeignJob)
            );
        }
    }

    #[test]
    fn a_probe_learns_the_job_from_its_own_port_only() {
        let mut p = frame(PacketType::Ack, 3, 0);
        p.dst_id = PROBE_DST;
        assert_eq!(admit(Port::Worker(3), 0x1234, worker_ip(3), &p), Ok(()));
        assert_eq!(
            admit(Port::Worker(4), 0x1234, worker_ip(3), &p),
            Err(Refusal::WrongPort)
        );
        assert_eq!(
            admit(Port::Stranger, 0x1234, worker_ip(3), &p),
            Err(Refusal::WrongPort)
        );
        assert_eq!(
            admit(Port::Link, 0x1234, worker_ip(3), &p),
            Err(Refusal::ForeignJob)
        );
    }

    #[test]
    fn ports_by_role() {
        let leaf = Role::Leaf {
            first_worker: 4,
            id: 9,
            root: 8,
        };
        assert_eq!(Port::classify(Role::Star, Some(3)), Port::Worker(3));
        assert_eq!(Port::classify(Role::Star, None), Port::Stranger);
        assert_eq!(Port::classify(leaf, Some(5)), Port::Worker(5));
        assert_eq!(Port::classify(leaf, None), Port::Link);
        let spine = Role::Spine { first_peer: 8 };
        assert_eq!(Port::classify(spine, Some(8)), Port::Link);
        assert_eq!(Port::classify(spine, None), Port::Link);
    }
}
