//! The engines of N workers and the software switch's pipeline in one process, in virtual
//! time, over a seeded channel that drops, delays (reorders) and duplicates frames: the
//! harness (`sgnn_sim::harness`). Every worker's sums must equal the single-process
//! reference, bit for bit, and lie within the codec's error bound of the real sums (the
//! harness checks them as they arrive, and its invariants on every event).

mod common;

use sgnn_graph::Features;
use sgnn_plan::Plan;
use sgnn_sim::harness::channel::unit;
use sgnn_sim::harness::frames::forged;
use sgnn_sim::harness::{
    loaded_switch, run_layers, Cluster, EngineError, Faults, LayerCheck, To, STRAY_PORT,
};
use sgnn_transport::engine::{EngineConfig, Layer, Mode};
use sgnn_transport::reference::reference_sums;
use sgnn_transport::{TransportError, WorkerView};
use sgnn_wire::PacketType;
use softswitch::{Pipeline, SwitchConfig, Tables};

fn plan(scale: u32, workers: u32, mem: u64, dim: u32) -> Plan {
    common::plan_of(
        &format!("rmat:scale={scale},edge_factor=8,seed=3"),
        common::base_config(workers, mem, dim),
        8.0,
    )
}

/// A channel that drops, duplicates, delays (uniformly up to `jitter` ns) and reorders.
fn lossy(drop: f64, duplicate: f64, jitter: u64, reorder: f64) -> Faults {
    Faults {
        drop,
        duplicate,
        reorder,
        delay_ns: jitter,
    }
}

/// A channel that loses, duplicates and delays nothing.
const QUIET: (Faults, u64) = (Faults::NONE, 1);

/// Runs `rounds` rounds (chained like the daemon's stand-alone mode) with the harness, which
/// checks every worker's sums against the reference. Returns the engines' stats.
fn run_and_check(
    plan: Plan,
    cfg: EngineConfig,
    (faults, seed): (Faults, u64),
    dim: usize,
    rounds: usize,
) -> (Vec<sgnn_transport::Stats>, Cluster) {
    run_and_check_with(plan, cfg, (faults, seed), dim, rounds, |_| {})
}

/// [`run_and_check`], with `setup` applied to the cluster before the first round.
fn run_and_check_with(
    plan: Plan,
    cfg: EngineConfig,
    (faults, seed): (Faults, u64),
    dim: usize,
    rounds: usize,
    setup: impl FnOnce(&mut Cluster),
) -> (Vec<sgnn_transport::Stats>, Cluster) {
    let n = plan.graph.num_vertices();
    let mut global = Features::random(n, dim, 7).data;
    // A few values beyond the plan's range: clamped identically everywhere.
    global[3] = 100.0;
    let mut sim = Cluster::new(plan, cfg, faults, seed);
    setup(&mut sim);
    let stats = run_layers(&mut sim, global, dim, rounds, LayerCheck::default());
    (stats, sim)
}

/// Starts forward layer 0 with `dim` random values per vertex on every engine of `sim`;
/// returns the features (row-major, all vertices).
fn start_layer(sim: &mut Cluster, dim: usize) -> Vec<f32> {
    let n = sim.plan.graph.num_vertices();
    let x = Features::random(n, dim, 1).data;
    for e in sim.engines.iter_mut() {
        let f = e.view().local_rows(&x, dim);
        e.start_round(0, Layer::forward(0), dim, &f).unwrap();
    }
    x
}

