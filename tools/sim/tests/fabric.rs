//! Validation of the leaf-spine fabric: ECMP spreading, conservation, closed-form times, and
//! SwitchGNN's two-level aggregation against counts derived here from the plan (not from the
//! simulator's code paths).

use std::collections::BTreeSet;

use sgnn_delivery::traffic;
use sgnn_plan::Plan;
use sgnn_sim::net::{Kind, Net, Out, PS_PER_US};
use sgnn_sim::{run_strategy, App, NetConfig, Pkt, RunReport, Strategy, Time, Topology};
use sgnn_switch::fabric::Fabric;
use sgnn_wire::{wire_bytes, CONTROL_FRAME_LEN, DATA_FRAME_LEN};

mod common;
use common::*;

/// Hosts send fixed flows of frames; receivers record every arrival.
struct Flows {
    flows: Vec<Vec<(u32, u64)>>,
    wire: u32,
    arrivals: Vec<(Time, u32, Pkt)>,
    sent: u64,
}

impl Flows {
    fn new(hosts: u32, wire: u64) -> Flows {
        Flows {
            flows: vec![Vec::new(); hosts as usize],
            wire: wire as u32,
            arrivals: Vec::new(),
            sent: 0,
        }
    }
    fn add(&mut self, src: u32, dst: u32, frames: u64) -> &mut Self {
        self.flows[src as usize].push((dst, frames));
        self
    }
}

impl App for Flows {
    fn host_next(&mut self, host: u32, _now: Time) -> Option<Pkt> {
        let f = self.flows[host as usize].iter_mut().find(|f| f.1 > 0)?;
        f.1 -= 1;
        self.sent += 1;
        Some(Pkt {
            kind: Kind::Test,
            prio: 2,
            ecn: false,
            seg: 0,
            wire: self.wire,
            src: host,
            dst: f.0,
            block: 0,
            a: 0,
        })
    }
    fn host_recv(&mut self, host: u32, pkt: Pkt, now: Time, _out: &mut Out) {
        self.arrivals.push((now, host, pkt));
    }
    fn switch_recv(&mut self, _sw: u32, pkt: Pkt, _now: Time, _out: &mut Out) {
        panic!("test traffic to a switch: {pkt:?}")
    }
    fn progress(&self) -> (u64, u64) {
        (self.arrivals.len() as u64, self.sent)
    }
}

fn frame_ps(wire: u64, bps: u64) -> Time {
    let t = wire as f64 * 8.0 / bps as f64 * 1e12;
    assert_eq!(t.fract(), 0.0, "pick a rate that gives whole picoseconds");
    t as Time
}

/// Wire bytes on the channels from any node in `from` to any node in `to`.
fn bytes_between(r: &RunReport, from: &dyn Fn(&str) -> bool, to: &dyn Fn(&str) -> bool) -> u64 {
    r.links
        .iter()
        .filter(|l| from(&l.from) && to(&l.to))
        .map(|l| l.stats.bytes)
        .sum()
}

fn node_index(name: &str) -> u32 {
    name[1..].parse().unwrap()
}

