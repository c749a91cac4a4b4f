//! `p4/v1model/admission.p4`: which SwitchGNN frames the switch takes in at all, whatever
//! their type. One rule, applied before any other control looks at a frame from outside (a
//! recirculated pass is the switch's own and is not checked again):
//!
//! 1. **The port.** `port_worker` says what is at the other end of the ingress port
//!    ([`PortEnd`]). A frame on a worker's port (`set_port_worker`) must name that worker in
//!    `worker_id`. A frame on a link (`set_port_link`: a port the fabric plan cables to
//!    another switch, [`crate::fabric`]: a leaf's uplinks, a spine's ports to its leaves) is
//!    trusted as cabled: the other switch applied this rule to the frame where it entered the
//!    fabric. A frame on a port with no entry is a stranger's and is refused
//!    ([`Refusal::WrongPort`]) on every role: a star's unused port, a leaf's port of no
//!    worker and no link, a spine's port to no leaf. Only the control plane makes a port a
//!    link, so a host plugged into a spare port of a leaf or a spine is nobody.
//! 2. **The address.** A frame on a worker's port must carry that worker's IPv4 source,
//!    [`sgnn_wire::addressing::worker_ip`] ([`Refusal::WrongAddress`]).
//! 3. **The job.** Every frame must carry the job value the switch was loaded with
//!    (`set_config`'s `job`, [`crate::config::Settings::job`]), except a daemon's start-up
//!    probe from its own port: the answer tells it the value ([`Refusal::ForeignJob`]).
//!
//! One more rule, for the one frame a leaf takes from a single switch of the fabric: **the
//! root's advance** ([`from_root`]). A leaf takes a BlockAdvance addressed to it only on its
//! link to the root spine, the link whose `set_port_link` peer is its `Role::Leaf::root`
//! (`set_config`'s `up_peer`); on another spine's link it is refused
//! ([`Refusal::WrongPort`]). Any spine's link may bring a Result down (aggregates are spread
//! over the spines); only the root synchronises blocks.
//!
//! What it buys (docs/host.md, "Threat model"): a process that can send to the switch but is
//! not a worker's port or a cabled link (another UDP socket on the machine, another host on
//! the segment, a host on a spare port of a leaf or a spine) cannot add to a sum, forward a
//! frame to a daemon, or move block synchronisation; a worker cannot speak for another;
//! frames of a stale or foreign job are dropped; a spine other than the root (or a device
//! spliced into its link) cannot advance a leaf's blocks. It does not authenticate: whoever
//! owns a worker's port (root on that worker's machine, or a device spliced into its link)
//! and learns the job value (it is in every frame) is that worker, and whoever is spliced into a
//! link between two switches is trusted as the switch at its other end.

use sgnn_wire::addressing::worker_ip;
use sgnn_wire::sgnn::Repr;

use crate::config::Role;
use crate::counters::Event;
pub use crate::forwarding::PortEnd;

/// What the ingress port is, from its `port_worker` entry alone (whatever the switch's role).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Port {
    /// The port of worker `.0` (`set_port_worker`).
    Worker(u16),
    /// A link cabled to another switch (`set_port_link`).
    Link,
    /// A port with no entry: no worker's and no link (the software switch's UDP datagrams
    /// from an unknown address arrive on one, and so does whatever a spare port of a leaf or
    /// a spine receives).
    Stranger,
}

