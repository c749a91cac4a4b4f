//! What a running switch holds, read back through a [`Target`] (`switch-ctl dump`): entries
//! per table, the settings, the block-advance multicast group, the event and port counters,
//! the block-synchronisation registers where the switch lets them be read, and optionally the
//! first entries of one table.
//!
//! [`Dump::read`] gathers it; [`Dump::to_json`] is `switch-ctl dump --json`, and the
//! [`Display`](fmt::Display) form is the text `switch-ctl dump` prints.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::{json, Map, Value};

use crate::backend::{CounterValue, Replica, TableEntry};
use crate::program::ADVANCE_GROUP;
use crate::{Target, TargetError};

/// The block-synchronisation registers a dump reads (cell 0 of each), in reading order.
pub const SYNC_REGISTERS: [&str; 3] = ["sync_round", "sync_block", "sync_count"];

/// A snapshot of a switch's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dump {
    /// The switch's address, as the user gave it (`--target`).
    pub target: String,
    /// Entries held, per table that `load` fills ([`crate::install::TABLES`]).
    pub tables: BTreeMap<String, usize>,
    /// The parameters of `switch_config`'s default action (empty if the switch reports none).
    pub settings: BTreeMap<String, u64>,
    /// The replicas of the block-advance multicast group (empty if the group is not set).
    pub advance_group: Vec<Replica>,
    /// Packets counted per event ([`sgnn_p4rt::schema::EVENTS`]), ingress and, on a Tofino,
    /// egress events together.
    pub events: BTreeMap<String, u64>,
    /// The `port_rx` counter's cells that counted a packet, by cell (port).
    pub port_rx: BTreeMap<usize, CounterValue>,
    /// The `port_tx` counter's cells that counted a packet, by cell (port).
    pub port_tx: BTreeMap<usize, CounterValue>,
    /// Cell 0 of the sync registers ([`SYNC_REGISTERS`]) read before the first that could
    /// not be read.
    pub registers: BTreeMap<String, u64>,
    /// Why the sync registers could not all be read (bmv2's PI reads no registers), if so.
    pub registers_error: Option<String>,
    /// The first entries of the table asked for, if one was.
    pub listing: Option<TableListing>,
}

/// The first entries of one table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableListing {
    /// The table.
    pub table: String,
    /// At most this many entries were read.
    pub limit: usize,
    /// The entries, in the order the switch returned them.
    pub entries: Vec<TableEntry>,
}

impl Dump {
    /// Reads the state of the switch behind `target`, whose address is `address`; with
    /// `table`, also the first `limit` entries of that table.
    pub fn read(
        target: &mut dyn Target,
        address: &str,
        table: Option<&str>,
        limit: usize,
    ) -> Result<Dump, TargetError> {
        let mut tables = BTreeMap::new();
        for t in crate::install::TABLES {
            tables.insert(t.to_string(), target.read_table(t)?.len());
        }
        let settings = target
            .read_default("switch_config")?
            .map(|e| {
                e.params
                    .iter()
                    .map(|(k, v)| (k.clone(), *v as u64))
                    .collect()
            })
            .unwrap_or_default();
        let advance_group = target
            .read_multicast_group(ADVANCE_GROUP)?
            .unwrap_or_default();
        let mut counts = target.read_counters("events")?;
        // A Tofino counts egress events in a counter of their own (docs/tofino.md).
        if target.index().counter("egress_events").is_ok() {
            for (e, x) in counts
                .iter_mut()
                .zip(target.read_counters("egress_events")?)
            {
                e.packets += x.packets;
                e.bytes += x.bytes;
            }
        }
        let events = sgnn_p4rt::schema::EVENTS
            .iter()
            .enumerate()
            .map(|(i, name)| (name.to_string(), counts.get(i).map_or(0, |c| c.packets)))
            .collect();
        let mut port = |counter: &str| -> Result<BTreeMap<usize, CounterValue>, TargetError> {
            Ok(target
                .read_counters(counter)?
                .into_iter()
                .enumerate()
                .filter(|(_, c)| c.packets > 0)
                .collect())
        };
        let port_rx = port("port_rx")?;
        let port_tx = port("port_tx")?;
        let mut registers = BTreeMap::new();
        let mut registers_error = None;
        for r in SYNC_REGISTERS {
            match target.read_register(r, 0) {
                Ok(v) => {
                    registers.insert(r.to_string(), v as u64);
                }
                Err(e) => {
                    registers_error = Some(e.to_string());
                    break;
                }
            }
        }
        let listing = match table {
            Some(t) => Some(TableListing {
                table: t.to_string(),
                limit,
                entries: target.read_table(t)?.into_iter().take(limit).collect(),
            }),
            None => None,
        };
        Ok(Dump {
            target: address.to_string(),
            tables,
            settings,
            advance_group,
            events,
            port_rx,
            port_tx,
            registers,
            registers_error,
            listing,
        })
    }

    /// The dump as `switch-ctl dump --json` prints it: `target`, `tables` (entries per
    /// table), `settings`, `advance_group` (`rid`, `port`), `events` (packets per event),
    /// `ports` (`port_rx` and `port_tx`: `packets` and `bytes` per port that counted any) and
    /// `registers` (those read). The table listing is text only.
    pub fn to_json(&self) -> Value {
        json!({
            "target": self.target,
            "tables": self.tables,
            "settings": self.settings,
            "advance_group": self
                .advance_group
                .iter()
                .map(|r| json!({"rid": r.instance, "port": r.port}))
                .collect::<Vec<_>>(),
            "events": self.events,
            "ports": self.ports_json(),
            "registers": self.registers,
        })
    }

