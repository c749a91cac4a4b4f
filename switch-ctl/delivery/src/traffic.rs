//! The traffic of every strategy ([`model`], the `traffic_bytes` object of `report.json`): the
//! contract's traffic model ([`sgnn_plan::traffic`]) plus SuperGCN's `supergcn_mvc`, whose
//! minimum vertex covers are this crate's ([`crate::mvc`]; [`supergcn_covers`]).

use std::collections::BTreeMap;

use sgnn_plan::traffic::{
    host_based, strawman, supergcn_mvc_of, switchgnn, unlimited, StrategyTraffic,
};
use sgnn_plan::Plan;

use crate::mvc::{max_matching, Bipartite};
use crate::pair_index::PairIndex;

/// `supergcn_mvc`: per partition pair, a minimum vertex cover of the cross edges, each way.
pub fn supergcn_mvc(plan: &Plan) -> StrategyTraffic {
    supergcn_mvc_of(plan, supergcn_covers(plan))
}

/// [`supergcn_mvc`] from the minimum vertex covers a [`PairIndex`] of the plan already holds
/// (the same sizes: every minimum cover has the size of a maximum matching, Konig's theorem),
/// without matching every pair again.
pub fn supergcn_mvc_indexed(plan: &Plan, idx: &PairIndex) -> StrategyTraffic {
    let m = idx.workers();
    let covers = (0..m)
        .flat_map(|p| (p + 1..m).map(move |q| (p, q)))
        .filter(|&(p, q)| !idx.pair(p, q).0.is_empty())
        .map(|(p, q)| {
            let cover = (idx.cover(p, q).len() + idx.cover(q, p).len()) as u64;
            ((p as u32, q as u32), cover)
        });
    supergcn_mvc_of(plan, covers)
}

/// Size of a minimum vertex cover of the cross edges of every pair of partitions `(p, q)`,
/// `p < q`, that has cross edges: SuperGCN sends that many vectors from `p` to `q` and as many
/// from `q` to `p` ([`supergcn_mvc`]; the simulator's `supergcn` sends them).
pub fn supergcn_covers(plan: &Plan) -> BTreeMap<(u32, u32), u64> {
    let mut out = BTreeMap::new();
    // Bucket undirected cross edges by unordered partition pair (lower partition first).
    let mut buckets: BTreeMap<(u32, u32), Vec<(u32, u32)>> = BTreeMap::new();
    for (u, v) in plan.graph.edges() {
        let (pu, pv) = (plan.partition[u as usize], plan.partition[v as usize]);
        if pu == pv {
            continue;
        }
        let (key, e) = if pu < pv {
            ((pu, pv), (u, v))
        } else {
            ((pv, pu), (v, u))
        };
        buckets.entry(key).or_default().push(e);
    }
    let mut lmap: Vec<u32> = vec![u32::MAX; plan.graph.num_vertices()];
    let mut rmap: Vec<u32> = vec![u32::MAX; plan.graph.num_vertices()];
    for ((p, q), edges) in buckets {
        let (mut nl, mut nr) = (0u32, 0u32);
        let mut local = Vec::with_capacity(edges.len());
        for &(l, r) in &edges {
            if lmap[l as usize] == u32::MAX {
                lmap[l as usize] = nl;
                nl += 1;
            }
            if rmap[r as usize] == u32::MAX {
                rmap[r as usize] = nr;
                nr += 1;
            }
            local.push((lmap[l as usize], rmap[r as usize]));
        }
        for &(l, r) in &edges {
            lmap[l as usize] = u32::MAX;
            rmap[r as usize] = u32::MAX;
        }
        let cover = max_matching(&Bipartite::from_edges(nl as usize, nr as usize, &local)) as u64;
        out.insert((p, q), cover);
    }
    out
}

/// The traffic of every strategy, keyed by name (the `traffic_bytes` object of `report.json`).
pub fn model(plan: &Plan) -> BTreeMap<String, StrategyTraffic> {
    model_of(plan, None)
}

/// [`model`] with the plan's [`PairIndex`] at hand: `supergcn_mvc` from its covers
/// ([`supergcn_mvc_indexed`]).
pub fn model_indexed(plan: &Plan, idx: &PairIndex) -> BTreeMap<String, StrategyTraffic> {
    model_of(plan, Some(idx))
}

fn model_of(plan: &Plan, idx: Option<&PairIndex>) -> BTreeMap<String, StrategyTraffic> {
    let seed = plan.manifest.config.seed;
    let mut out = BTreeMap::new();
    out.insert("host_based".to_string(), host_based(plan));
    out.insert("strawman".to_string(), strawman(plan, seed));
    out.insert("switchgnn".to_string(), switchgnn(plan));
    out.insert("unlimited".to_string(), unlimited(plan));
    let mvc = match idx {
        Some(idx) => supergcn_mvc_indexed(plan, idx),
        None => supergcn_mvc(plan),
    };
    out.insert("supergcn_mvc".to_string(), mvc);
    out
}
