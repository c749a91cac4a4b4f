//! The comparison strategies on real plans (R-MAT through the planner, star topology): exact
//! ones put exactly the planner's traffic-model bytes on every worker link; approximate ones
//! put exactly the bytes of their own documented formula, recomputed here independently of
//! the simulator's code; every strategy completes a layer.

use std::collections::{BTreeMap, BTreeSet};

use sgnn_plan::{traffic, Plan};
use sgnn_sim::net::PS_PER_US;
use sgnn_sim::strategies::hermod;
use sgnn_sim::{report, run_strategy, RunReport, Strategy, Time, Topology};
use sgnn_wire::{wire_bytes, DATA_FRAME_LEN};

mod common;
use common::*;

const DELAY: Time = 2 * PS_PER_US;

fn simulate(p: &Plan, s: Strategy) -> RunReport {
    let topo = Topology::star(p.workers(), 100 * GBPS, DELAY);
    let cfg = sim_cfg();
    run_strategy(p, s, topo, cfg, &mut |_| {}).unwrap()
}

fn complete(r: &RunReport) {
    assert!(r.time.is_some(), "{} did not complete", r.strategy);
    assert_eq!(r.net.dropped_frames, 0, "{}", r.strategy);
    assert_eq!(r.net.injected_bytes, r.net.consumed_bytes, "{}", r.strategy);
    assert!(r.total_bytes() > 0, "{} sent nothing", r.strategy);
}

const EXACT: [Strategy; 6] = [
    Strategy::G3,
    Strategy::Strawman,
    Strategy::Unlimited,
    Strategy::SwitchGnnNoGamr,
    Strategy::SuperGcn,
    Strategy::Hermod,
];

#[test]
fn exact_strategies_put_the_traffic_models_bytes_on_every_link() {
    // Tight memory (strawman overflows to the hosts, many blocks) and roomy memory.
    for (mem, dim) in [(64 * 128 * 2, 64), (1_000_000, 100)] {
        let base = base_config(4, mem, dim);
        for s in EXACT {
            assert!(!s.approximate());
            let p = plan_with(10, s.plan_variant().apply(&base));
            let model = &sgnn_delivery::traffic::model(&p)[s.traffic_model().unwrap()];
            let r = simulate(&p, s);
            complete(&r);
            assert!(!r.approximate);
            // The real code (switchgnn_no_gamr) sends the daemons' acks on top of the model.
            let o = r.overhead.clone().unwrap_or_default();
            let (up, down) = less_acks(&r);
            assert_eq!(up, model.per_worker_uplink, "{} uplinks", s.name());
            assert_eq!(down, model.per_worker_downlink, "{} downlinks", s.name());
            assert_eq!(
                r.total_bytes(),
                model.total + o.total(),
                "{} total",
                s.name()
            );
            assert_eq!(
                r.links.iter().map(|l| l.stats.frames).sum::<u64>(),
                model.frames + o.frames,
                "{} frames",
                s.name()
            );
        }
    }
}

#[test]
fn strawman_overflows_to_the_hosts_when_memory_is_tight() {
    let tight = plan_with(10, base_config(4, 64 * 128 * 2, 64));
    let model = traffic::strawman(&tight, tight.manifest.config.seed);
    assert!(
        model.in_network_fraction.unwrap() < 0.5,
        "the tight case must overflow: {:?}",
        model.in_network_fraction
    );
    let straw = simulate(&tight, Strategy::Strawman);
    let unl = simulate(&tight, Strategy::Unlimited);
    let (s, u) = (straw.switch.clone().unwrap(), unl.switch.clone().unwrap());
    // Unlimited aggregates every remote contribution; the strawman only the admitted share,
    // and sends more bytes (raw copies) for it.
    let segs = tight.manifest.segments as u64;
    let cross: u64 = tight.blocks.iter().map(|b| b.num_contributions()).sum();
    assert_eq!(u.contributions, cross * segs);
    assert!(s.contributions < u.contributions / 2);
    assert!(straw.total_bytes() > unl.total_bytes());
    assert_eq!(
        unl.total_bytes(),
        traffic::unlimited(&tight).total,
        "unlimited ignores the plan's memory"
    );
}

