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
//! **Fast recovery** (optional, [`CcConfig::fast_recovery_steps`] `N > 0`; the daemon has
//! none, so the default is 0): the rate-increase timer of DCQCN (Zhu et al., "Congestion
//! Control for Large-Scale RDMA Deployments", SIGCOMM 2015, section 3, reaction point). A cut
//! remembers the rate before it as the target `R_T`. Each of the next `N` increase intervals
//! without a signal sets `R = (R + R_T) / 2` (rounded up, toward the target, so that integer
//! rates reach it), closing half the gap each time. After those `N` steps the controller is in
//! DCQCN's additive-increase stage: every interval raises the target by `increase_bps` (up to
//! the ceiling) and sets `R = (R + R_T) / 2` again. A cut during recovery restarts it, with the
//! rate before that cut as the new target. Not modelled from DCQCN: the `alpha`-scaled cut
//! (the rate is always halved), the byte counter and hyper increase.
//!
//! Rates are integers (bit/s) and times picoseconds, so runs are exact and deterministic.

use crate::net::{tx_time, Time, PS_PER_NS};
use crate::SimError;

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
    /// DCQCN fast recovery: increase intervals after a cut that halve the distance to the
    /// rate before the cut, before additive increase resumes (0: none, the daemon's pure
    /// additive law).
    pub fast_recovery_steps: u32,
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
            fast_recovery_steps: 0,
        }
    }
}

impl CcConfig {
    /// Checks the parameters make sense together.
    pub fn validate(&self) -> Result<(), SimError> {
        if self.min_bps == 0 {
            return Err(SimError::ZeroRateFloor);
        }
        if self.increase_interval == 0 {
            return Err(SimError::ZeroIncreaseInterval);
        }
        if let Some(m) = self.max_bps {
            if m < self.min_bps {
                return Err(SimError::CeilingBelowFloor {
                    max_bps: m,
                    min_bps: self.min_bps,
                });
            }
        }
        if let Some(i) = self.initial_bps {
            if i < self.min_bps || self.max_bps.is_some_and(|m| i > m) {
                return Err(SimError::StartOutsideRange { initial_bps: i });
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
    /// Fast recovery: the target rate (the rate before the last cut, raised by additive
    /// increase after recovery) and the recovery steps left.
    target_bps: u64,
    recovery_left: u32,
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
            target_bps: rate_bps,
            recovery_left: 0,
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
        if self.cfg.fast_recovery_steps == 0 {
            if grow > 0 && self.rate_bps < self.max_bps {
                self.rate_bps = self
                    .rate_bps
                    .saturating_add(grow.saturating_mul(self.cfg.increase_bps))
                    .min(self.max_bps);
                self.sample(self.last_increase);
            }
            return;
        }
        let before = self.rate_bps;
        for done in 0..grow {
            if self.rate_bps == self.target_bps
                && (self.target_bps == self.max_bps || self.cfg.increase_bps == 0)
            {
                // Nothing can move any more: use up the remaining steps at once.
                let left = u32::try_from(grow - done).unwrap_or(u32::MAX);
                self.recovery_left = self.recovery_left.saturating_sub(left);
                break;
            }
            if self.recovery_left > 0 {
                self.recovery_left -= 1;
            } else {
                self.target_bps = self
                    .target_bps
                    .saturating_add(self.cfg.increase_bps)
                    .min(self.max_bps);
            }
            // The target is never below the rate (a cut only lowers the rate, increases move
            // it toward the target): round up so that integer rates reach it.
            self.rate_bps += (self.target_bps - self.rate_bps).div_ceil(2);
        }
        if self.rate_bps != before {
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
        self.target_bps = self.rate_bps;
        self.recovery_left = self.cfg.fast_recovery_steps;
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
            fast_recovery_steps: 0,
        }
    }

    /// The rate at each of `times_us` (microseconds), bit/s.
    fn rates_at(r: &mut RateControl, times_us: &[u64]) -> Vec<u64> {
        times_us
            .iter()
            .map(|&t| r.rate_bps(t * PS_PER_US))
            .collect()
    }

    #[test]
    fn fast_recovery_halves_the_gap_to_the_rate_before_the_cut_then_increases_additively() {
        let mut r = RateControl::new(
            CcConfig {
                fast_recovery_steps: 3,
                ..cfg()
            },
            100 * G,
        );
        assert!(r.on_congestion(PS_PER_US));
        // Period [0, 10) had the cut; 3 recovery steps toward 80: 60, 70, 75; then additive
        // increase raises the target by 1 G per period (81, 82, 83) and the rate moves
        // halfway to it: 78, 80, 81.5.
        assert_eq!(
            rates_at(&mut r, &[10, 20, 30, 40, 50, 60, 70]),
            [
                40 * G,
                60 * G,
                70 * G,
                75 * G,
                78 * G,
                80 * G,
                81_500_000_000
            ]
        );
        assert_eq!(r.decreases, 1);
        // A sample per change: start, the cut, six increases.
        assert_eq!(r.samples.len(), 8);
        assert_eq!(r.samples[2], (20 * PS_PER_US, 60 * G));
    }

    #[test]
    fn a_cut_during_fast_recovery_restarts_it_from_the_rate_before_that_cut() {
        let mut r = RateControl::new(
            CcConfig {
                fast_recovery_steps: 3,
                ..cfg()
            },
            100 * G,
        );
        assert!(r.on_congestion(PS_PER_US));
        assert_eq!(r.rate_bps(20 * PS_PER_US), 60 * G);
        // Second cut after one of three steps: target 60, rate 30, three fresh steps.
        assert!(r.on_congestion(25 * PS_PER_US));
        assert_eq!(
            rates_at(&mut r, &[30, 40, 50, 60, 70]),
            [
                30 * G,
                45 * G,
                52_500_000_000,
                56_250_000_000,
                58_625_000_000
            ]
        );
    }

    #[test]
    fn fast_recovery_reaches_the_ceiling_exactly_and_lazily() {
        let mut r = RateControl::new(
            CcConfig {
                initial_bps: None,
                fast_recovery_steps: 2,
                ..cfg()
            },
            100 * G,
        );
        r.on_congestion(PS_PER_US);
        // 50 -> 75 -> 87.5 (recovery), then target 100 (capped) and halving the gap with
        // rounding up reaches exactly 100 G; a long quiet time is applied in one call.
        assert_eq!(
            rates_at(&mut r, &[20, 30, 40]),
            [75 * G, 87_500_000_000, 93_750_000_000]
        );
        assert_eq!(r.rate_bps(1_000_000 * PS_PER_US), 100 * G);
        assert_eq!(r.rate_bps(2_000_000 * PS_PER_US), 100 * G);
        // Without fast recovery the same cut needs 50 periods of +1 G.
        let mut slow = RateControl::new(
            CcConfig {
                initial_bps: None,
                ..cfg()
            },
            100 * G,
        );
        slow.on_congestion(PS_PER_US);
        assert_eq!(
            rates_at(&mut slow, &[20, 30, 40, 500, 510]),
            [51 * G, 52 * G, 53 * G, 99 * G, 100 * G]
        );
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
