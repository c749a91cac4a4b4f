//! Batched UDP I/O: many datagrams per system call (`recvmmsg`, `sendmmsg`).
//!
//! One datagram per system call is what bounds a UDP datapath on loopback: the call's fixed
//! cost (entry, socket lock, wake-up) is several times a small frame's copy. These move up to
//! a batch of datagrams per call with the same per-datagram meaning as `recv_from` and
//! `send_to`: each datagram is whole or not there, and the order is kept. The daemon's
//! `UdpDatapath` and the software switch's `UdpPorts` use them (docs/host.md, "Batched I/O").

use std::io;
use std::mem::{size_of, MaybeUninit};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::{AsRawFd, BorrowedFd};

use crate::MAX_FRAME;

/// Datagrams per system call at most (the kernel's `UIO_MAXIOV` is 1024; beyond a few dozen
/// the call's cost is spread thin already).
pub const BATCH: usize = 64;

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

/// Buffers for receiving up to [`BATCH`] datagrams of up to [`MAX_FRAME`] bytes in one call.
pub struct RecvBatch {
    bufs: Vec<u8>,
    lens: [usize; BATCH],
    addrs: Box<[libc::sockaddr_storage; BATCH]>,
    count: usize,
}

impl std::fmt::Debug for RecvBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecvBatch")
            .field("count", &self.count)
            .finish()
    }
}

impl Default for RecvBatch {
    fn default() -> Self {
        RecvBatch::new()
    }
}

impl RecvBatch {
    /// Empty buffers (about 590 KB).
    pub fn new() -> RecvBatch {
        RecvBatch {
            bufs: vec![0u8; BATCH * MAX_FRAME],
            lens: [0; BATCH],
            // SAFETY: all zeroes is a valid sockaddr_storage.
            addrs: Box::new(unsafe { std::mem::zeroed() }),
            count: 0,
        }
    }

    /// Receives up to `max` (at most [`BATCH`]) datagrams from `fd` in one `recvmmsg`.
    /// `wait_for_one`: block (up to the socket's receive timeout, on a blocking socket) for
    /// the first, then take only what is there (`MSG_WAITFORONE`); otherwise the socket's own
    /// blocking mode decides. Returns how many; errors as `recv_from`'s (`WouldBlock` when
    /// nothing came). A datagram longer than [`MAX_FRAME`] is cut to it, as `recv_from`
    /// into a buffer of that size does.
    pub fn recv(
        &mut self,
        fd: BorrowedFd<'_>,
        max: usize,
        wait_for_one: bool,
    ) -> io::Result<usize> {
        let max = max.clamp(1, BATCH);
        self.count = 0;
        let mut iov: [MaybeUninit<libc::iovec>; BATCH] = [MaybeUninit::uninit(); BATCH];
        // SAFETY: mmsghdr is plain old data; zeroes are valid (null pointers, zero lengths).
        let mut msgs: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
        let base = self.bufs.as_mut_ptr();
        for i in 0..max {
            let v = iov[i].write(libc::iovec {
                // SAFETY: i * MAX_FRAME + MAX_FRAME <= bufs.len(): each iovec is its own slice.
                iov_base: unsafe { base.add(i * MAX_FRAME) } as *mut libc::c_void,
                iov_len: MAX_FRAME,
            });
            let h = &mut msgs[i].msg_hdr;
            h.msg_iov = v as *mut libc::iovec;
            h.msg_iovlen = 1;
            h.msg_name = &mut self.addrs[i] as *mut _ as *mut libc::c_void;
            h.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        }
        let flags = if wait_for_one {
            libc::MSG_WAITFORONE
        } else {
            0
        };
        // SAFETY: msgs[..max] point at max valid iovecs over distinct MAX_FRAME slices of
        // self.bufs and at max sockaddr_storage slots, all alive for the call; no timeout.
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
        let n = n as usize;
        for (len, m) in self.lens.iter_mut().zip(&msgs[..n]) {
            *len = (m.msg_len as usize).min(MAX_FRAME);
        }
        self.count = n;
        Ok(n)
    }

    /// Datagrams received by the last [`RecvBatch::recv`].
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether the last [`RecvBatch::recv`] received nothing.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Datagram `i` of the last call.
    pub fn datagram(&self, i: usize) -> &[u8] {
        assert!(i < self.count, "datagram {i} of {}", self.count);
        &self.bufs[i * MAX_FRAME..i * MAX_FRAME + self.lens[i]]
    }

    /// The sender of datagram `i` of the last call.
    pub fn sender(&self, i: usize) -> Option<SocketAddr> {
        assert!(i < self.count, "datagram {i} of {}", self.count);
        from_sockaddr(&self.addrs[i])
    }
}

/// Sends `frames` (at most [`BATCH`]) from `fd` in one `sendmmsg`, each to its address in
/// `to` (`None`: the connected peer). Returns how many left, in order: fewer than given means
/// the next one failed, and the caller learns why by sending it again. An error means the
/// first failed, as `send_to`'s for it.
pub fn send_batch(
    fd: BorrowedFd<'_>,
    frames: &[&[u8]],
    to: Option<&[SocketAddr]>,
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
    // SAFETY: mmsghdr is plain old data; zeroes are valid (null pointers, zero lengths).
    let mut msgs: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
    for i in 0..n {
        let v = iov[i].write(libc::iovec {
            iov_base: frames[i].as_ptr() as *mut libc::c_void,
            iov_len: frames[i].len(),
        });
        let h = &mut msgs[i].msg_hdr;
        h.msg_iov = v as *mut libc::iovec;
        h.msg_iovlen = 1;
        if let Some(to) = to {
            let (ss, len) = names[i].write(to_sockaddr(&to[i]));
            h.msg_name = ss as *mut _ as *mut libc::c_void;
            h.msg_namelen = *len;
        }
    }
    // SAFETY: msgs[..n] point at n iovecs over the callers' frames (only read by the kernel
    // despite the *mut) and at n initialised addresses, all alive for the call.
    let r = unsafe { libc::sendmmsg(fd.as_raw_fd(), msgs.as_mut_ptr(), n as libc::c_uint, 0) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(r as usize)
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
        let sent = send_batch(a.as_fd(), &refs, Some(&[dst; BATCH])).unwrap();
        assert_eq!(sent, BATCH);
        b.connect(dst).unwrap();
        assert_eq!(send_batch(b.as_fd(), &refs[BATCH..], None).unwrap(), 36);
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
