//! Per-worker pacing with DCQCN-like rate control (paper 3.4).
//!
//! A token bucket paces every frame the worker sends at the current rate (counted in bytes on
//! the link, [`sgnn_wire::wire_bytes`]). On a congestion signal (an ECN-marked Result or Ack,
//! or a recovery timeout, see `docs/host.md`) the rate is halved, at most once per
//! `decrease_interval`; every `increase_interval` without a signal it grows by
//! `increase_mbps`, up to `max_mbps` (the period in which a cut happened does not count).
//!
//! **Fast recovery** (optional, [`RateConfig::fast_recovery_steps`] `N > 0`; 0 by default):
//! the rate-increase timer of DCQCN (Zhu et al., "Congestion Control for Large-Scale RDMA
//! Deployments", SIGCOMM 2015, section 3, reaction point). A cut remembers the rate before it
//! as the target `R_T`. Each of the next `N` increase intervals without a signal sets
//! `R = (R + R_T) / 2`, closing half the gap each time. After those `N` steps the controller
//! is in DCQCN's additive-increase stage: every interval raises the target by
//! `increase_mbps` (up to the ceiling) and sets `R = (R + R_T) / 2` again. A cut during
//! recovery restarts it, with the rate before that cut as the new target. Not modelled from
//! DCQCN: the `alpha`-scaled cut (the rate is always halved), the byte counter and hyper
//! increase. The simulator runs this controller too (`sgnn sim --cc-fast-recovery N`).

use serde::Serialize;

/// Planned pacing (`--pace`, docs/host.md "Planned pacing"): whether a SwitchGNN worker sends
/// each block's Data at the share of line rate the plan gives it
/// (`sgnn_plan::traffic::BlockLoad::share`) or as fast as its rate control allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Pacing {
    /// Every block's sends spread over the block's planned span (the default).
    #[default]
    Planned,
    /// Data at the controlled rate alone (before planned pacing: the plan's own fan-in builds
    /// queues that the switch marks).
    Off,
}

impl Pacing {
    /// The flag value.
    pub fn name(self) -> &'static str {
        match self {
            Pacing::Planned => "planned",
            Pacing::Off => "off",
        }
    }
}

impl std::fmt::Display for Pacing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.name())
    }
}

impl std::str::FromStr for Pacing {
    type Err = String;
    fn from_str(s: &str) -> Result<Pacing, String> {
        match s {
            "planned" => Ok(Pacing::Planned),
            "off" => Ok(Pacing::Off),
            _ => Err(format!("unknown pacing `{s}`: use planned or off")),
        }
    }
}

/// Rate-control parameters (all exposed as daemon flags).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RateConfig {
    /// Starting rate, Mbit/s on the wire.
    pub initial_mbps: f64,
    /// Floor the rate never goes below, Mbit/s.
    pub min_mbps: f64,
    /// Ceiling (line rate), Mbit/s.
    pub max_mbps: f64,
    /// Additive increase per `increase_interval_ns` without congestion, Mbit/s.
    pub increase_mbps: f64,
    /// Period of additive increase, nanoseconds.
    pub increase_interval_ns: u64,
    /// At most one halving per this period, nanoseconds (one burst of marks counts once).
    pub decrease_interval_ns: u64,
    /// Bucket depth: bytes that may leave back to back after an idle period.
    pub burst_bytes: u64,
    /// DCQCN fast recovery: increase intervals after a cut that halve the distance to the
    /// rate before the cut, before additive increase resumes (0: none, the pure additive law).
    pub fast_recovery_steps: u32,
}

impl Default for RateConfig {
    fn default() -> Self {
        RateConfig {
            initial_mbps: 1000.0,
            min_mbps: 10.0,
            max_mbps: 10_000.0,
            increase_mbps: 50.0,
            increase_interval_ns: 1_000_000,
            decrease_interval_ns: 200_000,
            burst_bytes: 16 * 1024,
            fast_recovery_steps: 0,
        }
    }
}

