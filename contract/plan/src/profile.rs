//! The switch capacity profile: what one switch and its host links can carry, read by the
//! planner's cost model (`sgnn_delivery::cost`), the simulator and the testbed alike.
//!
//! A profile is a named set of values; every value can be overridden by a flag
//! (`--link-gbps`, `--recirc-gbps`, `--switch-mem`). The named profiles:
//!
//! | name | link | ports | recirculation | memory | multicast groups | `src_seen` cells | source |
//! |---|---|---|---|---|---|---|---|
//! | `default` | 100 Gbit/s | 32 | 100 Gbit/s (one port looped back) | 10 MB | 65,536 | 262,144 ([`V1MODEL_SEEN_CELLS`]) | the simulator's defaults; the v1model program's `src_seen` |
//! | `tofino1` | 100 Gbit/s | 32 | 100 Gbit/s per pipe x 4 pipes (internal recirculation ports) | 2 MiB | 65,536 | 65,536 ([`TNA_SEEN_CELLS`]) | memory: what `p4/tna` holds on Tofino 1, measured with the compiler ([`TNA_AGG_MEM_BYTES`]); ports and rates: public Tofino 1 figures |
//! | `tofino2` | 100 Gbit/s | 128 | 400 Gbit/s per pipe x 4 pipes | 2 MiB | 65,536 | 65,536 ([`TNA_SEEN_CELLS`]) | memory: the same `p4/tna` on Tofino 2 (a 32768-aggregator build fits there too, `docs/tofino.md`); ports and rates: public Tofino 2 figures (12.8 Tbit/s, 128 x 100G) |
//!
//! The Tofino profiles charge one harvest pass per aggregate completed (`harvest_passes`), what
//! the TNA program's lane pairs cost.
//!
//! `seen_cells` is the size of the switch's `src_seen` register, one cell per (source,
//! segment) of a block: the planner cuts a delivery's blocks so that none needs more
//! (`sgnn_delivery::Sizes::for_switch`), since `switch-ctl load` and the simulator refuse
//! a plan with such a block.
//!
//! `free` recirculation (`--recirc-gbps free`) stands for a switch whose passes cost nothing,
//! which is what the paper's results need (`docs/evaluation.md`).

use serde::{Deserialize, Serialize};
use sgnn_wire::{wire_bytes, CONTROL_FRAME_LEN, DATA_FRAME_LEN};

use crate::PlanError;

/// Recirculation bandwidth that stands for "free" (1 Pbit/s): no pass ever waits.
pub const FREE_RECIRC_GBPS: f64 = 1_000_000.0;

/// What one switch and its host links can carry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SwitchProfile {
    /// Profile name (`default`, `tofino1`, `tofino2`, or `custom` after overrides).
    pub name: String,
    /// Rate of every host link, Gbit/s (both directions).
    pub link_gbps: f64,
    /// Front-panel ports (at most this many workers on one switch).
    pub ports: u32,
    /// Bandwidth of the recirculation path, Gbit/s: one data frame time per pass.
    pub recirc_gbps: f64,
    /// Values one pipeline pass adds into one aggregator (int32 lanes).
    pub lanes_per_pass: u32,
    /// Extra recirculation passes per aggregate the switch completes: 0 for the v1model
    /// program (bmv2, the software switch), 1 for the TNA program, whose lane pairs emit the
    /// even lanes' sums in a harvest pass (and one more when the completing pass goes on to a
    /// next pass: `docs/tofino.md`, "Lane pairs"). Absent from a profile file: 0.
    #[serde(default)]
    pub harvest_passes: u32,
    /// Switch memory for aggregators, bytes.
    pub agg_mem_bytes: u64,
    /// Multicast groups the packet replication engine holds.
    pub multicast_groups: u32,
    /// Cells of the switch's `src_seen` register: one per (source, segment) of a block, so a
    /// block may hold at most `seen_cells / segments` sources (raw vertices and partials of
    /// every worker). Absent from a profile file: [`V1MODEL_SEEN_CELLS`].
    #[serde(default = "default_seen_cells")]
    pub seen_cells: u64,
    /// One-way propagation delay of a host link, microseconds.
    pub delay_us: f64,
}