#[test]
fn switchgnn_no_gamr_needs_and_gets_a_random_order_plan() {
    let base = base_config(4, 64 * 128 * 2, 64);
    let gamr = plan_with(10, base.clone());
    let topo = Topology::star(4, 100 * GBPS, DELAY);
    let cfg = sim_cfg();
    let err = run_strategy(&gamr, Strategy::SwitchGnnNoGamr, topo, cfg, &mut |_| {}).unwrap_err();
    assert!(err.contains("random"), "{err}");
    let variant = Strategy::SwitchGnnNoGamr.plan_variant().apply(&base);
    assert_eq!(variant.order, sgnn_plan::SendOrder::Random);
    assert_eq!(variant.partitioner, base.partitioner);
    let random = plan_with(10, variant);
    assert_ne!(
        random.blocks.iter().map(|b| &b.sources).collect::<Vec<_>>(),
        gamr.blocks.iter().map(|b| &b.sources).collect::<Vec<_>>(),
        "the send order differs"
    );
    let r = simulate(&random, Strategy::SwitchGnnNoGamr);
    complete(&r);
    let acks = r.overhead.as_ref().map_or(0, |o| o.total());
    assert_eq!(r.total_bytes(), traffic::switchgnn(&random).total + acks);
    assert_eq!(
        Strategy::G3.plan_variant().apply(&base).partitioner,
        sgnn_plan::Partitioner::G3
    );
}

#[test]
fn hermod_matchings_cover_the_all_to_all_without_incast() {
    let p = plan_with(10, base_config(4, 1_000_000, 64));
    let m = p.workers() as usize;
    let t = hermod::host_based_matrix(&p);
    let phases = hermod::matchings(t.clone(), m);
    let mut covered = vec![0u64; m * m];
    for (matching, w) in &phases {
        let mut cols: Vec<usize> = matching.clone();
        cols.sort_unstable();
        assert_eq!(cols, (0..m).collect::<Vec<_>>(), "a perfect matching");
        for (i, &j) in matching.iter().enumerate() {
            let left = t[i * m + j] - covered[i * m + j];
            covered[i * m + j] += left.min(*w);
        }
    }
    assert_eq!(covered, t, "the matchings carry the whole matrix");
    assert!(phases.len() <= m * m);

    let r = simulate(&p, Strategy::Hermod);
    complete(&r);
    // One sender per receiver in every sub-phase, sub-phases back to back at line rate:
    // nothing ever queues, and the layer ends one frame and two propagation delays after the
    // last sub-phase: sum_k w_k * segments frame times + T + 2d.
    for l in &r.links {
        assert_eq!(l.stats.max_queue_bytes, 0, "{}->{}", l.from, l.to);
    }
    let frame = wire_bytes(DATA_FRAME_LEN) as f64 * 8.0 / 100e9 * 1e12;
    let segs = p.manifest.segments as f64;
    let span: f64 = phases.iter().map(|(_, w)| *w as f64 * segs * frame).sum();
    assert_eq!(r.time.unwrap(), (span + frame) as Time + 2 * DELAY);
    // The unscheduled all-to-all of the same bytes does queue.
    let hb = simulate(&p, Strategy::HostBased);
    assert_eq!(hb.total_bytes(), r.total_bytes());
    assert!(hb.links.iter().any(|l| l.stats.max_queue_bytes > 0));
}

#[test]
fn hermod_dscp_packs_the_three_factors() {
    assert_eq!(hermod::dscp(0, 0, 0), 0);
    assert_eq!(hermod::dscp(5, 1, 2), 46); // 101 1 10
    assert_eq!(hermod::queue(hermod::dscp(0, 1, 3)), 7);
    assert_eq!(hermod::queue(hermod::dscp(7, 0, 0)), 0);
}

