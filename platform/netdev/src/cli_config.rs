//! `--config FILE` for the daemons and the software switch: every flag of a program in a
//! TOML file, for a process run by a service manager. A key is a flag's long name without
//! the dashes (`worker-id` or `worker_id`); a string, integer or float is its value; `true`
//! sets a switch flag (`false` leaves it off); an array repeats the flag. The key `eal` is an
//! array of EAL arguments (what follows `--` on the command line). Flags on the command line
//! override the file (the program's parser must keep the last value of a flag: clap's
//! `args_override_self`). An example is in docs/host.md ("Running under systemd").

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Why a `--config` file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file cannot be read.
    #[error("reading the --config file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not what a config file holds.
    #[error("{path}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong, naming the key.
        message: String,
    },
}

/// The command line with the flags of the `--config` file (if any) put before the user's
/// own, so the user's win. `known` lists `program`'s long flag names; a key that is not one
/// of them is an error naming the file.
pub fn merged_args(
    args: Vec<OsString>,
    known: &[String],
    program: &str,
) -> Result<Vec<OsString>, ConfigError> {
    merged_args_with(args, known, program, None)
}

/// [`merged_args`], and when `command` is given, every value of the file is first checked
/// against its flag in `command` (a switch wants `true`/`false`, an option a value its parser
/// takes), so a bad value is an error naming the file, the key and what it expects rather
/// than the parser's complaint about an argument the user never typed.
fn merged_args_with(
    args: Vec<OsString>,
    known: &[String],
    program: &str,
    command: Option<&clap::Command>,
) -> Result<Vec<OsString>, ConfigError> {
    let Some(path) = config_path(&args) else {
        return Ok(args);
    };
    let text = std::fs::read_to_string(&path).map_err(|source| ConfigError::Read {
        path: path.clone(),
        source,
    })?;
    let (flags, eal) = flags_of(&text, known, program).map_err(|message| ConfigError::Invalid {
        path: path.clone(),
        message,
    })?;
    if let Some(command) = command {
        check_values(&text, command).map_err(|message| ConfigError::Invalid {
            path: path.clone(),
            message,
        })?;
    }
    let mut out = vec![args[0].clone()];
    out.extend(flags.into_iter().map(OsString::from));
    // The user's arguments, then the file's EAL arguments after `--` unless the user gave
    // EAL arguments of their own.
    out.extend(args[1..].iter().cloned());
    if !eal.is_empty() && !args.iter().any(|a| a == "--") {
        out.push("--".into());
        out.extend(eal.into_iter().map(OsString::from));
    }
    Ok(out)
}

/// Parses the process's command line as `P`, with the flags of its `--config` file (if any)
/// first: the one entry point of `softswitch` and `sgnn-hostd`. Like clap's own `parse`, it
/// ends the process on a bad command line; a bad config file prints `error: --config: ...`
/// and exits with status 2.
pub fn parse<P: clap::Parser>(program: &str) -> P {
    let mut command = P::command();
    command.build();
    let known: Vec<String> = command
        .get_arguments()
        .filter_map(|a| a.get_long().map(str::to_string))
        .collect();
    match merged_args_with(
        std::env::args_os().collect(),
        &known,
        program,
        Some(&command),
    ) {
        Ok(argv) => P::parse_from(argv),
        Err(e) => {
            eprintln!("error: --config: {e}");
            std::process::exit(2);
        }
    }
}

fn config_path(args: &[OsString]) -> Option<PathBuf> {
    let mut it = args.iter().skip(1);
    while let Some(a) = it.next() {
        if a == "--" {
            return None;
        }
        let s = a.to_string_lossy();
        if let Some(p) = s.strip_prefix("--config=") {
            return Some(p.into());
        }
        if s == "--config" {
            return it.next().map(|p| Path::new(p).to_path_buf());
        }
    }
    None
}

/// The flags (`--name value` pairs and switches) and EAL arguments a TOML text stands for:
/// the reader of a `--config` file's contents ([`merged_args`] reads the file and calls it).
/// `known` lists `program`'s long flag names; the error names the key at fault. Public for
/// the fuzz target (`platform/netdev/fuzz`).
pub fn flags_of(
    text: &str,
    known: &[String],
    program: &str,
) -> Result<(Vec<String>, Vec<String>), String> {
    let table: toml::Table = text.parse().map_err(|e| format!("not valid TOML: {e}"))?;
    let mut flags = Vec::new();
    let mut eal = Vec::new();
    for (key, value) in table {
        let name = key.replace('_', "-");
        if name == "eal" {
            let toml::Value::Array(items) = value else {
                return Err(
                    "`eal` is an array of EAL arguments, e.g. eal = [\"--no-huge\", \"-m\", \"256\"]"
                        .into(),
                );
            };
            for v in items {
                eal.push(scalar(&key, &v)?);
            }
            continue;
        }
        if name == "config" {
            return Err("`config` cannot be set inside a config file".into());
        }
        if !known.contains(&name) {
            return Err(format!(
                "unknown key `{key}`: {program} has no --{name} flag (see {program} --help)"
            ));
        }
        match value {
            toml::Value::Boolean(true) => flags.push(format!("--{name}")),
            toml::Value::Boolean(false) => {}
            toml::Value::Array(items) => {
                for v in items {
                    push_value(&mut flags, &name, scalar(&key, &v)?);
                }
            }
            v => push_value(&mut flags, &name, scalar(&key, &v)?),
        }
    }
    Ok((flags, eal))
}

/// `--name value`, or `--name=value` when the value starts with `-` (a negative number),
/// which a parser would otherwise take for a flag of its own.
fn push_value(flags: &mut Vec<String>, name: &str, value: String) {
    if value.starts_with('-') {
        flags.push(format!("--{name}={value}"));
    } else {
        flags.push(format!("--{name}"));
        flags.push(value);
    }
}

