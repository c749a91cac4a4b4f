//! Child processes that are killed when the testbed stops, whatever way it stops.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Set by Ctrl-C (SIGINT), SIGTERM or SIGHUP: every wait loop checks it and the run fails
/// cleanly, stopping every child.
pub static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Installs the Ctrl-C handler once.
pub fn install_interrupt_handler() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = ctrlc::set_handler(|| INTERRUPTED.store(true, Ordering::SeqCst));
    });
}

/// A started process and its log file.
pub struct Proc {
    /// The child.
    pub child: Child,
    /// Where its stderr goes.
    pub log: PathBuf,
}

/// Owns every child; kills the ones still running on drop.
#[derive(Default, Clone)]
pub struct Supervisor {
    procs: Arc<Mutex<Vec<Proc>>>,
}

impl Supervisor {
    /// Starts `cmd` with stderr to `log` (and stdout piped when `stdout` is set); returns its
    /// index.
    pub fn spawn(
        &self,
        name: &str,
        mut cmd: Command,
        log: &Path,
        stdout: bool,
    ) -> anyhow::Result<(usize, Option<std::process::ChildStdout>)> {
        let f = std::fs::File::create(log)?;
        cmd.stderr(f).stdin(Stdio::piped());
        cmd.stdout(if stdout {
            Stdio::piped()
        } else {
            Stdio::null()
        });
        let mut child = cmd
            .spawn()
            .map_err(|e| anyhow::anyhow!("starting {name} ({:?}): {e}", cmd.get_program()))?;
        let out = child.stdout.take();
        let mut p = self.procs.lock().unwrap();
        p.push(Proc {
            child,
            log: log.to_path_buf(),
        });
        Ok((p.len() - 1, out))
    }

    /// Non-blocking: the exit status of process `i` if it has exited.
    pub fn try_wait(&self, i: usize) -> Option<std::process::ExitStatus> {
        self.procs.lock().unwrap()[i]
            .child
            .try_wait()
            .ok()
            .flatten()
    }

    /// Process `i`'s operating-system process id.
    pub fn pid(&self, i: usize) -> u32 {
        self.procs.lock().unwrap()[i].child.id()
    }

    /// Closes process `i`'s stdin (the software switch exits on that).
    pub fn close_stdin(&self, i: usize) {
        self.procs.lock().unwrap()[i].child.stdin.take();
    }

    /// Kills process `i` (SIGKILL).
    pub fn kill(&self, i: usize) {
        let mut p = self.procs.lock().unwrap();
        let _ = p[i].child.kill();
        let _ = p[i].child.wait();
    }

    /// Last lines of process `i`'s log.
    pub fn log_tail(&self, i: usize, lines: usize) -> String {
        let path = self.procs.lock().unwrap()[i].log.clone();
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let v: Vec<&str> = text.lines().collect();
        v[v.len().saturating_sub(lines)..].join("\n")
    }

    /// Kills everything still running.
    pub fn kill_all(&self) {
        for p in self.procs.lock().unwrap().iter_mut() {
            if p.child.try_wait().ok().flatten().is_none() {
                let _ = p.child.kill();
                let _ = p.child.wait();
            }
        }
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        if Arc::strong_count(&self.procs) == 1 {
            self.kill_all();
        }
    }
}

/// Finds a sibling binary of the running executable (cargo puts every workspace binary in the
/// same directory), or `$ENV`. Under `cargo run` the sibling is (re)built first, once per
/// process, with the same profile and, if this `sgnn` has its `dpdk` feature, with `dpdk`: so
/// `cargo run --release -p sgnn -- testbed` works on a fresh checkout, and a sibling left by an
/// older build or one without DPDK never runs against this one.
pub fn binary(name: &str, env: &str) -> anyhow::Result<PathBuf> {
    static BUILT: Mutex<Vec<String>> = Mutex::new(Vec::new());
    if let Some(p) = std::env::var_os(env) {
        return Ok(PathBuf::from(p));
    }
    let exe = std::env::current_exe()?;
    let dir = exe.parent().expect("an executable lives in a directory");
    let candidate = dir.join(name);
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if built.iter().any(|b| b == name) {
        return Ok(candidate);
    }
    if let (Some(cargo), Some(profile)) = (
        std::env::var_os("CARGO"),
        dir.file_name().and_then(|p| p.to_str()),
    ) {
        // Each binary has the name of its package.
        let package = name;
        let dpdk = cfg!(feature = "dpdk");
        eprintln!(
            "building {name} ({profile}{}) ...",
            if dpdk { ", features dpdk" } else { "" }
        );
        let mut c = Command::new(cargo);
        c.args(["build", "--quiet", "-p", package]);
        if dpdk {
            c.args(["--features", "dpdk"]);
        }
        if profile == "release" {
            c.arg("--release");
        } else if profile != "debug" {
            c.args(["--profile", profile]);
        }
        let ok = c.status().map(|s| s.success()).unwrap_or(false);
        if ok && candidate.is_file() {
            built.push(name.to_string());
            return Ok(candidate);
        }
        anyhow::bail!(
            "building `{name}` with cargo failed (its errors are above); fix them, or build it \
             yourself (`cargo build --release --workspace`) and set {env} to its path"
        )
    }
    if candidate.is_file() {
        return Ok(candidate);
    }
    anyhow::bail!(
        "cannot find `{name}` next to {}; build the workspace first (`cargo build --release --workspace`) or set {env}",
        exe.display()
    )
}

/// Resident memory of process `pid` in KiB (`VmRSS` of /proc/PID/status), if it is running.
pub fn rss_kib(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

/// The lock file in an `--out` directory: two testbeds writing one directory would overwrite
/// each other's plans, logs and sums.
pub const OUT_LOCK: &str = ".sgnn-testbed.lock";

/// Exclusive use of an `--out` directory while it is held: a lock file created with
/// `O_EXCL` holding this process's id, removed on drop. A lock whose process is gone (a
/// testbed killed with SIGKILL) is stale and replaced.
pub struct OutLock {
    path: PathBuf,
}

impl OutLock {
    /// Takes the lock of `dir` (which exists), or fails naming the directory and the process
    /// that holds it.
    pub fn take(dir: &Path) -> anyhow::Result<OutLock> {
        use std::io::Write;
        let path = dir.join(OUT_LOCK);
        for _ in 0..3 {
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(mut f) => {
                    writeln!(f, "{}", std::process::id())?;
                    return Ok(OutLock { path });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let text = std::fs::read_to_string(&path).unwrap_or_default();
                    match text.trim().parse::<u32>() {
                        Ok(pid) if Path::new("/proc").join(pid.to_string()).exists() => {
                            anyhow::bail!(
                                "--out {} is in use by another sgnn testbed (pid {pid}, lock file {}): give this one another --out, or wait for that one to finish",
                                dir.display(),
                                path.display()
                            )
                        }
                        // Not yet written by a testbed that just created it: held.
                        Err(_) if recent(&path) => anyhow::bail!(
                            "--out {} is in use by another sgnn testbed that is starting (lock file {}): give this one another --out",
                            dir.display(),
                            path.display()
                        ),
                        // Its process is gone: stale, replaced.
                        _ => {
                            let _ = std::fs::remove_file(&path);
                        }
                    }
                }
                Err(e) => {
                    return Err(anyhow::Error::new(e)
                        .context(format!("creating the lock file {}", path.display())))
                }
            }
        }
        anyhow::bail!("cannot take the lock file {}", path.display())
    }
}

/// Whether `path` was modified within the last two seconds.
fn recent(path: &Path) -> bool {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|age| age < std::time::Duration::from_secs(2))
}

impl Drop for OutLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}
