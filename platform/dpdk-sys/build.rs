//! Finds the system DPDK with pkg-config, compiles the C shim for DPDK's static inline
//! functions with DPDK's own CFLAGS, generates the bindings with bindgen and links DPDK.
//!
//! How DPDK is linked (the why is in README.md): by default statically, with exactly the
//! drivers SwitchGNN uses pulled in whole (`--whole-archive`), because DPDK drivers register
//! themselves from ELF constructors that nothing else references, so a plain static link
//! would silently drop them. `DPDK_SYS_LINK=shared` links the shared libraries instead; then
//! Debian's EAL loads every driver in its plugin directory at `rte_eal_init`.

fn main() {
    #[cfg(feature = "link")]
    link::main();
}

#[cfg(feature = "link")]
mod link {
    use std::env;
    use std::path::{Path, PathBuf};
    use std::process::Command;

    /// Drivers linked whole: the bus for virtual devices, the default mempool handler and the
    /// virtual NICs SwitchGNN runs on (af_packet on an interface, memif between processes,
    /// null and ring for hermetic tests).
    const DRIVERS: &[&str] = &[
        "rte_net_af_packet",
        "rte_net_memif",
        "rte_net_null",
        "rte_net_ring",
        "rte_bus_vdev",
        "rte_mempool_ring",
    ];
    /// The libraries those drivers and the shim need, in link order (users before users'
    /// dependencies).
    const LIBS: &[&str] = &[
        "rte_ethdev",
        "rte_net",
        "rte_meter",
        "rte_mbuf",
        "rte_mempool",
        "rte_hash",
        "rte_rcu",
        "rte_ring",
        "rte_eal",
        "rte_telemetry",
        "rte_kvargs",
    ];
    /// System libraries the static EAL needs (Debian builds it with libnuma and libbsd).
    const SYSTEM: &[&str] = &["numa", "bsd", "pthread", "dl", "m"];

    const MISSING: &str = "the cargo feature `dpdk` was asked for, but DPDK was not found by \
pkg-config. On Debian/Ubuntu install it with `apt-get install libdpdk-dev pkg-config \
libclang-dev` (DPDK 22.11 or newer); elsewhere set PKG_CONFIG_PATH to the directory holding \
libdpdk.pc. To build SwitchGNN without DPDK instead, leave out `--features dpdk` (DPDK is off \
by default; see platform/dpdk-sys/README.md).";

