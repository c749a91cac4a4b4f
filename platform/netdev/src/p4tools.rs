//! The P4 toolchain outside the repository (p4lang's `p4c`, bmv2's `simple_switch_grpc`, the
//! Tofino compiler `bf-p4c`): finding it, on `PATH` or through an environment variable
//! ([`P4C`], [`SIMPLE_SWITCH_GRPC`], [`BF_P4C`]), and starting bmv2 in a namespace of a test
//! network. One place for both users: the bmv2 differential tests (`bmv2-tests`) and
//! `sgnn testbed --switch bmv2` (`tools/sgnn`).

use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::Netns;

/// A tool of the P4 toolchain: its environment variable and its name on `PATH`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct P4Tool {
    /// The environment variable that names it (`P4C`, ...).
    pub env: &'static str,
    /// Its file name on `PATH` (`p4c`, ...).
    pub name: &'static str,
}

/// The p4c driver.
pub const P4C: P4Tool = P4Tool {
    env: "P4C",
    name: "p4c",
};
/// bmv2's `simple_switch_grpc`.
pub const SIMPLE_SWITCH_GRPC: P4Tool = P4Tool {
    env: "SIMPLE_SWITCH_GRPC",
    name: "simple_switch_grpc",
};
/// The Tofino compiler (p4lang/p4c built with `ENABLE_TOFINO=ON`).
pub const BF_P4C: P4Tool = P4Tool {
    env: "BF_P4C",
    name: "bf-p4c",
};

/// Why a tool was not found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolMissing {
    /// Neither on `PATH` nor named by its variable.
    #[error("`{name}` is not on PATH and {env} is not set")]
    NotFound {
        /// The tool's file name.
        name: &'static str,
        /// Its environment variable.
        env: &'static str,
    },
    /// Its variable names something that is not a file.
    #[error("{env}={} is not a file", .path.display())]
    NotAFile {
        /// The environment variable.
        env: &'static str,
        /// What it names.
        path: PathBuf,
    },
}

impl P4Tool {
    /// The file the variable names, or else the first `name` on `PATH`.
    pub fn find(self) -> Result<PathBuf, ToolMissing> {
        match std::env::var_os(self.env) {
            Some(p) => {
                let path = PathBuf::from(p);
                if path.is_file() {
                    Ok(path)
                } else {
                    Err(ToolMissing::NotAFile {
                        env: self.env,
                        path,
                    })
                }
            }
            None => std::env::var_os("PATH")
                .and_then(|paths| {
                    std::env::split_paths(&paths)
                        .map(|d| d.join(self.name))
                        .find(|p| p.is_file())
                })
                .ok_or(ToolMissing::NotFound {
                    name: self.name,
                    env: self.env,
                }),
        }
    }
}

/// `p4c` compiling `main_p4` for bmv2's v1model into `out_dir`, writing the P4Info to
/// `p4info` (p4c picks the format by extension: `.bin`, `.txtpb`, `.json`).
pub fn p4c_bmv2(p4c: &Path, main_p4: &Path, out_dir: &Path, p4info: &[&Path]) -> Command {
    let files = p4info
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(",");
    let mut c = Command::new(p4c);
    c.args(["--target", "bmv2", "--arch", "v1model", "--p4runtime-files"])
        .arg(files)
        .arg("-o")
        .arg(out_dir)
        .arg(main_p4);
    c
}

/// `simple_switch_grpc` in `ns` with no program yet ([`bmv2_args`]). Wait for it with
/// [`wait_for_p4runtime`].
pub fn bmv2_command(
    ns: &Netns,
    simple_switch_grpc: &Path,
    ifaces: &[String],
    p4runtime: &Path,
    thrift_port: Option<u16>,
) -> Command {
    let mut c = ns.command(simple_switch_grpc.to_str().expect("utf-8 path"));
    c.args(bmv2_args(ifaces, p4runtime, thrift_port));
    c
}

/// The arguments of `simple_switch_grpc` with no program yet: port `i` on `ifaces[i]`, 8
/// priority queues, P4Runtime on the Unix socket `p4runtime`, and Thrift on `thrift_port` if
/// given (for `simple_switch_CLI`).
pub fn bmv2_args(ifaces: &[String], p4runtime: &Path, thrift_port: Option<u16>) -> Vec<String> {
    let mut a = vec!["--no-p4".to_string()];
    for (i, ifname) in ifaces.iter().enumerate() {
        a.extend(["-i".to_string(), format!("{i}@{ifname}")]);
    }
    if let Some(port) = thrift_port {
        a.extend(["--thrift-port".to_string(), port.to_string()]);
    }
    a.extend([
        "--".to_string(),
        "--grpc-server-addr".to_string(),
        format!("unix:{}", p4runtime.display()),
        "--priority-queues".to_string(),
        "8".to_string(),
    ]);
    a
}

