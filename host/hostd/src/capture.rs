//! `--pcap`: the daemon's frames, in and out, in a pcapng file (written by
//! [`sgnn_netdev::capture`]: one interface, `workerW`; direction in each frame's flags).

use std::io;
use std::time::Duration;

use anyhow::Result;
use sgnn_netdev::capture::{Direction, PcapNg};
use sgnn_transport::datapath::Datapath;

pub use sgnn_netdev::capture::DEFAULT_MAX_BYTES;

use super::Args;

/// A datapath whose frames are also captured when `--pcap` is given: the capture is an
/// `Option` checked once per burst, so without it the datapath runs as before.
pub struct Tapped<D> {
    inner: D,
    pcap: Option<PcapNg>,
}

impl<D: Datapath> Tapped<D> {
    /// Wraps `inner`; captures to `a.pcap` if given (`what` describes the datapath).
    pub fn new(inner: D, a: &Args, what: &str) -> Result<Tapped<D>> {
        let pcap = match &a.pcap {
            Some(path) => Some(PcapNg::create(
                path,
                a.pcap_max_bytes,
                &[(
                    &format!("worker{}", a.worker_id),
                    &format!("sgnn-hostd worker {}, {what}", a.worker_id),
                )],
                "sgnn-hostd",
            )?),
            None => None,
        };
        Ok(Tapped { inner, pcap })
    }

    /// Wraps `inner` with an optional capture.
    #[cfg(test)]
    pub fn with(inner: D, pcap: Option<PcapNg>) -> Tapped<D> {
        Tapped { inner, pcap }
    }

    /// The wrapped datapath.
    #[cfg(test)]
    pub fn inner(&self) -> &D {
        &self.inner
    }
}

impl<D: Datapath> Datapath for Tapped<D> {
    fn send_burst(&mut self, frames: &[Vec<u8>]) -> io::Result<usize> {
        let sent = self.inner.send_burst(frames)?;
        if let Some(p) = &mut self.pcap {
            // The datapath reports how many frames it handed on, not which; frames it
            // refused are lost like on a link, and captured all the same.
            for f in frames {
                p.write_now(0, Direction::Outbound, f);
            }
        }
        Ok(sent)
    }

    fn recv_burst(
        &mut self,
        timeout: Duration,
        deliver: &mut dyn FnMut(&[u8]),
    ) -> io::Result<usize> {
        let Some(p) = &mut self.pcap else {
            return self.inner.recv_burst(timeout, deliver);
        };
        let n = self.inner.recv_burst(timeout, &mut |f| {
            p.write_now(0, Direction::Inbound, f);
            deliver(f)
        })?;
        if n == 0 {
            // Idle: a reader of the file sees what was captured so far.
            p.flush();
        }
        Ok(n)
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let mut c = self.inner.counters();
        if let Some(p) = &self.pcap {
            c.extend(p.counters());
        }
        c
    }
}
