//! The test network: one namespace holding the switch's ports and the hosts' ends of veth
//! pairs; the switch process runs inside it, the test sends and captures on the host ends.

use std::time::{Duration, Instant};

use sgnn_netdev::{AfPacket, Netns, Veth};

/// A namespace with `ports` veth pairs: switch side `s<tag>p<i>`, host side `s<tag>h<i>`.
pub struct TestNet {
    /// The namespace (removed with everything in it on drop).
    pub ns: Netns,
    _veths: Vec<Veth>,
    /// Host-side sockets, one per port.
    pub hosts: Vec<AfPacket>,
    /// Switch-side interface names, port `i` first.
    pub switch_ifaces: Vec<String>,
}

impl TestNet {
    /// Builds the namespace and veths. Names are unique per process and `tag`.
    pub fn create(tag: &str, ports: usize) -> Result<TestNet, sgnn_netdev::Error> {
        let id = format!("{}{}", tag, std::process::id() % 100_000);
        let ns = Netns::create(&format!("sgnn-{id}"))?;
        let sw = |i: usize| format!("{id}s{i}");
        let h = |i: usize| format!("{id}h{i}");
        let veths = (0..ports)
            .map(|i| Veth::create(&sw(i), Some(&ns), &h(i), Some(&ns)))
            .collect::<Result<Vec<_>, _>>()?;
        let hosts = ns
            .run(|| (0..ports).map(|i| AfPacket::open(&h(i))).collect())
            .and_then(|r| r)?;
        Ok(TestNet {
            ns,
            _veths: veths,
            hosts,
            switch_ifaces: (0..ports).map(sw).collect(),
        })
    }

    /// Sends `frame` into the switch's port `port`.
    pub fn send(&self, port: u16, frame: &[u8]) -> Result<(), sgnn_netdev::Error> {
        self.hosts[port as usize].send(frame)
    }

    /// Collects frames the switch sends until `want` have arrived or `timeout` passes, then
    /// keeps listening for `grace` for extra frames. Returns (port, frame) pairs.
    pub fn collect(&self, want: usize, timeout: Duration, grace: Duration) -> Vec<(u16, Vec<u8>)> {
        let mut got = Vec::new();
        let mut buf = vec![0u8; 4096];
        let start = Instant::now();
        let mut done_at: Option<Instant> = if want == 0 { Some(start) } else { None };
        loop {
            let mut any = false;
            for (i, h) in self.hosts.iter().enumerate() {
                while let Ok(Some(n)) = h.try_recv(&mut buf) {
                    got.push((i as u16, buf[..n].to_vec()));
                    any = true;
                }
            }
            if done_at.is_none() && got.len() >= want {
                done_at = Some(Instant::now());
            }
            let now = Instant::now();
            match done_at {
                Some(t) if now.duration_since(t) >= grace => return got,
                None if now.duration_since(start) >= timeout => return got,
                _ => {}
            }
            if !any {
                std::thread::sleep(Duration::from_micros(200));
            }
        }
    }
}
