//! DCQCN-like host rate control, the control law of the real daemon
//! (`host/transport/src/rate.rs`, `docs/host.md` "Rate control and traffic classes"), for any
//! strategy's hosts.
//!
//! A host sends at its current rate `R` (its frames are spaced by `wire * 8 / R`, on top of
//! the NIC's own link-rate serialisation; other traffic of the same host, e.g. background
//! flows, is not held back). On a congestion signal (an ECN-marked Result, or a recovery
//! timeout) `R` is halved, at most once per `decrease_interval`, never below `min_bps`; every
//! `increase_interval` without a signal adds `increase_bps`, up to the ceiling (the period in
//! which a cut happened does not count). The daemon's token bucket (`--burst-bytes`) is not
//! modelled: frames are paced one by one.
//!
//! Rates are integers (bit/s) and times picoseconds, so runs are exact and deterministic.

use crate::net::{tx_time, Time, PS_PER_NS};

/// Rate-control parameters. The defaults of the control law are the daemon's
/// (`sgnn_transport::rate::RateConfig::default()`): floor 10 Mbit/s, +50 Mbit/s per 1 ms
/// without marks, at most one halving per 200 us. The starting rate and the ceiling default to
/// the host's link rate (the daemon's 1 and 10 Gbit/s defaults are sized for its loopback
/// software switch; DCQCN also starts at line rate).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CcConfig {
    /// Starting rate, bit/s (`None`: the host's link rate).
    pub initial_bps: Option<u64>,
    /// Floor, bit/s.
    pub min_bps: u64,
    /// Ceiling, bit/s (`None`: the host's link rate; always capped at it).
    pub max_bps: Option<u64>,
    /// Additive increase per `increase_interval` without a signal, bit/s.
    pub increase_bps: u64,
    /// Period of additive increase, ps.
    pub increase_interval: Time,
    /// At most one halving per this period, ps.
    pub decrease_interval: Time,
}

impl Default for CcConfig {
    fn default() -> Self {
        CcConfig {
            initial_bps: None,
            min_bps: 10_000_000,
            max_bps: None,
            increase_bps: 50_000_000,
            increase_interval: 1_000_000 * PS_PER_NS,
            decrease_interval: 200_000 * PS_PER_NS,
        }
    }
}

impl CcConfig {
    /// Checks the parameters make sense together.
    pub fn validate(&self) -> Result<(), String> {
        if self.min_bps == 0 {
            return Err("the rate floor must be positive".into());
        }
        if self.increase_interval == 0 {
            return Err("the additive-increase interval must be positive".into());
        }
        if let Some(m) = self.max_bps {
            if m < self.min_bps {
                return Err(format!(
                    "the rate ceiling {m} bit/s is below the floor {} bit/s",
                    self.min_bps
                ));
            }
        }
        if let Some(i) = self.initial_bps {
            if i < self.min_bps || self.max_bps.is_some_and(|m| i > m) {
                return Err(format!(
                    "the starting rate {i} bit/s must lie between the floor and the ceiling"
                ));
            }
        }
        Ok(())
    }
}

/// Most rate samples one controller keeps (later changes are then not recorded).
pub const MAX_SAMPLES: usize = 1 << 16;

/// One host's controller and pacing clock.
#[derive(Debug, Clone)]
pub struct RateControl {
    cfg: CcConfig,
    max_bps: u64,
    rate_bps: u64,
    last_increase: Time,
    last_decrease: Option<Time>,
    congested_since_increase: bool,
    next_send: Time,
    /// Halvings so far.
    pub decreases: u64,
    /// `(time, bit/s)` at the start and at every change (at most [`MAX_SAMPLES`]).
    pub samples: Vec<(Time, u64)>,
}

impl RateControl {
    /// A controller for a host whose link runs at `link_bps`, starting at time 0.
    pub fn new(cfg: CcConfig, link_bps: u64) -> RateControl {
        let max_bps = cfg.max_bps.unwrap_or(link_bps).min(link_bps);
        let rate_bps = cfg.initial_bps.unwrap_or(max_bps).min(max_bps);
        RateControl {
            cfg,
            max_bps,
            rate_bps,
            last_increase: 0,
            last_decrease: None,
            congested_since_increase: false,
            next_send: 0,
            decreases: 0,
            samples: vec![(0, rate_bps)],
        }
    }

    fn sample(&mut self, t: Time) {
        if self.samples.len() < MAX_SAMPLES {
            self.samples.push((t, self.rate_bps));
        }
    }

