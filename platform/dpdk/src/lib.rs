//! Safe DPDK for SwitchGNN, over `dpdk-sys`.
//!
//! - [`Eal`]: the Environment Abstraction Layer, initialised once per process from EAL
//!   arguments (`--no-huge -m 256 --no-pci --vdev=net_memif0,...`); cleaned up when the last
//!   handle (ports and pools hold one) is dropped.
//! - [`Mempool`]: a pool of packet buffers (mbufs).
//! - [`Port`]: one ethdev with one receive and one transmit queue.
//!   [`Port::rx_burst`] hands each received frame to a callback as a byte slice borrowed
//!   straight from the mbuf (zero copy), then returns the mbufs to the pool;
//!   [`Port::tx_burst`] copies frames into mbufs and transmits them in bursts, freeing what
//!   the device did not take.
//!
//! One process, one EAL, and (SwitchGNN's model) one core: every call on a [`Port`] is made
//! from the thread that owns it. Without the default `link` feature this crate is empty.

#![cfg(feature = "link")]
#![deny(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks)]

use std::ffi::{CStr, CString};
use std::os::raw::c_char;
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dpdk_sys as sys;

/// Frames per receive or transmit burst handed to the driver at most.
pub const BURST: usize = 32;

/// Bytes of frame data an mbuf of [`Mempool::new`]'s default size holds.
pub const MBUF_DATA_ROOM: u16 = sys::RTE_MBUF_DEFAULT_DATAROOM as u16;

/// A DPDK failure: what was being done and DPDK's reason.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{what}: {reason}")]
pub struct Error {
    /// What was being done.
    pub what: String,
    /// DPDK's text for the error (`rte_strerror`), or an explanation.
    pub reason: String,
}

impl Error {
    fn new(what: impl Into<String>, reason: impl Into<String>) -> Error {
        Error {
            what: what.into(),
            reason: reason.into(),
        }
    }

    /// An error from a negative return value (`-errno`) or, if 0, from `rte_errno`.
    fn from_ret(what: impl Into<String>, ret: i32) -> Error {
        let code = if ret < 0 {
            -ret
        } else {
            // SAFETY: the shim's sgnn_rte_errno takes no arguments and only reads DPDK's
            // per-thread rte_errno, a plain int that is always initialised.
            unsafe { sys::sgnn_rte_errno() }
        };
        Error::new(what, strerror(code))
    }
}

/// `rte_strerror(code)`.
fn strerror(code: i32) -> String {
    // SAFETY: rte_strerror never returns NULL: it returns a static string or this thread's
    // buffer it has just filled, NUL-terminated either way. The CStr is copied into a String on
    // the next line, before another rte_strerror call on this thread could overwrite the buffer.
    let s = unsafe { CStr::from_ptr(sys::rte_strerror(code)) };
    s.to_string_lossy().into_owned()
}

/// `Result` with [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

static EAL_STARTED: AtomicBool = AtomicBool::new(false);

struct EalInner;

impl Drop for EalInner {
    fn drop(&mut self) {
        // SAFETY: EalInner exists once per process (EAL_STARTED), created only after
        // rte_eal_init succeeded, so cleanup runs once, after a successful init. It is dropped
        // when the last Arc goes, and every Port and Mempool holds one (their own Drop runs
        // first), so no port or pool made through this crate is left for DPDK to use.
        unsafe {
            sys::rte_eal_cleanup();
        }
    }
}

/// The initialised EAL. Clones share it; `rte_eal_cleanup` runs when the last one (including
/// those inside ports and pools) is dropped. DPDK cannot be initialised again afterwards.
#[derive(Clone)]
pub struct Eal {
    _inner: Arc<EalInner>,
}

impl std::fmt::Debug for Eal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Eal")
    }
}

/// Whether `args` choose the cores themselves (`-l`, `-c`, `--lcores`).
fn chooses_cores(args: &[String]) -> bool {
    args.iter().any(|a| {
        a == "-l"
            || a == "-c"
            || a.starts_with("--lcores")
            || (a.starts_with("-l") && a.len() > 2 && !a.starts_with("--"))
            || (a.starts_with("-c") && a.len() > 2 && !a.starts_with("--"))
    })
}