impl RateConfig {
    /// Checks the parameters make sense together.
    pub fn validate(&self) -> Result<(), RateConfigError> {
        let ok = |x: f64| x.is_finite() && x > 0.0;
        if !(ok(self.min_mbps) && ok(self.max_mbps) && ok(self.initial_mbps)) {
            return Err(RateConfigError::NotPositive);
        }
        if self.min_mbps > self.max_mbps {
            return Err(RateConfigError::FloorAboveCeiling {
                min_mbps: self.min_mbps,
                max_mbps: self.max_mbps,
            });
        }
        if self.initial_mbps < self.min_mbps || self.initial_mbps > self.max_mbps {
            return Err(RateConfigError::StartOutsideRange {
                initial_mbps: self.initial_mbps,
                min_mbps: self.min_mbps,
                max_mbps: self.max_mbps,
            });
        }
        if !(self.increase_mbps >= 0.0 && self.increase_mbps.is_finite()) {
            return Err(RateConfigError::NegativeIncrease);
        }
        if self.increase_interval_ns == 0 {
            return Err(RateConfigError::ZeroIncreaseInterval);
        }
        let frame = sgnn_wire::wire_bytes(sgnn_wire::DATA_FRAME_LEN);
        if self.burst_bytes < frame {
            return Err(RateConfigError::BurstBelowFrame { frame_bytes: frame });
        }
        Ok(())
    }
}

/// Why a [`RateConfig`] is refused ([`RateConfig::validate`]); the text names the flag to fix.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RateConfigError {
    /// A rate that is not a positive number.
    #[error("rates must be positive numbers of Mbit/s")]
    NotPositive,
    /// A floor above the ceiling.
    #[error("--min-rate-mbps {min_mbps} is above --max-rate-mbps {max_mbps}")]
    FloorAboveCeiling {
        /// The floor, Mbit/s.
        min_mbps: f64,
        /// The ceiling, Mbit/s.
        max_mbps: f64,
    },
    /// A starting rate outside `[floor, ceiling]`.
    #[error("--rate-mbps {initial_mbps} must lie between --min-rate-mbps {min_mbps} and --max-rate-mbps {max_mbps}")]
    StartOutsideRange {
        /// The starting rate, Mbit/s.
        initial_mbps: f64,
        /// The floor, Mbit/s.
        min_mbps: f64,
        /// The ceiling, Mbit/s.
        max_mbps: f64,
    },
    /// A negative (or not finite) additive increase.
    #[error("--rate-increase-mbps must be zero or positive")]
    NegativeIncrease,
    /// An additive-increase interval of 0.
    #[error("--rate-increase-interval-us must be at least 1")]
    ZeroIncreaseInterval,
    /// A token bucket smaller than one data frame.
    #[error("--burst-bytes must hold at least one data frame ({frame_bytes} bytes)")]
    BurstBelowFrame {
        /// Bytes of a data frame on the link.
        frame_bytes: u64,
    },
}

/// The controller and its token bucket.
#[derive(Debug, Clone)]
pub struct RateController {
    cfg: RateConfig,
    /// Current rate, bits per second.
    rate_bps: f64,
    tokens: f64,
    last_refill: u64,
    last_increase: u64,
    last_decrease: Option<u64>,
    congested_since_increase: bool,
    /// Fast recovery: the target rate (the rate before the last cut, raised by additive
    /// increase after recovery), bits per second, and the recovery steps left.
    target_bps: f64,
    recovery_left: u32,
    /// Planned pacing: the share of `max_mbps` the plan assigns the running block (1.0: no
    /// planned pace). Frames leave at the lower of it and the controlled rate.
    planned_share: f64,
    /// Halvings so far.
    pub decreases: u64,
    /// `(time ns, rate Mbit/s)` at every change (bounded).
    pub samples: Vec<(u64, f64)>,
}

/// Most rate samples kept; later changes are recorded at most once per millisecond.
const MAX_SAMPLES: usize = 4096;

impl RateController {
    /// A controller at `cfg.initial_mbps`, with a full bucket, starting at `now`.
    pub fn new(cfg: RateConfig, now: u64) -> RateController {
        RateController {
            cfg,
            rate_bps: cfg.initial_mbps * 1e6,
            tokens: cfg.burst_bytes as f64,
            last_refill: now,
            last_increase: now,
            last_decrease: None,
            congested_since_increase: false,
            target_bps: cfg.initial_mbps * 1e6,
            recovery_left: 0,
            planned_share: 1.0,
            decreases: 0,
            samples: vec![(now, cfg.initial_mbps)],
        }
    }

