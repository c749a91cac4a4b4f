//! Swarm mode of the real-code harness (`sgnn_sim::harness::swarm`): every seed draws its
//! own faults, plan, mode, feature size, layers and recovery window, and runs with every
//! invariant checked on every event. `cargo test` runs a few fixed seeds; more:
//!
//! ```text
//! SGNN_SWARM_SEEDS=500 cargo test -p sgnn-sim --test swarm -- --nocapture          # 500 seeds from a random one
//! SGNN_SWARM_SEEDS=500 SGNN_SWARM_SEED=7 cargo test -p sgnn-sim --test swarm       # seeds 7..507
//! SGNN_SWARM_SEED=1234 cargo test -p sgnn-sim --test swarm -- --nocapture          # one seed again
//! ```

mod common;

use sgnn_plan::Plan;
use sgnn_sim::harness::swarm;
use sgnn_transport::engine::EngineConfig;

/// Seeds `cargo test` runs.
const DEFAULT_SEEDS: u64 = 64;

/// What a failing seed prints to run it again.
const REPRODUCE: &str = "SGNN_SWARM_SEED={seed} cargo test -p sgnn-sim --test swarm -- --nocapture";

/// The swarm's plans: 4 workers, a 256-vertex R-MAT graph, 64 values per vertex (2
/// segments), 16 KB of aggregators (several blocks); the paper's delivery, `auto`, every
/// pair pre-aggregated (`partials`) and `multicast`.
fn plans() -> Vec<Plan> {
    let paper = common::plan_of(
        "rmat:scale=8,edge_factor=8,seed=3",
        common::base_config(4, 16 << 10, 64),
        8.0,
    );
    let prof = sgnn_plan::profile::SwitchProfile::named("default").unwrap();
    let mut plans = vec![paper.clone()];
    for mode in [
        sgnn_plan::AggregateMode::Auto,
        sgnn_plan::AggregateMode::Partials,
        sgnn_plan::AggregateMode::Multicast,
    ] {
        let (p, _) = sgnn_delivery::lower::deliver(&paper, mode, &prof).unwrap();
        sgnn_plan::verify(&p).unwrap();
        plans.push(p);
    }
    plans
}

/// Short timeouts, so recovery runs often in little virtual time.
fn quick_cfg() -> EngineConfig {
    EngineConfig {
        fetch_timeout_ns: 2_000_000,
        resend_timeout_ns: 8_000_000,
        advance_timeout_ns: 2_000_000,
        max_backoff_ns: 50_000_000,
        stall_timeout_ns: 5_000_000_000,
        ..EngineConfig::default()
    }
}

fn env(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    Some(
        v.parse()
            .unwrap_or_else(|_| panic!("{name}={v}: not a number")),
    )
}

#[test]
fn swarm_of_seeds_keeps_every_invariant() {
    let (first, count) = match (env("SGNN_SWARM_SEED"), env("SGNN_SWARM_SEEDS")) {
        (None, None) => (1, DEFAULT_SEEDS),
        (Some(s), None) => (s, 1),
        (s, Some(n)) => {
            let s = s.unwrap_or_else(|| {
                let t = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap();
                sgnn_sim::hash::splitmix64(t.as_nanos() as u64) >> 16
            });
            (s, n)
        }
    };
    eprintln!("swarm: seeds {first}..{}", first + count);
    let plans = plans();
    let started = std::time::Instant::now();
    let verbose = count == 1 || std::env::var_os("SGNN_SWARM_VERBOSE").is_some();
    let summary = swarm(
        first..first + count,
        &plans,
        &quick_cfg(),
        REPRODUCE,
        verbose,
    );
    eprintln!(
        "swarm: {} seeds, {} failed, {} events, {} frames, {:.1} s",
        summary.runs,
        summary.failures.len(),
        summary.events,
        summary.frames,
        started.elapsed().as_secs_f64()
    );
    assert!(
        summary.failures.is_empty(),
        "failing seeds: {:?}",
        summary
            .failures
            .iter()
            .map(|(s, _)| s.seed)
            .collect::<Vec<_>>()
    );
}

/// Seed 4786 (found by the swarm): a health probe sent at block 1 is answered by the switch
/// at block 1, and the answer reaches the worker after it moved to block 2. That is no
/// restart: an answer only shows the switch at or after where the worker was when it sent
/// the probe (it used to stop with "the switch restarted or was reloaded mid-run").
#[test]
fn seed_4786_a_late_health_probe_answer_is_no_restart() {
    let plans = plans();
    let summary = swarm(4786..4787, &plans, &quick_cfg(), REPRODUCE, true);
    assert_eq!(summary.runs, 1);
    assert!(
        summary.failures.is_empty(),
        "seed 4786: {:?}",
        summary.failures
    );
}

/// The same seed draws the same scenario and gives the same run, event for event.
#[test]
fn a_seed_gives_one_run() {
    let plans = plans();
    let s = sgnn_sim::harness::Scenario::from_seed(3, plans.len(), 64);
    assert_eq!(
        s,
        sgnn_sim::harness::Scenario::from_seed(3, plans.len(), 64)
    );
    let (a, b) = (s.run(&plans, &quick_cfg()), s.run(&plans, &quick_cfg()));
    assert_eq!(a.events, b.events);
    assert_eq!(a.now, b.now);
    assert_eq!(a.channel.stats, b.channel.stats);
    let stats = |c: &sgnn_sim::harness::Cluster| -> Vec<String> {
        c.engines
            .iter()
            .map(|e| format!("{:?}", e.stats()))
            .collect()
    };
    assert_eq!(stats(&a), stats(&b));
}

/// The checkers catch what they check: a switch that forgets which first copies it took
/// (its `src_seen` cleared after every step) counts a duplicated contribution twice.
#[test]
#[should_panic(expected = "twice")]
fn a_switch_that_counts_a_duplicate_is_caught() {
    let plans = plans();
    let faults = sgnn_sim::harness::Faults {
        duplicate: 0.5,
        delay_ns: 50_000,
        ..sgnn_sim::harness::Faults::NONE
    };
    let mut c = sgnn_sim::harness::Cluster::new(plans[0].clone(), quick_cfg(), faults, 1);
    let dim = 64;
    for e in c.engines.iter_mut() {
        let x = vec![0.5; e.view().num_local() * dim];
        e.start_round(0, sgnn_transport::engine::Layer::forward(0), dim, &x)
            .unwrap();
    }
    let _ = c.run(60_000_000_000, |c| {
        c.switch.regs.src_seen.fill(0);
        false
    });
}

/// The checkers catch what they check: a switch whose block synchronisation goes back.
#[test]
#[should_panic(expected = "the switch went back")]
fn a_switch_that_goes_back_a_block_is_caught() {
    let plans = plans();
    let mut c = sgnn_sim::harness::Cluster::new(
        plans[0].clone(),
        quick_cfg(),
        sgnn_sim::harness::Faults::NONE,
        1,
    );
    let dim = 64;
    for e in c.engines.iter_mut() {
        let x = vec![0.5; e.view().num_local() * dim];
        e.start_round(0, sgnn_transport::engine::Layer::forward(0), dim, &x)
            .unwrap();
    }
    let _ = c.run(60_000_000_000, |c| {
        if c.switch.regs.sync_block == 1 {
            c.switch.regs.sync_block = 0;
        }
        false
    });
}