/// One datagram from anywhere must not end a job (issues 14 and 31): a BlockDone for a block
/// from the past, from no worker's port or from another worker's, and a Bypass from no
/// worker's port, are dropped by the switch (counted `drop_wrong_port`, never answered or
/// summed, `sgnn_switch::admission`); a BlockAdvance for a block the plan does not have, sent
/// straight to worker 1 with the job, is counted as stale and ignored; frames sent straight to
/// worker 1 without the job (a BlockAdvance of its current block, a Bypass) are dropped unread
/// (`foreign_job`). The daemons learned the switch's job from their probes; every sum stays
/// exact.
#[test]
fn forged_control_frames_are_counted_and_ignored() {
    let plan = small_plan();
    let blocks = plan.blocks.len() as u16;
    const JOB: u16 = 0x77;
    let with_job = |(to, mut f): (To, Vec<u8>)| {
        f[sgnn_wire::ETHERNET_HEADER_LEN + sgnn_wire::IPV4_HEADER_LEN + 22..][..2]
            .copy_from_slice(&JOB.to_be_bytes());
        (to, f)
    };
    let (stats, sim) = run_and_check_with(plan, quick_cfg(), QUIET, 40, 3, |sim| {
        sim.switch.config.job = JOB;
        sim.inject = Some((
            1,
            vec![
                with_job(forged(
                    PacketType::BlockDone,
                    0,
                    0,
                    blocks + 4,
                    To::Switch(STRAY_PORT),
                )),
                with_job(forged(PacketType::BlockDone, 0, 1, 0, To::Switch(2))),
                with_job(forged(PacketType::Bypass, 0, 0, 0, To::Switch(STRAY_PORT))),
                with_job(forged(
                    PacketType::BlockAdvance,
                    1,
                    1,
                    blocks + 9,
                    To::Host(1),
                )),
                forged(PacketType::BlockAdvance, 1, 0, 0, To::Host(1)),
                forged(PacketType::Bypass, 0, 0, 0, To::Host(1)),
            ],
        ));
    });
    assert_eq!(
        sim.switch.counters.drop_wrong_port, 3,
        "both forged BlockDones and the stranger's Bypass"
    );
    assert_eq!(
        sim.switch.counters.block_done_stale, 0,
        "the switch answered no forged BlockDone"
    );
    assert!(stats[1].stale >= 1, "worker 1 counted the forged advance");
    assert_eq!(stats[1].foreign_job, 2, "the two frames without the job");
    assert!(
        sim.engines.iter().all(|e| e.job() == JOB),
        "every daemon learned the job from its probe"
    );
}

/// A switch that still holds an earlier run's synchronisation (a second job started without
/// reloading it) answers the start-up probe with its round and block: every daemon stops at
/// once with a message saying to reload, before any data, instead of hanging until the stall
/// timeout.
#[test]
fn a_switch_left_mid_run_by_an_earlier_job_is_refused_before_any_data() {
    let mut sim = Cluster::new(small_plan(), quick_cfg(), QUIET.0, QUIET.1);
    sim.switch.regs.sync_round = 3;
    sim.switch.regs.sync_block = 1;
    let err = first_error(&mut sim).error;
    let msg = err.to_string();
    assert!(msg.contains("round 3 block 1"), "{msg}");
    assert!(msg.contains("switch-ctl load"), "{msg}");
    assert_eq!(sim.switch.counters.data, 0, "no data left a daemon");
    assert!(
        sim.now < quick_cfg().stall_timeout_ns / 10,
        "refused at the probe, not by the stall timeout"
    );
}

/// A switch that restarts mid-layer and comes back empty (no tables, no plan) cannot even
/// route the health probes the stalled workers send: they stop after
/// `HEALTH_PROBES_UNANSWERED` of them, long before the stall timeout, saying the switch is
/// down or lost its tables.
#[test]
fn a_switch_that_restarts_empty_mid_layer_stops_the_workers_with_a_clear_error() {
    let mut sim = Cluster::new(small_plan(), quick_cfg(), QUIET.0, QUIET.1);
    start_layer(&mut sim, 32);
    let mut restarted = false;
    let err = sim
        .run(60_000_000_000, |sim| {
            if !restarted && sim.switch.counters.aggregated > 50 {
                sim.replace_switch(Pipeline::new(SwitchConfig::default(), Tables::default()));
                restarted = true;
            }
            false
        })
        .expect_err("the workers must stop");
    let msg = err.to_string();
    assert!(restarted);
    assert!(msg.contains("answered none of 10 probes"), "{msg}");
    assert!(msg.contains("switch-ctl load"), "{msg}");
    assert!(
        sim.now < quick_cfg().stall_timeout_ns / 2,
        "stopped by the health probes, not the stall timeout"
    );
}

