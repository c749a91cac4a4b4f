//! Frames bmv2 emitted for every scenario, recorded where bmv2 is built and committed, so that
//! a machine without p4c or bmv2 (CI) still checks the model and the wire crate against real
//! bytes from the P4 program, as smoltcp tests its headers against captured packets.
//!
//! Format (gzip text, `bmv2-tests/tests/data/bmv2-frames.txt.gz`):
//!
//! ```text
//! # sgnn bmv2 recording: <tools and versions>
//! scenario <name> <plan tag, hex> <steps>
//! step <k> <digest of the step's input, hex> <frames>
//! frame <port> <bytes, hex>
//! ```
//!
//! Written by `SGNN_RECORD_BMV2=FILE cargo test -p sgnn-bmv2-tests --test bmv2 every_scenario`
//! (bmv2-tests/README.md); read by `tests/recorded.rs`.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;

/// Frames a switch emitted for one step: (port, bytes), sorted.
pub type Frames = Vec<(u16, Vec<u8>)>;

/// The recording of one scenario.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Recorded {
    /// Scenario name.
    pub name: String,
    /// Tag of the plan the scenario ran ([`sgnn_plan::Plan::tag`]).
    pub plan_tag: u32,
    /// Per step: the digest of its input (port and frame) and what the switch emitted.
    pub steps: Vec<(u64, Frames)>,
}

/// FNV-1a over a step's input: its port and frame.
pub fn input_digest(port: u16, frame: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in port.to_be_bytes().iter().chain(frame) {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Result<Vec<u8>, String> {
    if !s.len().is_multiple_of(2) {
        return Err(format!("odd hex length {}", s.len()));
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).map_err(|e| e.to_string()))
        .collect()
}

/// Writes `scenarios` to `path` (gzip), with `header` (tools and versions) as a comment.
pub fn write(path: &Path, header: &str, scenarios: &[Recorded]) -> std::io::Result<()> {
    let f = std::fs::File::create(path)?;
    let mut z = flate2::write::GzEncoder::new(f, flate2::Compression::best());
    writeln!(z, "# sgnn bmv2 recording: {header}")?;
    for sc in scenarios {
        writeln!(
            z,
            "scenario {} {:08x} {}",
            sc.name,
            sc.plan_tag,
            sc.steps.len()
        )?;
        for (k, (digest, frames)) in sc.steps.iter().enumerate() {
            writeln!(z, "step {k} {digest:016x} {}", frames.len())?;
            for (port, frame) in frames {
                writeln!(z, "frame {port} {}", hex(frame))?;
            }
        }
    }
    z.finish()?.flush()
}

/// Reads a recording; errors name the line.
pub fn read(path: &Path) -> Result<Vec<Recorded>, String> {
    let f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let r = BufReader::new(flate2::read::GzDecoder::new(f));
    let mut out: Vec<Recorded> = Vec::new();
    for (i, line) in r.lines().enumerate() {
        let line = line.map_err(|e| format!("{}: {e}", path.display()))?;
        let bad = |m: &str| format!("{}:{}: {m}: {line:?}", path.display(), i + 1);
        let f: Vec<&str> = line.split(' ').collect();
        match f.as_slice() {
            ["#", ..] => {}
            ["scenario", name, tag, _] => out.push(Recorded {
                name: name.to_string(),
                plan_tag: u32::from_str_radix(tag, 16).map_err(|_| bad("bad plan tag"))?,
                steps: Vec::new(),
            }),
            ["step", _, digest, _] => out
                .last_mut()
                .ok_or_else(|| bad("a step before any scenario"))?
                .steps
                .push((
                    u64::from_str_radix(digest, 16).map_err(|_| bad("bad digest"))?,
                    Vec::new(),
                )),
            ["frame", port, bytes] => out
                .last_mut()
                .and_then(|s| s.steps.last_mut())
                .ok_or_else(|| bad("a frame before any step"))?
                .1
                .push((
                    port.parse().map_err(|_| bad("bad port"))?,
                    unhex(bytes).map_err(|e| bad(&e))?,
                )),
            _ => return Err(bad("not a recording line")),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recording_reads_back_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.txt.gz");
        let rec = vec![Recorded {
            name: "x".into(),
            plan_tag: 0xdead_beef,
            steps: vec![
                (input_digest(1, &[1, 2]), vec![(3, vec![0, 255, 7])]),
                (7, vec![]),
            ],
        }];
        write(&p, "test", &rec).unwrap();
        assert_eq!(read(&p).unwrap(), rec);
        assert_ne!(input_digest(1, &[1, 2]), input_digest(2, &[1, 2]));
    }
}
