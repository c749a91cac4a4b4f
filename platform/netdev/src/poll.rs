//! Waiting for frames, the two ways the datapaths wait: on sockets, in the kernel
//! ([`ready`]: one `ppoll(2)` for the `AF_PACKET` sockets here, the software switch's set of
//! them and the host's UDP datapath), and on devices polled from user space ([`IdlePoll`]:
//! spin, then sleep, for the host's and the switch's DPDK ethdevs).

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::time::{Duration, Instant};

/// A `pollfd` asking whether `fd` is ready for `events` (`libc::POLLIN`, `libc::POLLOUT`).
pub fn pollfd(fd: BorrowedFd<'_>, events: libc::c_short) -> libc::pollfd {
    libc::pollfd {
        fd: fd.as_raw_fd(),
        events,
        revents: 0,
    }
}

/// Waits until one of `fds` is ready for its events or `timeout` has passed (`None`: no
/// limit), to the nanosecond (`ppoll(2)`). Returns how many are ready (0: the time passed);
/// each one's `revents` says for what. A signal ends the wait early with an
/// [`io::ErrorKind::Interrupted`] error: callers wait again or take it as a timeout.
pub fn ready(fds: &mut [libc::pollfd], timeout: Option<Duration>) -> io::Result<usize> {
    let ts = timeout.map(|t| libc::timespec {
        tv_sec: t.as_secs().min(libc::time_t::MAX as u64) as libc::time_t,
        tv_nsec: t.subsec_nanos() as libc::c_long,
    });
    let ts_ptr = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `fds` is a live, exclusively borrowed slice of `fds.len()` initialised pollfds
    // (the count passed), so ppoll reads and writes only within it; `ts_ptr` is null (no
    // limit) or points to the local `ts`, alive and only read during the call; a null signal
    // mask means none is installed. ppoll keeps no pointer. An fd that is not open is reported
    // in its `revents` (POLLNVAL), not touched.
    let r = unsafe {
        libc::ppoll(
            fds.as_mut_ptr(),
            fds.len() as libc::nfds_t,
            ts_ptr,
            std::ptr::null(),
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(r as usize)
}

/// How a device polled from user space (a DPDK ethdev) waits for frames: poll without pause
/// for [`IdlePoll::spin`], then sleep [`IdlePoll::idle_sleep`] between polls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdlePoll {
    /// Poll without pause for this long after the wait begins (the lowest latency).
    pub spin: Duration,
    /// Then the pause between polls; zero: never pause (one core at 100%).
    pub idle_sleep: Duration,
}

impl IdlePoll {
    /// Between two empty polls of a wait that began at `start` and lasts at most `timeout`:
    /// spins or sleeps (never past the timeout) and returns true, or returns false once
    /// `timeout` has passed (stop polling).
    pub fn pause(&self, start: Instant, timeout: Duration) -> bool {
        let waited = start.elapsed();
        if waited >= timeout {
            return false;
        }
        if waited < self.spin || self.idle_sleep.is_zero() {
            std::hint::spin_loop();
        } else {
            std::thread::sleep(self.idle_sleep.min(timeout - waited));
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::os::fd::AsFd;

    /// Nothing to read: the wait lasts the timeout (to well under a millisecond) and says 0;
    /// a datagram queued: ready at once, POLLIN set.
    #[test]
    fn ready_waits_the_timeout_or_for_a_frame() {
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        let t = Instant::now();
        let n = ready(
            &mut [pollfd(s.as_fd(), libc::POLLIN)],
            Some(Duration::from_micros(1500)),
        )
        .unwrap();
        assert_eq!(n, 0);
        assert!(t.elapsed() >= Duration::from_micros(1500));
        s.send_to(b"frame", s.local_addr().unwrap()).unwrap();
        let mut fds = [pollfd(s.as_fd(), libc::POLLIN)];
        assert_eq!(ready(&mut fds, None).unwrap(), 1);
        assert_ne!(fds[0].revents & libc::POLLIN, 0);
    }

    /// The idle wait spins, then sleeps, and stops at the timeout.
    #[test]
    fn idle_poll_stops_at_the_timeout() {
        let idle = IdlePoll {
            spin: Duration::from_micros(100),
            idle_sleep: Duration::from_micros(200),
        };
        let start = Instant::now();
        let mut polls = 0;
        while idle.pause(start, Duration::from_millis(3)) {
            polls += 1;
        }
        assert!(start.elapsed() >= Duration::from_millis(3));
        assert!(polls > 1);
        assert!(!idle.pause(start, Duration::ZERO));
    }
}
