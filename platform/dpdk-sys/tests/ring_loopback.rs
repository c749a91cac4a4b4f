//! Raw-FFI smoke test: DPDK's EAL with a `net_ring` loopback port (what is transmitted on a
//! queue comes back on the same queue's receive side) sends and receives real mbufs through
//! the shim's burst functions; frame count, bytes and contents are checked, and so are the
//! port's counters.
//!
//! `harness = false`: EAL takes over the process it runs in (signal-free, but it pins threads
//! and may be initialised once only), so `main` runs the DPDK part in a child process, itself
//! re-executed with `SGNN_DPDK_SYS_CHILD=1`, and judges its output and exit status.

use std::ffi::{CStr, CString};
use std::os::raw::c_char;
use std::process::Command;
use std::ptr;

use dpdk_sys::*;

const FRAMES: usize = 1000;
const BURST: usize = 32;

fn frame(i: usize) -> Vec<u8> {
    // Lengths 60..=1059, contents a function of the index: a mix-up or a truncation shows.
    let len = 60 + i % 1000;
    (0..len).map(|k| (i * 7 + k * 13) as u8).collect()
}

fn err(what: &str) -> String {
    // SAFETY: rte_strerror returns a static string for any errno value.
    let msg = unsafe { CStr::from_ptr(rte_strerror(sgnn_rte_errno())) };
    format!("{what}: {}", msg.to_string_lossy())
}