    /// Applies the additive increases due by `now`.
    fn update(&mut self, now: Time) {
        let iv = self.cfg.increase_interval;
        if now < self.last_increase + iv {
            return;
        }
        let periods = (now - self.last_increase) / iv;
        self.last_increase += periods * iv;
        // The period in which a cut happened does not count.
        let grow = periods - u64::from(self.congested_since_increase);
        self.congested_since_increase = false;
        if grow > 0 && self.rate_bps < self.max_bps {
            self.rate_bps = self
                .rate_bps
                .saturating_add(grow.saturating_mul(self.cfg.increase_bps))
                .min(self.max_bps);
            self.sample(self.last_increase);
        }
    }

    /// Current rate at `now`, bit/s.
    pub fn rate_bps(&mut self, now: Time) -> u64 {
        self.update(now);
        self.rate_bps
    }

    /// A congestion signal at `now`: halves the rate unless it was halved less than
    /// `decrease_interval` ago. Returns whether it did.
    pub fn on_congestion(&mut self, now: Time) -> bool {
        self.update(now);
        self.congested_since_increase = true;
        if self
            .last_decrease
            .is_some_and(|t| now < t + self.cfg.decrease_interval)
        {
            return false;
        }
        self.last_decrease = Some(now);
        if self.rate_bps <= self.cfg.min_bps {
            return false;
        }
        self.rate_bps = (self.rate_bps / 2).max(self.cfg.min_bps);
        self.decreases += 1;
        self.sample(now);
        true
    }

    /// Earliest time the next frame may leave.
    pub fn ready_at(&self) -> Time {
        self.next_send
    }

    /// A frame of `wire` bytes left at `now`: the next may leave one frame time (at the
    /// current rate) later.
    pub fn sent(&mut self, now: Time, wire: u32) {
        let r = self.rate_bps(now);
        self.next_send = now.max(self.next_send) + tx_time(wire as u64, r);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::PS_PER_US;

    const G: u64 = 1_000_000_000;

    fn cfg() -> CcConfig {
        CcConfig {
            initial_bps: Some(80 * G),
            min_bps: 10 * G,
            max_bps: Some(100 * G),
            increase_bps: G,
            increase_interval: 10 * PS_PER_US,
            decrease_interval: 5 * PS_PER_US,
        }
    }

    #[test]
    fn halves_once_per_interval_and_never_below_the_floor() {
        let mut r = RateControl::new(cfg(), 100 * G);
        assert!(r.on_congestion(PS_PER_US));
        assert_eq!(r.rate_bps(PS_PER_US), 40 * G);
        assert!(!r.on_congestion(2 * PS_PER_US), "same burst of marks");
        assert_eq!(r.rate_bps(2 * PS_PER_US), 40 * G);
        assert!(r.on_congestion(7 * PS_PER_US));
        assert_eq!(r.rate_bps(7 * PS_PER_US), 20 * G);
        assert!(r.on_congestion(13 * PS_PER_US));
        assert_eq!(r.decreases, 3);
        assert!(!r.on_congestion(19 * PS_PER_US), "at the floor");
        assert_eq!(r.rate_bps(19 * PS_PER_US), 10 * G);
    }

    #[test]
    fn increases_additively_up_to_the_ceiling_and_skips_the_period_of_a_cut() {
        let mut r = RateControl::new(cfg(), 100 * G);
        assert_eq!(r.rate_bps(50 * PS_PER_US), 85 * G);
        assert_eq!(r.rate_bps(10_000 * PS_PER_US), 100 * G);
        r.on_congestion(10_001 * PS_PER_US);
        assert_eq!(r.rate_bps(10_015 * PS_PER_US), 50 * G, "period of the cut");
        assert_eq!(r.rate_bps(10_020 * PS_PER_US), 51 * G);
        // Samples: start, +5 G, to the ceiling, the cut, +1 G.
        assert_eq!(r.samples.len(), 5);
    }

    #[test]
    fn ceiling_is_the_link_and_frames_are_spaced_at_the_rate() {
        let mut r = RateControl::new(
            CcConfig {
                initial_bps: None,
                max_bps: None,
                ..cfg()
            },
            25 * G,
        );
        assert_eq!(r.rate_bps(0), 25 * G);
        r.sent(0, 250);
        assert_eq!(r.ready_at(), tx_time(250, 25 * G));
        r.on_congestion(1);
        r.sent(r.ready_at(), 250);
        assert_eq!(
            r.ready_at(),
            tx_time(250, 25 * G) + tx_time(250, 12_500_000_000)
        );
    }
}
