//! Topologies: hosts and switches joined by full-duplex links, with shortest-path routing.
//!
//! Nodes are numbered hosts first (`0..hosts`, host `i` is worker `i`), then switches
//! (`hosts..hosts + switches`). Every link is full duplex and becomes two channels: link `i`
//! is channel `2i` (a -> b) and `2i + 1` (b -> a). Hosts are single-homed (one link each).
//! Switches route to every node (hosts, and switches for frames the switch logic consumes)
//! along shortest paths; where several neighbours are equally close (a leaf reaching another
//! leaf over any spine) the routing table keeps all of them and [`Routes::next_hop`] picks one
//! by a flow hash (ECMP, [`flow_hash`]).

use std::collections::VecDeque;

use crate::hash::splitmix64;
use crate::{SimError, Time};

/// One full-duplex link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkSpec {
    /// One end (node id).
    pub a: u32,
    /// The other end (node id).
    pub b: u32,
    /// Bandwidth of each direction, bits per second.
    pub bps: u64,
    /// Propagation delay, picoseconds.
    pub delay: Time,
}

/// Hosts, switches and the links between them.
#[derive(Debug, Clone)]
pub struct Topology {
    /// Short name for outputs (`star`, `pair`).
    pub name: String,
    /// Number of hosts (node ids `0..hosts`).
    pub hosts: u32,
    /// Number of switches (node ids `hosts..hosts + switches`).
    pub switches: u32,
    /// Links.
    pub links: Vec<LinkSpec>,
}

impl Topology {
    /// `hosts` hosts on one switch (node `hosts`), every link `bps` with `delay`.
    pub fn star(hosts: u32, bps: u64, delay: Time) -> Topology {
        Topology {
            name: "star".into(),
            hosts,
            switches: 1,
            links: (0..hosts)
                .map(|h| LinkSpec {
                    a: h,
                    b: hosts,
                    bps,
                    delay,
                })
                .collect(),
        }
    }

    /// Two hosts joined by one link, no switch (the single-link validation case).
    pub fn pair(bps: u64, delay: Time) -> Topology {
        Topology {
            name: "pair".into(),
            hosts: 2,
            switches: 0,
            links: vec![LinkSpec {
                a: 0,
                b: 1,
                bps,
                delay,
            }],
        }
    }

    /// A two-tier leaf-spine fabric: `leaves * hosts_per_leaf` hosts, host `h` on leaf
    /// `h / hosts_per_leaf`, every leaf linked to every spine. Nodes: hosts, then the leaves
    /// (`hosts..hosts + leaves`), then the spines. Links: host `h`'s is link `h` (so its uplink
    /// is channel `2h`, as on the star), then leaf `l` to spine `s` is link
    /// `hosts + l * spines + s`. Host links run at `host_bps`, leaf-spine links at
    /// `fabric_bps`; every link has propagation delay `delay`.
    pub fn leaf_spine(
        leaves: u32,
        spines: u32,
        hosts_per_leaf: u32,
        host_bps: u64,
        fabric_bps: u64,
        delay: Time,
    ) -> Topology {
        let hosts = leaves * hosts_per_leaf;
        let leaf = |l: u32| hosts + l;
        let spine = |s: u32| hosts + leaves + s;
        let mut links: Vec<LinkSpec> = (0..hosts)
            .map(|h| LinkSpec {
                a: h,
                b: leaf(h / hosts_per_leaf),
                bps: host_bps,
                delay,
            })
            .collect();
        for l in 0..leaves {
            for s in 0..spines {
                links.push(LinkSpec {
                    a: leaf(l),
                    b: spine(s),
                    bps: fabric_bps,
                    delay,
                });
            }
        }
        Topology {
            name: "leaf-spine".into(),
            hosts,
            switches: leaves + spines,
            links,
        }
    }

    /// Number of nodes.
    pub fn nodes(&self) -> u32 {
        self.hosts + self.switches
    }

    /// `true` if `n` is a switch.
    pub fn is_switch(&self, n: u32) -> bool {
        n >= self.hosts
    }

    /// `h3` or `s0`.
    pub fn node_name(&self, n: u32) -> String {
        if self.is_switch(n) {
            format!("s{}", n - self.hosts)
        } else {
            format!("h{n}")
        }
    }

    /// `(from, to)` of channel `c`.
    pub fn channel_ends(&self, c: u32) -> (u32, u32) {
        let l = &self.links[(c / 2) as usize];
        if c.is_multiple_of(2) {
            (l.a, l.b)
        } else {
            (l.b, l.a)
        }
    }

