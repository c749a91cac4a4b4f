//! `switch-ctl load`, `dump` and `clear` (the real binary) against a software switch serving
//! P4Runtime over real gRPC; errors for an unreachable switch and a plan that does not fit.

use std::process::Command;
use std::sync::{Arc, Mutex};

use sgnn_plan::model::PlanConfig;
use sgnn_planner::planner::{make_plan, PlanRequest};
use softswitch::{Pipeline, SwitchConfig, Tables};

fn plan_dir(mem: u64, feature_dim: u32) -> (tempfile::TempDir, sgnn_plan::Plan) {
    plan_dir_for(4, mem, feature_dim)
}

fn plan_dir_for(workers: u32, mem: u64, feature_dim: u32) -> (tempfile::TempDir, sgnn_plan::Plan) {
    let g = sgnn_graph::load_graph("rmat:scale=9,edge_factor=8,seed=3").unwrap();
    let req = PlanRequest {
        config: PlanConfig {
            workers,
            partitioner: sgnn_plan::Partitioner::Metis,
            switch_mem_bytes: mem,
            agg_bytes: 128,
            feature_dim,
            order: sgnn_plan::SendOrder::Gamr,
            seed: 1,
            max_passes: 16,
            leaves: 1,
            aggregate: sgnn_plan::AggregateMode::Paper,
            recycle_slack: None,
        },
        graph_source: "rmat".into(),
        max_abs_value: 1.0,
    };
    let (plan, _) = make_plan(g.csr, g.stats, &req, &mut |_| {}).unwrap();
    let dir = tempfile::tempdir().unwrap();
    plan.save(dir.path()).unwrap();
    (dir, plan)
}