/// The CPUs this thread may run on, as an EAL cpu list (`0,1,2`).
fn allowed_cpus() -> String {
    // SAFETY: cpu_set_t is a plain array of integers (a bit set), for which all-zero bytes
    // are a valid value: the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a local, valid for writes during the call, and the size passed is
    // exactly size_of::<cpu_set_t>(), so the kernel writes only within it; pid 0 is this thread.
    let ok =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    let cpus: Vec<String> = (0..libc::CPU_SETSIZE as usize)
        .filter(|&c| {
            // SAFETY: CPU_ISSET only reads bit `c` of `set`, which is initialised (zeroed, then
            // possibly filled by the kernel); c < CPU_SETSIZE, the set's size in bits.
            ok != 0 || unsafe { libc::CPU_ISSET(c, &set) }
        })
        .take(if ok != 0 { 1 } else { usize::MAX })
        .map(|c| c.to_string())
        .collect();
    cpus.join(",")
}

impl Eal {
    /// Initialises the EAL with `args` (the EAL command line without the program name, e.g.
    /// `["--no-huge", "-m", "256", "--no-pci", "--vdev=net_null0"]`). Once per process: a
    /// second call fails.
    ///
    /// Unless `args` choose cores (`-l`, `-c` or `--lcores`), the EAL gets one lcore that may
    /// run on any CPU this process may use (`--lcores=0@(cpus)`): one core per process, not
    /// pinned, so several DPDK processes can share a small machine. Pass `-l N` to pin.
    pub fn init<I, S>(args: I) -> Result<Eal>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut args: Vec<String> = args.into_iter().map(|s| s.as_ref().to_string()).collect();
        if EAL_STARTED.swap(true, Ordering::SeqCst) {
            return Err(Error::new(
                "initialising DPDK's EAL",
                "it was already initialised in this process (once per process)",
            ));
        }
        if !chooses_cores(&args) {
            args.push(format!("--lcores=0@({})", allowed_cpus()));
        }
        let mut c: Vec<CString> = Vec::with_capacity(args.len() + 1);
        c.push(CString::new("sgnn-dpdk").expect("no NUL"));
        for a in &args {
            c.push(
                CString::new(a.as_str()).map_err(|_| {
                    Error::new("EAL arguments", format!("{a:?} contains a NUL byte"))
                })?,
            );
        }
        // EAL may keep pointers into argv (and getopt permutes it): leak both, once.
        let strings: &'static mut [CString] = Box::leak(c.into_boxed_slice());
        let mut argv: Vec<*mut c_char> =
            strings.iter().map(|s| s.as_ptr() as *mut c_char).collect();
        argv.push(ptr::null_mut());
        let argv: &'static mut [*mut c_char] = Box::leak(argv.into_boxed_slice());
        // SAFETY: argc/argv describe valid NUL-terminated strings that live forever.
        let r = unsafe { sys::rte_eal_init(strings.len() as i32, argv.as_mut_ptr()) };
        if r < 0 {
            return Err(Error::from_ret(
                format!("initialising DPDK's EAL with `{}`", args.join(" ")),
                0,
            ));
        }
        Ok(Eal {
            _inner: Arc::new(EalInner),
        })
    }

    /// The ids of the available ethdevs, in order (vdevs in command-line order).
    pub fn ports(&self) -> Vec<u16> {
        let mut out = Vec::new();
        let mut p: u64 = 0;
        loop {
            // SAFETY: takes and returns integers only; `p` < RTE_MAX_ETHPORTS (the loop stops
            // before), and the EAL is initialised (`self` exists only after rte_eal_init
            // succeeded), so the ethdev table it scans exists.
            let next = unsafe { sys::rte_eth_find_next_owned_by(p as u16, 0) };
            if next >= sys::RTE_MAX_ETHPORTS as u64 {
                break;
            }
            out.push(next as u16);
            p = next + 1;
            if p >= sys::RTE_MAX_ETHPORTS as u64 {
                break;
            }
        }
        out
    }

    /// The id of the ethdev called `name` (a vdev's name, e.g. `net_memif0`).
    pub fn port_by_name(&self, name: &str) -> Result<u16> {
        let what = format!("finding DPDK port {name:?}");
        let c = CString::new(name).map_err(|_| Error::new(&what, "NUL in the name"))?;
        let mut id = 0u16;
        // SAFETY: `c` is a NUL-terminated string alive across the call, only read; `id` is a
        // local u16, valid for the one write the function makes on success; the EAL is
        // initialised (`self`).
        let r = unsafe { sys::rte_eth_dev_get_port_by_name(c.as_ptr(), &mut id) };
        if r != 0 {
            let names: Vec<String> = self.ports().iter().map(|&p| port_name(p)).collect();
            return Err(Error::new(
                what,
                format!("no such ethdev (there are: {})", names.join(", ")),
            ));
        }
        Ok(id)
    }

    /// Resolves `which`: a number is a port id, anything else an ethdev name.
    pub fn resolve(&self, which: &str) -> Result<u16> {
        match which.parse::<u16>() {
            Ok(id) => {
                // SAFETY: takes only a port id, which it range-checks itself (any u16 is
                // accepted); the EAL is initialised (`self`).
                if unsafe { sys::rte_eth_dev_is_valid_port(id) } == 1 {
                    Ok(id)
                } else {
                    Err(Error::new(
                        format!("opening DPDK port {id}"),
                        format!(
                            "no such port ({} ethdevs: give the EAL a --vdev or a device)",
                            self.ports().len()
                        ),
                    ))
                }
            }
            Err(_) => self.port_by_name(which),
        }
    }
}