impl Port {
    /// The port whose `port_worker` entry is `entry` (`None`: it has none).
    pub fn classify(entry: Option<PortEnd>) -> Port {
        match entry {
            Some(PortEnd::Worker(w)) => Port::Worker(w),
            Some(PortEnd::Link(_)) => Port::Link,
            None => Port::Stranger,
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

/// The root's advance (see the module): `Ok` when a switch of `role` may take a BlockAdvance
/// addressed to it that came in on a port whose `port_worker` entry is `entry` (`None`: it
/// has none), that is when the switch is a leaf and the port its link to the root spine
/// (`set_port_link(root)`). Checked after [`admit`], on a frame it admitted from a link; a
/// BlockAdvance from anywhere else is not the root's ([`Refusal::WrongPort`]).
pub fn from_root(role: Role, entry: Option<PortEnd>) -> Result<(), Refusal> {
    match (role, entry) {
        (Role::Leaf { root, .. }, Some(PortEnd::Link(peer))) if peer == root => Ok(()),
        _ => Err(Refusal::WrongPort),
    }
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
    fn ports_by_their_entry_alone() {
        assert_eq!(Port::classify(Some(PortEnd::Worker(3))), Port::Worker(3));
        assert_eq!(Port::classify(Some(PortEnd::Link(8))), Port::Link);
        assert_eq!(Port::classify(None), Port::Stranger);
    }

    /// What `port_worker` holds for `port` among a switch's `entries`.
    fn port_end(entries: &[crate::TypedEntry], port: u16) -> Option<PortEnd> {
        entries.iter().find_map(|e| match *e {
            crate::TypedEntry::PortWorker { port: p, worker_id } if p == port => {
                Some(PortEnd::Worker(worker_id))
            }
            crate::TypedEntry::PortLink { port: p, peer_id } if p == port => {
                Some(PortEnd::Link(peer_id))
            }
            _ => None,
        })
    }

    /// Issue 31, item 1: on a leaf-spine fabric, a port the plan cables to no switch and no
    /// worker is a stranger's. A leaf of workers 4 and 5 on ports 0 and 1 and its uplink to
    /// the spine (peer 8) on port 2: a forged Bypass on spare port 3 is refused, the same
    /// frame on the uplink is the spine's and admitted.
    #[test]
    fn a_leafs_spare_port_is_a_strangers_and_only_its_link_is_trusted() {
        use crate::fabric::{switch_tables, Fabric, FabricSwitch};
        use crate::TypedEntry;
        let f = Fabric::new(4, 2, 1).unwrap();
        let t = switch_tables(&f, FabricSwitch::Leaf(0), &Default::default());
        let entry = |port: u16| port_end(&t.entries, port);
        let forged = frame(PacketType::Bypass, 0, 7);
        let (spare, uplink) = (3, f.uplink_port(0));
        assert_eq!(entry(spare), None);
        assert_eq!(Port::classify(entry(spare)), Port::Stranger);
        assert_eq!(
            admit(Port::classify(entry(spare)), 7, worker_ip(0), &forged),
            Err(Refusal::WrongPort)
        );
        assert_eq!(entry(uplink), Some(PortEnd::Link(f.spine_peer(0))));
        assert_eq!(
            admit(Port::classify(entry(uplink)), 7, worker_ip(0), &forged),
            Ok(())
        );
        // A spine's ports: its leaves' links, and nothing past them.
        let t = switch_tables(&f, FabricSwitch::Spine(0), &Default::default());
        let links: Vec<(u16, u16)> = t
            .entries
            .iter()
            .filter_map(|e| match *e {
                TypedEntry::PortLink { port, peer_id } => Some((port, peer_id)),
                TypedEntry::PortWorker { .. } => panic!("a spine has no worker: {e:?}"),
                _ => None,
            })
            .collect();
        assert_eq!(links, [(0, f.leaf_peer(0)), (1, f.leaf_peer(1))]);
    }

    /// Issue 31: on a fabric of two spines, a leaf takes the BlockAdvance of the root spine
    /// (spine 0) on its link alone: the same frame on its link to spine 1 (a spine that
    /// never synchronises blocks, or a device spliced into that link) is refused, though
    /// admitted as a link's frame; so is it on a worker's port or on a spine.
    #[test]
    fn a_leaf_takes_the_advance_from_the_root_spines_link_only() {
        use crate::fabric::{switch_tables, Fabric, FabricSwitch, ROOT_SPINE};
        let f = Fabric::new(4, 2, 2).unwrap();
        // fabric::settings' role for leaf 0.
        let role = Role::Leaf {
            first_worker: 0,
            id: f.leaf_peer(0),
            root: f.spine_peer(ROOT_SPINE),
        };
        let t = switch_tables(&f, FabricSwitch::Leaf(0), &Default::default());
        let entry = |port: u16| port_end(&t.entries, port);
        let (root, other) = (f.uplink_port(ROOT_SPINE), f.uplink_port(1));
        assert_eq!(entry(root), Some(PortEnd::Link(f.spine_peer(ROOT_SPINE))));
        assert_eq!(entry(other), Some(PortEnd::Link(f.spine_peer(1))));
        let advance = frame(PacketType::BlockAdvance, f.leaf_peer(0), 7);
        for port in [root, other] {
            assert_eq!(
                admit(Port::classify(entry(port)), 7, [10, 0, 128, 0], &advance),
                Ok(())
            );
        }
        assert_eq!(from_root(role, entry(root)), Ok(()));
        assert_eq!(from_root(role, entry(other)), Err(Refusal::WrongPort));
        assert_eq!(from_root(role, entry(0)), Err(Refusal::WrongPort));
        assert_eq!(from_root(role, None), Err(Refusal::WrongPort));
        let spine = Role::Spine {
            first_peer: f.leaf_peer(0),
        };
        assert_eq!(from_root(spine, entry(root)), Err(Refusal::WrongPort));
        assert_eq!(from_root(Role::Star, entry(root)), Err(Refusal::WrongPort));
    }
}
