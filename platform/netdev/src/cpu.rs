//! The CPU time this process has used, for the frames-per-CPU-second figures the daemon
//! and the software switch report on exit (`cpu_seconds`) and `sgnn testbed` prints: on
//! shared cores wall time measures the scheduler as much as the code.

/// User plus system CPU seconds of this process so far, all threads (`getrusage`,
/// `RUSAGE_SELF`, microsecond resolution); 0 if the call fails.
pub fn process_cpu_seconds() -> f64 {
    // SAFETY: an all-zero `rusage` is a valid value of the plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `getrusage` writes the struct it is given and nothing else.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return 0.0;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
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
}
