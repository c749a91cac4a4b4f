//! Raw Ethernet I/O and throwaway virtual networks for the SwitchGNN testbed and tests.
//!
//! - [`AfPacket`]: a Linux `AF_PACKET` socket bound to one interface, sending and receiving
//!   whole Ethernet frames (what a veth-attached host or switch port needs).
//! - [`Netns`] and [`Veth`]: network namespaces and veth pairs that remove themselves when
//!   dropped, built with iproute2 (`ip`), so a test or `sgnn testbed` leaves nothing behind.
//! - [`dpdk_args`]: EAL and vdev arguments of DPDK processes on those networks.
//!
//! Everything here needs `CAP_NET_ADMIN`/`CAP_NET_RAW` (root). [`can_create_namespaces`] says
//! whether this process may; callers print `SKIPPED` with [`PrivilegeError`]'s text when not.

#![deny(clippy::undocumented_unsafe_blocks)]

mod afpacket;
pub mod dpdk_args;
mod netns;

pub use afpacket::AfPacket;
pub use netns::{can_create_namespaces, Netns, PrivilegeError, Veth};

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
}

pub(crate) fn io_err(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
    let what = what.into();
    move |source| Error::Io { what, source }
}
