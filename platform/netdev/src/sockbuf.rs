//! Socket buffer sizes: one way to ask the kernel for larger send and receive buffers, shared
//! by every socket that carries bursts of frames (the software switch's UDP and `AF_PACKET`
//! ports, the host's UDP datapath, both UDP sockets made with [`bind_udp`]).
//!
//! The kernel caps `SO_RCVBUF`/`SO_SNDBUF` at `net.core.rmem_max`/`wmem_max` (about 200 KB by
//! default), which a burst of frames from every worker overflows. `SO_RCVBUFFORCE` and
//! `SO_SNDBUFFORCE` ignore the cap but need `CAP_NET_ADMIN` (root), so [`set_socket_buffers`]
//! tries them first and falls back to the capped options.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};

/// The buffer sizes the kernel granted, in bytes, as `getsockopt` reports them (Linux doubles
/// the requested size to leave room for its bookkeeping). `None` when it could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SocketBuffers {
    /// `SO_RCVBUF` after the request.
    pub receive: Option<usize>,
    /// `SO_SNDBUF` after the request.
    pub send: Option<usize>,
}

/// Asks for `bytes` (capped at `i32::MAX`) of receive and of send buffer on `socket`: with
/// `SO_RCVBUFFORCE`/`SO_SNDBUFFORCE` first, which root may set beyond `rmem_max`/`wmem_max`,
/// and where that is refused with `SO_RCVBUF`/`SO_SNDBUF`, which the kernel caps. Best effort:
/// a refusal leaves the buffer as it was, since a larger buffer only avoids drops under
/// bursts. Returns what was granted.
pub fn set_socket_buffers(socket: &impl AsFd, bytes: usize) -> SocketBuffers {
    let fd = socket.as_fd();
    let size = bytes.min(i32::MAX as usize) as libc::c_int;
    for (force, plain) in [
        (libc::SO_RCVBUFFORCE, libc::SO_RCVBUF),
        (libc::SO_SNDBUFFORCE, libc::SO_SNDBUF),
    ] {
        if set_int(fd, libc::SOL_SOCKET, force, size).is_err() {
            let _ = set_int(fd, libc::SOL_SOCKET, plain, size);
        }
    }
    SocketBuffers {
        receive: get_int(fd, libc::SO_RCVBUF).ok(),
        send: get_int(fd, libc::SO_SNDBUF).ok(),
    }
}

/// A UDP socket that carries frames (one Ethernet frame per datagram): bound to `local`, its
/// buffers enlarged to `buffer_bytes` with [`set_socket_buffers`] (best effort).
pub fn bind_udp(local: SocketAddr, buffer_bytes: usize) -> io::Result<UdpSocket> {
    let socket = UdpSocket::bind(local)?;
    set_socket_buffers(&socket, buffer_bytes);
    Ok(socket)
}

/// Sets the int option `opt` at `level` (`SOL_SOCKET`, `SOL_UDP`, `SOL_PACKET`, ...) of the
/// socket `fd` to `value`. Every option it is used for takes a C int.
pub(crate) fn set_int(
    fd: BorrowedFd<'_>,
    level: libc::c_int,
    opt: libc::c_int,
    value: libc::c_int,
) -> io::Result<()> {
    // SAFETY: `fd` is a `BorrowedFd`, so the socket is open for the call; the value points to
    // the local c_int `value`, alive across the call, and the length passed is
    // size_of::<c_int>(), the size of the int options this is used for, so the kernel reads
    // only that int (and keeps no pointer to it).
    let r = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            opt,
            &value as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Reads the `SOL_SOCKET` int option `opt` of the socket `fd`.
fn get_int(fd: BorrowedFd<'_>, opt: libc::c_int) -> io::Result<usize> {
    let mut value: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `fd` is a `BorrowedFd`, so the socket is open for the call; the value and length
    // pointers point to the locals `value` and `len`, alive and exclusively borrowed across
    // the call, and `len` says `value` holds one c_int, so the kernel writes at most that many
    // bytes into it (and keeps no pointer to either).
    let r = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            opt,
            &mut value as *mut libc::c_int as *mut libc::c_void,
            &mut len,
        )
    };
    if r == 0 {
        Ok(value.max(0) as usize)
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;

    /// Whether this process holds CAP_NET_ADMIN (bit 12 of CapEff), which the FORCE options
    /// need.
    fn has_net_admin() -> bool {
        std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("CapEff:"))
                    .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
            })
            .is_some_and(|caps| caps & (1 << 12) != 0)
    }

    /// With CAP_NET_ADMIN the size asked for is granted even beyond `rmem_max` (the kernel
    /// reports it doubled); without it the capped options still grant something, and the
    /// helper never fails. What it reports is what the socket has.
    #[test]
    fn grants_what_the_kernel_allows() {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        let want = 8 << 20;
        let got = set_socket_buffers(&socket, want);
        let (receive, send) = (got.receive.unwrap(), got.send.unwrap());
        if has_net_admin() {
            assert!(receive >= want, "asked for {want} as root, got {receive}");
            assert!(send >= want, "asked for {want} as root, got {send}");
        } else {
            eprintln!("SKIPPED the FORCE half of this test: no CAP_NET_ADMIN");
            assert!(receive > 0 && send > 0);
        }
        assert_eq!(get_int(socket.as_fd(), libc::SO_RCVBUF).unwrap(), receive);
        assert_eq!(get_int(socket.as_fd(), libc::SO_SNDBUF).unwrap(), send);
    }
}