#[test]
fn ecmp_spreads_host_based_all_to_all_over_every_spine() {
    let (leaves, spines, per) = (4u32, 2u32, 8u32);
    let workers = leaves * per;
    let p = plan(10, workers, 1_000_000, 100);
    let topo = Topology::leaf_spine(leaves, spines, per, 100 * GBPS, 100 * GBPS, PS_PER_US);
    let r = run_strategy(&p, Strategy::HostBased, topo, sim_cfg(), &mut |_| {}).unwrap();
    assert!(r.time.is_some(), "host-based did not complete");
    assert_eq!(r.net.dropped_frames, 0);
    assert_run_conserved(&r);
    // Host links carry what the traffic model says (the fabric does not change them).
    let m = &traffic::model(&p)["host_based"];
    assert_eq!(r.host_uplink, m.per_worker_uplink);
    assert_eq!(r.host_downlink, m.per_worker_downlink);

    // Every frame between workers on different leaves crosses one leaf->spine and one
    // spine->leaf channel: count them from the graph and the partition.
    let leaf = |w: u32| w / per;
    let mut cross_frames = 0u64;
    for u in 0..p.graph.num_vertices() as u32 {
        let pu = p.partition[u as usize];
        let remote: BTreeSet<u32> = p
            .graph
            .neighbors(u)
            .iter()
            .map(|&v| p.partition[v as usize])
            .filter(|&d| d != pu)
            .collect();
        cross_frames += remote.iter().filter(|&&d| leaf(d) != leaf(pu)).count() as u64
            * p.manifest.segments as u64;
    }
    let data = wire_bytes(DATA_FRAME_LEN);
    let is_leaf = |n: &str| n.starts_with('s') && node_index(n) < leaves;
    let is_spine = |n: &str| n.starts_with('s') && node_index(n) >= leaves;
    assert!(cross_frames > 0);
    assert_eq!(bytes_between(&r, &is_leaf, &is_spine), cross_frames * data);
    assert_eq!(bytes_between(&r, &is_spine, &is_leaf), cross_frames * data);

    // ECMP: each leaf's uplink bytes split evenly over its spine links. A leaf has 8 senders
    // x 24 remote receivers = 192 (src, dst) flows over 2 spines; flows differ in size (by
    // about their mean), so one standard deviation of a link's share is about 10 %: allow
    // 35 %. Without ECMP one link per leaf would carry everything (100 % off).
    let up: Vec<u64> = r
        .links
        .iter()
        .filter(|l| is_leaf(&l.from) && is_spine(&l.to))
        .map(|l| l.stats.bytes)
        .collect();
    assert_eq!(up.len() as u32, leaves * spines);
    for (l, links) in up.chunks(spines as usize).enumerate() {
        let mean = links.iter().sum::<u64>() as f64 / spines as f64;
        for &b in links {
            let off = (b as f64 - mean).abs() / mean;
            assert!(off < 0.35, "leaf {l}: {links:?}, mean {mean:.0}");
        }
    }
    // The spines as a whole (768 flows over 2): each within 15 % of an even split.
    for s in 0..spines {
        let name = format!("s{}", leaves + s);
        let b = bytes_between(&r, &|n| n == name, &is_leaf) as f64;
        let even = (cross_frames * data) as f64 / spines as f64;
        assert!(
            (b - even).abs() < 0.15 * even,
            "spine {s}: {b} B of {even:.0}"
        );
    }
}

#[test]
fn fabric_drops_and_every_byte_is_accounted_for() {
    let wire = wire_bytes(DATA_FRAME_LEN);
    // 6 senders, 2 on each of leaves 1..3, into host 0 on leaf 0 over a fabric at a quarter
    // of the host rate: queues build on the leaves' uplinks to the spines and on the spines'
    // links to leaf 0; small buffers drop there.
    let (leaves, spines, per) = (4u32, 2u32, 4u32);
    let topo = Topology::leaf_spine(leaves, spines, per, 100 * GBPS, 25 * GBPS, PS_PER_US);
    let mut app = Flows::new(leaves * per, wire);
    let senders: Vec<u32> = (per..leaves * per).step_by(2).collect();
    for &s in &senders {
        app.add(s, 0, 300);
    }
    let cfg = NetConfig {
        buffer_bytes: 20 * wire,
        ..NetConfig::default()
    };
    let mut net = Net::new(topo.clone(), cfg).unwrap();
    net.run(&mut app, &mut |_| {});
    let s = &net.stats;
    let sent = senders.len() as u64 * 300;
    assert!(s.dropped_frames > 0, "the buffers were meant to overflow");
    assert_eq!(app.arrivals.len() as u64 + s.dropped_frames, sent);
    assert_net_conserved(&net);
    // Drops happened on leaf->spine channels (the slow fabric), not only at the last hop.
    let fabric_drops: u64 = net
        .channels
        .iter()
        .filter(|c| c.from >= topo.hosts && c.to >= topo.hosts + leaves)
        .map(|c| c.stats.dropped_frames)
        .sum();
    assert!(fabric_drops > 0);
    // Per switch, frames in = frames out + dropped (no switch logic consumes test frames).
    for sw in topo.hosts..topo.nodes() {
        let inn: u64 = net
            .channels
            .iter()
            .filter(|c| c.to == sw)
            .map(|c| c.stats.frames)
            .sum();
        let out: u64 = net
            .channels
            .iter()
            .filter(|c| c.from == sw)
            .map(|c| c.stats.frames + c.stats.dropped_frames)
            .sum();
        assert_eq!(inn, out, "switch {sw}");
    }

    // The strategies conserve on the fabric too.
    let p = plan(9, 8, 64 * 128 * 2, 64);
    // Every strategy that runs on this plan and on a fabric (strawman, unlimited and the
    // delivery strategies are star-only; g3 and switchgnn_no_gamr need plans of their own).
    let on_fabric = Strategy::ALL.into_iter().filter(|st| {
        st.plan_variant().matches(&p.manifest.config)
            && !matches!(
                st,
                Strategy::Strawman
                    | Strategy::Unlimited
                    | Strategy::Multicast
                    | Strategy::Partials
                    | Strategy::SwitchGnnAuto
            )
    });
    for st in on_fabric {
        let topo = Topology::leaf_spine(2, 2, 4, 100 * GBPS, 100 * GBPS, PS_PER_US);
        let r = run_strategy(&p, st, topo, sim_cfg(), &mut |_| {}).unwrap();
        assert!(r.time.is_some(), "{} did not complete", st.name());
        assert_eq!(r.net.dropped_frames, 0);
        assert_eq!(r.net.injected_bytes, r.net.consumed_bytes, "{}", st.name());
        assert_run_conserved(&r);
    }
}