// ---- Approximate strategies: their formulas, recomputed here. ----

fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e3779b97f4a7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d049bb133111eb);
    z ^ (z >> 31)
}

fn key(seed: u64, stream: u64, v: u64) -> u64 {
    splitmix(splitmix(seed ^ splitmix(stream)) ^ v)
}

fn remote_parts(p: &Plan, u: u32) -> BTreeSet<u32> {
    let pu = p.partition[u as usize];
    p.graph
        .neighbors(u)
        .iter()
        .map(|&v| p.partition[v as usize])
        .filter(|&q| q != pu)
        .collect()
}

const WIRE: u64 = 210;

fn check_links(r: &RunReport, up: &[u64], down: &[u64]) {
    complete(r);
    assert!(r.approximate, "{} must be labelled approximate", r.strategy);
    assert_eq!(r.host_uplink, up, "{} uplinks", r.strategy);
    assert_eq!(r.host_downlink, down, "{} downlinks", r.strategy);
    let row = report::csv_row(r, &report::Epoch::default());
    let col = report::CSV_HEADER
        .split(',')
        .position(|c| c == "approximate")
        .expect("runs.csv has an approximate column");
    assert_eq!(
        row.split(',').nth(col),
        Some("true"),
        "runs.csv labels it: {row}"
    );
    let text = report::summary(
        "",
        std::slice::from_ref(r),
        &report::Epoch::default(),
        false,
    );
    assert!(text.contains("APPROXIMATE"), "summary labels it: {text}");
}

#[test]
fn emma_pushes_one_chunk_of_ten() {
    let p = plan_with(10, base_config(4, 1_000_000, 64));
    let m = p.workers() as usize;
    let segs = p.manifest.segments as u64;
    let (mut up, mut down) = (vec![0u64; m], vec![0u64; m]);
    let mut in_chunk = 0;
    for u in 0..p.graph.num_vertices() as u32 {
        if !key(1, 0x656d_6d61, u as u64).is_multiple_of(10) {
            continue;
        }
        in_chunk += 1;
        for q in remote_parts(&p, u) {
            up[p.partition[u as usize] as usize] += segs * WIRE;
            down[q as usize] += segs * WIRE;
        }
    }
    // A uniform draw: about a tenth of the vertices.
    let n = p.graph.num_vertices() as f64;
    assert!((in_chunk as f64 - n / 10.0).abs() < 0.05 * n, "{in_chunk}");
    let r = simulate(&p, Strategy::Emma);
    check_links(&r, &up, &down);
    assert!(r.total_bytes() < traffic::host_based(&p).total / 5);
}

#[test]
fn grappa_all_reduces_gradients_and_amortises_repartitioning() {
    for workers in [2u32, 4] {
        let p = plan_with(10, base_config(workers, 1_000_000, 64));
        let m = workers as u64;
        let f = 64u64;
        let g = (f * f).div_ceil(32);
        let c = g.div_ceil(m);
        let chunk = (p.graph.num_vertices() as u64).div_ceil(m + 1);
        let rep = (chunk * p.manifest.segments as u64).div_ceil(m);
        let per = (2 * (m - 1) * c + rep) * WIRE;
        let r = simulate(&p, Strategy::Grappa);
        check_links(&r, &vec![per; m as usize], &vec![per; m as usize]);
        // The ring's 2 (M - 1) dependent steps each cross two links: at least that many
        // chunk serialisations plus two propagation delays per step.
        let frame = WIRE as f64 * 8.0 / 100e9 * 1e12;
        let ring = (2 * (m - 1)) as f64 * (c as f64 * frame + 2.0 * DELAY as f64);
        assert!(
            r.time.unwrap() as f64 >= ring,
            "{} < {ring}",
            r.time.unwrap()
        );
    }
}