fn port_name(id: u16) -> String {
    let mut buf = [0 as c_char; sys::RTE_ETH_NAME_MAX_LEN as usize];
    // SAFETY: `buf` is a local array of RTE_ETH_NAME_MAX_LEN bytes, the size the function
    // requires and writes at most (name and NUL); an invalid `id` is an error return, not UB.
    let r = unsafe { sys::rte_eth_dev_get_name_by_port(id, buf.as_mut_ptr()) };
    if r != 0 {
        return format!("port{id}");
    }
    // SAFETY: r == 0, so the function wrote a NUL-terminated name within `buf`, which outlives
    // the CStr: it is copied into a String in this expression.
    unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

/// A pool of packet buffers, freed when the last port using it is gone.
pub struct Mempool {
    ptr: NonNull<sys::rte_mempool>,
    _eal: Eal,
}

// SAFETY: the pool's default (ring) handler is multi-producer/multi-consumer safe.
unsafe impl Send for Mempool {}
// SAFETY: as above; every operation on the pool goes through DPDK's thread-safe ops.
unsafe impl Sync for Mempool {}

impl std::fmt::Debug for Mempool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mempool")
            .field("available", &self.available())
            .finish()
    }
}

impl Mempool {
    /// A pool of `mbufs` buffers (`2^k - 1` is most memory-efficient) with `data_room` bytes
    /// of frame data each ([`MBUF_DATA_ROOM`] for ordinary frames) and a per-lcore cache.
    /// `name` must be unique in the process.
    pub fn new(eal: &Eal, name: &str, mbufs: u32, data_room: u16) -> Result<Arc<Mempool>> {
        let what = format!("creating mbuf pool {name:?} of {mbufs} buffers");
        let c = CString::new(name).map_err(|_| Error::new(&what, "NUL in the name"))?;
        let cache = (mbufs / 16).min(sys::RTE_MEMPOOL_CACHE_MAX_SIZE);
        // SAFETY: `c` is a NUL-terminated name alive across the call (DPDK copies it); the other
        // arguments are integers, with cache <= RTE_MEMPOOL_CACHE_MAX_SIZE as DPDK requires; the
        // EAL is initialised (`eal`). Failure is a NULL return, which NonNull::new checks next.
        let p = unsafe {
            sys::rte_pktmbuf_pool_create(
                c.as_ptr(),
                mbufs,
                cache,
                0,
                data_room.saturating_add(sys::RTE_PKTMBUF_HEADROOM as u16),
                sys::SOCKET_ID_ANY,
            )
        };
        let ptr = NonNull::new(p).ok_or_else(|| {
            let e = Error::from_ret(&what, 0);
            Error::new(
                e.what,
                format!("{} (is the EAL's memory, -m MB, large enough?)", e.reason),
            )
        })?;
        Ok(Arc::new(Mempool {
            ptr,
            _eal: eal.clone(),
        }))
    }

    /// Buffers currently free in the pool (including per-lcore caches).
    pub fn available(&self) -> u32 {
        // SAFETY: `self.ptr` is the pool rte_pktmbuf_pool_create returned (non-NULL), freed only
        // in Drop, so it is valid while `self` is borrowed; counting only reads the pool's ring
        // and per-lcore cache lengths.
        unsafe { sys::rte_mempool_avail_count(self.ptr.as_ptr()) }
    }