    /// Current rate, Mbit/s: the controlled rate, or the planned pace where that is lower.
    pub fn rate_mbps(&self) -> f64 {
        self.send_bps() / 1e6
    }

    /// The rate frames leave at, bit/s: the controlled rate, capped by the planned pace.
    fn send_bps(&self) -> f64 {
        self.rate_bps
            .min(self.planned_share * self.cfg.max_mbps * 1e6)
    }

    /// Sets the planned pace at `now`: `share` of the ceiling (`max_mbps`), in (0, 1]
    /// (`sgnn_plan::traffic::pace`; 1.0 ends planned pacing). The bucket keeps what it
    /// gained at the old rate.
    pub fn set_planned_share(&mut self, now: u64, share: f64) {
        self.refill(now);
        let share = if share.is_finite() && share > 0.0 {
            share.min(1.0)
        } else {
            1.0
        };
        if share != self.planned_share {
            self.planned_share = share;
            self.sample(now);
        }
    }

    fn sample(&mut self, now: u64) {
        let mbps = self.rate_mbps();
        match self.samples.last() {
            Some(&(t, _)) if self.samples.len() >= MAX_SAMPLES && now < t + 1_000_000 => {}
            _ => self.samples.push((now, mbps)),
        }
    }

    fn refill(&mut self, now: u64) {
        if now > self.last_refill {
            let dt = (now - self.last_refill) as f64 * 1e-9;
            self.tokens =
                (self.tokens + dt * self.send_bps() / 8.0).min(self.cfg.burst_bytes as f64);
            self.last_refill = now;
        }
        if now >= self.last_increase + self.cfg.increase_interval_ns {
            let periods = (now - self.last_increase) / self.cfg.increase_interval_ns;
            self.last_increase += periods * self.cfg.increase_interval_ns;
            // The first period after a signal does not count: no increase right after a cut.
            let grow = if self.congested_since_increase {
                periods - 1
            } else {
                periods
            };
            self.congested_since_increase = false;
            let max = self.cfg.max_mbps * 1e6;
            if self.cfg.fast_recovery_steps == 0 {
                if grow > 0 && self.rate_bps < max {
                    self.rate_bps =
                        (self.rate_bps + grow as f64 * self.cfg.increase_mbps * 1e6).min(max);
                    self.sample(now);
                }
            } else {
                let before = self.rate_bps;
                for done in 0..grow {
                    let settled = (self.target_bps - self.rate_bps).abs() < 1.0;
                    if settled && (self.target_bps >= max || self.cfg.increase_mbps == 0.0) {
                        // Nothing can move any more: use up the remaining steps at once.
                        let left = u32::try_from(grow - done).unwrap_or(u32::MAX);
                        self.recovery_left = self.recovery_left.saturating_sub(left);
                        self.rate_bps = self.target_bps;
                        break;
                    }
                    if self.recovery_left > 0 {
                        self.recovery_left -= 1;
                    } else {
                        self.target_bps = (self.target_bps + self.cfg.increase_mbps * 1e6).min(max);
                    }
                    self.rate_bps = (self.rate_bps + self.target_bps) / 2.0;
                }
                if self.rate_bps != before {
                    self.sample(now);
                }
            }
        }
    }

    /// A congestion signal at `now`: halves the rate unless it was halved less than
    /// `decrease_interval` ago. Returns whether it did.
    pub fn on_congestion(&mut self, now: u64) -> bool {
        self.refill(now);
        self.congested_since_increase = true;
        if self
            .last_decrease
            .is_some_and(|t| now < t + self.cfg.decrease_interval_ns)
        {
            return false;
        }
        self.last_decrease = Some(now);
        let floor = self.cfg.min_mbps * 1e6;
        // The cut halves the rate frames actually leave at (under planned pacing, the pace
        // where it is below the controlled rate), as DCQCN halves a sender's current rate.
        let sending = self.send_bps();
        if sending > floor {
            self.target_bps = sending;
            self.recovery_left = self.cfg.fast_recovery_steps;
            self.rate_bps = (sending / 2.0).max(floor);
            self.decreases += 1;
            self.sample(now);
        }
        true
    }

