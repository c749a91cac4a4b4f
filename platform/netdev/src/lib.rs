//! Raw Ethernet I/O and throwaway virtual networks for the SwitchGNN testbed and tests.
//!
//! - [`AfPacket`]: a Linux `AF_PACKET` socket bound to one interface, sending and receiving
//!   whole Ethernet frames (what a veth-attached host or switch port needs).
//! - [`Netns`] and [`Veth`]: network namespaces and veth pairs that remove themselves when
//!   dropped, built with iproute2 (`ip`), so a test or `sgnn testbed` leaves nothing behind.
//! - [`dpdk_args`]: EAL and vdev arguments of DPDK processes on those networks.
//! - [`capture`]: pcapng captures of the frames a switch or a daemon sends and receives
//!   ([`capture::PcapNg`]), and reading them back ([`capture::read`]).
//! - [`set_socket_buffers`]: larger socket buffers for bursts (beyond the kernel's cap as
//!   root), for every socket that carries frames, here and in the switch and host crates;
//!   [`bind_udp`]: a UDP socket for frames with them.
//! - [`poll`]: waiting for frames, on sockets ([`poll::ready`]) and on devices polled from
//!   user space ([`poll::IdlePoll`]), the same way in the switch's ports and the host's
//!   datapaths; [`MAX_FRAME`], the receive buffer both use.
//! - [`mmsg`]: many UDP datagrams per system call (`recvmmsg`, `sendmmsg`), for both sides'
//!   UDP datapaths.
//! - [`cpu`]: the CPU seconds this process used, which both report on exit.
//! - [`metrics_http`]: the `--metrics ADDR` endpoint, and [`cli_config`]: `--config FILE`,
//!   of `softswitch` and `sgnn-hostd`.
//! - [`p4tools`]: finding the P4 toolchain (`p4c`, `simple_switch_grpc`, `bf-p4c`) and
//!   starting bmv2 in a namespace, for the bmv2 tests and `sgnn testbed --switch bmv2`.
//!
//! The software switch (`softswitch::ports`: many numbered ports) and the host daemon
//! (`sgnn_transport::datapath`: one link to the switch) each keep their own trait over these
//! (the two modules' docs say why).
//!
//! Everything here but [`capture`], [`cpu`], [`poll`], [`mmsg`], [`bind_udp`], [`set_socket_buffers`],
//! [`metrics_http`], [`cli_config`] and finding tools ([`p4tools::P4Tool::find`]) needs
//! `CAP_NET_ADMIN`/`CAP_NET_RAW` (root). [`can_create_namespaces`] says whether this process
//! may; callers print `SKIPPED` with [`PrivilegeError`]'s text when not.

#![deny(clippy::undocumented_unsafe_blocks)]

mod afpacket;
pub mod capture;
pub mod cli_config;
pub mod cpu;
pub mod dpdk_args;
pub mod metrics_http;
pub mod mmsg;
mod netns;
pub mod p4tools;
pub mod poll;
mod sockbuf;

pub use afpacket::AfPacket;
pub use netns::{can_create_namespaces, Netns, PrivilegeError, Veth};
pub use sockbuf::{bind_udp, set_socket_buffers, SocketBuffers};

/// Bytes of the buffer a frame is received into: the largest frame received whole (a jumbo
/// frame); longer ones are truncated. The switch's ports and the host's datapaths use it.
pub const MAX_FRAME: usize = 9216;

/// Errors of this crate; each names the command or interface involved.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A system call failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// An `ip`/`sysctl` command failed.
    #[error("`{command}` failed: {stderr}")]
    Command {
        /// The command line.
        command: String,
        /// Its standard error.
        stderr: String,
    },
    /// A capture file could not be written or read.
    #[error("{what}: {source}")]
    Pcap {
        /// What was being done, naming the file.
        what: String,
        /// The pcapng writer's or reader's error.
        source: pcap_file::PcapError,
    },
    /// A capture's bound cannot hold its headers.
    #[error("--pcap-max-bytes {max} cannot hold the capture's headers ({need} bytes)")]
    CaptureTooSmall {
        /// The bound.
        max: u64,
        /// Bytes of the section and interface headers.
        need: u64,
    },
}

pub(crate) fn io_err(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
    let what = what.into();
    move |source| Error::Io { what, source }
}

/// For the datapaths' `io::Result`s: the same message, and an I/O error's kind where there is
/// one (others are [`std::io::ErrorKind::Other`]).
impl From<Error> for std::io::Error {
    fn from(e: Error) -> std::io::Error {
        match e {
            Error::Io { what, source } => {
                std::io::Error::new(source.kind(), format!("{what}: {source}"))
            }
            other => std::io::Error::other(other.to_string()),
        }
    }
}