    /// Buffers currently taken from the pool.
    pub fn in_use(&self) -> u32 {
        // SAFETY: as in `available`: `self.ptr` is the live pool, freed only in Drop, and the
        // count only reads its ring and per-lcore cache lengths.
        unsafe { sys::rte_mempool_in_use_count(self.ptr.as_ptr()) }
    }
}

impl Drop for Mempool {
    fn drop(&mut self) {
        // SAFETY: `self.ptr` came from rte_pktmbuf_pool_create and is freed only here, once.
        // Pools are handed out only in an Arc, and a Port keeps its clone until after its Drop
        // has stopped and closed the device (returning its receive ring's mbufs), so no queue
        // uses the pool any more. The EAL is still up: `_eal` is dropped after this body.
        unsafe { sys::rte_mempool_free(self.ptr.as_ptr()) }
    }
}

/// How a [`Port`] is set up.
#[derive(Debug, Clone)]
pub struct PortConfig {
    /// Receive descriptors (adjusted to what the device supports).
    pub rx_queue_size: u16,
    /// Transmit descriptors (adjusted to what the device supports).
    pub tx_queue_size: u16,
    /// Receive every frame, whatever its destination MAC (ignored by devices that cannot).
    pub promiscuous: bool,
    /// How long [`Port::tx_flush`] keeps offering the device what it did not take (its ring
    /// full: the peer is slow, or descheduled) before dropping it. Frames for a link that is
    /// down are dropped at once.
    pub tx_wait: Duration,
}

impl Default for PortConfig {
    fn default() -> Self {
        PortConfig {
            rx_queue_size: 1024,
            tx_queue_size: 1024,
            promiscuous: true,
            tx_wait: Duration::from_micros(200),
        }
    }
}

/// A port's counters: the device's (`rte_eth_stats`) and this wrapper's. The wrapper counts
/// what passed through [`Port::rx_burst`] and [`Port::tx_burst`] itself, because not every
/// driver counts (DPDK 22.11's memif reports zeros on the server side).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PortStats {
    /// Frames received by the device.
    pub ipackets: u64,
    /// Frames transmitted by the device.
    pub opackets: u64,
    /// Bytes received.
    pub ibytes: u64,
    /// Bytes transmitted.
    pub obytes: u64,
    /// Frames the device dropped because its receive queue was full.
    pub imissed: u64,
    /// Receive errors.
    pub ierrors: u64,
    /// Transmit errors.
    pub oerrors: u64,
    /// Receive buffer allocation failures.
    pub rx_nombuf: u64,
    /// Frames [`Port::rx_burst`] delivered.
    pub rx_frames: u64,
    /// Bytes [`Port::rx_burst`] delivered.
    pub rx_bytes: u64,
    /// Frames the device took from [`Port::tx_burst`].
    pub tx_frames: u64,
    /// Bytes the device took from [`Port::tx_burst`].
    pub tx_bytes: u64,
    /// Frames [`Port::tx_burst`] dropped because the device did not take them (ring full,
    /// link down).
    pub tx_dropped: u64,
    /// Frames [`Port::tx_burst`] dropped for want of an mbuf, or because they were larger
    /// than one.
    pub tx_nombuf: u64,
}

/// One ethdev, started, with one receive and one transmit queue (queue 0). Stopped and
/// closed when dropped.
pub struct Port {
    id: u16,
    name: String,
    driver: String,
    pool: Arc<Mempool>,
    cfg: PortConfig,
    rx: Vec<*mut sys::rte_mbuf>,
    pending: Vec<*mut sys::rte_mbuf>,
    pending_bytes: u64,
    scratch: Vec<u8>,
    counters: PortStats,
    _eal: Eal,
}

// SAFETY: a port's queues are used by one thread at a time (&mut self); the mbufs it holds
// between calls (queued for transmission) belong to it alone.
unsafe impl Send for Port {}

impl std::fmt::Debug for Port {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Port")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("driver", &self.driver)
            .finish()
    }
}