    /// Whether `bytes` may leave at `now`; if so they are taken from the bucket.
    pub fn try_send(&mut self, now: u64, bytes: u64) -> bool {
        self.refill(now);
        if self.tokens >= bytes as f64 {
            self.tokens -= bytes as f64;
            true
        } else {
            false
        }
    }

    /// Earliest time at which `bytes` may leave, asked at `now` (the bucket refills from its
    /// last refill to `now` at the current rate, as [`RateController::try_send`] would).
    pub fn ready_at(&self, now: u64, bytes: u64) -> u64 {
        let since = now.saturating_sub(self.last_refill) as f64 * 1e-9;
        let bps = self.send_bps();
        let tokens = (self.tokens + since * bps / 8.0).min(self.cfg.burst_bytes as f64);
        let missing = bytes as f64 - tokens;
        if missing <= 0.0 {
            return now;
        }
        let wait = missing * 8.0 / bps * 1e9;
        self.last_refill.max(now) + wait.ceil() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The texts are those of the `String` errors these variants replaced, word for word.
    #[test]
    fn config_errors_name_the_flag() {
        let frame = sgnn_wire::wire_bytes(sgnn_wire::DATA_FRAME_LEN);
        let cases = [
            (
                RateConfigError::NotPositive,
                "rates must be positive numbers of Mbit/s".to_string(),
            ),
            (
                RateConfigError::FloorAboveCeiling {
                    min_mbps: 20.0,
                    max_mbps: 10.5,
                },
                "--min-rate-mbps 20 is above --max-rate-mbps 10.5".to_string(),
            ),
            (
                RateConfigError::StartOutsideRange {
                    initial_mbps: 5.0,
                    min_mbps: 10.0,
                    max_mbps: 100.0,
                },
                "--rate-mbps 5 must lie between --min-rate-mbps 10 and --max-rate-mbps 100"
                    .to_string(),
            ),
            (
                RateConfigError::NegativeIncrease,
                "--rate-increase-mbps must be zero or positive".to_string(),
            ),
            (
                RateConfigError::ZeroIncreaseInterval,
                "--rate-increase-interval-us must be at least 1".to_string(),
            ),
            (
                RateConfigError::BurstBelowFrame { frame_bytes: frame },
                format!("--burst-bytes must hold at least one data frame ({frame} bytes)"),
            ),
        ];
        for (e, text) in cases {
            assert_eq!(e.to_string(), text);
        }
        let bad = RateConfig {
            burst_bytes: 1,
            ..RateConfig::default()
        };
        assert_eq!(
            bad.validate(),
            Err(RateConfigError::BurstBelowFrame { frame_bytes: frame })
        );
    }

    fn cfg() -> RateConfig {
        RateConfig {
            initial_mbps: 800.0,
            min_mbps: 100.0,
            max_mbps: 1000.0,
            increase_mbps: 10.0,
            increase_interval_ns: 1000,
            decrease_interval_ns: 500,
            burst_bytes: 1000,
            fast_recovery_steps: 0,
        }
    }

    #[test]
    fn fast_recovery_halves_the_gap_to_the_rate_before_the_cut_then_adds() {
        let mut r = RateController::new(
            RateConfig {
                fast_recovery_steps: 3,
                ..cfg()
            },
            0,
        );
        r.on_congestion(100);
        assert_eq!(r.rate_mbps(), 400.0);
        // The period of the cut does not count; then 400 -> 600 -> 700 -> 750 (target 800).
        let at = |r: &mut RateController, t| {
            r.try_send(t, 0);
            r.rate_mbps()
        };
        assert_eq!(at(&mut r, 1_000), 400.0);
        assert_eq!(at(&mut r, 2_000), 600.0);
        assert_eq!(at(&mut r, 3_000), 700.0);
        assert_eq!(at(&mut r, 4_000), 750.0);
        // Additive-increase stage: the target grows by 10 per period, the rate halves the gap.
        assert_eq!(at(&mut r, 5_000), (750.0 + 810.0) / 2.0);
        // A cut during recovery restarts it from the rate before that cut.
        r.on_congestion(5_100);
        assert_eq!(r.rate_mbps(), 780.0 / 2.0);
        // Long idle: the rate reaches the ceiling and stays there.
        assert_eq!(at(&mut r, 10_000_000), 1000.0);
    }

    #[test]
    fn the_planned_share_caps_the_rate_and_a_cut_halves_what_leaves() {
        let mut r = RateController::new(cfg(), 0);
        r.set_planned_share(0, 0.25);
        // 25% of the 1000 Mbit/s ceiling, below the controlled 800.
        assert_eq!(r.rate_mbps(), 250.0);
        assert!(r.try_send(0, 1000), "the full bucket");
        // 210 bytes at 250 Mbit/s take 6720 ns.
        assert_eq!(r.ready_at(0, 210), 6720);
        // A cut halves the rate frames leave at (the pace), not the controlled 800.
        assert!(r.on_congestion(10));
        assert_eq!(r.rate_mbps(), 125.0);
        // The next block's share is capped by the controlled rate after the cut.
        r.set_planned_share(20, 0.5);
        assert_eq!(r.rate_mbps(), 125.0);
        r.set_planned_share(30, 0.1);
        assert_eq!(r.rate_mbps(), 100.0);
        // Nonsense shares end planned pacing rather than stop the sender.
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            r.set_planned_share(40, bad);
            assert_eq!(r.rate_mbps(), 125.0, "{bad}");
        }
        assert_eq!("planned".parse::<Pacing>(), Ok(Pacing::Planned));
        assert_eq!(Pacing::Off.to_string().parse::<Pacing>(), Ok(Pacing::Off));
        assert!("fast"
            .parse::<Pacing>()
            .unwrap_err()
            .contains("planned or off"));
    }