/// Aggregator memory of the `tofino1` and `tofino2` profiles: the aggregators `p4/tna` holds,
/// measured with the compiler (16384 aggregators of 32 int32 lanes, `sgnn_switch::tna`;
/// 32768 need 16 stages of 12: `docs/tofino.md`, "Resources (measured)").
pub const TNA_AGG_MEM_BYTES: u64 = 16_384 * (sgnn_wire::LANES * sgnn_wire::LANE_BYTES) as u64;

/// `src_seen` cells of the v1model program (bmv2, the software switch):
/// `sgnn_switch::aggregation::SEEN_CELLS`, which this crate cannot name (sgnn-switch depends
/// on it); a test in sgnn-switch checks the two agree.
pub const V1MODEL_SEEN_CELLS: u64 = 262_144;

/// `src_seen` cells of the TNA program (`p4/tna`): `sgnn_switch::tna::SEEN_CELLS`, checked
/// the same way.
pub const TNA_SEEN_CELLS: u64 = 65_536;

/// `src_seen` cells per aggregator in both programs' `config.p4` (v1model 262,144 for 65,536
/// aggregators, TNA 65,536 for 16,384; checked by `sgnn-switch`'s tests).
pub const SEEN_CELLS_PER_AGGREGATOR: u64 = 4;

/// The `src_seen` cells of a switch with `aggregators` aggregators, whose program holds
/// `program_cells`: those, or for more aggregators than the program's build (the simulator's
/// `--switch-mem` beyond it) a larger build of the same program, with
/// [`SEEN_CELLS_PER_AGGREGATOR`] cells per aggregator as `config.p4` keeps them. A paper plan's
/// block never has more (source, segment) pairs than aggregators, so it always fits.
pub fn seen_cells_for(program_cells: u64, aggregators: u64) -> u64 {
    program_cells.max(aggregators.saturating_mul(SEEN_CELLS_PER_AGGREGATOR))
}

fn default_seen_cells() -> u64 {
    V1MODEL_SEEN_CELLS
}

/// The names [`SwitchProfile::named`] knows.
pub const PROFILES: [&str; 3] = ["default", "tofino1", "tofino2"];

impl SwitchProfile {
    /// A named profile (see the module documentation), or an error listing the names.
    pub fn named(name: &str) -> Result<SwitchProfile, PlanError> {
        let p = match name {
            "default" => SwitchProfile {
                name: name.into(),
                link_gbps: 100.0,
                ports: 32,
                recirc_gbps: 100.0,
                lanes_per_pass: 32,
                harvest_passes: 0,
                agg_mem_bytes: 10_000_000,
                multicast_groups: 65_536,
                seen_cells: V1MODEL_SEEN_CELLS,
                delay_us: 2.0,
            },
            "tofino1" => SwitchProfile {
                name: name.into(),
                link_gbps: 100.0,
                ports: 32,
                recirc_gbps: 400.0,
                lanes_per_pass: 32,
                harvest_passes: 1,
                agg_mem_bytes: TNA_AGG_MEM_BYTES,
                multicast_groups: 65_536,
                seen_cells: TNA_SEEN_CELLS,
                delay_us: 2.0,
            },
            "tofino2" => SwitchProfile {
                name: name.into(),
                link_gbps: 100.0,
                ports: 128,
                recirc_gbps: 1_600.0,
                lanes_per_pass: 32,
                harvest_passes: 1,
                agg_mem_bytes: TNA_AGG_MEM_BYTES,
                multicast_groups: 65_536,
                seen_cells: TNA_SEEN_CELLS,
                delay_us: 2.0,
            },
            other => {
                return Err(PlanError::Config(format!(
                    "unknown switch profile `{other}`: use one of {}",
                    PROFILES.join(", ")
                )))
            }
        };
        Ok(p)
    }

