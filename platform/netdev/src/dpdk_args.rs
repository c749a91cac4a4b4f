//! Command-line arguments of DPDK processes on this machine's virtual networks: the EAL
//! arguments that need no hugepages, PCI or shared files, and the `net_memif` and
//! `net_af_packet` vdev strings. Plain strings, so callers need no DPDK to build them.

use std::path::Path;

/// The Debian packages a `--features dpdk` build needs (the system DPDK 22.11, found with
/// pkg-config; libclang for bindgen).
pub const DPDK_PACKAGES: &str = "libdpdk-dev pkg-config libclang-dev";

/// The command that builds every binary with DPDK.
pub const DPDK_REBUILD: &str = "cargo build --release --workspace --features dpdk";

/// The one-line error of a binary built without its `dpdk` feature and asked for DPDK by
/// `what` (a flag such as `--datapath dpdk`): what to rebuild and which packages it needs.
/// Callers print it and exit with status 2.
pub fn not_built_with_dpdk(binary: &str, what: &str) -> String {
    format!(
        "{binary} was built without DPDK, which {what} needs: rebuild with `{DPDK_REBUILD}` \
         (the cargo feature `dpdk`; needs the Debian packages {DPDK_PACKAGES})"
    )
}

/// EAL arguments of one DPDK process: no hugepages (`-m mem_mb` MB of ordinary memory), no
/// PCI scan, no shared files, no telemetry, a `prefix` unique per process (other runs may
/// share the machine), quiet EAL logs, and one `--vdev` per entry of `vdevs`.
pub fn eal_args(prefix: &str, mem_mb: u32, vdevs: &[String]) -> Vec<String> {
    let mut v: Vec<String> = [
        "--no-huge",
        "-m",
        &mem_mb.to_string(),
        "--no-pci",
        "--no-shconf",
        "--no-telemetry",
        "--log-level=lib.eal:warning",
        "--file-prefix",
        prefix,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.extend(vdevs.iter().map(|d| format!("--vdev={d}")));
    v
}

/// The vdev of memif port `i` with `role` (`server` creates the socket, `client` connects)
/// on the Unix socket file `sock`.
pub fn memif_vdev(i: usize, role: &str, sock: &Path) -> String {
    format!(
        "net_memif{i},role={role},id=0,socket={},socket-abstract=no",
        sock.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eal_args_take_every_vdev_and_the_prefix() {
        let v = eal_args(
            "p1",
            128,
            &[memif_vdev(2, "client", Path::new("/t/s.sock"))],
        );
        assert_eq!(v[..3], ["--no-huge", "-m", "128"]);
        let at = v.iter().position(|a| a == "--file-prefix").unwrap();
        assert_eq!(v[at + 1], "p1");
        assert_eq!(
            v.last().unwrap(),
            "--vdev=net_memif2,role=client,id=0,socket=/t/s.sock,socket-abstract=no"
        );
    }
}
