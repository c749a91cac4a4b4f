//! Finding p4c and simple_switch_grpc (`sgnn_netdev::p4tools`, shared with
//! `sgnn testbed --switch bmv2`), and compiling the P4 program.

use std::path::{Path, PathBuf};
use std::process::Command;

use sgnn_netdev::p4tools::{self, BF_P4C, P4C, SIMPLE_SWITCH_GRPC};

/// The external P4 tools, found on `PATH` or named by `P4C` and `SIMPLE_SWITCH_GRPC`.
#[derive(Debug, Clone)]
pub struct Tools {
    /// The p4c driver.
    pub p4c: PathBuf,
    /// bmv2's simple_switch_grpc.
    pub simple_switch_grpc: PathBuf,
}

/// Outputs of compiling the P4 program.
#[derive(Debug, Clone)]
pub struct Compiled {
    /// bmv2 JSON (the P4Runtime `p4_device_config` for bmv2).
    pub bmv2_json: PathBuf,
    /// P4Info in binary protobuf.
    pub p4info_bin: PathBuf,
    /// P4Info in text format, for people.
    pub p4info_txt: PathBuf,
}

/// The p4c driver alone (on `PATH` or `P4C`): enough to compile the program and check its
/// P4Info, without a switch to run it on.
pub fn find_p4c() -> Result<PathBuf, String> {
    P4C.find().map_err(|e| e.to_string())
}

impl Tools {
    /// Finds both tools, or says which is missing and how to provide it.
    pub fn find() -> Result<Tools, String> {
        Ok(Tools {
            p4c: find_p4c()?,
            simple_switch_grpc: SIMPLE_SWITCH_GRPC.find().map_err(|e| e.to_string())?,
        })
    }

    /// `--version` of both, for the record.
    pub fn versions(&self) -> String {
        let v = |p: &Path| {
            Command::new(p)
                .arg("--version")
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
                .unwrap_or_else(|e| format!("? ({e})"))
        };
        format!(
            "{} / simple_switch_grpc {}",
            v(&self.p4c),
            v(&self.simple_switch_grpc)
        )
    }

    /// Compiles `main_p4` for bmv2 v1model into `out_dir`.
    pub fn compile(&self, main_p4: &Path, out_dir: &Path) -> Result<Compiled, String> {
        compile(&self.p4c, main_p4, out_dir)
    }
}