    /// `{"port_rx": {port: {packets, bytes}}, "port_tx": ...}`.
    fn ports_json(&self) -> Value {
        let cells = |c: &BTreeMap<usize, CounterValue>| -> Map<String, Value> {
            c.iter()
                .map(|(i, c)| {
                    (
                        i.to_string(),
                        json!({"packets": c.packets, "bytes": c.bytes}),
                    )
                })
                .collect()
        };
        json!({"port_rx": cells(&self.port_rx), "port_tx": cells(&self.port_tx)})
    }
}

/// The text `switch-ctl dump` prints, one item per line: the tables, the settings, the
/// advance group, the nonzero events, the port counters, the sync registers (or why they
/// could not be read) and the table listing.
impl fmt::Display for Dump {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "switch {}", self.target)?;
        writeln!(f, "tables:")?;
        for (k, n) in &self.tables {
            writeln!(f, "  {k:<14} {n} entries")?;
        }
        writeln!(f, "settings: {}", json!(self.settings))?;
        writeln!(
            f,
            "advance group {ADVANCE_GROUP}: {}",
            self.advance_group
                .iter()
                .map(|r| format!("worker {} on port {}", r.instance, r.port))
                .collect::<Vec<_>>()
                .join(", ")
        )?;
        writeln!(f, "events (nonzero):")?;
        for (k, n) in self.events.iter().filter(|(_, n)| **n != 0) {
            writeln!(f, "  {k:<22} {n}")?;
        }
        writeln!(f, "ports: {}", self.ports_json())?;
        match &self.registers_error {
            Some(e) => writeln!(f, "registers not readable: {e}")?,
            None => writeln!(f, "sync registers: {}", json!(self.registers))?,
        }
        if let Some(l) = &self.listing {
            writeln!(f, "{} (first {}):", l.table, l.limit)?;
            for e in &l.entries {
                writeln!(f, "  {:?} -> {}({:?})", e.matches, e.action, e.params)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{MemoryTarget, Op};
    use crate::install::{initial_config, to_target};

    /// A switch with two workers, the initial settings, the advance group and two sync
    /// registers set.
    fn switch() -> MemoryTarget {
        let mut t = MemoryTarget::new(&sgnn_p4rt::schema::switchgnn_p4info()).unwrap();
        let worker = |w: u128, port: u128| {
            Op::Insert(
                TableEntry::new("worker_table", "set_worker")
                    .exact("worker_id", w)
                    .param("port", port),
            )
        };
        let register = |r: &str, value: u128| Op::WriteRegister {
            register: r.into(),
            index: 0,
            value,
        };
        t.apply(&[
            worker(0, 3),
            worker(1, 4),
            Op::SetDefault(to_target(&initial_config())),
            Op::SetMulticastGroup {
                group: ADVANCE_GROUP,
                replicas: vec![
                    Replica {
                        port: 3,
                        instance: 0,
                    },
                    Replica {
                        port: 4,
                        instance: 1,
                    },
                ],
            },
            register("sync_round", 1),
            register("sync_block", 5),
        ])
        .unwrap();
        t
    }

    #[test]
    fn json_and_text_say_what_the_switch_holds() {
        let mut t = switch();
        let d = Dump::read(&mut t, "mem", Some("worker_table"), 1).unwrap();
        assert_eq!(d.tables["worker_table"], 2);
        assert_eq!(d.tables["agg_table"], 0);
        assert_eq!(d.registers_error, None);
        let v = d.to_json();
        assert_eq!(v["target"], "mem");
        assert_eq!(v["tables"]["worker_table"], 2);
        assert_eq!(
            v["advance_group"],
            json!([{"rid": 0, "port": 3}, {"rid": 1, "port": 4}])
        );
        assert_eq!(
            v["registers"],
            json!({"sync_round": 1, "sync_block": 5, "sync_count": 0})
        );
        assert_eq!(v["ports"], json!({"port_rx": {}, "port_tx": {}}));
        assert_eq!(v["events"].as_object().unwrap().len(), d.events.len());
        assert!(v["events"].as_object().unwrap().values().all(|n| n == 0));
        assert_eq!(v["settings"], json!(d.settings));
        assert!(v.get("listing").is_none(), "the table listing is text only");
        let settings = json!(d.settings).to_string();
        assert_eq!(
            d.to_string(),
            format!(
                "switch mem
tables:
  agg_table      0 entries
  dscp_priority  0 entries
  ipv4_forward   0 entries
  port_worker    0 entries
  worker_addr    0 entries
  worker_table   2 entries
settings: {settings}
advance group 1: worker 0 on port 3, worker 1 on port 4
events (nonzero):
ports: {{\"port_rx\":{{}},\"port_tx\":{{}}}}
sync registers: {{\"sync_block\":5,\"sync_count\":0,\"sync_round\":1}}
worker_table (first 1):
  [(\"worker_id\", Exact(0))] -> set_worker([(\"port\", 3)])
"
            )
        );
    }
}
