//! The capacity-aware `auto` search (`switch-ctl plan --aggregate auto`): a local search over
//! the per-pair choice ([`search`]) that lowers the cost model's busiest-link bound
//! ([`crate::cost`]) within the switch's aggregator memory and `src_seen`, and the candidates
//! `auto` replays ([`auto_candidates`]; [`crate::plan::plan_delivery`] keeps the fastest).

use sgnn_plan::profile::SwitchProfile;

use crate::choice::{Choice, Delivery};
use crate::cost::{evaluate, Load, Planned, Sizes};
use crate::layout::Tables;
use crate::pair_index::PairIndex;

/// `auto`'s candidates under the busiest-link bound: [`search`] over `allowed`; when `allowed`
/// holds `R` among others, first the search without `R` and then, after the search with it,
/// every pair `R` (the paper's per-edge design without its memory cut). `R` fills the switch
/// memory in one block, and the search cannot leave such a choice for one that needs a second
/// block (every single step there has `R` and two blocks, which is never chosen), so the
/// search without `R` reaches choices the other cannot. [`crate::plan::plan_delivery_with`] replays them.
pub fn auto_candidates(
    idx: &PairIndex,
    owner: &[u32],
    prof: &SwitchProfile,
    sizes: Sizes,
    allowed: &[Delivery],
    max_sweeps: usize,
) -> Vec<Planned> {
    if !allowed.contains(&Delivery::R) || allowed.len() == 1 {
        return vec![search(idx, owner, prof, sizes, allowed, max_sweeps)];
    }
    let without: Vec<Delivery> = allowed
        .iter()
        .copied()
        .filter(|&d| d != Delivery::R)
        .collect();
    // The two searches are independent and deterministic: run them on two cores (the order
    // of the candidates, and so the choice, is the same as one after the other).
    let (first, second) = std::thread::scope(|s| {
        let first = s.spawn(|| search(idx, owner, prof, sizes, &without, max_sweeps));
        let second = search(idx, owner, prof, sizes, allowed, max_sweeps);
        (first.join().expect("the search without R"), second)
    });
    vec![
        first,
        second,
        evaluate(
            idx,
            owner,
            &Choice::uniform(idx.workers, Delivery::R),
            prof,
            sizes,
        ),
    ]
}

/// The best of [`auto_candidates`] by the bound alone: `auto` where no graph is at hand to
/// build tables and replay them.
pub fn optimize(
    idx: &PairIndex,
    owner: &[u32],
    prof: &SwitchProfile,
    sizes: Sizes,
    allowed: &[Delivery],
    max_sweeps: usize,
) -> Planned {
    auto_candidates(idx, owner, prof, sizes, allowed, max_sweeps)
        .into_iter()
        .reduce(|a, b| {
            if b.prediction.bound_us < a.prediction.bound_us {
                b
            } else {
                a
            }
        })
        .expect("at least one candidate")
}

