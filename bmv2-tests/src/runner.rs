//! Runs a scenario on a switch under test and on the model, step by step, and reports the
//! first difference: in the frames emitted for a step, or in counters and registers.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use sgnn_wire::FrameRepr;
use softswitch::{Counters, Pipeline};

use crate::net::TestNet;
use crate::scenario::Scenario;

/// Reading the state of the switch under test.
pub trait SwitchState {
    /// The `events` counter array (packets), at least `Counters::NAMES.len()` long.
    fn events(&mut self) -> Result<Vec<u64>, String>;
    /// Every cell of register `name`.
    fn register(&mut self, name: &str) -> Result<Vec<u128>, String>;
    /// `port_rx` or `port_tx` at `port`: (packets, bytes).
    fn port_counter(&mut self, name: &str, port: usize) -> Result<(u64, u64), String>;
    /// Whether `port_tx` counts a switch frame at the length of the frame that caused it, as
    /// that frame entered the switch: bmv2 counts in egress, where `packet_length` is still
    /// the input's, before the deparser drops or adds headers and `truncate()` drops the
    /// padding. So it counts a Result with its input's Ethernet padding, a NACK with the lanes
    /// of the Data frame it was made from, a pull's answer without the lanes it gained. The
    /// frames themselves are exact either way.
    fn tx_bytes_count_the_input_frame(&self) -> bool {
        false
    }
}

/// What a run found.
#[derive(Debug, Default)]
pub struct RunReport {
    /// Steps run.
    pub steps: usize,
    /// Frames compared.
    pub frames: usize,
    /// Register cells compared.
    pub cells: usize,
    /// What the switch emitted at each step, sorted ((port, frame) pairs): what
    /// [`crate::recording`] keeps.
    pub emitted: Vec<Vec<(u16, Vec<u8>)>>,
}

fn describe(frame: &[u8]) -> String {
    match FrameRepr::parse(frame) {
        Ok((r, _)) => format!(
            "{:?} w{} src {} dst {} blk {} rnd {} seg {} cnt {} pass {} ecn {} ip {:?}->{:?} dscp {} ipecn {}",
            r.sgnn.packet_type,
            r.sgnn.worker_id,
            r.sgnn.src_id,
            r.sgnn.dst_id,
            r.sgnn.block_id,
            r.sgnn.round,
            r.sgnn.segment,
            r.sgnn.count,
            r.sgnn.pass,
            r.sgnn.flags.ecn,
            r.ip.src,
            r.ip.dst,
            r.ip.dscp,
            r.ip.ecn
        ),
        Err(_) => format!("{} bytes (not SwitchGNN)", frame.len()),
    }
}

fn diff_frames(want: &[(u16, Vec<u8>)], got: &[(u16, Vec<u8>)]) -> String {
    let mut s = String::new();
    for (p, f) in want {
        if !got.contains(&(*p, f.clone())) {
            s += &format!("\n  missing on port {p}: {}", describe(f));
        }
    }
    for (p, f) in got {
        if !want.contains(&(*p, f.clone())) {
            s += &format!("\n  unexpected on port {p}: {}", describe(f));
            if let Some((_, w)) = want.iter().find(|(wp, w)| wp == p && w.len() == f.len()) {
                let at: Vec<usize> = (0..f.len()).filter(|&i| f[i] != w[i]).collect();
                s += &format!(" (differs from the expected frame at bytes {at:?})");
            }
        }
    }
    s
}

fn counters_diff(model: &[u64], dut: &[u64]) -> Option<String> {
    let mut d = Vec::new();
    for (i, name) in Counters::NAMES.iter().enumerate() {
        let g = dut.get(i).copied().unwrap_or(0);
        if model[i] != g {
            d.push(format!("{name}: model {} switch {g}", model[i]));
        }
    }
    (!d.is_empty()).then(|| d.join(", "))
}

/// Registers compared in full at the end (the lanes are compared where a slot is busy).
pub const COMPARED_REGISTERS: [&str; 10] = {
    use sgnn_switch::aggregation::{AGG_COUNT, AGG_ECN, AGG_GEN, AGG_STATE, AGG_TAG, SRC_SEEN};
    use sgnn_switch::block_sync::{SYNC_BLOCK, SYNC_COUNT, SYNC_ROUND};
    [
        AGG_COUNT.name,
        AGG_STATE.name,
        AGG_TAG.name,
        AGG_GEN.name,
        AGG_ECN.name,
        SYNC_ROUND.name,
        SYNC_BLOCK.name,
        SYNC_COUNT.name,
        sgnn_switch::drop_simulator::DROP_SEEN.name,
        SRC_SEEN.name,
    ]
};