fn ctl(args: &[&str]) -> (bool, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_switch-ctl"))
        .args(args)
        .output()
        .unwrap();
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// `switch` serving P4Runtime on a Unix socket in a temporary directory (kept while the
/// returned directory lives): the switch, the directory and the target address.
fn serve(switch: Pipeline) -> (Arc<Mutex<Pipeline>>, tempfile::TempDir, String) {
    let sw = Arc::new(Mutex::new(switch));
    let sock = tempfile::tempdir().unwrap();
    let addr = softswitch::p4rt::spawn(
        sw.clone(),
        0,
        softswitch::p4rt::Listen::Unix(sock.path().join("p4rt.sock")),
    )
    .unwrap();
    (sw, sock, addr)
}

#[test]
fn load_dump_clear_a_software_switch_over_p4runtime() {
    let (sw, _sock, addr) = serve(Pipeline::new(SwitchConfig::default(), Tables::default()));
    let (dir, plan) = plan_dir(64 * 1024, 64);
    let d = dir.path().to_str().unwrap();
    let (ok, out, err) = ctl(&[
        "load",
        "--plan",
        d,
        "--target",
        &addr,
        "--quiet",
        "--ecn-threshold",
        "40",
    ]);
    assert!(ok, "{out}{err}");
    assert!(
        out.starts_with(&format!(
            "loaded {d}: 4 workers, {} blocks",
            plan.blocks.len()
        )),
        "{out}"
    );
    let contributions: u64 = plan.blocks.iter().map(|b| b.num_contributions()).sum();
    {
        let p = sw.lock().unwrap();
        assert_eq!(p.tables.agg_table.len() as u64, contributions);
        assert_eq!(p.tables.worker_table.len(), 4);
        assert_eq!(p.tables.dscp_priority.len(), 5);
        assert_eq!(p.config.workers, 4);
        assert_eq!(p.config.blocks_per_round as usize, plan.blocks.len());
        assert_eq!(p.config.ecn_threshold, 40);
        // The model built from the plan directly holds exactly what load installed.
        let want = Tables::from_plan(
            &plan,
            &(0..4u16)
                .map(|w| softswitch::WorkerPort {
                    port: w,
                    mac: sgnn_wire::addressing::worker_mac(w),
                    ip: sgnn_wire::addressing::worker_ip(w),
                })
                .collect::<Vec<_>>(),
        );
        assert_eq!(p.tables.agg_table, want.agg_table);
        assert_eq!(p.tables.multicast_groups, want.multicast_groups);
    }
    let (ok, out, err) = ctl(&["dump", "--target", &addr, "--json"]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["tables"]["agg_table"].as_u64().unwrap(), contributions);
    assert_eq!(v["settings"]["workers"], 4);
    assert_eq!(v["advance_group"].as_array().unwrap().len(), 4);
    assert_eq!(v["registers"]["sync_block"], 0);
    // Loading again replaces the earlier plan instead of failing on existing keys.
    let (ok, _, err) = ctl(&["load", "--plan", d, "--target", &addr, "--quiet"]);
    assert!(ok, "{err}");
    assert!(
        // 4 workers: worker_table, port_worker, worker_addr and ipv4_forward, and the DSCP map.
        err.contains(&format!("removed {} entries", contributions + 21)),
        "{err}"
    );
    let (ok, out, err) = ctl(&["clear", "--target", &addr]);
    assert!(ok, "{err}");
    assert!(
        out.starts_with(&format!("cleared {} entries", contributions + 21)),
        "{out}"
    );
    let p = sw.lock().unwrap();
    assert!(p.tables.agg_table.is_empty() && p.tables.worker_addr.is_empty());
    assert_eq!(p.config.workers, 0);
}

#[test]
fn unreachable_switches_and_plans_that_do_not_fit_are_clear_errors() {
    let (dir, _) = plan_dir(64 * 1024, 64);
    let d = dir.path().to_str().unwrap();
    let (ok, _, err) = ctl(&["load", "--plan", d, "--target", "127.0.0.1:1", "--quiet"]);
    assert!(!ok);
    assert!(
        err.contains("127.0.0.1:1") && err.contains("running"),
        "{err}"
    );

    // 8192 values per vertex are 256 aggregators each: the plan's one block needs far more
    // than the switch's 65536.
    let sw = Arc::new(Mutex::new(Pipeline::new(
        SwitchConfig::default(),
        Tables::default(),
    )));
    let addr = softswitch::p4rt::spawn(
        sw.clone(),
        0,
        softswitch::p4rt::Listen::Tcp("127.0.0.1:0".parse().unwrap()),
    )
    .unwrap();
    let (big, _) = plan_dir(64 << 20, 8192);
    let (ok, _, err) = ctl(&[
        "load",
        "--plan",
        big.path().to_str().unwrap(),
        "--target",
        &addr,
        "--quiet",
    ]);
    assert!(!ok);
    assert!(err.contains("re-plan with --switch-mem"), "{err}");
    assert!(
        sw.lock().unwrap().tables.agg_table.is_empty(),
        "nothing was written"
    );
}

/// A 4-worker plan into a software switch with 2 host ports: `load` fails with the switch's
/// reason (issue 14; it used to be accepted, and the run then timed out).
#[test]
fn a_plan_for_more_workers_than_the_switch_has_ports_is_refused_at_load() {
    let mut p = Pipeline::new(SwitchConfig::default(), Tables::default());
    p.host_ports = Some(2);
    let (_sw, _sock, addr) = serve(p);
    let (dir, _) = plan_dir(64 * 1024, 64);
    let (ok, out, err) = ctl(&[
        "load",
        "--plan",
        dir.path().to_str().unwrap(),
        "--target",
        &addr,
        "--quiet",
    ]);
    assert!(!ok, "{out}");
    assert!(err.contains("this switch has 2 host ports"), "{err}");
}

/// An 8-worker plan into a software switch with 4 host ports (issue 31): refused in one
/// sentence, and the switch is left as it was before `load` (no settings of the refused plan,
/// no entries), instead of holding the ~1000 updates written before the refusal.
#[test]
fn a_refused_load_leaves_nothing_on_the_switch_and_says_so_once() {
    let mut p = Pipeline::new(SwitchConfig::default(), Tables::default());
    p.host_ports = Some(4);
    let (sw, _sock, addr) = serve(p);
    let (dir, plan) = plan_dir_for(8, 64 * 1024, 64);
    assert!(
        plan.blocks
            .iter()
            .map(|b| b.num_contributions())
            .sum::<u64>()
            > 2000,
        "the plan needs more than one batch of updates"
    );
    let (ok, out, err) = ctl(&[
        "load",
        "--plan",
        dir.path().to_str().unwrap(),
        "--target",
        &addr,
        "--quiet",
        "--batch",
        "1000",
    ]);
    assert!(!ok, "{out}");
    assert!(err.contains("this switch has 4 host ports"), "{err}");
    assert_eq!(
        err.matches("this switch has 4 host ports").count(),
        1,
        "the cause is said once: {err}"
    );
    assert!(
        !err.contains("operations were applied"),
        "no contradicting counts: {err}"
    );
    assert!(
        err.contains("removed again, so the switch holds no plan"),
        "{err}"
    );
    let p = sw.lock().unwrap();
    assert_eq!(
        p.config.workers, 0,
        "the refused plan's settings were undone"
    );
    assert_ne!(p.config.plan_tag, plan.tag());
    assert!(
        p.tables.agg_table.is_empty(),
        "{} entries left",
        p.tables.agg_table.len()
    );
    assert!(p.tables.worker_table.is_empty());
}

/// `switch-ctl load`, `dump` and `clear` over BfRuntime (`--target bfrt://`), against the
/// BfRuntime double serving the compiler's BfRt schema of the TNA program: every request is
/// checked against that schema, so a load that succeeds is one a Tofino would accept.
#[test]
fn load_dump_clear_a_tofino_over_bfruntime() {
    // The compiler's schema (committed in sgnn-p4rt's tests).
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../p4rt/tests/data/switchgnn-tna.bf-rt.json"
    );
    let schema = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let d = sgnn_p4rt::bfrt_double::BfrtDouble::start("switchgnn", &schema).unwrap();
    let target = format!("bfrt://{}", d.addr());
    let (dir, plan) = plan_dir(64 * 1024, 64);
    let p = dir.path().to_str().unwrap();
    let (ok, out, err) = ctl(&[
        "load",
        "--plan",
        p,
        "--target",
        &target,
        "--quiet",
        "--worker-port",
        "0,4,8,12",
        "--recirculation-port",
        "68",
    ]);
    assert!(ok, "{out}{err}");
    assert!(out.starts_with(&format!("loaded {p}: 4 workers")), "{out}");
    let contributions: u64 = plan.blocks.iter().map(|b| b.num_contributions()).sum();
    assert_eq!(d.entries("agg_table") as u64, contributions);
    assert_eq!(d.entries("worker_table"), 4);
    assert_eq!(d.requests_rejected(), 0);
    let (ok, out, err) = ctl(&["dump", "--target", &target, "--json"]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["tables"]["agg_table"].as_u64().unwrap(), contributions);
    assert_eq!(v["settings"]["workers"], 4);
    let group = v["advance_group"].as_array().unwrap();
    assert_eq!(group.len(), 4);
    assert_eq!(group[1]["port"], 4);
    let (ok, out, err) = ctl(&["clear", "--target", &target]);
    assert!(ok, "{err}");
    assert!(out.starts_with("cleared "), "{out}");
    assert_eq!(d.entries("agg_table"), 0);
    // The v1model program's pipeline push has no BfRt equivalent: a clear error.
    let (ok, _, err) = ctl(&[
        "load",
        "--plan",
        p,
        "--target",
        &target,
        "--p4info",
        "x",
        "--device-config",
        "y",
    ]);
    assert!(!ok && err.contains("bf_switchd"), "{err}");
}