impl Port {
    /// Configures and starts ethdev `id` with one queue pair whose receive buffers come from
    /// `pool`.
    pub fn open(eal: &Eal, id: u16, pool: Arc<Mempool>, cfg: &PortConfig) -> Result<Port> {
        let name = port_name(id);
        let what = |s: &str| format!("{s} DPDK port {id} ({name})");
        // SAFETY: `id` is checked with rte_eth_dev_is_valid_port before any other call uses it.
        // Every pointer passed (`&mut info`, `&conf`, `&mut nrx`, `&mut ntx`) is to a local alive
        // across its call; `info` and `conf` are plain C structs for which all-zero bytes are
        // valid (for `conf`: no offloads, default modes). `info.driver_name` is checked for NULL
        // and otherwise points to the driver's static NUL-terminated name, copied at once. The
        // receive queue keeps `pool.ptr`, a live pool whose Arc the returned Port holds until
        // its Drop has closed the device. NULL queue configs select the driver's defaults.
        unsafe {
            if sys::rte_eth_dev_is_valid_port(id) != 1 {
                return Err(Error::new(what("opening"), "no such port"));
            }
            let mut info: sys::rte_eth_dev_info = std::mem::zeroed();
            let r = sys::rte_eth_dev_info_get(id, &mut info);
            if r != 0 {
                return Err(Error::from_ret(what("querying"), r));
            }
            let driver = if info.driver_name.is_null() {
                "?".to_string()
            } else {
                CStr::from_ptr(info.driver_name)
                    .to_string_lossy()
                    .into_owned()
            };
            let conf: sys::rte_eth_conf = std::mem::zeroed();
            let r = sys::rte_eth_dev_configure(id, 1, 1, &conf);
            if r < 0 {
                return Err(Error::from_ret(what("configuring"), r));
            }
            let (mut nrx, mut ntx) = (cfg.rx_queue_size, cfg.tx_queue_size);
            let r = sys::rte_eth_dev_adjust_nb_rx_tx_desc(id, &mut nrx, &mut ntx);
            if r < 0 {
                return Err(Error::from_ret(what("sizing the queues of"), r));
            }
            let socket = sys::rte_eth_dev_socket_id(id).max(0) as u32;
            let r = sys::rte_eth_rx_queue_setup(id, 0, nrx, socket, ptr::null(), pool.ptr.as_ptr());
            if r < 0 {
                return Err(Error::from_ret(what("setting up the receive queue of"), r));
            }
            let r = sys::rte_eth_tx_queue_setup(id, 0, ntx, socket, ptr::null());
            if r < 0 {
                return Err(Error::from_ret(what("setting up the transmit queue of"), r));
            }
            let r = sys::rte_eth_dev_start(id);
            if r < 0 {
                return Err(Error::from_ret(what("starting"), r));
            }
            if cfg.promiscuous {
                // Not every device has the notion (memif): best effort.
                let _ = sys::rte_eth_promiscuous_enable(id);
            }
            Ok(Port {
                id,
                name,
                driver,
                pool,
                cfg: cfg.clone(),
                rx: vec![ptr::null_mut(); BURST],
                pending: Vec::with_capacity(BURST),
                pending_bytes: 0,
                scratch: Vec::new(),
                counters: PortStats::default(),
                _eal: eal.clone(),
            })
        }
    }

    /// The ethdev id.
    pub fn id(&self) -> u16 {
        self.id
    }

    /// The ethdev name (e.g. `net_memif0`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The driver's name (e.g. `net_memif`).
    pub fn driver(&self) -> &str {
        &self.driver
    }

    /// The port's MAC address.
    pub fn mac(&self) -> [u8; 6] {
        let mut a: sys::rte_ether_addr = Default::default();
        // SAFETY: `self.id` is a port that `open` validated and started, closed only in Drop;
        // `a` is a local rte_ether_addr, valid for the 6-byte write.
        unsafe { sys::rte_eth_macaddr_get(self.id, &mut a) };
        a.addr_bytes
    }

    /// Whether the link is up now (a memif link is up once its peer connected).
    pub fn link_up(&self) -> bool {
        let mut l: sys::rte_eth_link = Default::default();
        // SAFETY: `self.id` is a port that `open` validated and started, closed only in Drop;
        // `l` is a local rte_eth_link, valid for the write.
        let r = unsafe { sys::rte_eth_link_get_nowait(self.id, &mut l) };
        r == 0 && u32::from(l.link_status()) == sys::RTE_ETH_LINK_UP
    }