#[test]
fn dgs_pulls_the_sampled_remote_vertices() {
    let p = plan_with(11, base_config(4, 1_000_000, 128));
    let m = p.workers();
    let n = p.graph.num_vertices();
    let seed = 1u64;
    let fpv = (128u64 * 85).div_ceil(100).div_ceil(32);
    // pulls[w][owner] = sampled vertices of `owner` that worker `w` needs.
    let mut pulls: Vec<BTreeMap<u32, u64>> = Vec::new();
    for w in 0..m {
        let bottom = |mut xs: Vec<(u64, u32)>, k: usize| -> Vec<u32> {
            xs.sort_unstable();
            xs.into_iter().take(k).map(|x| x.1).collect()
        };
        let targets = bottom(
            (0..n as u32)
                .filter(|&v| p.partition[v as usize] == w)
                .map(|v| (key(seed, u64::MAX, v as u64), v))
                .collect(),
            1024,
        );
        let mut set: BTreeSet<u32> = targets.iter().copied().collect();
        let mut frontier = targets;
        for _hop in 0..2 {
            let mut next = Vec::new();
            for &x in &frontier {
                let nb = p
                    .graph
                    .neighbors(x)
                    .iter()
                    .map(|&v| (key(seed, x as u64, v as u64), v))
                    .collect();
                for v in bottom(nb, 64) {
                    if set.insert(v) {
                        next.push(v);
                    }
                }
            }
            frontier = next;
        }
        let mut per = BTreeMap::new();
        for v in set {
            let o = p.partition[v as usize];
            if o != w {
                *per.entry(o).or_insert(0u64) += 1;
            }
        }
        pulls.push(per);
    }
    let (mut up, mut down) = (vec![0u64; m as usize], vec![0u64; m as usize]);
    for (w, per) in pulls.iter().enumerate() {
        for (&o, &k) in per {
            let req = k.div_ceil(32) * WIRE;
            let resp = k * fpv * WIRE;
            up[w] += req;
            down[o as usize] += req;
            up[o as usize] += resp;
            down[w] += resp;
        }
    }
    assert!(pulls.iter().all(|x| !x.is_empty()), "every worker pulls");
    let r = simulate(&p, Strategy::Dgs);
    check_links(&r, &up, &down);
}

#[test]
fn every_name_parses_and_unknown_names_list_them_all() {
    for s in Strategy::ALL {
        assert_eq!(s.name().parse::<Strategy>().unwrap(), s);
        assert_eq!(s.traffic_model().is_none(), s.approximate());
    }
    let err = "nope".parse::<Strategy>().unwrap_err();
    for s in Strategy::ALL {
        assert!(err.contains(s.name()), "{err}");
    }
    assert!(err.contains("emma (approximate)"), "{err}");
}

#[test]
fn a_plan_the_switch_cannot_hold_is_refused_not_run() {
    // The software switch's src_seen holds SEEN_CELLS (source, segment) pairs per block; a
    // block needing more would have its last sources dropped as bad indexes and recovered by
    // the hosts as if lost (what an `--aggregate auto` plan with many partials per block did).
    let mut p = plan_with(10, base_config(4, 64 * 128 * 2, 64));
    let most = p.blocks.iter().map(|b| b.sources.len()).max().unwrap() as u64;
    assert!(most > 1);
    let seen = softswitch::pipeline::SEEN_CELLS as u64;
    p.manifest.segments = (seen / most + 1) as _;
    let star = || Topology::star(4, 100 * GBPS, DELAY);
    let err = run_strategy(&p, Strategy::SwitchGnn, star(), sim_cfg(), &mut |_| {}).unwrap_err();
    assert!(
        err.contains("src_seen holds 262144") && err.contains("`switch-ctl load` refuses"),
        "{err}"
    );
    // The baseline's switch only forwards: the blocks do not concern it.
    let e = run_strategy(&p, Strategy::HostBased, star(), sim_cfg(), &mut |_| {});
    assert!(
        !e.as_ref().is_err_and(|e| e.contains("src_seen")),
        "{:?}",
        e.err()
    );
}