    fn pkg_config(args: &[&str]) -> Result<String, String> {
        let bin = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".into());
        let out = Command::new(&bin)
            .args(args)
            .arg("libdpdk")
            .output()
            .map_err(|e| format!("cannot run `{bin}`: {e} (install the pkg-config package)"))?;
        if !out.status.success() {
            return Err(format!(
                "`{bin} {} libdpdk` failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    fn fail(msg: &str) -> ! {
        // A panic in a build script prints its message; make it the first thing seen.
        panic!("\n\n{msg}\n\n");
    }

    pub fn main() {
        for v in [
            "PKG_CONFIG",
            "PKG_CONFIG_PATH",
            "PKG_CONFIG_LIBDIR",
            "DPDK_SYS_LINK",
        ] {
            println!("cargo:rerun-if-env-changed={v}");
        }
        for f in ["csrc/shim.c", "csrc/shim.h", "csrc/wrapper.h"] {
            println!("cargo:rerun-if-changed={f}");
        }

        let version =
            pkg_config(&["--modversion"]).unwrap_or_else(|e| fail(&format!("{e}\n{MISSING}")));
        let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
        let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
        if (major, minor) < (22, 11) {
            fail(&format!(
                "DPDK {version} is too old: SwitchGNN needs 22.11 or newer (Debian 12's libdpdk-dev)"
            ));
        }
        let cflags: Vec<String> = pkg_config(&["--cflags"])
            .unwrap_or_else(|e| fail(&e))
            .split_whitespace()
            .map(String::from)
            .collect();
        let libdir = PathBuf::from(pkg_config(&["--variable=libdir"]).unwrap_or_else(|e| fail(&e)));

        // The shim: DPDK's inline fast path compiled into real functions, with DPDK's flags
        // (its headers need `-include rte_config.h` and at least the -march it was built for).
        let mut cc = cc::Build::new();
        cc.file("csrc/shim.c").include("csrc").warnings(true);
        for f in &cflags {
            cc.flag(f);
        }
        // Emits `rustc-link-lib=static=sgnn_dpdk_shim` before the DPDK libraries below, so the
        // linker sees the shim's references first.
        cc.compile("sgnn_dpdk_shim");

        link_dpdk(&libdir);
        bindings(&cflags);
    }

    fn link_dpdk(libdir: &Path) {
        println!("cargo:rustc-link-search=native={}", libdir.display());
        if env::var("DPDK_SYS_LINK").as_deref() == Ok("shared") {
            // The shared EAL dlopen()s every driver in its plugin directory (Debian:
            // /usr/lib/<triplet>/dpdk/pmds-<abi>/) during rte_eal_init.
            for l in DRIVERS.iter().chain(LIBS) {
                if l.starts_with("rte_net_") || *l == "rte_mempool_ring" {
                    continue; // plugins, loaded at run time
                }
                println!("cargo:rustc-link-lib=dylib={l}");
            }
            return;
        }
        for l in DRIVERS.iter().chain(LIBS) {
            let a = libdir.join(format!("lib{l}.a"));
            if !a.exists() {
                fail(&format!(
                    "{} is missing: the static DPDK libraries come with Debian's libdpdk-dev \
                     (or build with DPDK_SYS_LINK=shared)",
                    a.display()
                ));
            }
        }
        for d in DRIVERS {
            println!("cargo:rustc-link-lib=static:+whole-archive,-bundle={d}");
        }
        for l in LIBS {
            println!("cargo:rustc-link-lib=static:-bundle={l}");
        }
        for s in SYSTEM {
            println!("cargo:rustc-link-lib=dylib={s}");
        }
    }

    fn bindings(cflags: &[String]) {
        let out = PathBuf::from(env::var("OUT_DIR").unwrap()).join("bindings.rs");
        let mut b = bindgen::Builder::default()
            .header("csrc/wrapper.h")
            .clang_arg("-Icsrc")
            .clang_args(cflags)
            .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()))
            .derive_default(true)
            .derive_debug(false)
            .layout_tests(true)
            .generate_comments(false)
            // Only the fast path's handles cross into Rust: their layout stays in C.
            .opaque_type("rte_mbuf")
            .opaque_type("rte_mempool")
            .opaque_type("rte_device")
            .opaque_type("rte_eth_dev")
            .opaque_type("rte_eth_dev_data")
            .allowlist_function("sgnn_.*");
        for f in [
            "rte_eal_init",
            "rte_eal_cleanup",
            "rte_strerror",
            "rte_socket_id",
            "rte_pktmbuf_pool_create",
            "rte_pktmbuf_free_bulk",
            "rte_mempool_free",
            "rte_mempool_avail_count",
            "rte_mempool_in_use_count",
            "rte_eth_dev_count_avail",
            "rte_eth_find_next_owned_by",
            "rte_eth_dev_is_valid_port",
            "rte_eth_dev_get_port_by_name",
            "rte_eth_dev_get_name_by_port",
            "rte_eth_dev_info_get",
            "rte_eth_dev_socket_id",
            "rte_eth_dev_configure",
            "rte_eth_dev_adjust_nb_rx_tx_desc",
            "rte_eth_rx_queue_setup",
            "rte_eth_tx_queue_setup",
            "rte_eth_dev_start",
            "rte_eth_dev_stop",
            "rte_eth_dev_close",
            "rte_eth_macaddr_get",
            "rte_eth_promiscuous_enable",
            "rte_eth_link_get_nowait",
            "rte_eth_stats_get",
            "rte_eth_stats_reset",
            "rte_vdev_init",
            "rte_vdev_uninit",
        ] {
            b = b.allowlist_function(f);
        }
        for v in [
            "RTE_ETH_DEV_NO_OWNER",
            "RTE_MAX_ETHPORTS",
            "RTE_ETH_NAME_MAX_LEN",
            "RTE_PKTMBUF_HEADROOM",
            "RTE_MBUF_DEFAULT_DATAROOM",
            "RTE_MEMPOOL_CACHE_MAX_SIZE",
            "RTE_ETH_LINK_UP",
            "RTE_ETHER_ADDR_LEN",
        ] {
            b = b.allowlist_var(v);
        }
        b.generate()
            .unwrap_or_else(|e| {
                fail(&format!(
                    "bindgen could not read DPDK's headers: {e}. bindgen needs libclang: \
                     `apt-get install libclang-dev`."
                ))
            })
            .write_to_file(&out)
            .unwrap_or_else(|e| fail(&format!("writing {}: {e}", out.display())));
    }
}
