//! The flags that name a running switch (`--target` and its connection options), shared by
//! `load`, `dump` and `clear`, and connecting to it: over P4Runtime, with or without TLS, or
//! over BfRuntime for `bfrt://` addresses.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;

#[derive(Args, Clone)]
pub struct TargetArgs {
    /// The switch: a P4Runtime address (host:port, or unix:/path: bmv2, the software switch,
    /// a Tofino with P4Runtime), or bfrt://host:port for a Tofino's BfRuntime server
    /// (bf_switchd, usually port 50052; runs p4/tna, docs/tofino.md).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:9559")]
    pub target: String,
    /// BfRuntime client id (bfrt:// targets).
    #[arg(long, default_value_t = 0)]
    pub client_id: u32,
    /// P4Runtime device id.
    #[arg(long, default_value_t = 0)]
    pub device_id: u64,
    /// Election id (the highest connected client is primary).
    #[arg(long, default_value_t = 1)]
    pub election_id: u128,
    /// Talk P4Runtime over TLS, trusting this CA certificate (PEM) for the switch's
    /// certificate (host:port targets; `softswitch --p4runtime-tls-cert` serves one).
    #[arg(long, value_name = "FILE")]
    pub tls_ca: Option<PathBuf>,
    /// The name the switch's certificate carries, if not the host of --target.
    #[arg(long, value_name = "NAME", requires = "tls_ca")]
    pub tls_domain: Option<String>,
}

impl TargetArgs {
    /// P4Runtime client options: TLS when --tls-ca is given.
    pub fn client_options(&self) -> Result<sgnn_p4rt::ClientOptions> {
        let mut o = sgnn_p4rt::ClientOptions::default();
        if let Some(ca) = &self.tls_ca {
            if self.target.starts_with("bfrt://") {
                bail!(
                    "--tls-ca is for P4Runtime targets; BfRuntime (bfrt://) runs without TLS here"
                );
            }
            o.tls = Some(sgnn_p4rt::ClientTls {
                ca_pem: std::fs::read(ca)
                    .with_context(|| format!("--tls-ca: reading {}", ca.display()))?,
                domain: self.tls_domain.clone(),
            });
        }
        Ok(o)
    }
}

/// The switch of `--target`: over BfRuntime for `bfrt://` (checked against the TNA program's
/// objects), else over P4Runtime (checked against the contract for the architecture the
/// switch's P4Info reports: v1model, or TNA for a Tofino).
pub fn connect(t: &TargetArgs) -> Result<Box<dyn switch_ctl::Target>> {
    use sgnn_p4rt::schema::{switchgnn_p4info_for, Arch};
    if let Some(addr) = t.target.strip_prefix("bfrt://") {
        let device = u32::try_from(t.device_id).context("--device-id is too large for BfRt")?;
        return Ok(Box::new(switch_ctl::backend::BfrtTarget::connect(
            addr,
            device,
            t.client_id,
            &switchgnn_p4info_for(Arch::Tna),
        )?));
    }
    // A Tofino running the TNA program over P4Runtime reports architecture tna (or t2na).
    Ok(Box::new(
        switch_ctl::backend::P4RuntimeTarget::connect_switchgnn_with(
            &t.target,
            t.device_id,
            t.election_id,
            t.client_options()?,
        )?,
    ))
}
