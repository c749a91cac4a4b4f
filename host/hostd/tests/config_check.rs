//! `sgnn-hostd --config` values that do not fit their flag (issue 31, item 5), through the real
//! binary. No switch is started. What `--check --no-probe` says it checked needs a plan, made
//! by the planner: that test is in `tools/sgnn/tests/hostd_config_check.rs`.

use std::path::Path;
use std::process::{Command, Output};

fn hostd(args: &[&str], config: Option<&Path>) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_sgnn-hostd"));
    if let Some(f) = config {
        c.arg("--config").arg(f);
    }
    c.args(args).output().unwrap()
}

/// A switch flag given a string and a u32 flag given a negative number: the error names the
/// file, the key and what the key takes, not clap's "unexpected argument" or "use '-- -3'".
#[test]
fn a_bad_value_in_the_config_file_names_the_file_and_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("w0.toml");
    for (text, key, wants) in [
        (
            "plan = \"/srv/plan\"\nworker-id = 0\nverify = \"yes\"\n",
            "`verify = \"yes\"`",
            "takes true or false",
        ),
        (
            "plan = \"/srv/plan\"\nworker-id = -3\n",
            "`worker-id = -3`",
            "takes a W",
        ),
        (
            "plan = \"/srv/plan\"\nworker_id = 0\ndatapath = \"udpp\"\n",
            "`datapath = \"udpp\"`",
            "one of \"udp\"",
        ),
        (
            "plan = \"/srv/plan\"\nworker_id = true\n",
            "`worker_id = true`",
            "not an on/off switch",
        ),
    ] {
        std::fs::write(&cfg, text).unwrap();
        let o = hostd(&["--check"], Some(&cfg));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{text}: {err}");
        assert!(
            err.contains("w0.toml") && err.contains(key) && err.contains(wants),
            "{text}: {err}"
        );
        assert!(
            !err.contains("unexpected argument") && !err.contains("-- -3"),
            "{text}: {err}"
        );
    }
}