/// A CA and a certificate for `localhost` signed by it, PEM: (ca, cert, key).
fn certificates() -> (String, String, String) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec!["localhost".to_string()])
        .unwrap()
        .signed_by(&key, &ca, &ca_key)
        .unwrap();
    (ca.pem(), cert.pem(), key.serialize_pem())
}

/// P4Runtime over TLS (rustls through tonic): `switch-ctl load` with `--tls-ca` programs a
/// software switch that serves TLS; without the CA, with another CA, or in plaintext it is
/// refused with a message, and nothing is written.
#[test]
fn p4runtime_over_tls_needs_the_right_ca() {
    let (dir, plan) = plan_dir(256 << 10, 64);
    let d = dir.path().to_str().unwrap();
    let certs = tempfile::tempdir().unwrap();
    let (ca, cert, key) = certificates();
    let (other_ca, _, _) = certificates();
    let write = |name: &str, pem: &str| {
        let p = certs.path().join(name);
        std::fs::write(&p, pem).unwrap();
        p.display().to_string()
    };
    let ca = write("ca.pem", &ca);
    let other_ca = write("other-ca.pem", &other_ca);
    let sw = Arc::new(Mutex::new(Pipeline::new(
        SwitchConfig::default(),
        Tables::default(),
    )));
    let addr = softswitch::p4rt::spawn_with(
        sw.clone(),
        0,
        "127.0.0.1:0".parse().unwrap(),
        Some(softswitch::p4rt::ServerTls {
            cert_pem: cert.into_bytes(),
            key_pem: key.into_bytes(),
        }),
    )
    .unwrap();
    let port = addr.rsplit(':').next().unwrap();
    let target = format!("localhost:{port}");
    let load = |extra: &[&str]| {
        let mut args = vec!["load", "--plan", d, "--target", &target, "--quiet"];
        args.extend_from_slice(extra);
        ctl(&args)
    };
    // Plaintext to a TLS endpoint, and TLS trusting another CA: refused, nothing written.
    let (ok, _, err) = load(&[]);
    assert!(!ok, "plaintext must not reach a TLS switch");
    assert!(err.contains(&target), "{err}");
    assert!(err.contains("--tls-ca"), "the error suggests TLS: {err}");
    let (ok, _, err) = load(&["--tls-ca", &other_ca]);
    assert!(!ok, "another CA must not be trusted");
    assert!(
        err.contains(&target) && err.contains("certificate"),
        "{err}"
    );
    assert!(sw.lock().unwrap().tables.agg_table.is_empty());
    // The right CA: loaded.
    let (ok, _, err) = load(&["--tls-ca", &ca]);
    assert!(ok, "{err}");
    assert_eq!(sw.lock().unwrap().config.plan_tag, plan.tag());
    let (ok, out, err) = ctl(&["dump", "--target", &target, "--tls-ca", &ca, "--json"]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["settings"]["plan_tag"], plan.tag(), "{out}");
}

