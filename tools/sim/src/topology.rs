//! Topologies: hosts and switches joined by full-duplex links, with shortest-path routing.
//!
//! Nodes are numbered hosts first (`0..hosts`, host `i` is worker `i`), then switches
//! (`hosts..hosts + switches`). Every link is full duplex and becomes two channels: link `i`
//! is channel `2i` (a -> b) and `2i + 1` (b -> a). Hosts are single-homed (one link each).
//! Switches route to hosts along a shortest path; a leaf-spine fabric (later) adds equal-cost
//! choices per (switch, host) for ECMP, which the routing table's shape already allows.

use std::collections::VecDeque;

use crate::Time;

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
    pub fn routes(&self) -> Result<Routes, String> {
        let n = self.nodes() as usize;
        let mut adj: Vec<Vec<(u32, u32)>> = vec![Vec::new(); n];
        for (i, l) in self.links.iter().enumerate() {
            if l.a as usize >= n || l.b as usize >= n || l.a == l.b {
                return Err(format!("link {i}: bad ends {} - {}", l.a, l.b));
            }
            if l.bps == 0 {
                return Err(format!("link {i}: zero bandwidth"));
            }
            adj[l.a as usize].push((l.b, 2 * i as u32));
            adj[l.b as usize].push((l.a, 2 * i as u32 + 1));
        }
        let mut uplink = Vec::with_capacity(self.hosts as usize);
        for (h, links) in adj.iter().take(self.hosts as usize).enumerate() {
            if links.len() != 1 {
                return Err(format!(
                    "host {h} has {} links; hosts must have exactly one",
                    links.len()
                ));
            }
            uplink.push(links[0].1);
        }
        // next[s * hosts + h]: channel switch s sends on toward host h (BFS from h).
        let hosts = self.hosts as usize;
        let mut next = vec![u32::MAX; self.switches as usize * hosts];
        let mut dist = vec![u32::MAX; n];
        let mut q = VecDeque::new();
        for h in 0..hosts {
            dist.fill(u32::MAX);
            dist[h] = 0;
            q.clear();
            q.push_back(h as u32);
            while let Some(u) = q.pop_front() {
                // Hosts do not forward, except the destination itself as the BFS root.
                if !self.is_switch(u) && u as usize != h {
                    continue;
                }
                for &(v, c) in &adj[u as usize] {
                    if dist[v as usize] == u32::MAX {
                        dist[v as usize] = dist[u as usize] + 1;
                        if self.is_switch(v) {
                            // v reaches h through u: the reverse of channel c (v -> u).
                            next[(v - self.hosts) as usize * hosts + h] = c ^ 1;
                        }
                        q.push_back(v);
                    }
                }
            }
        }
        Ok(Routes {
            hosts: self.hosts,
            uplink,
            next,
        })
    }
}

/// Derived forwarding state.
#[derive(Debug, Clone)]
pub struct Routes {
    hosts: u32,
    /// The one channel each host sends on.
    pub uplink: Vec<u32>,
    next: Vec<u32>,
}

impl Routes {
    /// Channel switch `sw` (its index among switches) forwards a packet for host `h` on, or
    /// `None` if unreachable.
    pub fn next_hop(&self, sw: u32, h: u32) -> Option<u32> {
        let c = self.next[(sw * self.hosts + h) as usize];
        (c != u32::MAX).then_some(c)
    }
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
            let c = r.next_hop(0, h).unwrap();
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
}