    /// A named profile, or a profile file: JSON with every field of [`SwitchProfile`]
    /// (`docs/formats.md`, "Switch profile"), for a switch none of the names describes.
    pub fn load(spec: &str) -> Result<SwitchProfile, PlanError> {
        if PROFILES.contains(&spec) || !(spec.ends_with(".json") || spec.contains('/')) {
            return Self::named(spec);
        }
        let text = std::fs::read_to_string(spec)
            .map_err(|e| PlanError::Config(format!("switch profile {spec}: {e}")))?;
        let p: SwitchProfile = serde_json::from_str(&text).map_err(|e| {
            PlanError::Config(format!(
                "switch profile {spec}, line {} column {}: {e} (a profile file has the fields \
                 name, link_gbps, ports, recirc_gbps, lanes_per_pass, agg_mem_bytes, \
                 multicast_groups, delay_us, and optionally harvest_passes and seen_cells: \
                 docs/formats.md)",
                e.line(),
                e.column()
            ))
        })?;
        p.validate()
            .map_err(|e| PlanError::Config(format!("switch profile {spec}: {e}")))?;
        Ok(p)
    }

    /// Time of one data frame (one feature segment) on a host link, microseconds.
    pub fn data_frame_us(&self) -> f64 {
        wire_bytes(DATA_FRAME_LEN) as f64 * 8.0 / (self.link_gbps * 1e3)
    }

    /// Time of one control frame on a host link, microseconds.
    pub fn control_frame_us(&self) -> f64 {
        wire_bytes(CONTROL_FRAME_LEN) as f64 * 8.0 / (self.link_gbps * 1e3)
    }

    /// Time of one recirculation pass, microseconds (a data frame on the recirculation path).
    pub fn pass_us(&self) -> f64 {
        wire_bytes(DATA_FRAME_LEN) as f64 * 8.0 / (self.recirc_gbps * 1e3)
    }

    /// The idle time one block barrier adds between two blocks, microseconds: the last Result
    /// reaches its worker, the worker's BlockDone reaches the switch, the BlockAdvance reaches
    /// every worker, and the next block's first frame reaches the switch: four link crossings,
    /// two control frames and one data frame.
    pub fn barrier_us(&self) -> f64 {
        4.0 * self.delay_us + 2.0 * self.control_frame_us() + self.data_frame_us()
    }

    /// The end of a block as the daemons and the switch run it, after the worker that finishes
    /// last has its sums: its BlockDone goes up (one control frame and a link crossing) and the
    /// switch multicasts BlockAdvance down (the same again). Every block pays it, the last one
    /// too: a round ends with its last BlockAdvance. Between two blocks the next block's first
    /// frame then reaches the switch: [`SwitchProfile::barrier_us`] in all.
    pub fn sync_us(&self) -> f64 {
        2.0 * (self.delay_us + self.control_frame_us())
    }

    /// The latency every exchange pays once: a frame crosses two links (host to switch to
    /// host) and is stored and forwarded once.
    pub fn latency_us(&self) -> f64 {
        2.0 * self.delay_us + self.data_frame_us()
    }

    /// Checks the values.
    pub fn validate(&self) -> Result<(), PlanError> {
        let bad = |m: String| Err(PlanError::Config(m));
        if !(self.link_gbps.is_finite() && self.link_gbps > 0.0) {
            return bad(format!(
                "--link-gbps must be positive, got {}",
                self.link_gbps
            ));
        }
        if !(self.recirc_gbps.is_finite() && self.recirc_gbps > 0.0) {
            return bad(format!(
                "--recirc-gbps must be positive (or `free`), got {}",
                self.recirc_gbps
            ));
        }
        if !(self.delay_us.is_finite() && self.delay_us >= 0.0) {
            return bad(format!(
                "the link delay must be at least 0 us, got {}",
                self.delay_us
            ));
        }
        if self.lanes_per_pass == 0 {
            return bad("lanes per pass must be at least 1".into());
        }
        if self.seen_cells == 0 {
            return bad("seen_cells (the switch's src_seen cells) must be at least 1".into());
        }
        Ok(())
    }
}

