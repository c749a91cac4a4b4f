//! `softswitch --pcap`: the real binary on loopback UDP with a plan loaded captures every frame
//! it receives and sends; the pcapng file holds exactly the frames the workers sent and
//! received, on the interface of their port, with their direction. When `tshark` is installed,
//! the Wireshark dissector (`tools/wireshark/sgnn.lua`) reads every header field and lane of
//! those frames as the wire crate parses them (`TSHARK=/path/to/tshark` picks another one;
//! without tshark that check says SKIPPED and the rest runs).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketOption;
use pcap_file::pcapng::blocks::interface_description::InterfaceDescriptionOption;
use pcap_file::pcapng::{Block, PcapNgReader};
use pcap_file::DataLink;
use sgnn_plan::Plan;
use sgnn_wire::addressing::worker_ip;
use sgnn_wire::codec::FixedPoint;
use sgnn_wire::sgnn::Repr;
use sgnn_wire::{FrameRepr, PacketType, ACK_ALL_SEGMENTS, LANES};

mod common;
use common::{frame, frame_to, one_block_plan, WORKERS};

/// One run of the switch: what each worker sent and received, in order, and what came out.
struct Run {
    _dir: tempfile::TempDir,
    pcap: PathBuf,
    sent: Vec<Vec<Vec<u8>>>,
    received: Vec<Vec<Vec<u8>>>,
    /// A frame from a UDP address that is no port.
    stranger: Vec<u8>,
    stderr: String,
    stats: serde_json::Value,
}

