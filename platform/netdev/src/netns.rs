//! Network namespaces and veth pairs that clean up after themselves.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::process::Command;

use crate::{io_err, Error};

/// Why this process cannot build namespaces (the text a skipped test prints).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct PrivilegeError(pub String);

/// Whether this process may create network namespaces and veths: root, and the tools the
/// namespaces are set up with on PATH (`ip` from iproute2, `sysctl` from procps).
pub fn can_create_namespaces() -> Result<(), PrivilegeError> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(PrivilegeError(
            "not root: network namespaces and veth pairs need root (CAP_NET_ADMIN)".into(),
        ));
    }
    for (tool, arg, package) in [("ip", "-V", "iproute2"), ("sysctl", "--version", "procps")] {
        match Command::new(tool).arg(arg).output() {
            Ok(o) if o.status.success() => {}
            _ => {
                return Err(PrivilegeError(format!(
                    "`{tool}` ({package}) is not on PATH: install {package}"
                )))
            }
        }
    }
    Ok(())
}

/// Runs a command, turning a failure into an error with its stderr.
pub(crate) fn run(program: &str, args: &[&str]) -> Result<String, Error> {
    let command = format!("{program} {}", args.join(" "));
    let out = Command::new(program)
        .args(args)
        .output()
        .map_err(io_err(format!("running `{command}`")))?;
    if !out.status.success() {
        return Err(Error::Command {
            command,
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A named network namespace, deleted (with every interface in it) when dropped.
#[derive(Debug)]
pub struct Netns {
    name: String,
}

impl Netns {
    /// Creates namespace `name` (deleting a leftover of the same name first) with its
    /// loopback up.
    pub fn create(name: &str) -> Result<Netns, Error> {
        let _ = run("ip", &["netns", "del", name]);
        run("ip", &["netns", "add", name])?;
        let ns = Netns {
            name: name.to_string(),
        };
        ns.ip(&["link", "set", "lo", "up"])?;
        Ok(ns)
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Runs `ip -n <ns> args...`.
    pub fn ip(&self, args: &[&str]) -> Result<String, Error> {
        let mut a = vec!["-n", &self.name];
        a.extend_from_slice(args);
        run("ip", &a)
    }

    /// Runs any command inside the namespace (`ip netns exec`).
    pub fn exec(&self, program: &str, args: &[&str]) -> Result<String, Error> {
        let mut a = vec!["netns", "exec", &self.name, program];
        a.extend_from_slice(args);
        run("ip", &a)
    }

    /// A `Command` that runs `program` inside the namespace, for long-running processes.
    pub fn command(&self, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.name, program]);
        c
    }

    /// Runs `f` on a thread that has entered the namespace, so sockets it opens (for example
    /// [`crate::AfPacket`]) live there; the calling thread's namespace is untouched.
    pub fn run<F, R>(&self, f: F) -> Result<R, Error>
    where
        F: FnOnce() -> R + Send,
        R: Send,
    {
        let path = format!("/var/run/netns/{}", self.name);
        let file = File::open(&path).map_err(io_err(format!("opening {path}")))?;
        std::thread::scope(|s| {
            s.spawn(|| {
                // SAFETY: setns takes no pointers; `file` (the namespace's /var/run/netns file)
                // is borrowed from the enclosing scope, so its fd stays open until this scoped
                // thread is joined. CLONE_NEWNET switches only the calling thread, which exists
                // just to run `f`, so no other thread's sockets or namespace are affected.
                let r = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
                if r != 0 {
                    return Err(Error::Io {
                        what: format!("entering network namespace {}", self.name),
                        source: std::io::Error::last_os_error(),
                    });
                }
                Ok(f())
            })
            .join()
            .expect("namespace thread panicked")
        })
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = run("ip", &["netns", "del", &self.name]);
    }
}

/// A veth pair, each end optionally moved into a namespace, up, with IPv6 off (so the kernel
/// sends no router or neighbour solicitations into captures). Deleted when dropped.
#[derive(Debug)]
pub struct Veth {
    a: String,
    a_ns: Option<String>,
}

impl Veth {
    /// Creates `a` <-> `b`, moves `a` into `a_ns` and `b` into `b_ns` (None: stay in the
    /// current namespace), disables IPv6 and brings both up.
    pub fn create(
        a: &str,
        a_ns: Option<&Netns>,
        b: &str,
        b_ns: Option<&Netns>,
    ) -> Result<Veth, Error> {
        let _ = run("ip", &["link", "del", a]);
        run("ip", &["link", "add", a, "type", "veth", "peer", "name", b])?;
        let veth = Veth {
            a: a.to_string(),
            a_ns: None,
        };
        let mut veth = veth;
        for (name, ns) in [(a, a_ns), (b, b_ns)] {
            if let Some(ns) = ns {
                run("ip", &["link", "set", name, "netns", ns.name()])?;
                if name == a {
                    veth.a_ns = Some(ns.name().to_string());
                }
            }
            let sysctl = format!("net.ipv6.conf.{name}.disable_ipv6=1");
            match ns {
                Some(ns) => ns.exec("sysctl", &["-qw", &sysctl]).map(|_| ())?,
                None => run("sysctl", &["-qw", &sysctl]).map(|_| ())?,
            }
            let up = ["link", "set", name, "up"];
            match ns {
                Some(ns) => ns.ip(&up).map(|_| ())?,
                None => run("ip", &up).map(|_| ())?,
            }
        }
        Ok(veth)
    }
}

impl Drop for Veth {
    fn drop(&mut self) {
        // Deleting one end deletes both; a namespace already deleted took it along.
        let _ = match &self.a_ns {
            Some(ns) => run("ip", &["-n", ns, "link", "del", &self.a]),
            None => run("ip", &["link", "del", &self.a]),
        };
    }
}