    /// Checks the topology and derives the host uplinks and the switches' routing tables.
    pub fn routes(&self) -> Result<Routes, SimError> {
        let n = self.nodes() as usize;
        let mut adj: Vec<Vec<(u32, u32)>> = vec![Vec::new(); n];
        for (i, l) in self.links.iter().enumerate() {
            if l.a as usize >= n || l.b as usize >= n || l.a == l.b {
                return Err(SimError::BadLinkEnds {
                    link: i,
                    a: l.a,
                    b: l.b,
                });
            }
            if l.bps == 0 {
                return Err(SimError::ZeroBandwidth { link: i });
            }
            adj[l.a as usize].push((l.b, 2 * i as u32));
            adj[l.b as usize].push((l.a, 2 * i as u32 + 1));
        }
        let mut uplink = Vec::with_capacity(self.hosts as usize);
        for (h, links) in adj.iter().take(self.hosts as usize).enumerate() {
            if links.len() != 1 {
                return Err(SimError::HostLinkCount {
                    host: h,
                    links: links.len(),
                });
            }
            uplink.push(links[0].1);
        }
        // For every destination node d (hosts, and switches: frames their logic consumes), BFS
        // from d through switches only (a host forwards nothing unless it is d), then every
        // switch keeps all neighbours one step closer to d: its equal-cost next hops.
        let mut hops: Vec<Vec<u32>> = vec![Vec::new(); self.switches as usize * n];
        let mut dist = vec![u32::MAX; n];
        let mut q = VecDeque::new();
        for d in 0..n {
            dist.fill(u32::MAX);
            dist[d] = 0;
            q.clear();
            q.push_back(d as u32);
            while let Some(u) = q.pop_front() {
                if !self.is_switch(u) && u as usize != d {
                    continue;
                }
                for &(v, _) in &adj[u as usize] {
                    if dist[v as usize] == u32::MAX {
                        dist[v as usize] = dist[u as usize] + 1;
                        q.push_back(v);
                    }
                }
            }
            for s in 0..self.switches {
                let v = self.hosts + s;
                if dist[v as usize] == u32::MAX || v as usize == d {
                    continue;
                }
                let set = &mut hops[s as usize * n + d];
                for &(u, c) in &adj[v as usize] {
                    let forwards = self.is_switch(u) || u as usize == d;
                    if forwards && dist[u as usize] + 1 == dist[v as usize] {
                        set.push(c); // channel v -> u
                    }
                }
                set.sort_unstable();
            }
        }
        let mut off = Vec::with_capacity(hops.len() + 1);
        let mut next = Vec::new();
        off.push(0);
        for set in &hops {
            next.extend_from_slice(set);
            off.push(next.len() as u32);
        }
        Ok(Routes {
            nodes: n as u32,
            uplink,
            off,
            next,
        })
    }
}

/// The two tiers of a fabric as the switch logic of a hierarchical strategy sees them:
/// leaves are the switches hosts hang off, spines the switches without hosts. A star is one
/// leaf and no spine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tiers {
    /// Leaf (node id) of each host.
    pub leaf_of: Vec<u32>,
    /// Leaf node ids, ascending.
    pub leaves: Vec<u32>,
    /// Spine node ids, ascending.
    pub spines: Vec<u32>,
}

impl Topology {
    /// The fabric in `sgnn_switch::fabric`'s numbering, if this is a leaf-spine laid out as
    /// [`Topology::leaf_spine`] lays one out (hosts, then leaves, then spines; host `h` on
    /// leaf `h / per_leaf`, every leaf linked to every spine): the shape the real code's
    /// switches run on a fabric. `None` for a star or any other layout.
    pub fn fabric(&self) -> Option<sgnn_switch::fabric::Fabric> {
        let t = self.tiers().ok()?;
        if t.spines.is_empty() {
            return None;
        }
        let (nl, ns) = (t.leaves.len() as u32, t.spines.len() as u32);
        let f = sgnn_switch::fabric::Fabric::new(self.hosts, nl, ns).ok()?;
        let laid_out = t
            .leaves
            .iter()
            .enumerate()
            .all(|(i, &n)| n == self.hosts + i as u32)
            && t.spines
                .iter()
                .enumerate()
                .all(|(i, &n)| n == self.hosts + nl + i as u32)
            && t.leaf_of
                .iter()
                .enumerate()
                .all(|(h, &n)| n == self.hosts + f.leaf_of(h as u32));
        laid_out.then_some(f)
    }

