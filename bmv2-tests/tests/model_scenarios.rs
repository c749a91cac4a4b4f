//! The scenarios run on the model alone do what they are meant to exercise (so a differential
//! run that matches the model has tested something).

use sgnn_bmv2_tests::scenario;

#[test]
fn every_scenario_exercises_its_behaviour_on_the_model() {
    for sc in scenario::all() {
        // The switch the differential tests load (program and settings through its control
        // interface) holds the scenario's settings: what the model below runs with.
        let prog = sgnn_bmv2_tests::device::program(&sc).unwrap();
        let loaded = sgnn_bmv2_tests::device::model_of(&sc, &prog);
        assert_eq!(loaded.config.job, sc.config.job, "{}", sc.name);
        let mut m = sc.model();
        let mut out = Vec::new();
        for st in &sc.steps {
            m.process(st.port, &st.frame, &mut out);
        }
        let c = &m.counters;
        match sc.name {
            "one_block_real_graph" => {
                assert!(c.results > 100 && c.block_advance == 1, "{c:?}");
                assert_eq!(m.busy_aggregators(), 0);
            }
            "recirculation_and_reuse" => {
                assert!(c.recirculated > 100, "{c:?}");
                assert_eq!(c.block_advance as usize, 2 * sc.plan.blocks.len());
                assert_eq!(m.busy_aggregators(), 0);
            }
            "partials_in_one_pass" => {
                let sources: usize = sc.plan.blocks.iter().map(|b| b.sources.len()).sum();
                let rows: usize = sc.plan.blocks.iter().map(|b| b.aggregators.len()).sum();
                let segs = sc.plan.manifest.segments as u64;
                assert_eq!(c.recirculated, 0, "{c:?}");
                assert_eq!(c.aggregated, 2 * sources as u64 * segs, "{c:?}");
                assert_eq!(c.results, 2 * rows as u64 * segs, "{c:?}");
                assert_eq!(c.block_advance as usize, 2 * sc.plan.blocks.len());
                assert_eq!(m.busy_aggregators(), 0);
            }
            "replicate_to_groups" => {
                let segs = sc.plan.manifest.segments as u64;
                let copies: u64 = sc
                    .plan
                    .blocks
                    .iter()
                    .flat_map(|b| &b.sources)
                    .map(|&u| sc.plan.replicas(u).len() as u64)
                    .sum();
                assert!(copies > 0);
                assert_eq!(c.delivered, 2 * copies * segs, "{c:?}");
                assert_eq!(c.recirculated + c.aggregated, 0, "{c:?}");
                // Every copy a Bypass for all neighbours, to a worker of the source's set.
                let mut bypass = 0;
                for e in &out {
                    let (r, _) = sgnn_wire::FrameRepr::parse(&e.frame).unwrap();
                    if r.sgnn.packet_type == sgnn_wire::PacketType::Bypass {
                        assert_eq!(r.sgnn.dst_id, sgnn_wire::ALL_NEIGHBOURS);
                        let to = sgnn_wire::addressing::worker_ip(e.port);
                        assert_eq!(r.ip.dst, to);
                        assert!(sc.plan.replicas(r.sgnn.src_id).contains(&(e.port as u32)));
                        bypass += 1;
                    }
                }
                assert_eq!(bypass, 2 * copies * segs);
            }
            "loss_recovery_paths" => {
                assert!(c.bypassed >= 2, "{c:?}");
                assert_eq!(c.delivered, 1);
                assert_eq!(c.drop_duplicate, 1);
                assert_eq!(c.block_done_duplicate, 1);
                assert_eq!(c.block_done_stale, 1);
                assert_eq!(c.drop_stale, 2);
                assert_eq!(c.drop_unexpected, 1);
                assert_eq!(c.block_advance, 1);
            }
            "numbered_frames_nacks_and_pulls" => {
                // The gap at #3 and the probe's gap at #5; two probes answered, the third on
                // the wrong port; then seven probes of the all-sent steps.
                assert_eq!(c.nacked, 2, "{c:?}");
                assert_eq!(c.seq_probed, 9, "{c:?}");
                assert_eq!(c.all_sent, 1, "{c:?}");
                assert_eq!(c.drop_wrong_port, 1, "{c:?}");
                // #1 again, #2's retransmission, the first copy for a kept aggregate.
                assert_eq!(c.drop_duplicate, 3, "{c:?}");
                assert_eq!((c.drop_no_entry, c.drop_stale), (1, 1), "{c:?}");
                assert_eq!(c.block_advance, 1, "{c:?}");
                let answers: Vec<_> = out
                    .iter()
                    .filter_map(|e| sgnn_wire::FrameRepr::parse(&e.frame).ok())
                    .filter(|(r, _)| {
                        r.sgnn.packet_type == sgnn_wire::PacketType::Result && r.sgnn.flags.resend
                    })
                    .map(|(r, _)| (r.sgnn.count, r.sgnn.src_id))
                    .collect();
                let p = (answers.len() - 2) / 2;
                assert_eq!(c.pulled as usize, answers.len(), "{c:?}");
                assert_eq!(answers[0], (0, 0), "nothing yet");
                assert!(
                    answers[1..=p].iter().any(|a| a.0 > 0),
                    "a partial: {answers:?}"
                );
                let whole = &answers[p + 1..=2 * p];
                assert!(
                    whole.iter().all(|a| a.0 > 0),
                    "complete and kept: {answers:?}"
                );
                assert_eq!(
                    answers.last().unwrap().1,
                    sgnn_wire::recovery::PULL_GONE,
                    "released: {answers:?}"
                );
                // The NACKs: gap 2..=3 (one gap so far, 4 next), then 5..=5 twice.
                let nacks: Vec<_> = out
                    .iter()
                    .filter_map(|e| sgnn_wire::FrameRepr::parse(&e.frame).ok())
                    .filter(|(r, _)| {
                        r.sgnn.packet_type == sgnn_wire::PacketType::Ack && r.sgnn.flags.resend
                    })
                    .map(|(r, _)| (r.sgnn.src_id, r.sgnn.count, r.sgnn.segment))
                    .collect();
                assert_eq!(
                    nacks[..3],
                    [
                        (2 << 16 | 3, 1, 4),
                        (5 << 16 | 5, 2, 6),
                        (5 << 16 | 5, 2, 6)
                    ]
                );
                // Of the seven all-sent probes, worker 2's first becomes the notice; the
                // other six are answered to their workers.
                assert_eq!(nacks.len(), 3 + 6, "{nacks:?}");
                let notices: Vec<u16> = out
                    .iter()
                    .filter_map(|e| sgnn_wire::FrameRepr::parse(&e.frame).ok())
                    .filter(|(r, _)| {
                        r.sgnn.packet_type == sgnn_wire::PacketType::Ack
                            && r.sgnn.dst_id == sgnn_wire::recovery::SEND_DONE
                            && !r.sgnn.flags.resend
                    })
                    .map(|(r, _)| r.sgnn.worker_id)
                    .collect();
                assert_eq!(notices, [0, 1, 2], "one all-sent notice per worker");
            }
            "forwarding_and_malformed" => {
                // Ack, FetchReq, Bypass, plain UDP and the start-up probe.
                assert_eq!(c.forwarded, 5);
                assert_eq!(c.drop_no_route, 1);
                assert_eq!(c.drop_not_ipv4, 1);
                assert_eq!(c.drop_malformed, 6);
                // Bytes 22..24 set: another job's frame (sgnn_switch::admission).
                assert_eq!(c.drop_foreign_job, 1);
                assert_eq!(c.drop_unexpected, 2);
                // Worker 77's block-done on worker 0's port.
                assert_eq!(c.drop_wrong_port, 1);
                assert_eq!(c.drop_unknown_worker, 0);
            }
            "drop_simulator" => {
                assert_eq!(c.drop_simulated, sc.steps.len() as u64 / 3);
                assert!(
                    m.busy_aggregators() > 0,
                    "lost contributions leave aggregators busy"
                );
            }
            "control_frames_from_their_ports" => {
                // Two forged before the round, one inside it, one after: none counted.
                assert_eq!(c.drop_wrong_port, 4, "{c:?}");
                assert_eq!(c.block_advance as usize, sc.plan.blocks.len(), "{c:?}");
                assert_eq!(c.block_done as usize, 2 * sc.plan.blocks.len(), "{c:?}");
                assert_eq!(c.block_done_stale, 1, "{c:?}");
                assert_eq!(m.busy_aggregators(), 0);
                // The probes: round 0 block 0 first, then the next round's block 0 (every
                // block of round 0 done), each with the plan tag.
                let probes: Vec<_> = out
                    .iter()
                    .filter_map(|e| sgnn_wire::FrameRepr::parse(&e.frame).ok())
                    .filter(|(r, _)| r.sgnn.dst_id == sgnn_wire::PROBE_DST)
                    .map(|(r, _)| (r.sgnn.src_id, r.sgnn.round, r.sgnn.block_id))
                    .collect();
                assert_eq!(
                    probes,
                    vec![(sc.plan.tag(), 0, 0), (sc.plan.tag(), 1, 0)],
                    "{c:?}"
                );
            }
            "admission_of_every_type" => {
                // Six packet types, each from a port of no worker and naming another worker
                // (wrong port), with another's address, with another job: none acted on.
                assert_eq!(c.drop_wrong_port, 12, "{c:?}");
                assert_eq!(c.drop_wrong_address, 6, "{c:?}");
                assert_eq!(c.drop_foreign_job, 6, "{c:?}");
                // The good ones: the probe, Ack, FetchReq and Bypass forwarded, one Data
                // aggregated (in each aggregator it feeds), one BlockDone counted, the tail
                // probe answered.
                assert_eq!(c.rx as usize, sc.steps.len(), "{c:?}");
                assert_eq!(c.forwarded, 4, "{c:?}");
                assert_eq!(c.data, 1, "{c:?}");
                assert!(c.aggregated >= 1, "{c:?}");
                assert_eq!(c.block_done, 1, "{c:?}");
                assert_eq!(c.seq_probed, 1, "{c:?}");
                // The probe of job 0 is answered with the switch's job.
                let answers: Vec<u16> = out
                    .iter()
                    .filter_map(|e| sgnn_wire::FrameRepr::parse(&e.frame).ok())
                    .filter(|(r, _)| {
                        r.sgnn.dst_id == sgnn_wire::PROBE_DST && r.sgnn.src_id == sc.plan.tag()
                    })
                    .map(|(r, _)| r.sgnn.job)
                    .collect();
                assert_eq!(answers, vec![scenario::ADMISSION_JOB], "{c:?}");
            }
            "saturation_and_padding" => {
                assert_eq!(c.saturated, 2, "two contributions saturate: {c:?}");
                assert_eq!(c.results, 2, "{c:?}");
                assert_eq!(c.delivered, 1, "{c:?}");
                assert_eq!(c.block_done_stale, 1, "{c:?}");
                assert_eq!(c.forwarded, 1, "{c:?}");
                // The result of the saturating sum: clamped lanes, every other lane exact.
                let r = out
                    .iter()
                    .filter_map(|e| sgnn_wire::FrameRepr::parse(&e.frame).ok())
                    .find(|(r, _)| r.sgnn.dst_id == 950)
                    .expect("the sum of 950");
                let l = r.1.unwrap();
                assert_eq!(&l[..4], &[i32::MAX, i32::MIN, i32::MAX, i32::MIN]);
                assert!(l[4..].iter().all(|&x| x == 0));
                // Switch frames at their exact length; the forwarded ack kept its padding.
                for e in &out {
                    let (r, _) = sgnn_wire::FrameRepr::parse(&e.frame).unwrap();
                    if r.sgnn.packet_type == sgnn_wire::PacketType::Ack {
                        assert_eq!(e.frame.len(), r.frame_len() + 6);
                    } else {
                        assert_eq!(e.frame.len(), r.frame_len(), "{:?}", r.sgnn);
                    }
                }
            }
            "random_mix" => {
                assert!(c.drop_simulated > 0, "{c:?}");
                assert!(c.drop_malformed > 0, "{c:?}");
                assert!(c.drop_stale > 0, "{c:?}");
                assert!(c.drop_wrong_port > 0, "{c:?}");
                assert!(c.aggregated > 0 && c.forwarded > 0, "{c:?}");
            }
            "recycled_generations" => {
                assert_eq!(c.bypassed_late, 4, "{c:?}");
                assert_eq!(
                    (c.reclaimed, c.bypassed, c.recirculated),
                    (2, 1, 1),
                    "{c:?}"
                );
                assert_eq!((c.results, c.aggregated), (6, 14), "{c:?}");
                assert_eq!(c.block_advance, 1, "{c:?}");
                // Every Result holds exactly its own generation's two contributions (912:
                // the lone aggregator of 100_014's pass 1); every late contribution reaches
                // generation 0's destination raw.
                let sources = |dst: u32| -> Vec<u32> {
                    scenario::RECYCLED_ROWS
                        .iter()
                        .filter(|r| r.3 == dst)
                        .map(|r| r.0)
                        .collect()
                };
                let mut results = Vec::new();
                let mut bypasses = Vec::new();
                for e in &out {
                    let (r, l) = sgnn_wire::FrameRepr::parse(&e.frame).unwrap();
                    let Some(l) = l else {
                        continue; // the BlockAdvances
                    };
                    match r.sgnn.packet_type {
                        sgnn_wire::PacketType::Result => {
                            let want: Vec<u32> = match r.sgnn.dst_id {
                                912 => vec![100_014],
                                d => sources(d)[..2].to_vec(),
                            };
                            let sum: [i32; sgnn_wire::LANES] = std::array::from_fn(|i| {
                                want.iter().map(|&s| scenario::recycled_lanes(s)[i]).sum()
                            });
                            assert_eq!(l, sum, "result for {}", r.sgnn.dst_id);
                            results.push(r.sgnn.dst_id);
                        }
                        sgnn_wire::PacketType::Bypass => {
                            assert_eq!(l, scenario::recycled_lanes(r.sgnn.src_id));
                            let row = scenario::RECYCLED_ROWS
                                .iter()
                                .find(|x| x.0 == r.sgnn.src_id)
                                .unwrap();
                            assert_eq!((r.sgnn.dst_id, e.port), (row.3, row.4));
                            bypasses.push((r.sgnn.src_id, r.sgnn.dst_id));
                        }
                        _ => {}
                    }
                }
                results.sort();
                assert_eq!(results, [900, 901, 911, 912, 931, 940]);
                bypasses.sort();
                assert_eq!(
                    bypasses,
                    [
                        (100_011, 910),
                        (100_014, 910),
                        (100_030, 930),
                        (100_031, 930),
                        (100_032, 931)
                    ]
                );
                // Generation 1 of round 1 is left active at 60_010.
                assert_eq!(m.busy_aggregators(), 1);
                assert_eq!((m.regs.agg_gen[60_010], m.regs.agg_count[60_010]), (1, 1));
            }
            "fabric_partials" => {
                use sgnn_wire::PacketType as T;
                let ramp = |k: i32| -> [i32; sgnn_wire::LANES] {
                    std::array::from_fn(|l| k * 100 + l as i32)
                };
                let add = |a: [i32; sgnn_wire::LANES], b: [i32; sgnn_wire::LANES]| {
                    std::array::from_fn::<i32, { sgnn_wire::LANES }, _>(|i| a[i] + b[i])
                };
                let got: Vec<_> = out
                    .iter()
                    .map(|e| {
                        let (r, l) = sgnn_wire::FrameRepr::parse(&e.frame).unwrap();
                        let s = r.sgnn;
                        (s.packet_type, e.port, s.src_id, s.dst_id, s.count, l)
                    })
                    .collect();
                assert_eq!(
                    got,
                    vec![
                        // The leaf's share: a partial of 2 (src_id 7) to worker 2.
                        (T::Data, 2, 7, 0, 2, Some(add(ramp(1), ramp(2)))),
                        // The spine's sum: 2 + 3 contributions, the Result to worker 1.
                        (T::Result, 1, 500_001, 995, 5, Some(add(ramp(3), ramp(4)))),
                        // Resends bypass to where the row's sum goes.
                        (
                            T::Bypass,
                            0,
                            500_002,
                            996,
                            1,
                            Some({
                                let mut l = [3; sgnn_wire::LANES];
                                l[0] = i32::MAX - 1;
                                l
                            })
                        ),
                        (T::Bypass, 2, 100_100, 7, 1, Some(ramp(5))),
                    ]
                );
                assert_eq!(c.drop_duplicate, 2, "{c:?}");
                assert_eq!(c.drop_unexpected, 1, "the pull, {c:?}");
                assert_eq!((c.results, c.aggregated, c.bypassed), (2, 5, 2), "{c:?}");
            }
            "fabric_leaf" => {
                use sgnn_wire::PacketType as T;
                let got: Vec<_> = out
                    .iter()
                    .map(|e| {
                        let (r, _) = sgnn_wire::FrameRepr::parse(&e.frame).unwrap();
                        (r.sgnn.packet_type, e.port, r.sgnn.worker_id, r.ip.dst)
                    })
                    .collect();
                let ip = sgnn_wire::addressing::worker_ip;
                // The pulls' answers: gone, gone, then the own row's (nothing in it yet).
                let answers: Vec<_> = out
                    .iter()
                    .filter_map(|e| {
                        let (r, l) = sgnn_wire::FrameRepr::parse(&e.frame).unwrap();
                        let s = r.sgnn;
                        (s.packet_type == T::Result && s.flags.resend).then_some((
                            e.port,
                            s.src_id,
                            s.count,
                            l == Some([0; 32]),
                        ))
                    })
                    .collect();
                let gone = sgnn_wire::recovery::PULL_GONE;
                assert_eq!(answers.len(), 3, "{answers:?}");
                assert_eq!(answers[..2], [(1, gone, 0, true), (0, gone, 0, true)]);
                assert_ne!(answers[2].1, gone, "the leaf's own row is read");
                assert_eq!(c.pulled, 3, "{c:?}");
                assert_eq!(c.all_sent, 0, "a leaf sends no notice: {c:?}");
                assert_eq!(c.seq_probed, 2, "{c:?}");
                assert_eq!(
                    got,
                    vec![
                        // Both workers in: one BlockDone up to the root (port 2) as worker 7.
                        (T::BlockDone, 2, 7, ip(2)),
                        // Worker 1 asks again: the leaf's BlockDone up again.
                        (T::BlockDone, 2, 7, ip(2)),
                        // Clean probes, each answered to its worker (a NACK frame).
                        (T::Ack, 0, 0, ip(0)),
                        (T::Ack, 1, 1, ip(1)),
                        // The pulls: gone to each requester; the own row to its worker.
                        (T::Result, 1, 1, ip(1)),
                        (T::Result, 0, 0, ip(0)),
                        got[6],
                        // The root's advance: to every replica of the advance group.
                        (T::BlockAdvance, 0, 0, ip(0)),
                        (T::BlockAdvance, 1, 1, ip(1)),
                        (T::BlockAdvance, 2, 2, ip(2)),
                        // Worker 0 lost it: answered alone.
                        (T::BlockAdvance, 0, 0, ip(0)),
                        // The spine's Result, forwarded to worker 0.
                        (T::Result, 0, 0, ip(0)),
                    ]
                );
                assert_eq!(
                    (c.block_done, c.block_done_duplicate, c.block_done_stale),
                    (2, 1, 1),
                    "{c:?}"
                );
                assert_eq!((c.block_advance, c.drop_stale), (1, 1), "{c:?}");
                // The worker's BlockAdvance is unexpected; its Result naming worker 1 comes
                // from the wrong port (sgnn_switch::admission). The uplink's BlockDone comes
                // from its sender's link, but names the spine, none of the workers this leaf
                // synchronises.
                assert_eq!(
                    (c.drop_unexpected, c.drop_wrong_port, c.drop_unknown_worker),
                    (1, 1, 1),
                    "{c:?}"
                );
                assert_eq!(c.forwarded, 1, "{c:?}");
            }
            "fabric_spine" => {
                use sgnn_wire::PacketType as T;
                let got: Vec<_> = out
                    .iter()
                    .map(|e| {
                        let (r, _) = sgnn_wire::FrameRepr::parse(&e.frame).unwrap();
                        (r.sgnn.packet_type, e.port, r.sgnn.count)
                    })
                    .collect();
                assert_eq!(
                    got,
                    vec![
                        (T::BlockAdvance, 0, 0),
                        (T::BlockAdvance, 1, 0),
                        (T::BlockAdvance, 2, 0),
                        (T::BlockAdvance, 2, 0),
                        (T::Result, 0, 5),
                    ]
                );
                assert_eq!((c.block_done, c.block_advance), (2, 1), "{c:?}");
                assert_eq!((c.drop_unknown_worker, c.block_done_stale), (1, 1), "{c:?}");
                assert_eq!((c.drop_stale, c.aggregated, c.results), (0, 2, 1), "{c:?}");
                assert_eq!(m.regs.sync_done, vec![false, false]);
            }
            other => panic!("unchecked scenario {other}"),
        }
    }
}