/// A switch that restarts mid-layer and is reloaded (tables and plan tag back, registers at
/// round 0 block 0) lost the block's partial sums: the stalled workers' health probes find it
/// behind their block and every worker stops, saying so.
#[test]
fn a_switch_reloaded_mid_layer_stops_the_workers_with_a_clear_error() {
    let plan = small_plan();
    assert!(plan.blocks.len() > 1);
    let mut sim = Cluster::new(plan.clone(), quick_cfg(), QUIET.0, QUIET.1);
    start_layer(&mut sim, 32);
    let mut restarted = false;
    let err = sim
        .run(60_000_000_000, |sim| {
            if !restarted && sim.switch.regs.sync_block == 1 && sim.switch.counters.aggregated > 0 {
                sim.replace_switch(loaded_switch(&plan));
                restarted = true;
            }
            false
        })
        .expect_err("the workers must stop");
    let msg = err.to_string();
    assert!(restarted);
    assert!(
        msg.contains("restarted or was reloaded mid-run")
            && msg.contains("at round 0 block 0 while this worker is at round 0 block 1"),
        "{msg}"
    );
    assert!(
        sim.now < quick_cfg().stall_timeout_ns / 2,
        "stopped by a health probe, not the stall timeout"
    );
}

/// `f` summed over every worker's stats.
fn total(stats: &[sgnn_transport::Stats], f: fn(&sgnn_transport::Stats) -> u64) -> u64 {
    stats.iter().map(f).sum()
}

fn small_plan() -> Plan {
    // 2 segments, 64 destinations per block: several blocks.
    plan(8, 4, 16 << 10, 64)
}

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

#[test]
fn lossless_run_is_exact_and_uses_the_switch_only() {
    let p = small_plan();
    assert!(p.blocks.len() >= 2, "the test wants several blocks");
    let chan = QUIET;
    // Per round and block: a tail probe from every worker (at its block's start if it sends
    // nothing in it) and one all-sent notice to every worker; nothing else beyond the Data,
    // Results and BlockDone.
    let blocks = p.blocks.len() as u64;
    let workers = p.workers() as u64;
    assert!(
        p.manifest.segments >= 2,
        "the test wants several segments per vertex"
    );
    let (stats, sim) = run_and_check(p, quick_cfg(), chan, 64, 3);
    assert_eq!(total(&stats, |s| s.tail_probes), 3 * blocks * workers);
    assert_eq!(total(&stats, |s| s.all_sent), 3 * blocks * workers);
    assert_eq!(sim.switch.counters.all_sent, 3 * blocks);
    assert_eq!(
        total(&stats, |s| s.acks_sent),
        total(&stats, |s| s.tail_probes)
    );
    assert_eq!(total(&stats, |s| s.nacks + s.pulls), 0);
    for s in &stats {
        assert_eq!(s.cells_by_raw, 0, "nothing lost, nothing raw");
        assert_eq!(s.fetches_sent + s.retransmissions, 0);
        assert_eq!(s.rounds.len(), 3);
    }
    assert_eq!(sim.switch.counters.bypassed, 0);
    assert!(sim.switch.counters.results > 0);
}

#[test]
fn lossy_reordering_duplicating_channel_still_gives_exact_sums() {
    for seed in 1..=3 {
        let chan = (lossy(0.05, 0.05, 30_000, 0.05), seed);
        let (stats, _) = run_and_check(small_plan(), quick_cfg(), chan, 64, 3);
        let resent = total(&stats, |s| s.retransmissions);
        let nacks = total(&stats, |s| s.nacks);
        let pulls = total(&stats, |s| s.pulls);
        assert!(
            resent > 0 && nacks > 0 && pulls > 0,
            "5% loss must need recovery"
        );
    }
}

#[test]
fn heavy_loss_and_odd_feature_sizes() {
    let chan = (lossy(0.25, 0.1, 100_000, 0.0), 9);
    // 40 values: the second segment is partly padding.
    let (stats, _) = run_and_check(small_plan(), quick_cfg(), chan, 40, 2);
    let resent = total(&stats, |s| s.retransmissions);
    assert!(resent > 0, "lost Data frames are NACKed and sent again");
}

