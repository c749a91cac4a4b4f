//! The CPU time this process has used, for the frames-per-CPU-second figures the daemon
//! and the software switch report on exit (`cpu_seconds`) and `sgnn testbed` prints: on
//! shared cores wall time measures the scheduler as much as the code.

/// User plus system CPU seconds of this process so far, all threads (`getrusage`,
/// `RUSAGE_SELF`, microsecond resolution); 0 if the call fails.
pub fn process_cpu_seconds() -> f64 {
    rusage_seconds(libc::RUSAGE_SELF)
}

/// User plus system CPU seconds of `who` (`RUSAGE_SELF`, `RUSAGE_THREAD`); 0 if the call
/// fails.
fn rusage_seconds(who: libc::c_int) -> f64 {
    // SAFETY: an all-zero `rusage` is a valid value of the plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `getrusage` writes the struct it is given and nothing else.
    if unsafe { libc::getrusage(who, &mut ru) } != 0 {
        return 0.0;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// User plus system CPU seconds of the calling thread so far (`getrusage`, `RUSAGE_THREAD`,
/// microsecond resolution); 0 if the call fails. What one core's engine of `sgnn-hostd
/// --cores N` spent, where [`process_cpu_seconds`] would add the other cores'.
pub fn thread_cpu_seconds() -> f64 {
    rusage_seconds(libc::RUSAGE_THREAD)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_with_work() {
        let before = process_cpu_seconds();
        let mut x = 1u64;
        let t = std::time::Instant::now();
        while t.elapsed() < std::time::Duration::from_millis(30) {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        let after = process_cpu_seconds();
        assert!(after > before, "{before} -> {after}");
    }

    /// A thread's CPU time counts its own work, not another thread's.
    #[test]
    fn a_thread_counts_its_own_work_only() {
        let spin = |ms: u64| {
            let mut x = 1u64;
            let t = std::time::Instant::now();
            while t.elapsed() < std::time::Duration::from_millis(ms) {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
        };
        let before = thread_cpu_seconds();
        let other = std::thread::spawn(move || {
            let t0 = thread_cpu_seconds();
            spin(200);
            thread_cpu_seconds() - t0
        })
        .join()
        .unwrap();
        let mine = thread_cpu_seconds() - before;
        assert!(other > 0.1, "the spinning thread counted {other} s");
        assert!(mine < 0.05, "the waiting thread counted {mine} s");
    }
}