    #[test]
    fn halves_once_per_interval_and_never_below_the_floor() {
        let mut r = RateController::new(cfg(), 0);
        assert!(r.on_congestion(10));
        assert_eq!(r.rate_mbps(), 400.0);
        assert!(!r.on_congestion(20), "second mark of the same burst");
        assert_eq!(r.rate_mbps(), 400.0);
        assert!(r.on_congestion(600));
        assert!(r.on_congestion(1200));
        assert_eq!(r.rate_mbps(), 100.0);
        assert!(r.on_congestion(1800));
        assert_eq!(r.rate_mbps(), 100.0, "floor");
        assert_eq!(r.decreases, 3);
    }

    #[test]
    fn increases_additively_without_marks_up_to_the_ceiling() {
        let mut r = RateController::new(cfg(), 0);
        r.try_send(5_000, 0);
        // 5 periods: 800 + 5 * 10.
        assert_eq!(r.rate_mbps(), 850.0);
        r.try_send(1_000_000, 0);
        assert_eq!(r.rate_mbps(), 1000.0);
        r.on_congestion(1_000_100);
        r.try_send(1_001_500, 0);
        assert_eq!(r.rate_mbps(), 500.0, "no increase in the period of the cut");
        r.try_send(1_002_000, 0);
        assert_eq!(r.rate_mbps(), 510.0);
    }

    #[test]
    fn paces_at_the_rate() {
        let mut r = RateController::new(cfg(), 0);
        // 1000-byte bucket at 800 Mbit/s = 100 bytes per ns... per 1000 ns: 100 bytes.
        assert!(r.try_send(0, 1000));
        assert!(!r.try_send(0, 210));
        let t = r.ready_at(0, 210);
        // 210 bytes at 800 Mbit/s = 2100 ns.
        assert_eq!(t, 2100);
        assert!(!r.try_send(t - 100, 210));
        assert!(r.try_send(t + 1, 210));
        // Asked later without a send in between, it counts what the bucket gained meanwhile.
        let mut r = RateController::new(cfg(), 0);
        assert!(r.try_send(0, 1000));
        assert_eq!(r.ready_at(2100, 210), 2100, "210 bytes accrued by then");
        assert_eq!(r.ready_at(1050, 210), 2100);
    }
}