fn child() -> Result<String, String> {
    let args: Vec<CString> = [
        "ring_loopback",
        "--no-huge",
        "-m",
        "64",
        "--no-pci",
        "--no-shconf",
        "--no-telemetry",
        "--log-level=lib.eal:warning",
        "--vdev=net_ring0",
    ]
    .iter()
    .map(|s| CString::new(*s).unwrap())
    .collect();
    let mut argv: Vec<*mut c_char> = args.iter().map(|a| a.as_ptr() as *mut c_char).collect();
    argv.push(ptr::null_mut());
    // SAFETY: this child process runs the EAL once and nothing else. `argv` points into
    // `args`, NUL-terminated C strings alive until the end of the function; every other pointer
    // passed is to a local alive across its call (`conf`, all-zero bytes being a valid
    // rte_eth_conf), or is an mbuf or pool DPDK returned, checked for NULL, used only while it
    // is ours (allocated and not yet sent, or received and not yet freed) and freed once.
    unsafe {
        if rte_eal_init(args.len() as i32, argv.as_mut_ptr()) < 0 {
            return Err(err("rte_eal_init"));
        }
        if rte_eth_dev_count_avail() != 1 {
            return Err(format!(
                "{} ethdevs, want 1 (is the net_ring driver linked?)",
                rte_eth_dev_count_avail()
            ));
        }
        let port = rte_eth_find_next_owned_by(0, RTE_ETH_DEV_NO_OWNER as u64) as u16;
        let name = CString::new("sys_test_pool").unwrap();
        let pool = rte_pktmbuf_pool_create(
            name.as_ptr(),
            2047,
            64,
            0,
            (RTE_MBUF_DEFAULT_DATAROOM + RTE_PKTMBUF_HEADROOM) as u16,
            SOCKET_ID_ANY,
        );
        if pool.is_null() {
            return Err(err("rte_pktmbuf_pool_create"));
        }
        let conf: rte_eth_conf = std::mem::zeroed();
        if rte_eth_dev_configure(port, 1, 1, &conf) < 0 {
            return Err("rte_eth_dev_configure failed".into());
        }
        if rte_eth_rx_queue_setup(port, 0, 512, SOCKET_ID_ANY as u32, ptr::null(), pool) < 0
            || rte_eth_tx_queue_setup(port, 0, 512, SOCKET_ID_ANY as u32, ptr::null()) < 0
        {
            return Err("queue setup failed".into());
        }
        if rte_eth_dev_start(port) < 0 {
            return Err("rte_eth_dev_start failed".into());
        }
        let (mut sent_bytes, mut got_bytes, mut got) = (0u64, 0u64, 0usize);
        for start in (0..FRAMES).step_by(BURST) {
            let n = BURST.min(FRAMES - start);
            let mut tx: Vec<*mut rte_mbuf> = vec![ptr::null_mut(); n];
            if sgnn_rte_pktmbuf_alloc_bulk(pool, tx.as_mut_ptr(), n as u32) != 0 {
                return Err("mbuf pool empty".into());
            }
            for (k, &m) in tx.iter().enumerate() {
                let f = frame(start + k);
                let p = sgnn_rte_pktmbuf_append(m, f.len() as u16);
                if p.is_null() {
                    return Err("rte_pktmbuf_append failed".into());
                }
                ptr::copy_nonoverlapping(f.as_ptr(), p as *mut u8, f.len());
                sent_bytes += f.len() as u64;
            }
            let took = sgnn_rte_eth_tx_burst(port, 0, tx.as_mut_ptr(), n as u16) as usize;
            if took != n {
                return Err(format!("tx_burst took {took} of {n}"));
            }
            let mut rx: Vec<*mut rte_mbuf> = vec![ptr::null_mut(); BURST];
            let r = sgnn_rte_eth_rx_burst(port, 0, rx.as_mut_ptr(), BURST as u16) as usize;
            if r != n {
                return Err(format!("rx_burst returned {r}, {n} were sent"));
            }
            for &m in &rx[..r] {
                let len = sgnn_rte_pktmbuf_pkt_len(m) as usize;
                if sgnn_rte_pktmbuf_nb_segs(m) != 1 || sgnn_rte_pktmbuf_data_len(m) as usize != len
                {
                    return Err("a small frame came back in several segments".into());
                }
                let data = std::slice::from_raw_parts(sgnn_rte_pktmbuf_mtod(m) as *const u8, len);
                if data != frame(got).as_slice() {
                    return Err(format!("frame {got} came back different"));
                }
                got += 1;
                got_bytes += len as u64;
            }
            rte_pktmbuf_free_bulk(rx.as_mut_ptr(), r as u32);
        }
        let mut st: rte_eth_stats = std::mem::zeroed();
        if rte_eth_stats_get(port, &mut st) != 0 {
            return Err("rte_eth_stats_get failed".into());
        }
        if st.opackets != FRAMES as u64 || st.ipackets != FRAMES as u64 {
            return Err(format!(
                "port counters: {} out, {} in",
                st.opackets, st.ipackets
            ));
        }
        if sgnn_rte_pktmbuf_alloc(pool).is_null() {
            return Err("every mbuf should be back in the pool".into());
        }
        rte_eth_dev_stop(port);
        rte_eth_dev_close(port);
        rte_mempool_free(pool);
        rte_eal_cleanup();
        Ok(format!(
            "frames={got} bytes={got_bytes} sent_bytes={sent_bytes}"
        ))
    }
}

fn main() {
    if std::env::var_os("SGNN_DPDK_SYS_CHILD").is_some() {
        match child() {
            Ok(s) => {
                println!("RESULT {s}");
                std::process::exit(0)
            }
            Err(e) => {
                eprintln!("child failed: {e}");
                std::process::exit(1)
            }
        }
    }
    let out = Command::new(std::env::current_exe().unwrap())
        .env("SGNN_DPDK_SYS_CHILD", "1")
        .output()
        .expect("spawning the DPDK child");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let want: u64 = (0..FRAMES).map(|i| frame(i).len() as u64).sum();
    let line = format!("RESULT frames={FRAMES} bytes={want} sent_bytes={want}");
    if !out.status.success() || !stdout.lines().any(|l| l == line) {
        eprintln!("--- child stdout\n{stdout}--- child stderr\n{stderr}");
        eprintln!(
            "ring_loopback: FAILED (status {:?}, wanted `{line}`)",
            out.status
        );
        println!("test result: FAILED. 0 passed; 1 failed");
        std::process::exit(1);
    }
    println!("ring_loopback: {FRAMES} frames, {want} bytes through net_ring");
    println!("test result: ok. 1 passed; 0 failed");
}
