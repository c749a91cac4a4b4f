//! `sgnn sim`'s flags, checked, as the simulator's configuration: a `--switch` profile fills
//! in what the flags leave open; every number is checked with an error naming its flag.

use anyhow::{anyhow, bail, Result};
use sgnn_plan::profile::SwitchProfile;
use sgnn_planner::units::parse_bytes;
use sgnn_sim::background::BackgroundConfig;
use sgnn_sim::cc::CcConfig;
use sgnn_sim::net::PS_PER_US;
use sgnn_sim::{
    report, DaemonOptions, NetConfig, SimConfig, SimError, Strategy, AUTO_MAX_SAMPLES,
    AUTO_SAMPLE_EVERY,
};

use super::{bps, leaf_spine_shape, BackgroundPrio, OnOff, SimArgs, FIXED_MAX_SAMPLES, GBPS};

/// What the flags say, in the simulator's units.
pub(super) struct Settings {
    pub profile: Option<SwitchProfile>,
    pub link_gbps: f64,
    pub delay_us: f64,
    /// Propagation delay of every link, ps.
    pub delay: u64,
    pub link_bps: u64,
    pub fabric_bps: u64,
    /// The topology as the header describes it.
    pub topo_desc: String,
    pub switch_mem_bytes: u64,
    pub strategies: Vec<Strategy>,
    /// Recovery timeout, ps (0: none).
    pub timeout: u64,
    pub opts: DaemonOptions,
    pub epoch: report::Epoch,
    /// Sampling interval, ps.
    pub sample_every: u64,
    pub cfg: SimConfig,
}