/// Compiles `main_p4` for bmv2 v1model into `out_dir` with the p4c driver `p4c`.
pub fn compile(p4c: &Path, main_p4: &Path, out_dir: &Path) -> Result<Compiled, String> {
    std::fs::create_dir_all(out_dir).map_err(|e| format!("{}: {e}", out_dir.display()))?;
    let stem = main_p4
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("program");
    let c = Compiled {
        bmv2_json: out_dir.join(format!("{stem}.json")),
        p4info_bin: out_dir.join(format!("{stem}.p4info.bin")),
        p4info_txt: out_dir.join(format!("{stem}.p4info.txtpb")),
    };
    let out = p4tools::p4c_bmv2(p4c, main_p4, out_dir, &[&c.p4info_bin, &c.p4info_txt])
        .output()
        .map_err(|e| format!("running {}: {e}", p4c.display()))?;
    if !out.status.success() {
        return Err(format!(
            "p4c failed on {}:\n{}",
            main_p4.display(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(c)
}

/// The Tofino compiler (`bf-p4c` from p4lang/p4c built with `ENABLE_TOFINO=ON`), found on
/// `PATH` or named by `BF_P4C`. Outside the repository; docs/tofino.md says how to build it.
#[derive(Debug, Clone)]
pub struct TofinoCompiler {
    /// The `bf-p4c` driver.
    pub bf_p4c: PathBuf,
}

/// What `bf-p4c` wrote for one architecture.
#[derive(Debug, Clone)]
pub struct TofinoBuild {
    /// The output directory.
    pub dir: PathBuf,
    /// P4Info in text format (`--p4runtime-files`).
    pub p4info_txt: PathBuf,
    /// BfRt schema (`bf-rt.json`).
    pub bfrt_json: PathBuf,
    /// The compiler's resource summary (`pipe/logs/resources.json`, written with `-g`).
    pub resources_json: PathBuf,
    /// The binary the driver loads (`pipe/tofino.bin` or `pipe/tofino2.bin`).
    pub binary: PathBuf,
}

impl TofinoCompiler {
    /// Finds `bf-p4c`, or says how to provide it.
    pub fn find() -> Result<TofinoCompiler, String> {
        Ok(TofinoCompiler {
            bf_p4c: BF_P4C.find().map_err(|e| e.to_string())?,
        })
    }

    /// Compiles `main_p4` for `tofino` (TNA) or `tofino2` (T2NA) into `out_dir`, with `-g`
    /// (resource logs), standard P4Runtime messages for registers and counters
    /// (`--p4runtime-force-std-externs`) and the given `-D` definitions. A compiler that ran
    /// but failed is a [`TofinoFailure`]: the control-plane files it wrote first (P4Info, BfRt
    /// schema) and its log. `Err(String)` means it could not run at all.
    pub fn compile(
        &self,
        main_p4: &Path,
        target: &str,
        defines: &[(&str, u64)],
        out_dir: &Path,
    ) -> Result<Result<TofinoBuild, Box<TofinoFailure>>, String> {
        let arch = match target {
            "tofino" => "tna",
            "tofino2" => "t2na",
            t => return Err(format!("unknown Tofino target {t}: use tofino or tofino2")),
        };
        std::fs::create_dir_all(out_dir).map_err(|e| format!("{}: {e}", out_dir.display()))?;
        let p4info_txt = out_dir.join("switchgnn.p4info.txtpb");
        let mut cmd = Command::new(&self.bf_p4c);
        cmd.args([
            "--target",
            target,
            "--arch",
            arch,
            "-g",
            "--p4runtime-force-std-externs",
            "--p4runtime-files",
        ])
        .arg(&p4info_txt)
        .args(["--p4runtime-format", "text", "--bf-rt-schema"])
        .arg(out_dir.join("bf-rt.json"));
        for (k, v) in defines {
            cmd.arg(format!("-D{k}={v}"));
        }
        let out = cmd
            .arg("-o")
            .arg(out_dir)
            .arg(main_p4)
            .output()
            .map_err(|e| format!("running {}: {e}", self.bf_p4c.display()))?;
        let pipe = out_dir.join("pipe");
        let build = TofinoBuild {
            dir: out_dir.to_path_buf(),
            p4info_txt,
            bfrt_json: out_dir.join("bf-rt.json"),
            resources_json: pipe.join("logs").join("resources.json"),
            binary: pipe.join(format!("{target}.bin")),
        };
        if !out.status.success() {
            return Ok(Err(Box::new(TofinoFailure {
                build,
                log: format!(
                    "bf-p4c --target {target} failed on {}:\n{}{}",
                    main_p4.display(),
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                ),
            })));
        }
        Ok(Ok(build))
    }
}

/// A `bf-p4c` run that failed: where its outputs would be, and what it printed.
#[derive(Debug, Clone)]
pub struct TofinoFailure {
    /// The paths of the run (the control-plane files exist when the front end succeeded).
    pub build: TofinoBuild,
    /// The compiler's stdout and stderr.
    pub log: String,
}

impl TofinoFailure {
    /// `(stages the target has, stages the program needs)` when the one error is the
    /// assembler's "tofino supports up to N stages, using M".
    pub fn stage_overflow(&self) -> Option<(u32, u32)> {
        let errors: Vec<&str> = self
            .log
            .lines()
            .filter(|l| l.contains("error:") && !l.contains("Due to errors"))
            .collect();
        let [one] = errors.as_slice() else {
            return None;
        };
        let rest = one.split("supports up to ").nth(1)?;
        let (have, rest) = rest.split_once(" stages, using ")?;
        let need: String = rest.chars().take_while(char::is_ascii_digit).collect();
        Some((have.trim().parse().ok()?, need.parse().ok()?))
    }
}
