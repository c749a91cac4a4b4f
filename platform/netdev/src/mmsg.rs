//! Batched UDP I/O: many datagrams per system call (`recvmmsg`, `sendmmsg`), and many
//! datagrams per trip through the kernel's UDP stack (UDP GSO and GRO).
//!
//! One datagram per system call is what bounds a UDP datapath on loopback: the call's fixed
//! cost (entry, socket lock, wake-up) is several times a small frame's copy. These move up to
//! a batch of datagrams per call with the same per-datagram meaning as `recv_from` and
//! `send_to`: each datagram is whole or not there, and the order is kept. The daemon's
//! `UdpDatapath` and the software switch's `UdpPorts` use them (docs/host.md, "Batched I/O").
//!
//! Batching the calls leaves the kernel's per-datagram path (socket accounting, IP and UDP,
//! the device, the receiver's wake-up) as it was. **GSO** (`UDP_SEGMENT`, [`send_batch`] with
//! `gso`) sends a run of equal-sized datagrams to one address as one message that the stack
//! carries whole and cuts into datagrams only where it must (on loopback: not at all when the
//! receiver takes GRO); **GRO** (`UDP_GRO`, [`enable_gro`] and [`RecvBatch::with_gro`]) lets
//! a receiver take such a train whole and cut it here. The datagrams on the wire, their order
//! and their boundaries are the same either way. A device without checksum offload refuses
//! GSO (`EIO`); callers then send without it.

use std::io;
use std::mem::{size_of, MaybeUninit};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::{AsRawFd, BorrowedFd};

use crate::MAX_FRAME;

/// Datagrams per system call at most (the kernel's `UIO_MAXIOV` is 1024; beyond a few dozen
/// the call's cost is spread thin already).
pub const BATCH: usize = 64;

/// `UDP_SEGMENT` of `include/uapi/linux/udp.h` (not in the libc crate for glibc targets).
const UDP_SEGMENT: libc::c_int = 103;
/// `UDP_GRO` of `include/uapi/linux/udp.h`.
const UDP_GRO: libc::c_int = 104;
/// Bytes of one GSO message's payload at most (a UDP datagram holds 65,507).
const GSO_BYTES: usize = 60_000;
/// Bytes of a receive buffer with GRO: the largest UDP payload, whole.
const GRO_BUF: usize = 65_536;
/// Messages per `recvmmsg` with GRO (each may hold a train of datagrams).
const GRO_MSGS: usize = 32;
/// Control buffer of one message: room for one `cmsghdr` with a 16- or 32-bit value.
type Cmsg = [u64; 4];

/// Whether `UDP_SEGMENT` and `UDP_GRO` are used where they can be: on unless the
/// environment sets `SGNN_UDP_OFFLOAD=0` (for measuring the datapath without them).
pub fn offload_enabled() -> bool {
    std::env::var("SGNN_UDP_OFFLOAD").map_or(true, |v| v != "0")
}

/// Asks the kernel to deliver trains of datagrams from one sender whole (`UDP_GRO`); read
/// them with a [`RecvBatch::with_gro`].
pub fn enable_gro(fd: BorrowedFd<'_>) -> io::Result<()> {
    crate::sockbuf::set_int(fd, libc::SOL_UDP, UDP_GRO, 1)
}

/// A socket address as the kernel's `sockaddr_storage`, and its length.
fn to_sockaddr(a: &SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is plain old data; all zeroes is a valid (AF_UNSPEC) value.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match a {
        SocketAddr::V4(v4) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: v4.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(v4.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than and aligned for every sockaddr_*.
            unsafe { std::ptr::write(&mut ss as *mut _ as *mut libc::sockaddr_in, sin) };
            size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(v6) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: v6.port().to_be(),
                sin6_flowinfo: v6.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: v6.ip().octets(),
                },
                sin6_scope_id: v6.scope_id(),
            };
            // SAFETY: as above.
            unsafe { std::ptr::write(&mut ss as *mut _ as *mut libc::sockaddr_in6, sin6) };
            size_of::<libc::sockaddr_in6>()
        }
    };
    (ss, len as libc::socklen_t)
}