/// A local search from the best uniform choice: it changes a whole row or column of pairs, or
/// one pair, to whichever of `allowed` lowers (predicted time, sum of squared link loads),
/// sweeping until a sweep changes nothing (at most `max_sweeps`).
///
/// One trial costs O(M + |sources| + |destinations| of the pairs changed), so a sweep costs
/// O(M^3 + M x boundary incidences) for M workers.
pub fn search(
    idx: &PairIndex,
    owner: &[u32],
    prof: &SwitchProfile,
    sizes: Sizes,
    allowed: &[Delivery],
    max_sweeps: usize,
) -> Planned {
    let m = idx.workers;
    let mut l = Load::new(idx, owner);
    let mut best_start = (f64::INFINITY, f64::INFINITY);
    let mut start = allowed[0];
    for &d in allowed {
        for q in 0..m {
            for p in 0..m {
                if q != p {
                    l.set(q, p, d);
                }
            }
        }
        let s = l.score(prof, sizes);
        if s < best_start {
            best_start = s;
            start = d;
        }
    }
    for q in 0..m {
        for p in 0..m {
            if q != p {
                l.set(q, p, start);
            }
        }
    }
    let pairs: Vec<(usize, usize)> = (0..m)
        .flat_map(|q| (0..m).map(move |p| (q, p)))
        .filter(|&(q, p)| q != p && !idx.pair(q, p).0.is_empty())
        .collect();
    let mut cur = l.score(prof, sizes);
    for _ in 0..max_sweeps {
        let mut changed = false;
        // Moves of a whole row or column first: one receiver's (or sender's) pairs all at once.
        // A single pair rarely lowers the busiest link by itself (a receiver's downlink only
        // shrinks once most of its senders pre-aggregate), so the search would stop at the
        // best uniform choice without them.
        for h in 0..m {
            for col in [true, false] {
                let group: Vec<(usize, usize)> = pairs
                    .iter()
                    .copied()
                    .filter(|&(q, p)| if col { p == h } else { q == h })
                    .collect();
                if group.is_empty() {
                    continue;
                }
                let was: Vec<Delivery> = group.iter().map(|&(q, p)| l.choice.get(q, p)).collect();
                let mut best: Option<((f64, f64), Delivery)> = None;
                for &d in allowed {
                    if was.iter().all(|&w| w == d) {
                        continue;
                    }
                    for &(q, p) in &group {
                        l.set(q, p, d);
                    }
                    let s = l.score(prof, sizes);
                    if s < best.map(|b| b.0).unwrap_or(cur) {
                        best = Some((s, d));
                    }
                }
                match best {
                    Some((s, d)) => {
                        for &(q, p) in &group {
                            l.set(q, p, d);
                        }
                        cur = s;
                        changed = true;
                    }
                    None => {
                        for (&(q, p), &w) in group.iter().zip(&was) {
                            l.set(q, p, w);
                        }
                    }
                }
            }
        }
        for &(q, p) in &pairs {
            let was = l.choice.get(q, p);
            let mut best = (cur, was);
            for &d in allowed {
                if d == was {
                    continue;
                }
                l.set(q, p, d);
                let s = l.score(prof, sizes);
                if s < best.0 {
                    best = (s, d);
                }
            }
            l.set(q, p, best.1);
            if best.1 != was {
                cur = best.0;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    Planned {
        tables: Tables::default(),
        prediction: l.prediction(prof, sizes),
        traffic: l.traffic(sizes),
        choice: l.choice,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use rand::{Rng, SeedableRng};
    use sgnn_graph::Csr;

    #[test]
    fn auto_is_never_slower_than_a_uniform_choice() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let n = 400usize;
        let edges: Vec<(u32, u32)> = (0..3000)
            .map(|_| (rng.gen_range(0..n as u32), rng.gen_range(0..n as u32 / 4)))
            .filter(|(a, b)| a != b)
            .collect();
        let g = Csr::from_edges(n, &edges).0;
        let part: Vec<u32> = (0..n).map(|_| rng.gen_range(0..6)).collect();
        let idx = PairIndex::of(&g, &part, 6);
        for recirc in [100.0, 800.0, sgnn_plan::profile::FREE_RECIRC_GBPS] {
            let mut pr = prof();
            pr.recirc_gbps = recirc;
            let all = [Delivery::M, Delivery::A, Delivery::C, Delivery::R];
            let auto = optimize(&idx, &part, &pr, BIG, &all, 64);
            for d in [
                Delivery::H,
                Delivery::M,
                Delivery::A,
                Delivery::R,
                Delivery::C,
            ] {
                let u = evaluate(&idx, &part, &Choice::uniform(6, d), &pr, BIG);
                assert!(
                    auto.prediction.time_us <= u.prediction.time_us + 1e-9,
                    "{recirc}: auto {} > {d:?} {}",
                    auto.prediction.time_us,
                    u.prediction.time_us
                );
            }
        }
    }
}
