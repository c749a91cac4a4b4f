//! A switch's counters as JSON: the one shape `softswitch --stats-json` writes, its
//! `counters:` line prints, and `sgnn testbed` reads (and builds for bmv2 from the counters
//! it reads over P4Runtime), so every consumer reads the software switch and bmv2 alike.
//!
//! - [`program_counters`]: what every switch running the SwitchGNN P4 program counts: one
//!   field per event of the `events` counter, named as the switch contract names it (`rx`,
//!   `tx`, `aggregated`, ...), and `port_rx` / `port_tx`, an object of
//!   `{"packets": N, "bytes": B}` by port number (as a string) for every port that counted a
//!   packet.
//! - [`to_json`]: the software switch's: the above from its [`Pipeline`], plus what only the
//!   model and its datapath know (aggregators still in use, egress queue and fault counts,
//!   `port_tx_failed`, and the backend's own counters under `datapath`).
//!
//! Objects keep their keys sorted (serde_json's map), so the text is the same whatever order
//! the fields are set in.

use serde_json::{Map, Value};
use sgnn_switch::counters::{Event, PORT_RX, PORT_TX};

use crate::pipeline::{Pipeline, PortCount};
use crate::ports::DatapathStats;

/// The counters of the P4 program: `events` (`event(e)` for every [`Event`], under its name)
/// and `port_rx`, `port_tx` (port `i` is `port_rx[i]`; ports that counted no packet are left
/// out).
pub fn program_counters(
    event: impl Fn(Event) -> u64,
    port_rx: &[PortCount],
    port_tx: &[PortCount],
) -> Value {
    let mut v: Map<String, Value> = Event::ALL
        .iter()
        .map(|&e| (e.name().to_string(), event(e).into()))
        .collect();
    v.insert(PORT_RX.name.into(), ports(port_rx));
    v.insert(PORT_TX.name.into(), ports(port_tx));
    v.into()
}

/// The software switch's counters: [`program_counters`] of `p`, plus the aggregators holding
/// a sum of the block being exchanged (`busy_aggregators`) and ones left holding an older
/// round's or block's (`stale_aggregators`, a leftover of loss, reclaimed on their next use),
/// the datapath's `tx_errors`, `queue_drops`, `max_queue_depth`, `max_queue_bytes`,
/// `egress_ecn_marked` (frames marked CE at egress, `--ecn-threshold-bytes`), `fault_dropped`,
/// `fault_duplicated`, `fault_reordered`, `port_tx_failed` (what the datapath could not send,
/// by port; `port_tx` counts only what left) and, when there are any, the backend's own
/// counters under `datapath` (DPDK's, and the capture's with `--pcap`).
pub fn to_json(p: &Pipeline, dp: &DatapathStats, backend: &[(String, u64)]) -> Value {
    let mut v = program_counters(|e| p.counters.get(e), &p.port_rx, &p.port_tx);
    if !backend.is_empty() {
        v["datapath"] = backend
            .iter()
            .map(|(k, n)| (k.clone(), (*n).into()))
            .collect::<Map<_, _>>()
            .into();
    }
    let (busy, stale) = p.aggregators_in_use();
    v["busy_aggregators"] = busy.into();
    v["stale_aggregators"] = stale.into();
    v["tx_errors"] = dp.tx_errors.into();
    v["queue_drops"] = dp.queue_drops.into();
    v["max_queue_depth"] = dp.max_queue_depth.into();
    v["max_queue_bytes"] = dp.max_queue_bytes.into();
    v["egress_ecn_marked"] = dp.ecn_marked.into();
    v["fault_dropped"] = dp.fault_dropped.into();
    v["fault_duplicated"] = dp.fault_duplicated.into();
    v["fault_reordered"] = dp.fault_reordered.into();
    v["port_tx_failed"] = ports(&p.port_tx_failed);
    v
}