    /// Waits up to `timeout` for the link to come up; returns whether it did.
    pub fn wait_link_up(&self, timeout: Duration) -> bool {
        let t = Instant::now();
        loop {
            if self.link_up() {
                return true;
            }
            if t.elapsed() >= timeout {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Receives up to `max` frames (at most [`BURST`] per driver call) and passes each to
    /// `deliver` as a slice of the mbuf's own memory (no copy; a frame in several segments
    /// is copied into one slice), then frees the mbufs. Does not wait. Returns the number of
    /// frames delivered.
    pub fn rx_burst(&mut self, max: usize, mut deliver: impl FnMut(&[u8])) -> usize {
        let mut total = 0;
        while total < max {
            let want = (max - total).min(BURST) as u16;
            // SAFETY: `self.rx` has BURST slots and `want` <= BURST, so the driver writes at most
            // `want` mbuf pointers, all within it; queue 0 of the started port `self.id` exists
            // (set up in `open`) and only this thread polls it (`&mut self`).
            let n = unsafe { sys::sgnn_rte_eth_rx_burst(self.id, 0, self.rx.as_mut_ptr(), want) }
                as usize;
            for i in 0..n {
                let m = self.rx[i];
                // SAFETY: `m` is one of the n mbufs the driver just handed over, ours until the
                // free below. mtod and data_len give each segment's data, initialised by the
                // driver, so every slice is in bounds; segments are followed through `next` to
                // NULL. A slice lives only for the call to `deliver`, which cannot keep it (the
                // borrow is not 'static), and the mbufs are freed only after the loop.
                unsafe {
                    if sys::sgnn_rte_pktmbuf_nb_segs(m) == 1 {
                        let len = sys::sgnn_rte_pktmbuf_data_len(m) as usize;
                        let data = std::slice::from_raw_parts(
                            sys::sgnn_rte_pktmbuf_mtod(m) as *const u8,
                            len,
                        );
                        self.counters.rx_bytes += len as u64;
                        deliver(data);
                    } else {
                        self.scratch.clear();
                        let mut seg = m;
                        while !seg.is_null() {
                            let len = sys::sgnn_rte_pktmbuf_data_len(seg) as usize;
                            self.scratch.extend_from_slice(std::slice::from_raw_parts(
                                sys::sgnn_rte_pktmbuf_mtod(seg) as *const u8,
                                len,
                            ));
                            seg = sys::sgnn_rte_pktmbuf_next(seg);
                        }
                        self.counters.rx_bytes += self.scratch.len() as u64;
                        deliver(&self.scratch);
                    }
                }
            }
            if n > 0 {
                // SAFETY: `self.rx[..n]` are the n mbufs received above, ours, with no slice into
                // them left; each is freed exactly once (the slots are overwritten by the next
                // receive, never freed again).
                unsafe { sys::rte_pktmbuf_free_bulk(self.rx.as_mut_ptr(), n as u32) };
            }
            total += n;
            self.counters.rx_frames += n as u64;
            if n < want as usize {
                break;
            }
        }
        total
    }

    /// Transmits `frames` (whole Ethernet frames, each copied into an mbuf) in bursts of
    /// [`BURST`]. What the device does not take within [`PortConfig::tx_wait`] is
    /// freed and counted ([`PortStats::tx_dropped`]), like loss on a congested link. Returns
    /// how many of `frames` the device took (frames queued earlier by [`Port::tx_queue`] go
    /// first and are not counted).
    pub fn tx_burst<F: AsRef<[u8]>>(&mut self, frames: &[F]) -> usize {
        self.tx_flush();
        let before = self.counters.tx_frames;
        for f in frames {
            // Flushes by itself every BURST frames.
            self.tx_queue(f.as_ref());
        }
        self.tx_flush();
        (self.counters.tx_frames - before) as usize
    }

    /// Copies `frame` into an mbuf and queues it for [`Port::tx_flush`] (which runs by itself
    /// once [`BURST`] frames wait). Returns false if the frame was dropped: no free mbuf, or
    /// larger than one ([`PortStats::tx_nombuf`]).
    pub fn tx_queue(&mut self, frame: &[u8]) -> bool {
        // SAFETY: `self.pool` is alive (this Port's Arc). The mbuf is checked for NULL and is ours
        // until pushed to `pending` or freed here. rte_pktmbuf_append returns NULL (checked)
        // unless the mbuf has `frame.len()` bytes of tailroom, else a pointer to exactly that
        // many writable bytes, so the copy stays inside the mbuf; `frame` is a Rust slice,
        // which cannot overlap DPDK's buffer.
        unsafe {
            let m = sys::sgnn_rte_pktmbuf_alloc(self.pool.ptr.as_ptr());
            if m.is_null() {
                self.counters.tx_nombuf += 1;
                return false;
            }
            let p = if frame.len() <= u16::MAX as usize {
                sys::sgnn_rte_pktmbuf_append(m, frame.len() as u16)
            } else {
                ptr::null_mut()
            };
            if p.is_null() {
                sys::sgnn_rte_pktmbuf_free(m);
                self.counters.tx_nombuf += 1;
                return false;
            }
            ptr::copy_nonoverlapping(frame.as_ptr(), p as *mut u8, frame.len());
            self.pending.push(m);
            self.pending_bytes += frame.len() as u64;
        }
        if self.pending.len() >= BURST {
            self.tx_flush();
        }
        true
    }

    /// Transmits the frames queued by [`Port::tx_queue`]; returns how many the device took.
    /// The rest are freed and counted as [`PortStats::tx_dropped`].
    pub fn tx_flush(&mut self) -> usize {
        let ready = self.pending.len();
        if ready == 0 {
            return 0;
        }
        let mut done = 0;
        let mut since: Option<Instant> = None;
        // SAFETY: `pending` holds `ready` filled mbufs that are ours until the device takes
        // them; `done` <= `ready`, so `as_mut_ptr().add(done)` and the counts passed stay within
        // it. The device may free what it took at once, so only the mbufs in `pending[done..]`
        // (not taken, still ours) are read (pkt_len) and then freed, each once; `pending` is
        // cleared right after, so no freed pointer is used again. Queue 0 is only this thread's.
        unsafe {
            while done < ready {
                let k = sys::sgnn_rte_eth_tx_burst(
                    self.id,
                    0,
                    self.pending.as_mut_ptr().add(done),
                    (ready - done) as u16,
                ) as usize;
                done += k;
                if k == 0 {
                    // The slow path: a link that is down (a memif peer not connected yet, or
                    // gone) will not take anything; do not wait for it.
                    if since.is_none() && !self.link_up() {
                        break;
                    }
                    let t = *since.get_or_insert_with(Instant::now);
                    if t.elapsed() > self.cfg.tx_wait {
                        break;
                    }
                    std::hint::spin_loop();
                }
            }
            let mut dropped_bytes = 0u64;
            if done < ready {
                for &m in &self.pending[done..] {
                    dropped_bytes += sys::sgnn_rte_pktmbuf_pkt_len(m) as u64;
                }
                sys::rte_pktmbuf_free_bulk(
                    self.pending.as_mut_ptr().add(done),
                    (ready - done) as u32,
                );
                self.counters.tx_dropped += (ready - done) as u64;
            }
            self.counters.tx_frames += done as u64;
            self.counters.tx_bytes += self.pending_bytes - dropped_bytes;
        }
        self.pending.clear();
        self.pending_bytes = 0;
        done
    }

    /// The device's counters and this wrapper's drop counters.
    pub fn stats(&self) -> Result<PortStats> {
        let mut s: sys::rte_eth_stats = Default::default();
        // SAFETY: `self.id` is a port that `open` validated and started, closed only in Drop;
        // `s` is a local rte_eth_stats, valid for the write.
        let r = unsafe { sys::rte_eth_stats_get(self.id, &mut s) };
        if r != 0 {
            return Err(Error::from_ret(
                format!("reading the counters of DPDK port {}", self.name),
                r,
            ));
        }
        Ok(PortStats {
            ipackets: s.ipackets,
            opackets: s.opackets,
            ibytes: s.ibytes,
            obytes: s.obytes,
            imissed: s.imissed,
            ierrors: s.ierrors,
            oerrors: s.oerrors,
            rx_nombuf: s.rx_nombuf,
            ..self.counters
        })
    }

    /// The pool the port receives into.
    pub fn pool(&self) -> &Arc<Mempool> {
        &self.pool
    }
}

impl Drop for Port {
    fn drop(&mut self) {
        self.tx_flush();
        // SAFETY: `self.id` was started by `open` and is stopped and closed only here, once (a
        // Port is not Clone). tx_flush above gave back every mbuf we held; closing returns the
        // receive ring's mbufs to `self.pool`, still alive (fields drop after this body).
        unsafe {
            sys::rte_eth_dev_stop(self.id);
            sys::rte_eth_dev_close(self.id);
        }
    }
}

/// Formats a MAC address as `02:00:00:00:00:01`.
pub fn format_mac(mac: &[u8; 6]) -> String {
    mac.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}
