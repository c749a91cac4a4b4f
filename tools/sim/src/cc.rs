//! Host rate control in the simulator: the daemon's own controller
//! (`sgnn_transport::rate::RateController`, `host/transport/src/rate.rs`; `docs/host.md` "Rate
//! control and traffic classes"), DCQCN-like with optional fast recovery, configured here in
//! the simulator's units. The SwitchGNN and host-based workers run it inside their engines;
//! background flows run one per host for their own frames.

use sgnn_transport::rate::RateConfig;

use crate::net::{Time, PS_PER_NS};
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
    /// rate before the cut, before additive increase resumes (0: none, the daemon's default
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

impl CcConfig {
    /// The daemon's controller configuration for a host whose link runs at `link_bps`: the
    /// starting rate and the ceiling default to the link rate and are capped by it, and the
    /// bucket holds `burst_bytes` (one frame: frames are spaced one by one at the rate).
    pub fn rate_config(&self, link_bps: u64, burst_bytes: u64) -> RateConfig {
        let max = self.max_bps.unwrap_or(link_bps).min(link_bps);
        let initial = self.initial_bps.unwrap_or(max).min(max);
        RateConfig {
            initial_mbps: initial as f64 / 1e6,
            min_mbps: self.min_bps as f64 / 1e6,
            max_mbps: max as f64 / 1e6,
            increase_mbps: self.increase_bps as f64 / 1e6,
            increase_interval_ns: (self.increase_interval / PS_PER_NS).max(1),
            decrease_interval_ns: self.decrease_interval / PS_PER_NS,
            burst_bytes,
            fast_recovery_steps: self.fast_recovery_steps,
        }
    }
}

/// A controller's rate samples (`(ns, Mbit/s)`) in the simulator's units: `(ps, bit/s)`.
pub fn rate_samples(samples: &[(u64, f64)]) -> Vec<(Time, u64)> {
    samples
        .iter()
        .map(|&(ns, mbps)| (ns * PS_PER_NS, (mbps * 1e6).round() as u64))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use sgnn_transport::rate::RateController;

    #[test]
    fn the_simulators_options_become_the_daemons_controller() {
        let cc = CcConfig {
            fast_recovery_steps: 5,
            ..CcConfig::default()
        };
        let r = cc.rate_config(100_000_000_000, 210);
        assert_eq!(r.max_mbps, 100_000.0, "the ceiling defaults to the link");
        assert_eq!(r.initial_mbps, 100_000.0, "so does the start");
        assert_eq!(r.min_mbps, 10.0);
        assert_eq!(r.increase_mbps, 50.0);
        assert_eq!(r.increase_interval_ns, 1_000_000);
        assert_eq!(r.decrease_interval_ns, 200_000);
        assert_eq!(r.fast_recovery_steps, 5);
        r.validate().unwrap();
        let capped = CcConfig {
            max_bps: Some(400_000_000_000),
            ..CcConfig::default()
        }
        .rate_config(100_000_000_000, 210);
        assert_eq!(capped.max_mbps, 100_000.0, "never above the link");
        let mut c = RateController::new(r, 0);
        assert!(c.on_congestion(1));
        assert_eq!(
            rate_samples(&c.samples),
            vec![(0, 100_000_000_000), (PS_PER_NS, 50_000_000_000)]
        );
    }
}