/// Starts `softswitch --plan P --pcap FILE` with `extra` arguments, sends a block of Data
/// (with the plan's fraction bits and values that are not integers), host-to-host Ack,
/// FetchReq and Bypass frames (RESEND, every-segment ack), a frame from a stranger, block sync,
/// and waits for the switch to exit.
fn run_switch(plan: &Plan, extra: &[&str]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let plan_dir = dir.path().join("plan");
    plan.save(&plan_dir).unwrap();
    let pcap = dir.path().join("switch.pcapng");
    let stats_path = dir.path().join("stats.json");
    let workers: Vec<UdpSocket> = (0..WORKERS)
        .map(|_| UdpSocket::bind("127.0.0.1:0").unwrap())
        .collect();
    for w in &workers {
        w.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_softswitch"))
        .arg("--plan")
        .arg(&plan_dir)
        // Hand-made frames carry job 0 (sgnn_switch::admission).
        .args(["--job", "0"])
        .args(
            workers
                .iter()
                .flat_map(|w| ["--worker".to_string(), w.local_addr().unwrap().to_string()]),
        )
        .args(["--exit-after-blocks", "1", "--stats-json"])
        .arg(&stats_path)
        .arg("--pcap")
        .arg(&pcap)
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let addr = first
        .strip_prefix("listening on ")
        .expect(&first)
        .to_string();
    let mut sent = vec![Vec::new(); WORKERS];
    let mut received = vec![Vec::new(); WORKERS];
    let mut send = |w: usize, f: Vec<u8>| {
        workers[w].send_to(&f, &addr).unwrap();
        sent[w].push(f);
        // Pace a little: socket buffers are finite.
        std::thread::sleep(Duration::from_micros(50));
    };
    let mut recv = |w: usize| -> FrameRepr {
        let mut buf = [0u8; 2048];
        let n = workers[w]
            .recv(&mut buf)
            .expect("a frame before the timeout");
        received[w].push(buf[..n].to_vec());
        FrameRepr::parse(&buf[..n]).unwrap().0
    };

    let frac = plan.manifest.frac_bits;
    let block = &plan.blocks[0];
    // Values in (-1, 1), encoded with the plan's fraction bits: lanes that are not integers.
    let fixed = FixedPoint::new(frac, 64);
    let lanes = |v: u32| -> [i32; LANES] {
        let x: Vec<f32> = (0..LANES)
            .map(|i| ((v as f32 * 0.37 + i as f32 * 0.11).sin()) * 0.9)
            .collect();
        let mut l = [0i32; LANES];
        assert_eq!(fixed.encode(&x, &mut l), 0);
        l
    };
    for &src in &block.sources {
        let w = plan.partition[src as usize] as u16;
        let mut s = Repr::new(PacketType::Data);
        s.worker_id = w;
        s.src_id = src;
        s.count = 1;
        s.frac_bits = frac;
        send(w as usize, frame(w, s, Some(&lanes(src))));
    }
    for w in 0..WORKERS {
        let mine = block
            .aggregators
            .iter()
            .filter(|a| plan.partition[a.dst as usize] == w as u32)
            .count();
        for _ in 0..mine {
            assert_eq!(recv(w).sgnn.packet_type, PacketType::Result);
        }
    }
    // Host to host through the switch: an ack of every segment, a fetch, a resent bypass.
    let (a, b) = (0usize, 1usize);
    let mut ack = Repr::new(PacketType::Ack);
    ack.worker_id = a as u16;
    ack.dst_id = 7;
    ack.segment = ACK_ALL_SEGMENTS;
    ack.round = 3;
    send(a, frame_to(a as u16, worker_ip(b as u16), ack, None));
    assert_eq!(recv(b).sgnn, ack);
    let mut fetch = Repr::new(PacketType::FetchReq);
    fetch.worker_id = b as u16;
    fetch.src_id = 11;
    fetch.dst_id = 12;
    fetch.segment = 1;
    send(b, frame_to(b as u16, worker_ip(a as u16), fetch, None));
    assert_eq!(recv(a).sgnn, fetch);
    let mut bypass = Repr::new(PacketType::Bypass);
    bypass.worker_id = a as u16;
    bypass.src_id = 11;
    bypass.dst_id = 12;
    bypass.segment = 1;
    bypass.pass = 2;
    bypass.block_id = 0;
    bypass.frac_bits = frac;
    bypass.flags.resend = true;
    let neg: [i32; LANES] = std::array::from_fn(|i| -(i as i32) * 12345 - 1);
    send(
        a,
        frame_to(a as u16, worker_ip(b as u16), bypass, Some(&neg)),
    );
    assert_eq!(recv(b).sgnn, bypass);
    // A stranger's frame (not an IPv4 EtherType): the `unknown` interface.
    let mut stranger = frame(0, Repr::new(PacketType::BlockDone), None);
    stranger[12..14].copy_from_slice(&0x88b5u16.to_be_bytes());
    let other = UdpSocket::bind("127.0.0.1:0").unwrap();
    other.send_to(&stranger, &addr).unwrap();
    // Block sync: every worker reports; every worker gets the advance; the switch exits.
    for w in 0..WORKERS {
        let mut s = Repr::new(PacketType::BlockDone);
        s.worker_id = w as u16;
        send(w, frame(w as u16, s, None));
    }
    for w in 0..WORKERS {
        assert_eq!(recv(w).sgnn.packet_type, PacketType::BlockAdvance);
    }
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "softswitch failed: {stderr}");
    let stats = serde_json::from_str(&std::fs::read_to_string(&stats_path).unwrap()).unwrap();
    Run {
        _dir: dir,
        pcap,
        sent,
        received,
        stranger,
        stderr,
        stats,
    }
}

/// A captured frame: interface, pcapng `epb_flags` direction (1 in, 2 out), bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Captured {
    interface: u32,
    direction: u32,
    data: Vec<u8>,
}

/// Reads a pcapng file with the crate: interfaces (name, description) and frames, in order.
fn read_pcapng(path: &Path) -> (Vec<(String, String)>, Vec<Captured>) {
    let mut r = PcapNgReader::new(std::fs::File::open(path).unwrap()).unwrap();
    let mut interfaces = Vec::new();
    let mut frames = Vec::new();
    while let Some(block) = r.next_block() {
        match block.expect("a well-formed pcapng block") {
            Block::InterfaceDescription(i) => {
                assert_eq!(i.linktype, DataLink::ETHERNET);
                let (mut name, mut description) = (String::new(), String::new());
                for o in &i.options {
                    match o {
                        InterfaceDescriptionOption::IfName(n) => name = n.to_string(),
                        InterfaceDescriptionOption::IfDescription(d) => description = d.to_string(),
                        _ => {}
                    }
                }
                interfaces.push((name, description));
            }
            Block::EnhancedPacket(p) => {
                assert_eq!(p.original_len as usize, p.data.len(), "frames are whole");
                assert!(!p.timestamp.is_zero(), "frames carry their time");
                let direction = p
                    .options
                    .iter()
                    .find_map(|o| match o {
                        EnhancedPacketOption::Flags(f) => Some(f & 3),
                        _ => None,
                    })
                    .expect("every frame has its direction");
                frames.push(Captured {
                    interface: p.interface_id,
                    direction,
                    data: p.data.to_vec(),
                });
            }
            _ => {}
        }
    }
    (interfaces, frames)
}