/// `switch-ctl load --fabric 2,2 --fabric-switch leaf:N|spine:N` over real gRPC into one
/// software switch per leaf and spine: each holds exactly what the simulator's fabric gives
/// that switch (`Tables::for_fabric`, `SwitchConfig::for_fabric`, `lower_block`), role and
/// address included. Bad fabric arguments are clear errors.
#[test]
fn load_each_switch_of_a_leaf_spine_fabric() {
    use sgnn_switch::fabric::{lower_block, Fabric, FabricSwitch};
    let (dir, plan) = plan_dir(64 * 1024, 64);
    let d = dir.path().to_str().unwrap();
    let fabric = Fabric::new(4, 2, 2).unwrap();
    let groups = plan.replica_groups();
    let mut split = 0;
    for (name, role) in [
        ("leaf:0", FabricSwitch::Leaf(0)),
        ("leaf:1", FabricSwitch::Leaf(1)),
        ("spine:0", FabricSwitch::Spine(0)),
        ("spine:1", FabricSwitch::Spine(1)),
    ] {
        let (sw, _sock, addr) = serve(Pipeline::new(SwitchConfig::default(), Tables::default()));
        let (ok, out, err) = ctl(&[
            "load",
            "--plan",
            d,
            "--target",
            &addr,
            "--quiet",
            "--fabric",
            "2,2",
            "--fabric-switch",
            name,
        ]);
        assert!(ok, "{name}: {out}{err}");
        let p = sw.lock().unwrap();
        let want_cfg = SwitchConfig::for_fabric(&plan, &fabric, role);
        assert_eq!(
            (p.config.role, p.config.workers, p.config.ip, p.config.mac),
            (want_cfg.role, want_cfg.workers, want_cfg.ip, want_cfg.mac),
            "{name}"
        );
        let mut want = Tables::for_fabric(&fabric, role, &groups);
        for b in 0..plan.blocks.len() {
            want.install_entries(lower_block(&plan, &fabric, b, &groups).of(role));
        }
        assert_eq!(p.tables.agg_table, want.agg_table, "{name}");
        assert_eq!(p.tables.worker_table, want.worker_table, "{name}");
        assert_eq!(p.tables.worker_addr, want.worker_addr, "{name}");
        assert_eq!(p.tables.port_worker, want.port_worker, "{name}");
        assert_eq!(p.tables.ipv4_forward, want.ipv4_forward, "{name}");
        assert_eq!(p.tables.multicast_groups, want.multicast_groups, "{name}");
        if matches!(role, FabricSwitch::Spine(_)) {
            split += p.tables.agg_table.len();
        }
    }
    assert!(
        split > 0,
        "the plan's rows span the leaves: the spines hold partials rows"
    );
    for (args, want) in [
        (
            ["--fabric", "3,2", "--fabric-switch", "leaf:0"],
            "leaves that divide the workers",
        ),
        (
            ["--fabric", "2", "--fabric-switch", "leaf:0"],
            "want LEAVES,SPINES",
        ),
        (
            ["--fabric", "2,2", "--fabric-switch", "leaf:2"],
            "leaves 0..2 and spines 0..2",
        ),
        (
            ["--fabric", "2,2", "--fabric-switch", "core:0"],
            "want leaf:N or spine:N",
        ),
    ] {
        let mut a = vec![
            "load",
            "--plan",
            d,
            "--target",
            "unix:/nonexistent",
            "--quiet",
        ];
        a.extend(args);
        let (ok, _, err) = ctl(&a);
        assert!(!ok && err.contains(want), "{args:?}: {err}");
    }
}
