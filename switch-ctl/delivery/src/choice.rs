//! The per-pair delivery choice: [`Delivery`], the way (`H`, `M`, `A`, `R` or `C`) the
//! contributions of one ordered pair of partitions (q sends, p receives) reach p, and
//! [`Choice`], one way per pair. What each way costs is the cost model's ([`crate::cost`]);
//! what it means for the hosts and the switch, the layout's ([`crate::layout`]).

use serde::{Deserialize, Serialize};

use crate::pair_index::PairIndex;

/// How the contributions of one ordered pair of partitions are delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Delivery {
    /// Host-based unicast of raw features.
    H,
    /// Raw features multicast by the switch, summed on the receiving host.
    M,
    /// Host pre-aggregated partials, summed in the switch in one pass each.
    A,
    /// Raw features summed in the switch per edge, through recirculation (the paper's design).
    R,
    /// A minimum vertex cover of the pair's cross edges (SuperGCN's unit, in the network):
    /// the pair's sources in the cover go raw as `M` (replicated, shared with q's other `M`
    /// pairs), the pair's destinations in the cover get a partial as `A` (summed in the switch
    /// with the other senders' partials) of q's neighbours not sent raw. Every cross edge is
    /// carried once, by its source or its destination.
    C,
}

/// The per-pair choice: `choice[q * M + p]` for q != p.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    workers: usize,
    pub(crate) c: Vec<Delivery>,
}

impl Choice {
    /// Every pair the same.
    pub fn uniform(workers: usize, d: Delivery) -> Choice {
        Choice {
            workers,
            c: vec![d; workers * workers],
        }
    }

    /// The choice of pair (q sends, p receives).
    pub fn get(&self, q: usize, p: usize) -> Delivery {
        self.c[q * self.workers + p]
    }

    /// How many ordered pairs with cross edges use each way, in the order H, M, A, R, C.
    pub fn counts(&self, idx: &PairIndex) -> [u64; 5] {
        let mut n = [0u64; 5];
        for q in 0..self.workers {
            for p in 0..self.workers {
                if q != p && !idx.pair(q, p).0.is_empty() {
                    n[self.get(q, p) as usize] += 1;
                }
            }
        }
        n
    }
}