/// Frames of `interface` going `direction`, in capture order.
fn on(frames: &[Captured], interface: u32, direction: u32) -> Vec<Vec<u8>> {
    frames
        .iter()
        .filter(|c| c.interface == interface && c.direction == direction)
        .map(|c| c.data.clone())
        .collect()
}

fn parsed(frames: &[Vec<u8>]) -> Vec<(FrameRepr, Option<[i32; LANES]>)> {
    frames
        .iter()
        .map(|f| FrameRepr::parse(f).unwrap())
        .collect()
}

#[test]
fn softswitch_captures_every_frame_in_and_out_per_port() {
    let plan = one_block_plan("rmat:scale=8,edge_factor=4,seed=3");
    let run = run_switch(&plan, &[]);
    assert!(
        !run.stderr.contains("pcap-max-bytes"),
        "no bound reached: {}",
        run.stderr
    );
    let (interfaces, frames) = read_pcapng(&run.pcap);
    let names: Vec<&str> = interfaces.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["port0", "port1", "port2", "unknown"]);
    for (w, (_, description)) in interfaces.iter().take(WORKERS).enumerate() {
        assert!(
            description.starts_with(&format!("worker {w}, UDP 127.0.0.1:")),
            "{description}"
        );
    }
    for w in 0..WORKERS {
        let i = w as u32;
        // Byte for byte, in order, and as the wire crate reads them.
        assert_eq!(on(&frames, i, 1), run.sent[w], "port {w} inbound");
        assert_eq!(on(&frames, i, 2), run.received[w], "port {w} outbound");
        assert_eq!(parsed(&on(&frames, i, 1)), parsed(&run.sent[w]));
        assert_eq!(parsed(&on(&frames, i, 2)), parsed(&run.received[w]));
    }
    assert_eq!(on(&frames, WORKERS as u32, 1), vec![run.stranger.clone()]);
    assert!(on(&frames, WORKERS as u32, 2).is_empty());
    let total: usize = run.sent.iter().chain(&run.received).map(Vec::len).sum();
    assert_eq!(frames.len(), total + 1, "nothing else in the capture");
    assert_eq!(run.stats["datapath"]["pcap_frames"], frames.len() as u64);
    assert_eq!(run.stats["datapath"]["pcap_missed"], 0);

    dissector_check(&run.pcap, &frames);
}

#[test]
fn the_capture_stops_at_its_bound_and_says_so_once() {
    let plan = one_block_plan("rmat:scale=8,edge_factor=4,seed=3");
    // The headers (about 300 bytes) and a few frames.
    let run = run_switch(&plan, &["--pcap-max-bytes", "2000"]);
    let said: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("reached --pcap-max-bytes 2000"))
        .collect();
    assert_eq!(said.len(), 1, "said once: {}", run.stderr);
    let size = std::fs::metadata(&run.pcap).unwrap().len();
    assert!(size <= 2000, "{size} bytes");
    let (_, frames) = read_pcapng(&run.pcap);
    assert!(!frames.is_empty());
    let total: usize = run
        .sent
        .iter()
        .chain(&run.received)
        .map(Vec::len)
        .sum::<usize>()
        + 1;
    assert!(frames.len() < total);
    assert_eq!(run.stats["datapath"]["pcap_frames"], frames.len() as u64);
    assert_eq!(
        run.stats["datapath"]["pcap_missed"],
        (total - frames.len()) as u64
    );
    // What was captured is what the first worker sent first.
    let first = &frames[0];
    assert_eq!(first.direction, 1);
    assert_eq!(first.data, run.sent[first.interface as usize][0]);
}