#[test]
fn one_flow_across_the_fabric_is_store_and_forward_over_four_hops() {
    let wire = wire_bytes(DATA_FRAME_LEN);
    let d = 2 * PS_PER_US;
    let n = 300u64;
    let host = 100 * GBPS;
    for fabric in [100 * GBPS, 400 * GBPS, 40 * GBPS] {
        let (th, tf) = (frame_ps(wire, host), frame_ps(wire, fabric));
        let topo = Topology::leaf_spine(2, 3, 2, host, fabric, d);
        // Host 0 (leaf 0) to host 3 (leaf 1): host, leaf, spine, leaf, host. The first frame
        // takes th + tf + tf + th + 4d; the others follow one bottleneck time apart.
        let mut app = Flows::new(4, wire);
        app.add(0, 3, n);
        let mut net = Net::new(topo.clone(), NetConfig::default()).unwrap();
        net.run(&mut app, &mut |_| {});
        let last = app.arrivals.iter().map(|a| a.0).max().unwrap();
        assert_eq!(app.arrivals.len() as u64, n);
        assert_eq!(
            last,
            2 * th + 2 * tf + 4 * d + (n - 1) * th.max(tf),
            "fabric {fabric} bps"
        );
        // One flow, one path: exactly one spine carried it.
        let used: Vec<u32> = net
            .channels
            .iter()
            .filter(|c| c.from >= 6 && c.stats.frames > 0)
            .map(|c| c.from)
            .collect();
        assert_eq!(used.len(), 1, "{used:?}");
        // Host 0 to host 1 (same leaf) never touches a spine: (n + 1) th + 2d.
        let mut app = Flows::new(4, wire);
        app.add(0, 1, n);
        let mut net = Net::new(topo, NetConfig::default()).unwrap();
        net.run(&mut app, &mut |_| {});
        assert_eq!(app.arrivals.last().unwrap().0, (n + 1) * th + 2 * d);
        assert!(net
            .channels
            .iter()
            .filter(|c| c.from >= 4 && c.to >= 4)
            .all(|c| c.stats.frames == 0));
    }
}

/// What two-level aggregation must put on the fabric, derived from the plan.
#[derive(Debug, Default)]
struct Expected {
    leaf_results: u64,
    partials: u64,
    spine_results: u64,
    /// Partial frames per spine.
    per_spine: Vec<u64>,
}

fn two_level(p: &Plan, per: u32, spines: u32) -> Expected {
    let segs = p.manifest.segments;
    let fabric = Fabric::new(p.workers(), p.workers() / per, spines).unwrap();
    let mut e = Expected {
        per_spine: vec![0; spines as usize],
        ..Expected::default()
    };
    for (b, block) in p.blocks.iter().enumerate() {
        let mut leaves_of_row: Vec<BTreeSet<u32>> = vec![BTreeSet::new(); block.aggregators.len()];
        for (i, &u) in block.sources.iter().enumerate() {
            for &row in block.passes(i) {
                leaves_of_row[row as usize].insert(p.partition[u as usize] / per);
            }
        }
        for (row, slot) in block.aggregators.iter().enumerate() {
            let dst_leaf = p.partition[slot.dst as usize] / per;
            let set = &leaves_of_row[row];
            if set.len() == 1 && set.contains(&dst_leaf) {
                e.leaf_results += segs as u64;
                continue;
            }
            e.spine_results += segs as u64;
            e.partials += set.len() as u64 * segs as u64;
            // Every segment of a row on the row's spine (a spine's table holds the row).
            let s = fabric.spine_of(b, row as u32);
            e.per_spine[s as usize] += set.len() as u64 * segs as u64;
        }
    }
    e
}

