//! `AF_PACKET` raw sockets: whole Ethernet frames in and out of one interface.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

use crate::{io_err, Error};

/// A raw socket bound to one interface. Frames this socket sends are not received back.
#[derive(Debug)]
pub struct AfPacket {
    fd: OwnedFd,
    ifname: String,
    ifindex: i32,
}

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

impl AfPacket {
    /// Opens a raw socket on `ifname` in the calling thread's network namespace.
    pub fn open(ifname: &str) -> Result<AfPacket, Error> {
        let cname = CString::new(ifname).map_err(|_| Error::Io {
            what: format!("interface name {ifname:?}"),
            source: io::Error::from(io::ErrorKind::InvalidInput),
        })?;
        // SAFETY: `cname` is a NUL-terminated string that lives until the end of this function,
        // and if_nametoindex only reads it during the call; failure is a 0 return, checked below.
        let ifindex = unsafe { libc::if_nametoindex(cname.as_ptr()) } as i32;
        if ifindex == 0 {
            return Err(Error::Io {
                what: format!("no interface {ifname:?} in this network namespace"),
                source: io::Error::last_os_error(),
            });
        }
        let proto = (libc::ETH_P_ALL as u16).to_be();
        // SAFETY: socket() takes no pointers and touches no memory of ours; its only effect is a
        // new fd (or -1, turned into an error by `cvt`), which is owned by an `OwnedFd` next.
        let fd = unsafe {
            cvt(libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
                proto as i32,
            ))
        }
        .map_err(io_err(format!(
            "AF_PACKET socket for {ifname} (needs root or CAP_NET_RAW)"
        )))?;
        // SAFETY: `fd` was just returned by socket() and `cvt` checked it is not -1, so it is an
        // open descriptor that nothing else owns or will close: the `OwnedFd` is its sole owner.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: `sockaddr_ll` is a C struct of integers and a byte array, for which all-zero
        // bytes are a valid value (and the "unset" value the kernel expects in unused fields).
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = proto;
        sll.sll_ifindex = ifindex;
        // SAFETY: `fd` is the open socket owned above; the address points to the local `sll`,
        // alive across the call, and the length passed is exactly size_of::<sockaddr_ll>(), so
        // the kernel reads only within it (and keeps no pointer to it).
        unsafe {
            cvt(libc::bind(
                fd.as_raw_fd(),
                &sll as *const _ as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            ))
        }
        .map_err(io_err(format!("binding AF_PACKET socket to {ifname}")))?;
        // Not seeing our own transmissions keeps captures to what the other side sent.
        crate::sockbuf::set_int(
            fd.as_fd(),
            libc::SOL_PACKET,
            libc::PACKET_IGNORE_OUTGOING,
            1,
        )
        .map_err(io_err(format!("PACKET_IGNORE_OUTGOING on {ifname}")))?;
        // Best effort: a larger buffer only avoids drops under bursts (with CAP_NET_ADMIN even
        // beyond rmem_max/wmem_max).
        crate::set_socket_buffers(&fd, 4 << 20);
        Ok(AfPacket {
            fd,
            ifname: ifname.to_string(),
            ifindex,
        })
    }

    /// The interface this socket is bound to.
    pub fn ifname(&self) -> &str {
        &self.ifname
    }

    /// Sends one frame (blocking until the kernel takes it).
    pub fn send(&self, frame: &[u8]) -> Result<(), Error> {
        loop {
            // SAFETY: `self.fd` is an `OwnedFd`, open until `self` is dropped, and `self` is
            // borrowed for the call; `frame` is a live shared borrow, so its pointer is valid for
            // reads of `frame.len()` bytes, the length passed, and send keeps no pointer to it.
            let r = unsafe {
                libc::send(
                    self.fd.as_raw_fd(),
                    frame.as_ptr() as *const libc::c_void,
                    frame.len(),
                    0,
                )
            };
            if r >= 0 {
                return Ok(());
            }
            let e = io::Error::last_os_error();
            match e.kind() {
                io::ErrorKind::WouldBlock => {
                    self.wait(libc::POLLOUT, Some(Duration::from_millis(10)))?;
                }
                io::ErrorKind::Interrupted => {}
                _ => {
                    return Err(Error::Io {
                        what: format!("sending a frame on {}", self.ifname),
                        source: e,
                    })
                }
            }
        }
    }

    /// Receives one frame into `buf`, waiting at most `timeout` (`None`: forever).
    /// Returns `Ok(None)` on timeout. Frames longer than `buf` are truncated.
    pub fn recv(&self, buf: &mut [u8], timeout: Option<Duration>) -> Result<Option<usize>, Error> {
        loop {
            // SAFETY: `self.fd` is an `OwnedFd`, open until `self` is dropped, and `self` is
            // borrowed for the call; `buf` is a live exclusive borrow, so its pointer is valid for
            // writes of `buf.len()` bytes, the length passed, which recv never writes past.
            let r = unsafe {
                libc::recv(
                    self.fd.as_raw_fd(),
                    buf.as_mut_ptr() as *mut libc::c_void,
                    buf.len(),
                    0,
                )
            };
            if r >= 0 {
                return Ok(Some(r as usize));
            }
            let e = io::Error::last_os_error();
            match e.kind() {
                io::ErrorKind::WouldBlock => {
                    if !self.wait(libc::POLLIN, timeout)? {
                        return Ok(None);
                    }
                }
                io::ErrorKind::Interrupted => {}
                _ => {
                    return Err(Error::Io {
                        what: format!("receiving on {}", self.ifname),
                        source: e,
                    })
                }
            }
        }
    }

    /// Sends `frames` in `sendmmsg` calls of up to [`crate::mmsg::BATCH`], in order, waiting
    /// (briefly, as [`AfPacket::send`] does) while the socket's buffer is full: every frame
    /// leaves, or the error of the first that cannot is returned.
    pub fn send_burst<F: AsRef<[u8]>>(&self, frames: &[F]) -> Result<(), Error> {
        let mut next = 0;
        while next < frames.len() {
            match crate::mmsg::send_batch(self.fd.as_fd(), &frames[next..], None, false) {
                Ok(k) => next += k,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.wait(libc::POLLOUT, Some(Duration::from_millis(10)))?;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(Error::Io {
                        what: format!("sending a frame on {}", self.ifname),
                        source: e,
                    })
                }
            }
        }
        Ok(())
    }

    /// Receives up to [`crate::mmsg::BATCH`] frames into `batch` in one `recvmmsg`, waiting up
    /// to `timeout` (`None`: for ever) for the first. Returns how many (0: none came).
    pub fn recv_batch(
        &self,
        batch: &mut crate::mmsg::RecvBatch,
        timeout: Option<Duration>,
    ) -> Result<usize, Error> {
        let mut waited = false;
        loop {
            match batch.recv(self.fd.as_fd(), crate::mmsg::BATCH, false) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if waited
                        || timeout == Some(Duration::ZERO)
                        || !self.wait(libc::POLLIN, timeout)?
                    {
                        return Ok(0);
                    }
                    waited = true;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(Error::Io {
                        what: format!("receiving on {}", self.ifname),
                        source: e,
                    })
                }
            }
        }
    }

    /// Receives whatever is queued without waiting.
    pub fn try_recv(&self, buf: &mut [u8]) -> Result<Option<usize>, Error> {
        self.recv(buf, Some(Duration::ZERO))
    }

    fn wait(&self, events: libc::c_short, timeout: Option<Duration>) -> Result<bool, Error> {
        let mut fds = [crate::poll::pollfd(self.fd.as_fd(), events)];
        wait_on(&mut fds, timeout, || self.ifname.clone())
    }

    /// Waits until one of `socks` is ready for `events` (`libc::POLLIN`: has a frame;
    /// `libc::POLLOUT`: can send), at most `timeout` (`None`: without limit), as
    /// [`AfPacket::recv`] waits on one. Returns false when the time passed.
    pub fn wait_any(
        socks: &[AfPacket],
        events: libc::c_short,
        timeout: Option<Duration>,
    ) -> Result<bool, Error> {
        let mut fds: Vec<libc::pollfd> = socks
            .iter()
            .map(|s| crate::poll::pollfd(s.fd.as_fd(), events))
            .collect();
        wait_on(&mut fds, timeout, || {
            let names: Vec<&str> = socks.iter().map(|s| s.ifname()).collect();
            names.join(", ")
        })
    }

    /// Interface index.
    pub fn ifindex(&self) -> i32 {
        self.ifindex
    }
}

/// Waits for `fds` (sockets named by `names`, for the error), again after a signal. The
/// timeout counts in whole milliseconds, as `poll(2)` takes it: a wait under one is a check
/// that returns at once, never a sleep.
fn wait_on(
    fds: &mut [libc::pollfd],
    timeout: Option<Duration>,
    names: impl Fn() -> String,
) -> Result<bool, Error> {
    let timeout =
        timeout.map(|t| Duration::from_millis(t.as_millis().min(i32::MAX as u128) as u64));
    loop {
        match crate::poll::ready(fds, timeout) {
            Ok(n) => return Ok(n > 0),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                return Err(Error::Io {
                    what: format!("poll on {}", names()),
                    source: e,
                })
            }
        }
    }
}

impl AsFd for AfPacket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl AsRawFd for AfPacket {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}
