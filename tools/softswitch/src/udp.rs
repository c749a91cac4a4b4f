//! The UDP datapath: each datagram carries one Ethernet frame. Port `w` is worker `w`'s UDP
//! address; frames from an unknown address are still processed (ingress port `u16::MAX`), and
//! frames to a port without an address are counted as dropped.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::time::Duration;

use crate::pipeline::Pipeline;

/// A switch serving its pipeline on one UDP socket.
pub struct UdpSwitch {
    /// The socket.
    pub socket: UdpSocket,
    /// UDP address of each port (worker).
    pub ports: Vec<SocketAddr>,
    /// The pipeline.
    pub pipeline: Pipeline,
    /// Frames that could not be sent (no address for the port, or a send error).
    pub tx_errors: u64,
}

impl UdpSwitch {
    /// Binds `listen` and serves `ports`.
    pub fn bind(
        listen: SocketAddr,
        ports: Vec<SocketAddr>,
        pipeline: Pipeline,
    ) -> io::Result<UdpSwitch> {
        let socket = UdpSocket::bind(listen)?;
        socket.set_read_timeout(Some(Duration::from_millis(100)))?;
        Ok(UdpSwitch {
            socket,
            ports,
            pipeline,
            tx_errors: 0,
        })
    }

    /// Receives and processes frames until `stop()` returns true (checked at least every
    /// 100 ms).
    pub fn run(&mut self, mut stop: impl FnMut(&Pipeline) -> bool) -> io::Result<()> {
        let mut buf = vec![0u8; 9216];
        let mut out = Vec::with_capacity(64);
        while !stop(&self.pipeline) {
            let (n, from) = match self.socket.recv_from(&mut buf) {
                Ok(x) => x,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    continue
                }
                Err(e) => return Err(e),
            };
            let ingress = self
                .ports
                .iter()
                .position(|&p| p == from)
                .map_or(u16::MAX, |p| p as u16);
            out.clear();
            self.pipeline.process(ingress, &buf[..n], &mut out);
            for e in &out {
                match self.ports.get(e.port as usize) {
                    Some(addr) => {
                        if self.socket.send_to(&e.frame, addr).is_err() {
                            self.tx_errors += 1;
                        }
                    }
                    None => self.tx_errors += 1,
                }
            }
        }
        Ok(())
    }
}
