//! Swarm mode: one seed draws a whole scenario ([`Scenario::from_seed`]: which faults are on
//! and how strong, the plan, the mode, the feature size, the layers, the recovery window),
//! runs it on a [`Cluster`] with every checker on, and [`swarm()`] runs many seeds. A seed
//! that fails (a broken invariant, an engine error, a panic in the engine or the switch, a
//! run that never ends) is printed with a one-line command that runs it again, as
//! TigerBeetle's VOPR prints its seed. Drawing a random subset of the faults per seed, not
//! all of them every time, finds bugs that one fault masks in another ("swarm testing",
//! Groce et al., ISSTA 2012).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;

use sgnn_plan::Plan;
use sgnn_transport::engine::{EngineConfig, Mode};

use super::channel::unit;
use super::{feature, run_layers, Cluster, Faults, LayerCheck};
use crate::hash::draw_key;

/// Everything a seed decides about a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// The seed (also the channel's).
    pub seed: u64,
    /// The channel's faults.
    pub faults: Faults,
    /// Which of the swarm's plans.
    pub plan: usize,
    /// SwitchGNN or the host-based baseline.
    pub mode: Mode,
    /// Values per vertex.
    pub dim: usize,
    /// Layers run one after another.
    pub rounds: usize,
    /// The engines' recovery window (`EngineConfig::recovery_window`).
    pub recovery_window: usize,
}

/// The random stream of scenario draws (a name for [`draw_key`]).
const STREAM: u64 = 0x7377_6172_6d00; // "swarm\0"

impl Scenario {
    /// The scenario of `seed`, among `plans` plans whose feature size is at least
    /// `max_dim`: each fault on with probability 1/2 (drop up to 20%, duplicate up to 10%,
    /// reorder up to 10%, delay up to 100 us), one run in 5 host-based.
    pub fn from_seed(seed: u64, plans: usize, max_dim: usize) -> Scenario {
        let mut i = 0;
        let mut draw = || {
            i += 1;
            draw_key(seed, STREAM, i)
        };
        let mut maybe = |scale: f64| {
            let on = draw() & 1 == 1;
            let x = unit(draw()) * scale;
            if on {
                x
            } else {
                0.0
            }
        };
        let faults = Faults {
            drop: maybe(0.2),
            duplicate: maybe(0.1),
            reorder: maybe(0.1),
            delay_ns: maybe(100_000.0) as u64,
        };
        let plan = (draw() % plans.max(1) as u64) as usize;
        let mode = if draw() % 5 == 0 {
            Mode::HostBased
        } else {
            Mode::SwitchGnn
        };
        let dims: Vec<usize> = [8, 24, 40, 64]
            .into_iter()
            .filter(|&d| d <= max_dim)
            .collect();
        let dim = dims[(draw() % dims.len() as u64) as usize];
        let rounds = 1 + (draw() % 3) as usize;
        let recovery_window = [2, 4, 16][(draw() % 3) as usize];
        Scenario {
            seed,
            faults,
            plan,
            mode,
            dim,
            rounds,
            recovery_window,
        }
    }

    /// Runs the scenario on `plans[self.plan]` with engine configuration `base` (its mode and
    /// recovery window replaced); panics on a broken invariant or an engine error.
    pub fn run(&self, plans: &[Plan], base: &EngineConfig) -> Cluster {
        let plan = plans[self.plan].clone();
        let cfg = EngineConfig {
            mode: self.mode,
            recovery_window: self.recovery_window,
            ..base.clone()
        };
        let n = plan.graph.num_vertices() as u32;
        let x: Vec<f32> = (0..n)
            .flat_map(|v| (0..self.dim as u32).map(move |d| (v, d)))
            .map(|(v, d)| feature(self.seed, v, d))
            .collect();
        let mut c = Cluster::new(plan, cfg, self.faults, self.seed);
        run_layers(&mut c, x, self.dim, self.rounds, LayerCheck::default());
        c
    }
}

impl std::fmt::Display for Scenario {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "seed {}: plan {}, {:?}, {} values, {} layers, window {}, {}",
            self.seed,
            self.plan,
            self.mode,
            self.dim,
            self.rounds,
            self.recovery_window,
            self.faults
        )
    }
}

/// What a swarm did.
#[derive(Debug, Clone, Default)]
pub struct SwarmSummary {
    /// Seeds run.
    pub runs: u64,
    /// Seeds that failed, each with its scenario and its panic message.
    pub failures: Vec<(Scenario, String)>,
    /// Frames the channels delivered, all runs.
    pub frames: u64,
    /// Events, all runs.
    pub events: u64,
}

/// Runs the scenario of every seed in `seeds` on `plans` (see [`Scenario::from_seed`]), each
/// caught on its own: a failing seed is printed with `reproduce` (a command with `{seed}` in
/// it) and the run goes on to the next. Prints one line per seed when `verbose`.
pub fn swarm(
    seeds: impl IntoIterator<Item = u64>,
    plans: &[Plan],
    base: &EngineConfig,
    reproduce: &str,
    verbose: bool,
) -> SwarmSummary {
    let max_dim = plans
        .iter()
        .map(|p| p.manifest.config.feature_dim as usize)
        .min()
        .unwrap_or(64);
    let mut summary = SwarmSummary::default();
    for seed in seeds {
        let s = Scenario::from_seed(seed, plans.len(), max_dim);
        let started = Instant::now();
        summary.runs += 1;
        match catch_unwind(AssertUnwindSafe(|| s.run(plans, base))) {
            Ok(c) => {
                summary.frames += c.channel.stats.delivered;
                summary.events += c.events;
                if verbose {
                    eprintln!(
                        "swarm: ok {s} ({} events, {:.2} s)",
                        c.events,
                        started.elapsed().as_secs_f64()
                    );
                }
            }
            Err(p) => {
                let msg = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|m| m.to_string()))
                    .unwrap_or_else(|| "a panic without a message".into());
                eprintln!("swarm: FAILED {s}\n  {msg}");
                eprintln!(
                    "  reproduce: {}",
                    reproduce.replace("{seed}", &seed.to_string())
                );
                summary.failures.push((s, msg));
            }
        }
    }
    summary
}