#[test]
fn help_documents_the_capture_options() {
    let out = Command::new(env!("CARGO_BIN_EXE_softswitch"))
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    assert!(help.contains("--pcap <FILE>"), "{help}");
    assert!(help.contains("--pcap-max-bytes <N>"), "{help}");
}

/// The dissector's fields, in order: `(tshark field, the value the wire crate parsed)`.
fn expected_fields(r: &FrameRepr, lanes: &Option<[i32; LANES]>) -> Vec<(&'static str, Field)> {
    let s = &r.sgnn;
    let mut v = vec![
        ("sgnn.version", Field::Int(sgnn_wire::VERSION as i64)),
        ("sgnn.type", Field::Int(s.packet_type as i64)),
        ("sgnn.flags", Field::Int(s.flags.bits() as i64)),
        ("sgnn.flags.is_ack", Field::Bool(s.flags.ack)),
        ("sgnn.flags.is_fetch", Field::Bool(s.flags.fetch)),
        ("sgnn.flags.ecn", Field::Bool(s.flags.ecn)),
        ("sgnn.flags.resend", Field::Bool(s.flags.resend)),
        ("sgnn.flags.reserved", Field::Int(0)),
        ("sgnn.worker_id", Field::Int(s.worker_id as i64)),
        ("sgnn.src_id", Field::Int(s.src_id as i64)),
        ("sgnn.dst_id", Field::Int(s.dst_id as i64)),
        ("sgnn.block_id", Field::Int(s.block_id as i64)),
        ("sgnn.count", Field::Int(s.count as i64)),
        ("sgnn.round", Field::Int(s.round as i64)),
        ("sgnn.segment", Field::Int(s.segment as i64)),
        ("sgnn.pass", Field::Int(s.pass as i64)),
        ("sgnn.frac_bits", Field::Int(s.frac_bits as i64)),
        ("sgnn.job", Field::Int(s.job as i64)),
    ];
    match lanes {
        Some(l) => {
            let mut decoded = [0f32; LANES];
            FixedPoint::new(s.frac_bits, 1).decode(l, &mut decoded);
            let exact = l.iter().map(|&x| x as f64 / (1u64 << s.frac_bits) as f64);
            v.push((
                "sgnn.lane",
                Field::Ints(l.iter().map(|&x| x as i64).collect()),
            ));
            v.push((
                "sgnn.lane_value",
                Field::Floats(exact.zip(decoded).collect()),
            ));
        }
        None => {
            v.push(("sgnn.lane", Field::Absent));
            v.push(("sgnn.lane_value", Field::Absent));
        }
    }
    v
}

#[derive(Debug)]
enum Field {
    Int(i64),
    Bool(bool),
    Ints(Vec<i64>),
    /// The lanes' values: exactly `lane * 2^-frac_bits` (in f64), and the wire crate's
    /// decoding of them (f32).
    Floats(Vec<(f64, f32)>),
    Absent,
}

fn int(s: &str) -> i64 {
    match s.strip_prefix("0x") {
        Some(h) => i64::from_str_radix(h, 16).unwrap(),
        None => s.parse().unwrap_or_else(|e| panic!("{s:?}: {e}")),
    }
}

impl Field {
    /// Whether tshark's text `got` says the same.
    fn check(&self, name: &str, got: &str, frame: usize) {
        let ctx = || format!("frame {frame}, {name}: tshark says {got:?}, the wire crate {self:?}");
        match self {
            Field::Int(x) => assert_eq!(int(got), *x, "{}", ctx()),
            Field::Bool(b) => {
                let t = matches!(got, "1" | "True" | "true");
                let f = matches!(got, "0" | "False" | "false");
                assert!(t || f, "{}", ctx());
                assert_eq!(t, *b, "{}", ctx());
            }
            Field::Ints(xs) => {
                let g: Vec<i64> = got.split(',').map(int).collect();
                assert_eq!(&g, xs, "{}", ctx());
            }
            Field::Floats(xs) => {
                let g: Vec<f64> = got
                    .split(',')
                    .map(|x| {
                        x.parse()
                            .unwrap_or_else(|e| panic!("{x:?}: {e}; {}", ctx()))
                    })
                    .collect();
                assert_eq!(g.len(), xs.len(), "{}", ctx());
                for (&g, &(exact, crate_f32)) in g.iter().zip(xs) {
                    // The dissector decodes in double precision and tshark prints 15
                    // significant digits; the crate decodes in f32 (lane as f32, times 2^-f),
                    // which is the exact value rounded to f32.
                    assert!((g - exact).abs() <= exact.abs() * 1e-14, "{}", ctx());
                    assert!(
                        (crate_f32 as f64 - g).abs() <= g.abs() * f32::EPSILON as f64 / 2.0,
                        "{}",
                        ctx()
                    );
                }
            }
            Field::Absent => assert_eq!(got, "", "{}", ctx()),
        }
    }
}

