//! The DPDK datapath: one ethdev driven from user space by this process's one core.

use std::io;
use std::time::{Duration, Instant};

use sgnn_dpdk::{Eal, Mempool, Port, PortConfig, MBUF_DATA_ROOM};
use sgnn_netdev::poll::IdlePoll;

use super::{Datapath, RECV_BURST};

/// How [`DpdkDatapath::open`] sets up DPDK.
#[derive(Debug, Clone)]
pub struct DpdkConfig {
    /// The ethdev to use: a port id (`"0"`) or a name (`"net_memif0"`); `None` is the first.
    pub port: Option<String>,
    /// Packet buffers in the pool (receive ring plus frames in flight).
    pub mbufs: u32,
    /// Receive and transmit descriptors per queue.
    pub queue_size: u16,
    /// How long to wait for the link (a memif peer, an interface's carrier) at start.
    pub link_timeout: Duration,
    /// When nothing arrives, poll without pause for this long, then sleep
    /// [`DpdkConfig::idle_sleep`] between polls until the receive timeout.
    pub spin: Duration,
    /// Pause between idle polls after [`DpdkConfig::spin`]; zero polls without pause (one
    /// core at 100%, the lowest latency).
    pub idle_sleep: Duration,
}

impl Default for DpdkConfig {
    fn default() -> Self {
        DpdkConfig {
            port: None,
            mbufs: 8191,
            queue_size: 1024,
            link_timeout: Duration::from_secs(30),
            spin: Duration::from_micros(100),
            idle_sleep: Duration::from_micros(50),
        }
    }
}

/// Whole Ethernet frames through one DPDK ethdev (queue 0 both ways). Receive is zero-copy
/// (the engine reads each frame in its mbuf); transmit copies each frame into an mbuf and
/// sends bursts, dropping (and counting) what the device does not take.
pub struct DpdkDatapath {
    port: Port,
    /// How an empty poll waits ([`DpdkConfig::spin`], [`DpdkConfig::idle_sleep`]).
    idle: IdlePoll,
    eal: Eal,
}

impl std::fmt::Debug for DpdkDatapath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DpdkDatapath")
            .field("port", &self.port)
            .finish()
    }
}

impl DpdkDatapath {
    /// Initialises DPDK's EAL with `eal_args` (once per process), opens the chosen port and
    /// waits for its link.
    pub fn open(eal_args: &[String], cfg: &DpdkConfig) -> Result<DpdkDatapath, sgnn_dpdk::Error> {
        let eal = Eal::init(eal_args)?;
        Self::on(&eal, cfg)
    }

    /// Opens the chosen port of an initialised EAL and waits for its link.
    pub fn on(eal: &Eal, cfg: &DpdkConfig) -> Result<DpdkDatapath, sgnn_dpdk::Error> {
        let id = match &cfg.port {
            Some(p) => eal.resolve(p)?,
            None => *eal.ports().first().ok_or_else(|| sgnn_dpdk::Error {
                what: "choosing a DPDK port".into(),
                reason: "DPDK found no ethdev: give the EAL a device, e.g. \
                         --vdev=net_af_packet0,iface=eth1 or --vdev=net_memif0,role=client,socket=PATH"
                    .into(),
            })?,
        };
        let pool = Mempool::new(eal, &format!("sgnn_dp{id}"), cfg.mbufs, MBUF_DATA_ROOM)?;
        let pcfg = PortConfig {
            rx_queue_size: cfg.queue_size,
            tx_queue_size: cfg.queue_size,
            ..PortConfig::default()
        };
        let port = Port::open(eal, id, pool, &pcfg)?;
        if !port.wait_link_up(cfg.link_timeout) {
            return Err(sgnn_dpdk::Error {
                what: format!("DPDK port {} ({})", port.name(), port.driver()),
                reason: format!(
                    "the link did not come up within {:.0} s (memif: is the switch's memif \
                     server running on the same socket? af_packet: is the interface up?)",
                    cfg.link_timeout.as_secs_f64()
                ),
            });
        }
        Ok(DpdkDatapath {
            port,
            idle: IdlePoll {
                spin: cfg.spin,
                idle_sleep: cfg.idle_sleep,
            },
            eal: eal.clone(),
        })
    }

    /// The port.
    pub fn port(&self) -> &Port {
        &self.port
    }

    /// The EAL (for opening more ports).
    pub fn eal(&self) -> &Eal {
        &self.eal
    }
}

impl Datapath for DpdkDatapath {
    fn send_burst(&mut self, frames: &[Vec<u8>]) -> io::Result<usize> {
        Ok(self.port.tx_burst(frames))
    }

    fn recv_burst(
        &mut self,
        timeout: Duration,
        deliver: &mut dyn FnMut(&[u8]),
    ) -> io::Result<usize> {
        let start = Instant::now();
        loop {
            let n = self.port.rx_burst(RECV_BURST, &mut *deliver);
            if n > 0 {
                return Ok(n);
            }
            if !self.idle.pause(start, timeout) {
                return Ok(0);
            }
        }
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let Ok(s) = self.port.stats() else {
            return Vec::new();
        };
        vec![
            ("rx_frames", s.rx_frames),
            ("rx_bytes", s.rx_bytes),
            ("tx_frames", s.tx_frames),
            ("tx_bytes", s.tx_bytes),
            ("tx_dropped", s.tx_dropped),
            ("tx_nombuf", s.tx_nombuf),
            ("dev_ipackets", s.ipackets),
            ("dev_opackets", s.opackets),
            ("dev_imissed", s.imissed),
            ("dev_ierrors", s.ierrors),
            ("dev_oerrors", s.oerrors),
            ("dev_rx_nombuf", s.rx_nombuf),
        ]
    }
}