/// `{"i": {"bytes": B, "packets": N}}` for every port `i` that counted a packet.
fn ports(counts: &[PortCount]) -> Value {
    counts
        .iter()
        .enumerate()
        .filter(|(_, c)| c.packets > 0)
        .map(|(i, c)| {
            (
                i.to_string(),
                serde_json::to_value(c).expect("port counts serialise"),
            )
        })
        .collect::<Map<_, _>>()
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{SwitchConfig, Tables};

    /// The text is what `--stats-json` wrote before this module: every event of the contract
    /// (as the `Counters` struct serialises it), the extras, ports that counted a packet.
    #[test]
    fn the_software_switchs_json_keeps_its_shape() {
        let mut p = Pipeline::new(SwitchConfig::default(), Tables::default());
        p.counters.rx = 7;
        p.counters.block_advance = 2;
        p.counters.drop_wrong_port = 1;
        p.port_rx[1] = PortCount {
            packets: 3,
            bytes: 300,
        };
        p.port_tx[0] = PortCount {
            packets: 4,
            bytes: 256,
        };
        p.port_tx_failed[5] = PortCount {
            packets: 1,
            bytes: 64,
        };
        let dp = DatapathStats {
            fault_dropped: 1,
            fault_duplicated: 2,
            fault_reordered: 3,
            tx_errors: 4,
            failed: vec![(9, 9)],
            queue_drops: 5,
            max_queue_depth: 6,
            max_queue_bytes: 7,
            ecn_marked: 8,
            cpu_at_first_frame: None,
        };
        let backend = [("port0_rx_frames".to_string(), 11)];
        let got = to_json(&p, &dp, &backend);
        // The former construction: the counters through serde, then each extra.
        let mut want = serde_json::to_value(&p.counters).unwrap();
        want["datapath"] = serde_json::json!({"port0_rx_frames": 11});
        want["busy_aggregators"] = 0.into();
        want["stale_aggregators"] = 0.into();
        for (k, n) in [
            ("tx_errors", 4),
            ("queue_drops", 5),
            ("max_queue_depth", 6),
            ("max_queue_bytes", 7),
            ("egress_ecn_marked", 8),
            ("fault_dropped", 1),
            ("fault_duplicated", 2),
            ("fault_reordered", 3),
        ] {
            want[k] = n.into();
        }
        want["port_rx"] = serde_json::json!({"1": {"packets": 3, "bytes": 300}});
        want["port_tx"] = serde_json::json!({"0": {"packets": 4, "bytes": 256}});
        want["port_tx_failed"] = serde_json::json!({"5": {"packets": 1, "bytes": 64}});
        assert_eq!(got.to_string(), want.to_string());
        assert!(got
            .to_string()
            .starts_with(r#"{"aggregated":0,"all_sent":0,"block_advance":2,"#));
        assert!(got.to_string().contains(
            r#""port_rx":{"1":{"bytes":300,"packets":3}},"port_tx":{"0":{"bytes":256,"packets":4}},"port_tx_failed":{"5":{"bytes":64,"packets":1}},"#
        ));
        // No backend counters: no `datapath`.
        assert!(to_json(&p, &dp, &[]).get("datapath").is_none());
    }

    /// Any switch's counters (bmv2's, read over P4Runtime) take the same shape, with only the
    /// program's counters.
    #[test]
    fn program_counters_name_every_event_and_the_ports_that_counted() {
        let rx = [
            PortCount {
                packets: 2,
                bytes: 128,
            },
            PortCount::default(),
        ];
        let v = program_counters(|e| e.index() as u64 * 10, &rx, &[]);
        let o = v.as_object().unwrap();
        assert_eq!(o.len(), Event::ALL.len() + 2);
        for e in Event::ALL {
            assert_eq!(v[e.name()], e.index() as u64 * 10, "{}", e.name());
        }
        assert_eq!(
            v["port_rx"],
            serde_json::json!({"0": {"packets": 2, "bytes": 128}})
        );
        assert_eq!(v["port_tx"], serde_json::json!({}));
    }
}