/// Runs the dissector over the capture with tshark and checks every field of every frame
/// against the wire crate's parse of the same bytes.
fn dissector_check(pcap: &Path, frames: &[Captured]) {
    let tshark = std::env::var_os("TSHARK").unwrap_or_else(|| "tshark".into());
    if Command::new(&tshark)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_err()
    {
        sgnn_testkit::skipped(
            "tshark dissector check",
            "tshark is not installed",
            "apt-get install tshark",
        );
        return;
    }
    let lua = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tools/wireshark/sgnn.lua");
    let names: Vec<&str> = expected_fields(&FrameRepr::parse(&frames[0].data).unwrap().0, &None)
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    let mut cmd = Command::new(&tshark);
    cmd.arg("-r")
        .arg(pcap)
        .arg("-X")
        .arg(format!("lua_script:{}", lua.display()))
        .args(["-T", "fields", "-E", "separator=/t", "-E", "occurrence=a"])
        .args(["-E", "aggregator=,", "-e", "frame.interface_id"])
        .args([
            "-e",
            "frame.packet_flags_direction",
            "-e",
            "_ws.col.Protocol",
        ]);
    for n in &names {
        cmd.args(["-e", n]);
    }
    // tshark keeps its profile and temporary files under HOME.
    let home = tempfile::tempdir().unwrap();
    let out = cmd.env("HOME", home.path()).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "tshark failed: {stderr}");
    assert!(
        !stderr.contains("Lua: Error") && !stderr.to_lowercase().contains("lua error"),
        "{stderr}"
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let rows: Vec<Vec<&str>> = stdout
        .lines()
        .map(|l| l.split('\t').collect::<Vec<_>>())
        .collect();
    assert_eq!(rows.len(), frames.len(), "one row per frame: {stdout}");
    let mut seen: HashMap<PacketType, usize> = HashMap::new();
    for (i, (row, c)) in rows.iter().zip(frames).enumerate() {
        assert_eq!(row.len(), 3 + names.len(), "frame {i}: {row:?}");
        assert_eq!(int(row[0]), c.interface as i64, "frame {i}");
        assert_eq!(int(row[1]), c.direction as i64, "frame {i}");
        match FrameRepr::parse(&c.data) {
            Ok((r, lanes)) => {
                *seen.entry(r.sgnn.packet_type).or_default() += 1;
                assert_eq!(row[2], "SwitchGNN", "frame {i}");
                for (k, (name, want)) in expected_fields(&r, &lanes).iter().enumerate() {
                    want.check(name, row[3 + k], i);
                }
            }
            Err(_) => {
                // Not SwitchGNN (the stranger's frame): the dissector claims nothing.
                assert_ne!(row[2], "SwitchGNN", "frame {i}");
                assert!(row[3..].iter().all(|f| f.is_empty()), "frame {i}: {row:?}");
            }
        }
    }
    // Every packet type the run made went through the dissector, flags too.
    for t in [
        PacketType::Data,
        PacketType::Result,
        PacketType::Ack,
        PacketType::FetchReq,
        PacketType::Bypass,
        PacketType::BlockDone,
        PacketType::BlockAdvance,
    ] {
        assert!(seen.get(&t).copied().unwrap_or(0) > 0, "no {t:?} frame");
    }
    // tshark says what it checked, on the real stderr (libtest captures eprintln!).
    use std::io::Write as _;
    let _ = writeln!(
        std::io::stderr(),
        "tshark dissector check: {} frames, {} fields each, equal to the wire crate's parse",
        rows.len(),
        names.len()
    );
}