    /// Leaves and spines, if this is a star or a two-tier fabric in which every leaf links
    /// to every spine and switches link nothing else; otherwise why not.
    pub fn tiers(&self) -> Result<Tiers, SimError> {
        let mut leaf_of = vec![u32::MAX; self.hosts as usize];
        let mut has_host = vec![false; self.switches as usize];
        let mut fabric = std::collections::BTreeSet::new();
        for l in &self.links {
            match (self.is_switch(l.a), self.is_switch(l.b)) {
                (false, false) => return Err(SimError::HostToHostLink),
                (false, true) | (true, false) => {
                    let (h, s) = if self.is_switch(l.b) {
                        (l.a, l.b)
                    } else {
                        (l.b, l.a)
                    };
                    if leaf_of[h as usize] != u32::MAX {
                        return Err(SimError::HostMultiplyLinked { host: h });
                    }
                    leaf_of[h as usize] = s;
                    has_host[(s - self.hosts) as usize] = true;
                }
                (true, true) => {
                    fabric.insert((l.a.min(l.b), l.a.max(l.b)));
                }
            }
        }
        if let Some(h) = leaf_of.iter().position(|&s| s == u32::MAX) {
            return Err(SimError::HostUnlinked { host: h });
        }
        let (leaves, spines): (Vec<u32>, Vec<u32>) =
            (self.hosts..self.nodes()).partition(|&s| has_host[(s - self.hosts) as usize]);
        if spines.is_empty() && leaves.len() != 1 {
            return Err(SimError::NoSpine {
                leaves: leaves.len(),
            });
        }
        let full = leaves.len() * spines.len();
        let complete = leaves.iter().all(|&l| {
            spines
                .iter()
                .all(|&s| fabric.contains(&(l.min(s), l.max(s))))
        });
        if fabric.len() != full || !complete {
            return Err(SimError::NotLeafSpine {
                fabric_links: fabric.len(),
                leaves: leaves.len(),
                spines: spines.len(),
            });
        }
        Ok(Tiers {
            leaf_of,
            leaves,
            spines,
        })
    }
}

/// Derived forwarding state.
#[derive(Debug, Clone)]
pub struct Routes {
    nodes: u32,
    /// The one channel each host sends on.
    pub uplink: Vec<u32>,
    /// `next[off[i]..off[i + 1]]`: the equal-cost channels of (switch, destination) pair
    /// `i = sw * nodes + dst`, ascending.
    off: Vec<u32>,
    next: Vec<u32>,
}

impl Routes {
    /// All equal-cost channels switch `sw` (its index among switches) may forward a packet for
    /// node `dst` on (empty if unreachable or `dst` is `sw` itself), ascending.
    pub fn next_hops(&self, sw: u32, dst: u32) -> &[u32] {
        let i = (sw * self.nodes + dst) as usize;
        &self.next[self.off[i] as usize..self.off[i + 1] as usize]
    }

    /// The channel switch `sw` forwards a packet for node `dst` on: among the equal-cost
    /// channels, number `hash % count` (ECMP; `hash` is the packet's [`flow_hash`], so a flow
    /// keeps one path). `None` if unreachable.
    pub fn next_hop(&self, sw: u32, dst: u32, hash: u64) -> Option<u32> {
        let set = self.next_hops(sw, dst);
        match set.len() {
            0 => None,
            1 => Some(set[0]),
            k => Some(set[(hash % k as u64) as usize]),
        }
    }
}