/// Checks each key's value (after [`flags_of`] accepted the file) against its flag in
/// `command`; the error names the key, the value and what the flag expects.
fn check_values(text: &str, command: &clap::Command) -> Result<(), String> {
    let table: toml::Table = text.parse().map_err(|e| format!("not valid TOML: {e}"))?;
    for (key, value) in &table {
        let name = key.replace('_', "-");
        let Some(arg) = command
            .get_arguments()
            .find(|a| a.get_long() == Some(name.as_str()))
        else {
            continue; // `eal`, or refused by flags_of
        };
        let shown = format!("{key} = {value}");
        if !arg.get_action().takes_values() {
            if !value.is_bool() {
                return Err(format!(
                    "`{shown}`: --{name} is an on/off switch, so `{key}` takes true or false (without quotes)"
                ));
            }
            continue;
        }
        let items: Vec<&toml::Value> = match value {
            toml::Value::Array(items) => items.iter().collect(),
            v => vec![v],
        };
        let wants = expected(arg);
        for v in items {
            if v.is_bool() {
                return Err(format!(
                    "`{shown}`: --{name} is not an on/off switch; `{key}` takes {wants}"
                ));
            }
            let s = scalar(key, v)?;
            // The flag's own parser, alone in a command of its own (the real command would
            // also want its required flags and refuse its conflicts).
            let one = clap::Command::new("config").no_binary_name(true).arg(
                clap::Arg::new("value")
                    .long("value")
                    .action(clap::ArgAction::Set)
                    .value_parser(arg.get_value_parser().clone()),
            );
            if let Err(e) = one.try_get_matches_from([format!("--value={s}")]) {
                let why = std::error::Error::source(&e)
                    .map(|s| s.to_string())
                    .unwrap_or_else(|| {
                        e.to_string()
                            .lines()
                            .next()
                            .unwrap_or_default()
                            .trim_start_matches("error: ")
                            .replace("'--value <value>'", &format!("--{name}"))
                    });
                return Err(format!(
                    "`{shown}`: {v} is not a value of --{name} ({why}); `{key}` takes {wants}"
                ));
            }
        }
    }
    Ok(())
}

/// What a flag's value looks like, for an error: its possible values, or its value name.
fn expected(arg: &clap::Arg) -> String {
    let possible: Vec<String> = arg
        .get_possible_values()
        .iter()
        .filter(|p| !p.is_hide_set())
        .map(|p| format!("\"{}\"", p.get_name()))
        .collect();
    if !possible.is_empty() {
        return format!("one of {}", possible.join(", "));
    }
    let name = arg
        .get_value_names()
        .and_then(|n| n.first())
        .map_or_else(|| arg.get_id().as_str().to_uppercase(), |n| n.to_string());
    match arg.get_help().map(|h| h.to_string()) {
        Some(help) if !help.is_empty() => format!("a {name}: {}", help.trim_end_matches('.')),
        _ => format!("a {name} (see --help)"),
    }
}

fn scalar(key: &str, v: &toml::Value) -> Result<String, String> {
    Ok(match v {
        toml::Value::String(s) => s.clone(),
        toml::Value::Integer(i) => i.to_string(),
        toml::Value::Float(f) => f.to_string(),
        toml::Value::Boolean(b) => b.to_string(),
        other => {
            return Err(format!(
                "`{key}`: a {} is not a flag value",
                other.type_str()
            ))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known() -> Vec<String> {
        [
            "plan",
            "worker-id",
            "switch",
            "bind",
            "verify",
            "layers",
            "datapath",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    }

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn the_file_comes_first_so_the_command_line_wins() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("w0.toml");
        std::fs::write(
            &f,
            "plan = \"/srv/plan\"\nworker_id = 0\nlayers = 2\nverify = true\neal = [\"--no-huge\", \"-m\", \"256\"]\n",
        )
        .unwrap();
        let args = os(&[
            "sgnn-hostd",
            "--config",
            f.to_str().unwrap(),
            "--layers",
            "3",
        ]);
        let m = merged_args(args, &known(), "sgnn-hostd").unwrap();
        let s: Vec<String> = m.iter().map(|a| a.to_string_lossy().into_owned()).collect();
        let pos = |x: &str| s.iter().position(|a| a == x).unwrap();
        assert_eq!(s[0], "sgnn-hostd");
        assert!(s.contains(&"--verify".to_string()));
        assert_eq!(s[pos("--plan") + 1], "/srv/plan");
        // Both --layers are there, the command line's last.
        let layers: Vec<&String> = s
            .iter()
            .enumerate()
            .filter(|(i, _)| *i > 0 && s[i - 1] == "--layers")
            .map(|(_, v)| v)
            .collect();
        assert_eq!(layers, ["2", "3"]);
        assert_eq!(&s[pos("--")..], ["--", "--no-huge", "-m", "256"]);
    }

    #[test]
    fn unknown_keys_and_bad_values_name_the_problem() {
        let e = flags_of("plann = \"x\"\n", &known(), "sgnn-hostd").unwrap_err();
        assert!(
            e.contains("unknown key `plann`") && e.contains("sgnn-hostd has no --plann"),
            "{e}"
        );
        let e = flags_of("plan = { a = 1 }\n", &known(), "sgnn-hostd").unwrap_err();
        assert!(e.contains("`plan`") && e.contains("table"), "{e}");
        assert!(flags_of("plan = \n", &known(), "sgnn-hostd").is_err());
        assert!(merged_args(os(&["x", "--config", "/nonexistent.toml"]), &known(), "x").is_err());
    }
}