/// How long a switch may take to serve P4Runtime.
pub const P4RUNTIME_START: Duration = Duration::from_secs(20);

/// Why a switch did not come up ([`wait_for_p4runtime`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotServing {
    /// The process ended first.
    #[error("the switch exited with {status} before listening")]
    Exited {
        /// Its exit status, as text.
        status: String,
    },
    /// No connection was accepted within [`P4RUNTIME_START`].
    #[error("no P4Runtime socket at {} after 20 s", .socket.display())]
    Timeout {
        /// The socket.
        socket: PathBuf,
    },
}

/// Waits until the switch accepts a connection on its P4Runtime socket. The file appears at
/// bind(), a moment before listen(): a connection in between is refused (seen on a loaded
/// machine), so the socket counts only once one is accepted. `exited` says whether the
/// process ended (with its status).
pub fn wait_for_p4runtime(
    socket: &Path,
    mut exited: impl FnMut() -> Option<String>,
) -> Result<(), NotServing> {
    let start = Instant::now();
    while UnixStream::connect(socket).is_err() {
        if let Some(status) = exited() {
            return Err(NotServing::Exited { status });
        }
        if start.elapsed() > P4RUNTIME_START {
            return Err(NotServing::Timeout {
                socket: socket.to_path_buf(),
            });
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_tool_and_its_variable() {
        assert_eq!(
            ToolMissing::NotFound {
                name: "p4c",
                env: "P4C"
            }
            .to_string(),
            "`p4c` is not on PATH and P4C is not set"
        );
        assert_eq!(
            ToolMissing::NotAFile {
                env: "SIMPLE_SWITCH_GRPC",
                path: "/nowhere/ssg".into()
            }
            .to_string(),
            "SIMPLE_SWITCH_GRPC=/nowhere/ssg is not a file"
        );
        assert_eq!(
            NotServing::Exited {
                status: "exit status: 1".into()
            }
            .to_string(),
            "the switch exited with exit status: 1 before listening"
        );
        assert_eq!(
            NotServing::Timeout {
                socket: "/tmp/p4rt.sock".into()
            }
            .to_string(),
            "no P4Runtime socket at /tmp/p4rt.sock after 20 s"
        );
    }

    /// A tool named by its variable is found there, not on `PATH`; a variable naming no file
    /// is an error that says so. (A variable no other test reads, so tests in parallel do not
    /// see it.)
    #[test]
    fn the_variable_wins_over_path() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tool");
        std::fs::write(&file, "").unwrap();
        let tool = P4Tool {
            env: "SGNN_NETDEV_TEST_P4TOOL",
            name: "sgnn-no-such-tool",
        };
        std::env::set_var(tool.env, &file);
        assert_eq!(tool.find(), Ok(file));
        std::env::set_var(tool.env, dir.path().join("missing"));
        assert!(matches!(tool.find(), Err(ToolMissing::NotAFile { .. })));
        std::env::remove_var(tool.env);
        assert_eq!(
            tool.find(),
            Err(ToolMissing::NotFound {
                name: "sgnn-no-such-tool",
                env: "SGNN_NETDEV_TEST_P4TOOL"
            })
        );
    }

    #[test]
    fn bmv2_gets_its_ports_in_order_and_thrift_only_when_asked() {
        let ifaces = ["a0".to_string(), "a1".to_string()];
        assert_eq!(
            bmv2_args(&ifaces, Path::new("/tmp/s.sock"), Some(9090)).join(" "),
            "--no-p4 -i 0@a0 -i 1@a1 --thrift-port 9090 -- \
             --grpc-server-addr unix:/tmp/s.sock --priority-queues 8"
        );
        assert_eq!(
            bmv2_args(&ifaces, Path::new("/tmp/s.sock"), None).join(" "),
            "--no-p4 -i 0@a0 -i 1@a1 -- --grpc-server-addr unix:/tmp/s.sock --priority-queues 8"
        );
        let c = p4c_bmv2(
            Path::new("p4c"),
            Path::new("main.p4"),
            Path::new("out"),
            &[
                Path::new("out/x.p4info.bin"),
                Path::new("out/x.p4info.txtpb"),
            ],
        );
        let args: Vec<String> = c
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            args.join(" "),
            "--target bmv2 --arch v1model --p4runtime-files out/x.p4info.bin,out/x.p4info.txtpb \
             -o out main.p4"
        );
    }
}