/// The address the kernel wrote into `ss`, if it is IPv4 or IPv6.
fn from_sockaddr(ss: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match ss.ss_family as libc::c_int {
        libc::AF_INET => {
            // SAFETY: the family says the kernel wrote a sockaddr_in; storage is aligned for it.
            let sin = unsafe { &*(ss as *const _ as *const libc::sockaddr_in) };
            Some(SocketAddr::V4(SocketAddrV4::new(
                Ipv4Addr::from(sin.sin_addr.s_addr.to_ne_bytes()),
                u16::from_be(sin.sin_port),
            )))
        }
        libc::AF_INET6 => {
            // SAFETY: as above, for sockaddr_in6.
            let sin6 = unsafe { &*(ss as *const _ as *const libc::sockaddr_in6) };
            Some(SocketAddr::V6(SocketAddrV6::new(
                Ipv6Addr::from(sin6.sin6_addr.s6_addr),
                u16::from_be(sin6.sin6_port),
                sin6.sin6_flowinfo,
                sin6.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

/// Buffers for receiving up to [`BATCH`] datagrams of up to [`MAX_FRAME`] bytes in one call,
/// or, [`RecvBatch::with_gro`], up to 32 messages of trains of datagrams.
pub struct RecvBatch {
    bufs: Vec<u8>,
    /// Bytes of each message's buffer (`bufs` holds the messages of one call).
    msg_size: usize,
    addrs: Box<[libc::sockaddr_storage; BATCH]>,
    /// Control buffers (the GRO segment size), when GRO is on.
    ctl: Option<Box<[Cmsg; GRO_MSGS]>>,
    /// Datagrams of the last call: start in `bufs`, length, message.
    dgrams: Vec<(usize, usize, usize)>,
    /// Messages the kernel delivered in all calls (fewer than datagrams when GRO joined them).
    pub messages: u64,
}

impl std::fmt::Debug for RecvBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecvBatch")
            .field("count", &self.dgrams.len())
            .field("gro", &self.ctl.is_some())
            .finish()
    }
}

impl Default for RecvBatch {
    fn default() -> Self {
        RecvBatch::new()
    }
}

impl RecvBatch {
    /// Empty buffers (about 590 KB), one datagram per message.
    pub fn new() -> RecvBatch {
        RecvBatch::sized(BATCH, MAX_FRAME, false)
    }

    /// Empty buffers for a socket with [`enable_gro`] (2 MB): each message may be a train of
    /// datagrams from one sender, cut here at the segment size the kernel reports.
    pub fn with_gro() -> RecvBatch {
        RecvBatch::sized(GRO_MSGS, GRO_BUF, true)
    }

    /// `msgs` messages of `msg_size` bytes a call, with control buffers for GRO's segment size
    /// (`gro`, at most [`GRO_MSGS`] messages).
    fn sized(msgs: usize, msg_size: usize, gro: bool) -> RecvBatch {
        debug_assert!(msgs <= BATCH && (!gro || msgs <= GRO_MSGS));
        RecvBatch {
            bufs: vec![0u8; msgs * msg_size],
            msg_size,
            // SAFETY: all zeroes is a valid sockaddr_storage.
            addrs: Box::new(unsafe { std::mem::zeroed() }),
            ctl: gro.then(|| Box::new([[0; 4]; GRO_MSGS])),
            // A message holds one datagram, or with GRO up to a train of BATCH.
            dgrams: Vec::with_capacity(if gro { msgs * BATCH } else { msgs }),
            messages: 0,
        }
    }

    /// The buffers for socket `fd`: with `offload`, GRO turned on ([`enable_gro`]) and
    /// [`RecvBatch::with_gro`]; without it, or where the kernel refuses GRO, [`RecvBatch::new`].
    pub fn for_socket(fd: BorrowedFd<'_>, offload: bool) -> RecvBatch {
        if offload && enable_gro(fd).is_ok() {
            RecvBatch::with_gro()
        } else {
            RecvBatch::new()
        }
    }

    /// Receives up to `max` (at most [`BATCH`]) messages from `fd` in one `recvmmsg`: as many
    /// datagrams, or, with GRO, trains of them (so more than `max` datagrams may come).
    /// `wait_for_one`: block (up to the socket's receive timeout, on a blocking socket) for
    /// the first, then take only what is there (`MSG_WAITFORONE`); otherwise the socket's own
    /// blocking mode decides. Returns how many datagrams; errors as `recv_from`'s
    /// (`WouldBlock` when nothing came). A datagram longer than [`MAX_FRAME`] is cut to it,
    /// as `recv_from` into a buffer of that size does.
    pub fn recv(
        &mut self,
        fd: BorrowedFd<'_>,
        max: usize,
        wait_for_one: bool,
    ) -> io::Result<usize> {
        let max = max.clamp(1, self.bufs.len() / self.msg_size);
        self.dgrams.clear();
        let mut iov: [MaybeUninit<libc::iovec>; BATCH] = [MaybeUninit::uninit(); BATCH];
        // SAFETY: mmsghdr is plain old data; zeroes are valid (null pointers, zero lengths).
        let mut msgs: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
        let base = self.bufs.as_mut_ptr();
        for i in 0..max {
            let v = iov[i].write(libc::iovec {
                // SAFETY: max <= bufs.len() / msg_size, so i * msg_size + msg_size <=
                // bufs.len(): each iovec is its own slice.
                iov_base: unsafe { base.add(i * self.msg_size) } as *mut libc::c_void,
                iov_len: self.msg_size,
            });
            let h = &mut msgs[i].msg_hdr;
            h.msg_iov = v as *mut libc::iovec;
            h.msg_iovlen = 1;
            h.msg_name = &mut self.addrs[i] as *mut _ as *mut libc::c_void;
            h.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            if let Some(ctl) = self.ctl.as_mut() {
                h.msg_control = ctl[i].as_mut_ptr() as *mut libc::c_void;
                h.msg_controllen = size_of::<Cmsg>() as _;
            }
        }
        let flags = if wait_for_one {
            libc::MSG_WAITFORONE
        } else {
            0
        };
        // SAFETY: msgs[..max] point at max valid iovecs over distinct msg_size slices of
        // self.bufs, at max sockaddr_storage slots and (with GRO) max control buffers, all
        // alive for the call; no timeout.
        let n = unsafe {
            libc::recvmmsg(
                fd.as_raw_fd(),
                msgs.as_mut_ptr(),
                max as libc::c_uint,
                flags,
                std::ptr::null_mut(),
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        self.messages += n as u64;
        for (i, m) in msgs[..n as usize].iter().enumerate() {
            let len = (m.msg_len as usize).min(self.msg_size);
            let start = i * self.msg_size;
            let seg = if self.ctl.is_some() {
                gro_segment(&m.msg_hdr)
            } else {
                None
            };
            match seg {
                Some(seg) if seg > 0 && len > seg => {
                    let mut at = 0;
                    while at < len {
                        let l = seg.min(len - at);
                        self.dgrams.push((start + at, l.min(MAX_FRAME), i));
                        at += l;
                    }
                }
                _ => self.dgrams.push((start, len.min(MAX_FRAME), i)),
            }
        }
        Ok(self.dgrams.len())
    }

    /// Datagrams received by the last [`RecvBatch::recv`].
    pub fn len(&self) -> usize {
        self.dgrams.len()
    }

    /// Whether the last [`RecvBatch::recv`] received nothing.
    pub fn is_empty(&self) -> bool {
        self.dgrams.is_empty()
    }

    /// Datagram `i` of the last call.
    pub fn datagram(&self, i: usize) -> &[u8] {
        assert!(
            i < self.dgrams.len(),
            "datagram {i} of {}",
            self.dgrams.len()
        );
        let (start, len, _) = self.dgrams[i];
        &self.bufs[start..start + len]
    }

    /// The sender of datagram `i` of the last call.
    pub fn sender(&self, i: usize) -> Option<SocketAddr> {
        assert!(
            i < self.dgrams.len(),
            "datagram {i} of {}",
            self.dgrams.len()
        );
        from_sockaddr(&self.addrs[self.dgrams[i].2])
    }
}

/// The segment size of a message the kernel delivered as a GRO train (its `UDP_GRO` control
/// message), if it did.
fn gro_segment(h: &libc::msghdr) -> Option<usize> {
    // SAFETY: h is a msghdr the kernel filled: msg_control and msg_controllen describe the
    // control buffer it wrote (CMSG_* walk within it).
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(h);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_UDP && (*c).cmsg_type == UDP_GRO {
                let v = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::c_int);
                return usize::try_from(v).ok();
            }
            c = libc::CMSG_NXTHDR(h, c);
        }
    }
    None
}

/// Sends `frames` (at most [`BATCH`]) from `fd` in one `sendmmsg`, each to its address in
/// `to` (`None`: the connected peer). With `gso`, a run of consecutive frames to one address
/// of one length (its last may be shorter) goes as one message cut by the kernel
/// (`UDP_SEGMENT`): the same datagrams. Returns how many frames left, in order: fewer than
/// given means the next message failed, and the caller learns why by sending again. An
/// error means the first message failed, as `send_to`'s for it; with `gso`, `EIO` or
/// `EINVAL` mean the device or kernel does not take GSO: send again without.
pub fn send_batch<F: AsRef<[u8]>>(
    fd: BorrowedFd<'_>,
    frames: &[F],
    to: Option<&[SocketAddr]>,
    gso: bool,
) -> io::Result<usize> {
    let n = frames.len().min(BATCH);
    if n == 0 {
        return Ok(0);
    }
    if let Some(to) = to {
        assert!(to.len() >= n, "an address per frame");
    }
    let mut iov: [MaybeUninit<libc::iovec>; BATCH] = [MaybeUninit::uninit(); BATCH];
    let mut names: [MaybeUninit<(libc::sockaddr_storage, libc::socklen_t)>; BATCH] =
        [const { MaybeUninit::uninit() }; BATCH];
    let mut ctl: [Cmsg; BATCH] = [[0; 4]; BATCH];
    // Frames in each message.
    let mut runs = [0usize; BATCH];
    // SAFETY: mmsghdr is plain old data; zeroes are valid (null pointers, zero lengths).
    let mut msgs: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
    let mut k = 0;
    let mut i = 0;
    let len = |x: usize| frames[x].as_ref().len();
    while i < n {
        let mut j = i + 1;
        if gso && len(i) > 0 {
            let mut bytes = len(i);
            while j < n
                && len(j - 1) == len(i)
                && len(j) <= len(i)
                && len(j) > 0
                && bytes + len(j) <= GSO_BYTES
                && to.is_none_or(|to| to[j] == to[i])
            {
                bytes += len(j);
                j += 1;
            }
        }
        for (f, slot) in frames[i..j].iter().zip(&mut iov[i..j]) {
            let f = f.as_ref();
            slot.write(libc::iovec {
                iov_base: f.as_ptr() as *mut libc::c_void,
                iov_len: f.len(),
            });
        }
        let h = &mut msgs[k].msg_hdr;
        h.msg_iov = iov[i].as_mut_ptr();
        h.msg_iovlen = j - i;
        if let Some(to) = to {
            let (ss, slen) = names[k].write(to_sockaddr(&to[i]));
            h.msg_name = ss as *mut _ as *mut libc::c_void;
            h.msg_namelen = *slen;
        }
        if j - i > 1 {
            let c = &mut ctl[k];
            h.msg_control = c.as_mut_ptr() as *mut libc::c_void;
            // SAFETY: CMSG_SPACE is arithmetic.
            h.msg_controllen = unsafe { libc::CMSG_SPACE(size_of::<u16>() as u32) } as _;
            // SAFETY: the control buffer (32 bytes, aligned for cmsghdr) holds one cmsghdr
            // with a u16 (CMSG_SPACE(2) = 24 here); CMSG_FIRSTHDR points into it.
            unsafe {
                let cm = libc::CMSG_FIRSTHDR(h);
                (*cm).cmsg_level = libc::SOL_UDP;
                (*cm).cmsg_type = UDP_SEGMENT;
                (*cm).cmsg_len = libc::CMSG_LEN(size_of::<u16>() as u32) as _;
                std::ptr::write_unaligned(libc::CMSG_DATA(cm) as *mut u16, len(i) as u16);
            }
        }
        runs[k] = j - i;
        k += 1;
        i = j;
    }
    // SAFETY: msgs[..k] point at iovecs over the callers' frames (only read by the kernel
    // despite the *mut), at initialised addresses and control buffers, all alive for the call.
    let r = unsafe { libc::sendmmsg(fd.as_raw_fd(), msgs.as_mut_ptr(), k as libc::c_uint, 0) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(runs[..r as usize].iter().sum())
}

/// Whether `e`, from [`send_batch`] with `gso`, says the socket's route does not take GSO.
pub fn gso_refused(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EIO) | Some(libc::EINVAL))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::os::fd::AsFd;

    #[test]
    fn a_batch_goes_out_and_comes_in_whole_and_in_order_with_its_senders() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        let dst = rx.local_addr().unwrap();
        let frames: Vec<Vec<u8>> = (0..100u8).map(|i| vec![i; 60 + i as usize]).collect();
        let refs: Vec<&[u8]> = frames.iter().map(|f| f.as_slice()).collect();
        // 100 frames: a full batch of 64 from `a`, then 36 from `b`.
        let sent = send_batch(a.as_fd(), &refs, Some(&[dst; BATCH]), false).unwrap();
        assert_eq!(sent, BATCH);
        b.connect(dst).unwrap();
        assert_eq!(
            send_batch(b.as_fd(), &refs[BATCH..], None, false).unwrap(),
            36
        );
        rx.set_nonblocking(true).unwrap();
        let mut batch = RecvBatch::new();
        let mut got: Vec<(Vec<u8>, SocketAddr)> = Vec::new();
        while got.len() < 100 {
            match batch.recv(rx.as_fd(), BATCH, false) {
                Ok(n) => {
                    assert_eq!(n, batch.len());
                    for i in 0..n {
                        got.push((batch.datagram(i).to_vec(), batch.sender(i).unwrap()));
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    std::thread::sleep(std::time::Duration::from_millis(1))
                }
                Err(e) => panic!("{e}"),
            }
        }
        for (i, (f, from)) in got.iter().enumerate() {
            assert_eq!(f, &frames[i], "datagram {i}");
            let want = if i < BATCH { &a } else { &b };
            assert_eq!(*from, want.local_addr().unwrap());
        }
        let e = batch.recv(rx.as_fd(), BATCH, false).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
        assert!(batch.is_empty());
    }

    /// Receives until `want` datagrams came (or panics after 2 s).
    fn take(rx: &UdpSocket, batch: &mut RecvBatch, want: usize) -> Vec<(Vec<u8>, SocketAddr)> {
        rx.set_nonblocking(true).unwrap();
        let mut got = Vec::new();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        while got.len() < want {
            assert!(
                std::time::Instant::now() < deadline,
                "{} of {want}",
                got.len()
            );
            match batch.recv(rx.as_fd(), BATCH, false) {
                Ok(n) => {
                    for i in 0..n {
                        got.push((batch.datagram(i).to_vec(), batch.sender(i).unwrap()));
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    std::thread::sleep(std::time::Duration::from_millis(1))
                }
                Err(e) => panic!("{e}"),
            }
        }
        got
    }

    #[test]
    fn gso_trains_arrive_as_the_same_datagrams_with_gro_and_without() {
        // Runs of equal lengths (a Data train), a shorter last one, other lengths between,
        // and two destinations interleaved: the same datagrams in the same order per socket.
        let mut frames: Vec<Vec<u8>> = Vec::new();
        for i in 0..40u8 {
            frames.push(vec![i; 186]);
        }
        frames.push(vec![200; 90]);
        frames.push(vec![201; 60]);
        for i in 0..20u8 {
            frames.push(vec![i ^ 0x55; 186]);
        }
        let refs: Vec<&[u8]> = frames.iter().map(|f| f.as_slice()).collect();
        let gro = UdpSocket::bind("127.0.0.1:0").unwrap();
        enable_gro(gro.as_fd()).unwrap();
        let plain = UdpSocket::bind("127.0.0.1:0").unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        // To the GRO socket: every frame, in two calls.
        let dst = [gro.local_addr().unwrap(); BATCH];
        let mut next = 0;
        while next < refs.len() {
            next += send_batch(tx.as_fd(), &refs[next..], Some(&dst), true).unwrap();
        }
        let mut with = RecvBatch::with_gro();
        let got = take(&gro, &mut with, frames.len());
        // The trains came whole: far fewer messages than datagrams.
        assert!(with.messages < 10, "{} messages", with.messages);
        let lens: Vec<usize> = got.iter().map(|g| g.0.len()).collect();
        assert_eq!(got.len(), frames.len(), "{lens:?}");
        for (i, (f, from)) in got.iter().enumerate() {
            assert_eq!(f, &frames[i], "datagram {i}");
            assert_eq!(*from, tx.local_addr().unwrap());
        }
        // Alternating destinations, a connected socket's default unused: the GRO socket
        // gets the even frames, the plain one the odd frames, each in order.
        let to: Vec<SocketAddr> = (0..refs.len())
            .map(|i| {
                if i % 4 < 2 {
                    gro.local_addr().unwrap()
                } else {
                    plain.local_addr().unwrap()
                }
            })
            .collect();
        let mut next = 0;
        while next < refs.len() {
            next += send_batch(tx.as_fd(), &refs[next..], Some(&to[next..]), true).unwrap();
        }
        let want_gro: Vec<&Vec<u8>> = frames
            .iter()
            .enumerate()
            .filter(|(i, _)| i % 4 < 2)
            .map(|x| x.1)
            .collect();
        let want_plain: Vec<&Vec<u8>> = frames
            .iter()
            .enumerate()
            .filter(|(i, _)| i % 4 >= 2)
            .map(|x| x.1)
            .collect();
        let got = take(&gro, &mut with, want_gro.len());
        assert!(got.iter().map(|g| &g.0).eq(want_gro));
        let mut without = RecvBatch::new();
        let got = take(&plain, &mut without, want_plain.len());
        assert!(got.iter().map(|g| &g.0).eq(want_plain));
        // A GSO train to a socket without GRO arrives cut, datagram by datagram.
        let mut next = 0;
        while next < refs.len() {
            let d = [plain.local_addr().unwrap(); BATCH];
            next += send_batch(tx.as_fd(), &refs[next..], Some(&d), true).unwrap();
        }
        let got = take(&plain, &mut without, frames.len());
        assert!(got.iter().map(|g| &g.0).eq(frames.iter()));
    }

    #[test]
    fn a_blocking_receive_waits_for_the_first_datagram_up_to_the_timeout() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_read_timeout(Some(std::time::Duration::from_millis(20)))
            .unwrap();
        let mut batch = RecvBatch::new();
        let e = batch.recv(rx.as_fd(), BATCH, true).unwrap_err();
        assert!(matches!(
            e.kind(),
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
        ));
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.send_to(&[7; 3], rx.local_addr().unwrap()).unwrap();
        assert_eq!(batch.recv(rx.as_fd(), BATCH, true).unwrap(), 1);
        assert_eq!(batch.datagram(0), &[7, 7, 7]);
    }

    #[test]
    fn addresses_convert_both_ways() {
        for a in ["127.0.0.1:9", "[::1]:65535", "10.1.2.3:4791"] {
            let a: SocketAddr = a.parse().unwrap();
            let (ss, len) = to_sockaddr(&a);
            assert!(len as usize <= size_of::<libc::sockaddr_storage>());
            assert_eq!(from_sockaddr(&ss), Some(a));
        }
    }
}