/// Parses a recirculation rate: a number of Gbit/s or `free` ([`FREE_RECIRC_GBPS`]).
pub fn parse_recirc_gbps(s: &str) -> Result<f64, String> {
    if s.eq_ignore_ascii_case("free") {
        return Ok(FREE_RECIRC_GBPS);
    }
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!(
            "`{s}` is not a recirculation rate: a positive number of Gbit/s, or `free`"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_named_profile_is_valid_and_unknown_names_are_listed() {
        for n in PROFILES {
            let p = SwitchProfile::named(n).unwrap();
            p.validate().unwrap();
            assert_eq!(p.name, n);
        }
        let e = SwitchProfile::named("tofino9").unwrap_err().to_string();
        assert!(e.contains("default, tofino1, tofino2"), "{e}");
    }

    #[test]
    fn a_profile_file_loads_and_a_bad_one_says_where() {
        let dir = std::env::temp_dir().join(format!("sgnn-profile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut p = SwitchProfile::named("tofino1").unwrap();
        p.name = "lab-switch".into();
        p.agg_mem_bytes = 1_234_567;
        let good = dir.join("lab.json");
        std::fs::write(&good, serde_json::to_string_pretty(&p).unwrap()).unwrap();
        assert_eq!(SwitchProfile::load(good.to_str().unwrap()).unwrap(), p);
        let bad = dir.join("bad.json");
        std::fs::write(&bad, "{\n  \"name\": \"x\",\n  \"link_gbps\": \"fast\"\n}").unwrap();
        let e = SwitchProfile::load(bad.to_str().unwrap())
            .unwrap_err()
            .to_string();
        assert!(e.contains("bad.json, line 3"), "{e}");
        let mut neg = p.clone();
        neg.link_gbps = -1.0;
        std::fs::write(&bad, serde_json::to_string(&neg).unwrap()).unwrap();
        let e = SwitchProfile::load(bad.to_str().unwrap())
            .unwrap_err()
            .to_string();
        assert!(e.contains("--link-gbps must be positive"), "{e}");
        let e = SwitchProfile::load("/nonexistent/p.json")
            .unwrap_err()
            .to_string();
        assert!(e.contains("/nonexistent/p.json"), "{e}");
        assert_eq!(SwitchProfile::load("tofino2").unwrap().name, "tofino2");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_profile_file_without_seen_cells_gets_the_v1model_register() {
        let dir = std::env::temp_dir().join(format!("sgnn-profile-seen-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut v = serde_json::to_value(SwitchProfile::named("tofino1").unwrap()).unwrap();
        v.as_object_mut().unwrap().remove("seen_cells");
        let f = dir.join("old.json");
        std::fs::write(&f, v.to_string()).unwrap();
        let p = SwitchProfile::load(f.to_str().unwrap()).unwrap();
        assert_eq!(p.seen_cells, V1MODEL_SEEN_CELLS);
        assert_eq!(SwitchProfile::named("default").unwrap().seen_cells, 262_144);
        for t in ["tofino1", "tofino2"] {
            assert_eq!(SwitchProfile::named(t).unwrap().seen_cells, TNA_SEEN_CELLS);
        }
        let mut zero = p.clone();
        zero.seen_cells = 0;
        std::fs::write(&f, serde_json::to_string(&zero).unwrap()).unwrap();
        let e = SwitchProfile::load(f.to_str().unwrap())
            .unwrap_err()
            .to_string();
        assert!(e.contains("seen_cells"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_larger_switch_build_keeps_the_cells_per_aggregator() {
        // Within the program's build: its cells; beyond, four per aggregator.
        assert_eq!(
            seen_cells_for(V1MODEL_SEEN_CELLS, 65_536),
            V1MODEL_SEEN_CELLS
        );
        assert_eq!(
            seen_cells_for(V1MODEL_SEEN_CELLS, 1_000),
            V1MODEL_SEEN_CELLS
        );
        assert_eq!(seen_cells_for(V1MODEL_SEEN_CELLS, 781_250), 3_125_000);
        assert_eq!(seen_cells_for(TNA_SEEN_CELLS, u64::MAX), u64::MAX);
    }

    #[test]
    fn frame_times_follow_the_wire_sizes() {
        let p = SwitchProfile::named("default").unwrap();
        // 210 B at 100 Gbit/s = 16.8 ns; 84 B = 6.72 ns.
        assert!((p.data_frame_us() - 0.0168).abs() < 1e-12);
        assert!((p.control_frame_us() - 0.00672).abs() < 1e-12);
        assert_eq!(parse_recirc_gbps("free").unwrap(), FREE_RECIRC_GBPS);
        assert!(parse_recirc_gbps("-3").is_err());
    }
}