/// Checks the flags and builds the configuration (`a.recirc_gbps` takes the profile's when
/// the flag is absent).
pub(super) fn settings(a: &mut SimArgs) -> Result<Settings> {
    // The --switch profile fills in what the flags leave open.
    let profile = a.switch.as_deref().map(SwitchProfile::load).transpose()?;
    let link_gbps = a
        .link_gbps
        .or(profile.as_ref().map(|p| p.link_gbps))
        .unwrap_or(100.0);
    let delay_us = a
        .delay_us
        .or(profile.as_ref().map(|p| p.delay_us))
        .unwrap_or(2.0);
    a.recirc_gbps = a.recirc_gbps.or(profile.as_ref().map(|p| p.recirc_gbps));
    let switch_mem_bytes = match (&a.switch_mem, &profile) {
        (Some(m), _) => parse_bytes(m).map_err(|e| anyhow!("--switch-mem: {e}"))?,
        (None, Some(p)) => p.agg_mem_bytes,
        (None, None) => 100_000_000,
    };
    let strategies: Vec<Strategy> = a
        .strategies
        .split(',')
        .map(|s| {
            s.trim()
                .parse()
                .map_err(|e: SimError| anyhow!("--strategies: {e}"))
        })
        .collect::<Result<_>>()?;
    let link_bps = bps(link_gbps, "--link-gbps")?;
    let fabric_bps = a
        .fabric_gbps
        .map(|g| bps(g, "--fabric-gbps"))
        .transpose()?
        .unwrap_or(link_bps);
    let topo_desc = match a.topology.as_str() {
        "star" => "star".to_string(),
        "leaf-spine" => {
            leaf_spine_shape(a.workers, a.leaves, a.spines)?;
            format!(
                "leaf-spine {} leaves x {} spines, {} hosts per leaf, fabric {} Gbit/s",
                a.leaves,
                a.spines,
                a.workers / a.leaves,
                fabric_bps as f64 / GBPS
            )
        }
        t => bail!("--topology {t}: use star or leaf-spine"),
    };
    if !(delay_us.is_finite() && delay_us >= 0.0) {
        bail!("--delay-us must be a non-negative number, got {delay_us}");
    }
    let delay = (delay_us * PS_PER_US as f64).round() as u64;
    let us = |v: f64, name: &str| -> Result<u64> {
        if !(v.is_finite() && v >= 0.0) {
            bail!("{name} must be a non-negative number of microseconds, got {v}");
        }
        Ok((v * PS_PER_US as f64).round() as u64)
    };
    let timeout = us(a.timeout_us, "--timeout-us")?;
    if !(a.background_load.is_finite() && (0.0..=1.0).contains(&a.background_load)) {
        bail!(
            "--background-load must be a fraction of the link in [0, 1], got {}",
            a.background_load
        );
    }
    if !(a.loss.is_finite() && (0.0..1.0).contains(&a.loss)) {
        bail!("--loss is a probability in [0, 1), got {}", a.loss);
    }
    if !(a.fabric_loss.is_finite() && (0.0..1.0).contains(&a.fabric_loss)) {
        bail!(
            "--fabric-loss is a probability in [0, 1), got {}",
            a.fabric_loss
        );
    }
    if a.fabric_loss > 0.0 && a.topology != "leaf-spine" {
        bail!(
            "--fabric-loss drops frames between switches: it needs --topology leaf-spine \
             (a star has one switch; use --loss)"
        );
    }
    let mut opts = DaemonOptions {
        cc: CcConfig {
            initial_bps: a
                .cc_initial_gbps
                .map(|g| bps(g, "--cc-initial-gbps"))
                .transpose()?,
            min_bps: bps(a.cc_min_gbps, "--cc-min-gbps")?,
            max_bps: a.cc_max_gbps.map(|g| bps(g, "--cc-max-gbps")).transpose()?,
            increase_bps: if a.cc_increase_gbps == 0.0 {
                0
            } else {
                bps(a.cc_increase_gbps, "--cc-increase-gbps")?
            },
            increase_interval: us(a.cc_increase_interval_us, "--cc-increase-interval-us")?,
            decrease_interval: us(a.cc_decrease_interval_us, "--cc-decrease-interval-us")?,
            fast_recovery_steps: a.cc_fast_recovery,
        },
        pacing: a.pace,
        timeout: (timeout > 0).then_some(timeout),
        loss: a.loss,
        fabric_loss: a.fabric_loss,
        verify: a.verify,
        background: BackgroundConfig {
            load: a.background_load,
            seed: a.background_seed,
            until: None,
            cc: None,
            prio: match a.background_prio {
                BackgroundPrio::Low => sgnn_sim::background::PRIO_BACKGROUND,
                BackgroundPrio::Data => sgnn_sim::strategies::PRIO_DATA,
                BackgroundPrio::Results => sgnn_sim::strategies::PRIO_RESULT,
            },
        },
    };
    // Background flows use the same law as switchgnn's hosts.
    opts.background.cc = (a.background_cc == OnOff::On).then_some(opts.cc);
    opts.cc.validate().map_err(|e| anyhow!("--cc-*: {e}"))?;
    if a.layers == 0 {
        bail!("--layers must be at least 1");
    }
    let epoch = report::Epoch {
        layers: a.layers,
        backward: !a.forward_only,
        compute: us(a.compute_ms * 1000.0, "--compute-ms (in us)")?,
    };
    let (sample_every, max_samples) = if a.sample_us == "auto" {
        (AUTO_SAMPLE_EVERY, AUTO_MAX_SAMPLES)
    } else {
        let us: f64 = a.sample_us.parse().map_err(|_| {
            anyhow!(
                "--sample-us: expected a number of microseconds or auto, got {:?}",
                a.sample_us
            )
        })?;
        let ps = (us * PS_PER_US as f64).round();
        if !(ps.is_finite() && ps >= 1.0) {
            bail!(
                "--sample-us must be positive (at least 1 ps), got {}",
                a.sample_us
            );
        }
        (ps as u64, FIXED_MAX_SAMPLES)
    };
    let cfg = SimConfig {
        net: NetConfig {
            buffer_bytes: parse_bytes(&a.buffer).map_err(|e| anyhow!("--buffer: {e}"))?,
            ecn_threshold_bytes: parse_bytes(&a.ecn_threshold)
                .map_err(|e| anyhow!("--ecn-threshold: {e}"))?,
            pace_bps: a.pace_gbps.map(|g| bps(g, "--pace-gbps")).transpose()?,
            sample_every: Some(sample_every),
            max_samples: Some(max_samples),
        },
        recirc_bps: a
            .recirc_gbps
            .map(|g| bps(g, "--recirc-gbps"))
            .transpose()?
            .unwrap_or(link_bps),
        harvest_passes: profile.as_ref().map_or(0, |p| p.harvest_passes),
    };
    Ok(Settings {
        profile,
        link_gbps,
        delay_us,
        delay,
        link_bps,
        fabric_bps,
        topo_desc,
        switch_mem_bytes,
        strategies,
        timeout,
        opts,
        epoch,
        sample_every,
        cfg,
    })
}