/// Runs `sc` through `net`/`state` and through `model` (the model switch holding what the
/// switch under test was loaded with). `settle` bounds the wait per step.
pub fn run(
    sc: &Scenario,
    mut model: Pipeline,
    net: &TestNet,
    state: &mut dyn SwitchState,
    settle: Duration,
) -> Result<RunReport, String> {
    let mut report = RunReport::default();
    let mut out = Vec::new();
    // Per port, the input's length less the frame's, summed over the switch frames sent
    // there (see SwitchState::tx_bytes_count_the_input_frame).
    let mut tx_extra = vec![0i64; sc.plan.workers() as usize];
    for (k, st) in sc.steps.iter().enumerate() {
        out.clear();
        model.process(st.port, &st.frame, &mut out);
        for e in &out {
            let switch_frame = e.frame.get(6..12) == Some(&model.config.mac[..]);
            if let Some(t) = tx_extra.get_mut(e.port as usize) {
                if switch_frame {
                    *t += st.frame.len() as i64 - e.frame.len() as i64;
                }
            }
        }
        let mut want: Vec<(u16, Vec<u8>)> = out.iter().map(|e| (e.port, e.frame.clone())).collect();
        let want_events = model.counters.to_array();
        net.send(st.port, &st.frame)
            .map_err(|e| format!("{}: sending step {k}: {e}", sc.name))?;
        // The switch has finished the step (every pass) when its counters equal the model's.
        let start = Instant::now();
        let mut events;
        loop {
            events = state.events()?;
            if counters_diff(&want_events, &events).is_none() || start.elapsed() > settle {
                break;
            }
            std::thread::sleep(Duration::from_micros(300));
        }
        let mut got = net.collect(want.len(), settle, Duration::ZERO);
        want.sort();
        got.sort();
        if let Some(d) = counters_diff(&want_events, &events) {
            return Err(format!(
                "{}: step {k} ({}): counters differ: {d}{}",
                sc.name,
                st.what,
                diff_frames(&want, &got)
            ));
        }
        if want != got {
            return Err(format!(
                "{}: step {k} ({}): frames differ:{}",
                sc.name,
                st.what,
                diff_frames(&want, &got)
            ));
        }
        report.steps += 1;
        report.frames += want.len();
        report.emitted.push(got);
    }
    // Nothing late.
    let late = net.collect(0, Duration::ZERO, Duration::from_millis(200));
    if !late.is_empty() {
        return Err(format!(
            "{}: {} frames arrived after the last step:{}",
            sc.name,
            late.len(),
            diff_frames(&[], &late)
        ));
    }
    for name in COMPARED_REGISTERS {
        let dut = state.register(name)?;
        let want: Vec<u128> = (0..dut.len())
            .map(|i| model.read_register(name, i).unwrap_or(0))
            .collect();
        report.cells += dut.len();
        let diffs: BTreeMap<usize, (u128, u128)> = want
            .iter()
            .zip(&dut)
            .enumerate()
            .filter(|(_, (a, b))| a != b)
            .map(|(i, (a, b))| (i, (*a, *b)))
            .take(10)
            .collect();
        if !diffs.is_empty() {
            return Err(format!(
                "{}: register {name} differs (index: (model, switch)): {diffs:?}",
                sc.name
            ));
        }
    }
    // Lanes of aggregators left busy (a lossy scenario leaves partial sums).
    let busy: Vec<usize> = (0..model.regs.agg_state.len())
        .filter(|&i| model.regs.agg_state[i] != 0)
        .collect();
    if !busy.is_empty() {
        for lane in 0..sgnn_wire::LANES {
            let name = format!("agg_value_{lane}");
            let dut = state.register(&name)?;
            for &i in &busy {
                let m = model.read_register(&name, i).unwrap_or(0);
                if dut.get(i).copied() != Some(m) {
                    return Err(format!(
                        "{}: {name}[{i}] model {m} switch {:?}",
                        sc.name,
                        dut.get(i)
                    ));
                }
                report.cells += 1;
            }
        }
    }
    for (port, &extra) in tx_extra.iter().enumerate() {
        for name in [
            sgnn_switch::counters::PORT_RX.name,
            sgnn_switch::counters::PORT_TX.name,
        ] {
            let mut m = if name == sgnn_switch::counters::PORT_RX.name {
                model.port_rx[port]
            } else {
                model.port_tx[port]
            };
            if name == sgnn_switch::counters::PORT_TX.name && state.tx_bytes_count_the_input_frame()
            {
                m.bytes = m.bytes.saturating_add_signed(extra);
            }
            let d = state.port_counter(name, port)?;
            if d != (m.packets, m.bytes) {
                return Err(format!(
                    "{}: {name}[{port}] model ({}, {}) switch {d:?}",
                    sc.name, m.packets, m.bytes
                ));
            }
        }
    }
    Ok(report)
}