/// ECMP hash of a flow: source node, destination node, and a flow id (what identifies the
/// flow besides its ends; see `Pkt::flow_id`). Deterministic (no seed), so runs repeat.
/// SwitchGNN uses it on `(block, row, segment)` to pick the spine of an aggregate.
pub fn flow_hash(src: u32, dst: u32, flow: u64) -> u64 {
    splitmix64(splitmix64((src as u64) << 32 | dst as u64) ^ flow)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn star_routes_each_host_on_its_own_link() {
        let t = Topology::star(4, 100_000_000_000, 2_000_000);
        let r = t.routes().unwrap();
        for h in 0..4 {
            assert_eq!(r.uplink[h as usize], 2 * h);
            let c = r.next_hop(0, h, 0).unwrap();
            assert_eq!(t.channel_ends(c), (4, h));
        }
    }

    #[test]
    fn pair_has_no_switch() {
        let t = Topology::pair(10_000_000_000, 0);
        let r = t.routes().unwrap();
        assert_eq!(t.channel_ends(r.uplink[0]), (0, 1));
        assert_eq!(t.channel_ends(r.uplink[1]), (1, 0));
    }

    const G100: u64 = 100_000_000_000;

    /// Follows the route from host `from` to `to` with ECMP hash `hash`; returns the nodes
    /// visited after `from`.
    fn walk(t: &Topology, r: &Routes, from: u32, to: u32, hash: u64) -> Vec<u32> {
        let mut at = t.channel_ends(r.uplink[from as usize]).1;
        let mut path = vec![at];
        while at != to {
            let c = r.next_hop(at - t.hosts, to, hash).expect("reachable");
            at = t.channel_ends(c).1;
            path.push(at);
            assert!(path.len() <= t.nodes() as usize, "routing loop");
        }
        path
    }

    #[test]
    fn leaf_spine_paths_are_shortest_and_use_every_spine() {
        let (leaves, spines, per) = (4, 3, 5);
        let t = Topology::leaf_spine(leaves, spines, per, G100, 4 * G100, 1_000_000);
        let r = t.routes().unwrap();
        let tiers = t.tiers().unwrap();
        assert_eq!(t.hosts, leaves * per);
        assert_eq!(tiers.spines.len() as u32, spines);
        for h in 0..t.hosts {
            assert_eq!(tiers.leaf_of[h as usize], t.hosts + h / per);
            assert_eq!(r.uplink[h as usize], 2 * h);
        }
        for src in 0..t.hosts {
            for dst in 0..t.hosts {
                if src == dst {
                    continue;
                }
                let same_leaf = src / per == dst / per;
                let mut spines_seen = std::collections::BTreeSet::new();
                for hash in 0..64 {
                    let p = walk(&t, &r, src, dst, hash);
                    // leaf, host (2 hops) or leaf, spine, leaf, host (4 hops).
                    assert_eq!(p.len(), if same_leaf { 2 } else { 4 }, "{src}->{dst}");
                    if !same_leaf {
                        spines_seen.insert(p[1]);
                    }
                }
                if !same_leaf {
                    assert_eq!(spines_seen.len() as u32, spines, "{src}->{dst}");
                    let leaf = t.hosts + src / per;
                    assert_eq!(r.next_hops(leaf - t.hosts, dst).len() as u32, spines);
                }
            }
        }
        // Switch destinations: a leaf reaches a spine directly, another leaf over any spine.
        let (l0, l1, s0) = (t.hosts, t.hosts + 1, t.hosts + leaves);
        assert_eq!(r.next_hops(0, s0).len(), 1);
        assert_eq!(t.channel_ends(r.next_hop(0, s0, 7).unwrap()), (l0, s0));
        assert_eq!(r.next_hops(0, l1).len() as u32, spines);
        assert!(r.next_hops(0, l0).is_empty());
        // Link rates: hosts at the host rate, the fabric at its own.
        assert!(t.links[..t.hosts as usize].iter().all(|l| l.bps == G100));
        assert!(t.links[t.hosts as usize..]
            .iter()
            .all(|l| l.bps == 4 * G100));
        assert_eq!(t.links.len() as u32, t.hosts + leaves * spines);
    }

    #[test]
    fn flow_hash_is_deterministic_and_spreads_flows() {
        assert_eq!(flow_hash(3, 9, 42), flow_hash(3, 9, 42));
        assert_ne!(flow_hash(3, 9, 42), flow_hash(9, 3, 42));
        assert_ne!(flow_hash(3, 9, 42), flow_hash(3, 9, 43));
        let t = Topology::leaf_spine(2, 4, 64, G100, G100, 0);
        let r = t.routes().unwrap();
        // 64 x 64 flows from leaf 0 to leaf 1: each spine's share within 20 % of a quarter.
        let mut per = [0u32; 4];
        for s in 0..64 {
            for d in 64..128 {
                let c = r.next_hop(0, d, flow_hash(s, d, 0)).unwrap();
                let again = r.next_hop(0, d, flow_hash(s, d, 0)).unwrap();
                assert_eq!(c, again);
                per[(t.channel_ends(c).1 - t.hosts - 2) as usize] += 1;
            }
        }
        for n in per {
            assert!((n as f64 - 1024.0).abs() < 0.2 * 1024.0, "{per:?}");
        }
    }

    #[test]
    fn tiers_of_star_and_non_fabrics() {
        let t = Topology::star(3, G100, 0).tiers().unwrap();
        assert_eq!((t.leaves, t.spines), (vec![3], vec![]));
        assert!(Topology::pair(G100, 0).tiers().is_err());
        let mut t = Topology::leaf_spine(2, 2, 1, G100, G100, 0);
        t.links.pop(); // leaf 1 loses spine 1
        assert!(t.tiers().is_err());
    }
}