#[test]
fn two_level_switchgnn_traffic_equals_the_plan_count() {
    let (leaves, spines, per) = (4u32, 3u32, 4u32);
    let workers = leaves * per;
    // Tight memory: several blocks; every block's rows spread over the leaves.
    let p = plan(10, workers, 64 * 128 * 8, 64);
    assert!(p.blocks.len() > 1);
    let topo = Topology::leaf_spine(leaves, spines, per, 100 * GBPS, 100 * GBPS, PS_PER_US);
    let r = run_strategy(&p, Strategy::SwitchGnn, topo, sim_cfg(), &mut |_| {}).unwrap();
    assert!(r.time.is_some(), "the layer did not complete");
    assert_eq!(r.net.dropped_frames, 0);
    assert_run_conserved(&r);
    assert_eq!(r.net.injected_bytes, r.net.consumed_bytes);

    let data = wire_bytes(DATA_FRAME_LEN);
    let ctl = wire_bytes(CONTROL_FRAME_LEN);
    let segs = p.manifest.segments as u64;
    let blocks = p.blocks.len() as u64;
    // Host links: every worker uploads its sources' segments and one BlockDone per block,
    // and receives its destinations' segments and one BlockAdvance per block.
    let mut up = vec![blocks * ctl; workers as usize];
    let mut down = vec![blocks * ctl; workers as usize];
    for block in &p.blocks {
        for &u in &block.sources {
            up[p.partition[u as usize] as usize] += segs * data;
        }
        for slot in &block.aggregators {
            down[p.partition[slot.dst as usize] as usize] += segs * data;
        }
    }
    // The real code's leaves answer the daemons' tail probes and send the all-sent notice:
    // acks on the host links only, reported apart.
    let acks = r.overhead.as_ref().expect("the real code reports its acks");
    let less = |a: &[u64], b: &[u64]| a.iter().zip(b).map(|(x, y)| x - y).collect::<Vec<_>>();
    assert_eq!(less(&r.host_uplink, &acks.uplink), up);
    assert_eq!(less(&r.host_downlink, &acks.downlink), down);

    let e = two_level(&p, per, spines);
    assert!(e.partials > 0 && e.leaf_results > 0, "{e:?}");
    let sw = r.switch.as_ref().unwrap();
    assert_eq!(sw.leaf_results, e.leaf_results);
    assert_eq!(sw.leaf_partials, e.partials);
    assert_eq!(sw.spine_partials, e.partials);
    assert_eq!(sw.spine_results, e.spine_results);
    assert_eq!(sw.results, e.leaf_results + e.spine_results);
    // Contributions added: the workers' on the leaves, and the partials on the spines.
    let fanout: u64 = p.blocks.iter().map(|b| b.num_contributions()).sum();
    assert_eq!(sw.contributions, fanout * segs + e.partials);

    // Fabric: leaves send partials and one BlockDone per block (to spine 0, the root) up;
    // spines send results and one BlockAdvance per leaf per block down.
    let is_leaf = |n: &str| n.starts_with('s') && node_index(n) < leaves;
    let is_spine = |n: &str| n.starts_with('s') && node_index(n) >= leaves;
    assert_eq!(
        bytes_between(&r, &is_leaf, &is_spine),
        e.partials * data + leaves as u64 * blocks * ctl
    );
    assert_eq!(
        bytes_between(&r, &is_spine, &is_leaf),
        e.spine_results * data + leaves as u64 * blocks * ctl
    );
    for s in 0..spines {
        let name = format!("s{}", leaves + s);
        let root = if s == 0 {
            leaves as u64 * blocks * ctl
        } else {
            0
        };
        assert_eq!(
            bytes_between(&r, &is_leaf, &|n| n == name),
            e.per_spine[s as usize] * data + root,
            "spine {s}"
        );
    }
    // Every switch within the plan's aggregator memory; the spines aggregated something.
    assert_eq!(sw.peak_aggregators_per_switch.len() as u32, leaves + spines);
    for (i, &peak) in sw.peak_aggregators_per_switch.iter().enumerate() {
        assert!(peak <= p.manifest.aggregators, "switch {i}: {peak}");
        assert!(peak > 0, "switch {i} never aggregated");
    }
    assert_eq!(
        sw.peak_aggregators,
        *sw.peak_aggregators_per_switch.iter().max().unwrap()
    );

    // The same plan on a star, run by the daemons' engines and the switch's pipeline: one
    // level, every result from the one switch, the same bytes plus the daemons' acks.
    let star = Topology::star(workers, 100 * GBPS, PS_PER_US);
    let s = run_strategy(&p, Strategy::SwitchGnn, star, sim_cfg(), &mut |_| {}).unwrap();
    let ss = s.switch.as_ref().unwrap();
    assert_eq!(ss.leaf_results, ss.results);
    assert_eq!((ss.leaf_partials, ss.spine_results), (0, 0));
    let acks = s.overhead.as_ref().expect("the real code reports its acks");
    let less = |a: &[u64], b: &[u64]| a.iter().zip(b).map(|(x, y)| x - y).collect::<Vec<_>>();
    assert_eq!(less(&s.host_uplink, &acks.uplink), up);
    assert_eq!(less(&s.host_downlink, &acks.downlink), down);
}