#[test]
fn lost_block_advances_are_recovered() {
    let p = small_plan();
    let chan = QUIET;
    let mut sim = Cluster::new(p, quick_cfg(), chan.0, chan.1);
    sim.channel
        .drop_next(To::Host(2), PacketType::BlockAdvance, 4);
    let dim = 32;
    let _ = start_layer(&mut sim, dim);
    let mut done = [false; 4];
    sim.run(60_000_000_000, |s| {
        for (w, e) in s.engines.iter_mut().enumerate() {
            done[w] |= e.take_sums().is_some();
        }
        done.iter().all(|&d| d)
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let s = sim.engines[2].stats();
    assert!(s.implicit_advances + s.block_done_resent > 0);
}

#[test]
fn ecn_marks_halve_the_rate_and_sums_stay_exact() {
    let p = small_plan();
    let chan = QUIET;
    let mut sim = Cluster::new(p.clone(), quick_cfg(), chan.0, chan.1);
    // Every egress queue looks congested.
    sim.switch.config.ecn_threshold = 0;
    sim.switch.queue_depth = vec![10; 4];
    let dim = 32;
    let x = start_layer(&mut sim, dim);
    let mut got = vec![None; 4];
    sim.run(60_000_000_000, |s| {
        for (w, e) in s.engines.iter_mut().enumerate() {
            if let Some(g) = e.take_sums() {
                got[w] = Some(g);
            }
        }
        got.iter().all(|g| g.is_some())
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let want = reference_sums(&p.graph, sim.engines[0].view().fixed, dim, &x);
    for (w, g) in got.iter().enumerate() {
        let view = sim.engines[w].view();
        for (i, &v) in view.local_vertices.iter().enumerate() {
            assert_eq!(
                &g.as_ref().unwrap()[i * dim..(i + 1) * dim],
                &want[v as usize * dim..(v as usize + 1) * dim]
            );
        }
        let s = sim.engines[w].stats();
        assert!(s.ecn_marks > 0);
        assert!(s.rate_decreases > 0);
        assert!(sim.engines[w].rate_mbps() < 1000.0);
    }
}

#[test]
fn host_based_baseline_is_exact_under_loss() {
    let cfg = EngineConfig {
        mode: Mode::HostBased,
        ..quick_cfg()
    };
    let chan = (lossy(0.05, 0.05, 30_000, 0.0), 4);
    let (stats, mut sim) = run_and_check(small_plan(), cfg, chan, 64, 3);
    for s in &stats {
        assert_eq!(s.cells_by_result, 0, "the baseline never uses aggregators");
    }
    // Final barrier through the switch.
    let now = sim.now;
    for e in sim.engines.iter_mut() {
        e.finish(now).unwrap();
    }
    sim.run(sim.now + 60_000_000_000, |s| {
        s.engines.iter().all(|e| e.finished())
    })
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(sim.switch.counters.aggregated, 0);
}

/// A worker dead from the start: the others wait at their start barrier (a daemon may start
/// late) and name it after the stall timeout.
#[test]
fn a_worker_dead_from_the_start_is_named_after_the_stall_timeout() {
    let p = small_plan();
    let chan = QUIET;
    let cfg = EngineConfig {
        stall_timeout_ns: 1_000_000_000,
        ..quick_cfg()
    };
    let mut sim = Cluster::new(p, cfg, chan.0, chan.1);
    sim.alive[3] = false;
    let dim = 32;
    let _ = start_layer(&mut sim, dim);
    let err = sim.run(60_000_000_000, |_| false).unwrap_err();
    let msg = err.error.to_string();
    assert!(matches!(err.error, TransportError::Stalled(_)), "{msg}");
    assert!(msg.contains("worker 3"), "{msg}");
    assert!(sim.now < 10_000_000_000, "gave up after the stall timeout");
}

/// The last BlockAdvance to one worker is lost and the others, done with the job, leave
/// (`sgnn testbed --loss 0.2` named a live worker dead in 4 of 9 runs this way): the worker
/// left behind must get its advance by asking the switch again, not name a peer that left.
/// With its BlockDone backed off past `liveness_ns` (here an advance timeout of 3 s), it
/// used to ask only the silent peers and name one after a second.
#[test]
fn a_lost_last_advance_is_asked_again_before_a_peer_that_left_is_named() {
    let cfg = EngineConfig {
        advance_timeout_ns: 3_000_000_000,
        max_backoff_ns: 3_000_000_000,
        stall_timeout_ns: 20_000_000_000,
        ..quick_cfg()
    };
    let mut sim = Cluster::new(small_plan(), cfg, QUIET.0, QUIET.1);
    let blocks = sim.plan.blocks.len() as u16;
    assert!(blocks > 1, "the plan has several blocks");
    let _ = start_layer(&mut sim, 32);
    // Once the switch is in the last block, the next advance to worker 3 is the last one.
    let mut armed = false;
    sim.run(60_000_000_000, |s| {
        if !armed && s.switch.regs.sync_block == blocks - 1 {
            s.channel
                .drop_next(To::Host(3), PacketType::BlockAdvance, 1);
            armed = true;
        }
        // A worker with its sums has finished the job and exits.
        for w in 0..3 {
            if s.alive[w] && !s.engines[w].busy() {
                s.alive[w] = false;
            }
        }
        !s.engines[3].busy()
    })
    .unwrap_or_else(|e| panic!("worker {}: {}", e.worker, e.error));
    assert!(armed);
    assert!(sim.alive[..3].iter().all(|a| !a), "the others left first");
    assert!(sim.engines[3].take_sums().is_some());
    let st = sim.engines[3].stats();
    assert!(st.liveness_hellos > 0 && st.block_done_resent > 0, "{st:?}");
}

/// The same in host-based exchange's final barrier: the barrier's advance to worker 3 is
/// lost and the others, finished, leave.
#[test]
fn a_lost_final_barrier_advance_is_asked_again_before_a_peer_that_left_is_named() {
    let cfg = EngineConfig {
        mode: Mode::HostBased,
        advance_timeout_ns: 3_000_000_000,
        max_backoff_ns: 3_000_000_000,
        stall_timeout_ns: 20_000_000_000,
        ..quick_cfg()
    };
    let (_, mut sim) = run_and_check(small_plan(), cfg, QUIET, 32, 2);
    let now = sim.now;
    for e in sim.engines.iter_mut() {
        e.finish(now).unwrap();
    }
    sim.channel
        .drop_next(To::Host(3), PacketType::BlockAdvance, 1);
    sim.run(sim.now + 60_000_000_000, |s| {
        for w in 0..3 {
            if s.alive[w] && s.engines[w].finished() {
                s.alive[w] = false;
            }
        }
        s.engines[3].finished()
    })
    .unwrap_or_else(|e| panic!("worker {}: {}", e.worker, e.error));
    assert!(sim.alive[..3].iter().all(|a| !a), "the others left first");
    assert!(sim.engines[3].stats().liveness_hellos > 0);
}

/// A worker that dies mid-layer (issue 31): the survivors' liveness hellos go unanswered and
/// the first to give up names it within about a second (`liveness_ns`, 1 s), long before the
/// 20 s stall timeout. Virtual time: deterministic.
#[test]
fn a_worker_dead_mid_layer_is_named_within_a_second() {
    for victim in [3usize, 0] {
        let cfg = EngineConfig {
            stall_timeout_ns: 20_000_000_000,
            ..quick_cfg()
        };
        let mut sim = Cluster::new(small_plan(), cfg, QUIET.0, QUIET.1);
        let _ = start_layer(&mut sim, 32);
        // Until the switch has aggregated some of the layer: every daemon is past its start.
        sim.run(60_000_000_000, |s| s.switch.counters.aggregated > 20)
            .unwrap_or_else(|e| panic!("{e}"));
        sim.alive[victim] = false;
        let killed_at = sim.now;
        let EngineError {
            worker: w,
            error: err,
        } = sim.run(60_000_000_000, |_| false).unwrap_err();
        let msg = err.to_string();
        assert_ne!(w as usize, victim);
        match err {
            TransportError::PeerSilent { worker, .. } => assert_eq!(worker as usize, victim),
            e => panic!("worker {w}: {e}"),
        }
        assert!(
            msg.contains(&format!("worker {victim} is not answering")),
            "{msg}"
        );
        let took = sim.now - killed_at;
        assert!(
            took <= 1_500_000_000,
            "named {:.2} s after the kill (virtual time)",
            took as f64 * 1e-9
        );
        assert!(sim.engines[w as usize].stats().liveness_hellos > 0);
    }
}

#[test]
fn views_refuse_what_does_not_fit() {
    let p = small_plan();
    let e = WorkerView::new(&p, 4, None).unwrap_err().to_string();
    assert!(e.contains("worker id 4 is not in this plan"), "{e}");
    let v = WorkerView::new(&p, 0, None).unwrap();
    let e = v.segments_for(65).unwrap_err().to_string();
    assert!(e.contains("re-plan"), "{e}");
    assert_eq!(v.segments_for(64).unwrap(), 2);
    // The schedule files must match the blocks.
    let mut s = p.worker_schedule(1);
    assert!(WorkerView::new(&p, 1, Some(&s)).is_ok());
    s.receives.pop();
    let e = WorkerView::new(&p, 1, Some(&s)).unwrap_err().to_string();
    assert!(e.contains("receives.npy"), "{e}");
}

/// Starts a layer on every engine of `sim` and runs until the first error.
fn first_error(sim: &mut Cluster) -> EngineError {
    start_layer(sim, 32);
    sim.run(60_000_000_000, |_| false)
        .expect_err("a switch with another plan must stop the daemons")
}

#[test]
fn a_switch_loaded_with_another_plan_or_none_is_refused_before_any_data() {
    let chan = QUIET;
    let p = small_plan();
    let tag = p.tag();
    let other = plan(8, 4, 32 << 10, 64);
    assert_ne!(other.tag(), tag, "different plans have different tags");
    let mut sim = Cluster::new(p.clone(), quick_cfg(), chan.0, chan.1);
    sim.switch.config.plan_tag = other.tag();
    let err = first_error(&mut sim).error;
    let msg = err.to_string();
    assert!(
        msg.contains(&format!("{:08x}", other.tag())) && msg.contains(&format!("{tag:08x}")),
        "{msg}"
    );
    assert!(msg.contains("switch-ctl load --plan"), "{msg}");
    assert_eq!(sim.switch.counters.data, 0, "no data left a daemon");

    let mut sim = Cluster::new(p, quick_cfg(), chan.0, chan.1);
    sim.switch.config.plan_tag = 0;
    let msg = first_error(&mut sim).error.to_string();
    assert!(msg.contains("holds no plan"), "{msg}");
}

#[test]
fn one_timeout_sends_at_most_a_window_and_heavy_loss_still_ends_exact() {
    let chan = (lossy(0.25, 0.1, 100_000, 0.0), 11);
    let cfg = EngineConfig {
        recovery_window: 4,
        ..quick_cfg()
    };
    let (stats, _) = run_and_check(small_plan(), cfg, chan, 64, 2);
    for (w, s) in stats.iter().enumerate() {
        assert!(
            s.pulls <= 4 * s.fetch_timeouts,
            "worker {w}: {} pulls in {} timeouts",
            s.pulls,
            s.fetch_timeouts
        );
    }
    let pulled = total(&stats, |s| s.pulls);
    assert!(pulled > 0, "25% loss loses Results, which are pulled");
}

/// [`small_plan`] re-planned with delivery `mode` (`switch-ctl plan --aggregate MODE`), with
/// the same memory.
fn delivery_plan(mode: sgnn_plan::AggregateMode) -> Plan {
    let prof = sgnn_plan::profile::SwitchProfile::named("default").unwrap();
    let (p, _) = sgnn_delivery::lower::deliver(&small_plan(), mode, &prof).unwrap();
    sgnn_plan::verify(&p).unwrap();
    p
}

/// Every pair pre-aggregated: several blocks of destination rows.
fn partials_plan() -> Plan {
    delivery_plan(sgnn_plan::AggregateMode::Partials)
}

#[test]
fn multicast_and_auto_plans_are_exact_lossless_and_under_loss() {
    use sgnn_plan::AggregateMode;
    for mode in [AggregateMode::Multicast, AggregateMode::Auto] {
        let p = delivery_plan(mode);
        assert!(!p.replicate.is_empty(), "{mode:?} replicates");
        // Replicas each worker must receive per round: its raw_in over all blocks.
        let want: u64 = (0..p.workers())
            .map(|w| {
                let v = WorkerView::new(&p, w, None).unwrap();
                v.blocks.iter().map(|b| b.raw_in.len() as u64).sum::<u64>()
            })
            .sum();
        assert!(want > 0);
        let (stats, sim) = run_and_check(p.clone(), quick_cfg(), QUIET, 64, 2);
        let used = total(&stats, |s| s.replicas_used);
        assert_eq!(
            used,
            want * 2 * 2,
            "{mode:?}: every replica, 2 segments, 2 rounds"
        );
        assert_eq!(
            total(&stats, |s| s.fetches_sent),
            0,
            "{mode:?}: nothing lost, nothing fetched"
        );
        assert_eq!(sim.switch.counters.delivered, want * 2 * 2);
        let chan = (lossy(0.05, 0.05, 30_000, 0.0), 4);
        let (stats, _) = run_and_check(p, quick_cfg(), chan, 64, 2);
        assert!(
            total(&stats, |s| s.fetches_answered) > 0,
            "{mode:?}: lost replicas are fetched from their owners"
        );
    }
}

#[test]
fn partials_plans_are_exact_with_one_pass_per_partial() {
    let p = partials_plan();
    assert!(p.blocks.len() >= 2, "the test wants several blocks");
    assert!(!p.partials.is_empty());
    let n = p.graph.num_vertices() as u32;
    // Every source is a partial, fed into one row: no recirculation at all.
    for b in &p.blocks {
        assert!(b.sources.iter().all(|&s| s >= n));
        assert_eq!(b.fanout.len(), b.sources.len());
    }
    let partials = p.partials.len() as u64;
    let (stats, sim) = run_and_check(p, quick_cfg(), QUIET, 64, 3);
    for s in &stats {
        assert_eq!(s.cells_by_raw, 0, "nothing lost, nothing raw");
        assert_eq!(s.fetches_sent + s.retransmissions, 0);
    }
    assert_eq!(sim.switch.counters.recirculated, 0);
    // Every partial's two segments, three rounds, summed once each.
    assert_eq!(sim.switch.counters.aggregated, partials * 2 * 3);
}

#[test]
fn partials_plans_stay_exact_under_loss_duplication_and_reordering() {
    for seed in 1..=2 {
        let chan = (lossy(0.05, 0.05, 30_000, 0.05), seed);
        let (stats, _) = run_and_check(partials_plan(), quick_cfg(), chan, 64, 3);
        let resent = total(&stats, |s| s.retransmissions);
        let pulls = total(&stats, |s| s.pulls);
        assert!(
            resent > 0 && pulls > 0,
            "5% loss must need recovery: lost partials sent again, lost Results pulled"
        );
    }
}

#[test]
fn the_start_barrier_sends_no_data_to_a_daemon_that_is_not_up() {
    // Worker 2 starts 30 ms after the others (its port is down until then).
    let run = |cfg: EngineConfig| {
        run_and_check_with(small_plan(), cfg, QUIET, 64, 2, |sim| {
            sim.start_at[2] = 30_000_000;
        })
    };
    // With the barrier only hellos reach the dead port, and nothing needs recovery.
    let (stats, sim) = run(quick_cfg());
    assert!(
        !sim.lost_before_start.is_empty()
            && sim.lost_before_start.iter().all(|&t| t == PacketType::Ack),
        "{:?}",
        sim.lost_before_start
    );
    assert!(stats
        .iter()
        .all(|s| s.fetches_sent + s.pulls == 0 && s.peer_hellos >= 3));
    // Without it the others exchange into the dead port, and round 0 must recover.
    let (stats, sim) = run(EngineConfig {
        peer_barrier: false,
        ..quick_cfg()
    });
    assert!(
        sim.lost_before_start.iter().any(|&t| t != PacketType::Ack),
        "{:?}",
        sim.lost_before_start
    );
    assert!(total(&stats, |s| s.fetches_sent + s.pulls) > 0);
}

/// A property over random fault schedules: for every seed, a random loss, duplication and
/// reordering rate, the paper's plan and the auto plan end exact (checked by
/// `run_and_check`) and leave no aggregator busy with the block the switch is at.
#[test]
fn random_fault_schedules_end_exact_with_no_busy_aggregator() {
    let plans = [small_plan(), delivery_plan(sgnn_plan::AggregateMode::Auto)];
    // The rates of each seed, drawn from the harness's seeded hash (stream 2026).
    let draw = |seed: u64, i: u64| unit(sgnn_sim::hash::draw_key(2026, seed, i));
    for seed in 1..=12u64 {
        let faults = lossy(
            draw(seed, 0) * 0.2,
            draw(seed, 1) * 0.1,
            (draw(seed, 2) * 100_000.0) as u64,
            draw(seed, 3) * 0.05,
        );
        let chan = (faults, seed);
        let p = plans[seed as usize % 2].clone();
        let (_, sim) = run_and_check(p, quick_cfg(), chan, 40, 2);
        let (busy, _stale) = sim.switch.aggregators_in_use();
        assert_eq!(busy, 0, "seed {seed}: {faults}");
    }
}

/// The switch's seq check expects a worker's frames in the order they left (one access link);
/// a frame that overtakes others reads as a gap there. That costs retransmissions (the
/// overtaken frames, dropped as duplicates by `src_seen` when they arrive) but never
/// exactness, and the run ends however much the link reorders (docs/host.md, "Reordering").
#[test]
fn reordering_on_the_access_link_costs_retransmissions_not_exactness() {
    let mut per_frame = Vec::new();
    for reorder in [0.1, 0.5] {
        let chan = (lossy(0.0, 0.0, 30_000, reorder), 5);
        let (stats, sim) = run_and_check(small_plan(), quick_cfg(), chan, 64, 3);
        let (data, retx, nacks) = (
            total(&stats, |s| s.sent.data.packets),
            total(&stats, |s| s.retransmissions),
            total(&stats, |s| s.nacks),
        );
        assert!(nacks > 0 && retx > 0, "reorder {reorder}: nothing NACKed");
        assert!(
            sim.switch.counters.drop_duplicate > 0,
            "the late frames are duplicates"
        );
        assert_eq!(sim.switch.aggregators_in_use().0, 0);
        per_frame.push(retx as f64 / data as f64);
    }
    assert!(
        per_frame[0] < per_frame[1],
        "more reordering, more retransmissions: {per_frame:?}"
    );
}

/// A worker that missed two NACKs in a row and then hears its tail probe's answer (which
/// repeats the last gap in both fields: the switch keeps only the last) resends everything
/// after the last gap it knew. Every contribution reaches its aggregate, so no cell is given
/// up once every feeder said the switch holds its frames.
#[test]
fn lost_nacks_before_a_probe_answer_lose_no_contribution() {
    for seed in 1..=4 {
        let chan = (lossy(0.2, 0.0, 2_000, 0.0), seed);
        let (stats, sim) = run_and_check(small_plan(), quick_cfg(), chan, 64, 3);
        let given_up = total(&stats, |s| s.given_up_after_all_sent);
        let nacks = total(&stats, |s| s.nacks);
        assert!(nacks > 100, "seed {seed}: the channel should cost NACKs");
        assert_eq!(given_up, 0, "seed {seed}");
        assert_eq!(sim.switch.aggregators_in_use().0, 0);
    }
}

/// One worker on two cores (`switch-ctl plan --cores 2`, `sgnn_planner::split`): the paper
/// and `auto` plans split by columns run through the real engines and the software switch's
/// pipeline, lossless and under loss, reordering and duplication, every core's sums checked
/// against the reference on every event. The split's sums, joined back, are the original
/// plan's sums column for column; the original plan and its split run on the same features.
#[test]
fn a_plan_split_over_cores_gives_the_same_sums_column_for_column() {
    use sgnn_plan::AggregateMode;
    for mode in [AggregateMode::Paper, AggregateMode::Auto] {
        let p = match mode {
            AggregateMode::Paper => small_plan(),
            m => delivery_plan(m),
        };
        let s = sgnn_planner::split::split_columns(p.clone(), 2).unwrap();
        let split = s.manifest.split.unwrap();
        assert_eq!(s.workers(), 8);
        let dim = 64usize;
        let x = Features::random(p.graph.num_vertices(), dim, 7).data;
        let xs = split.split_rows(&x);
        let fixed = WorkerView::new(&p, 0, None).unwrap().fixed;
        assert_eq!(WorkerView::new(&s, 0, None).unwrap().fixed, fixed);
        let want = reference_sums(&p.graph, fixed, dim, &x);
        let got = reference_sums(&s.graph, fixed, dim / 2, &xs);
        assert_eq!(
            split.join_rows(&got),
            want,
            "{mode:?}: the split's reference"
        );
        for chan in [QUIET, (lossy(0.05, 0.02, 20_000, 0.05), 11)] {
            let mut sim = Cluster::new(s.clone(), quick_cfg(), chan.0, chan.1);
            let stats = run_layers(&mut sim, xs.clone(), dim / 2, 2, LayerCheck::default());
            assert_eq!(stats.len(), 8);
            assert!(
                stats.iter().all(|st| st.rounds.len() == 2),
                "{mode:?}: every core finished both rounds"
            );
        }
    }
}
