//! The pieces of distributed training in one process, over real sockets: the coordinator sums
//! and maximises across worker links and stops every worker when one dies; the scaled
//! exchange keeps values of 1e-6 and of 1e3 alike within the documented fixed-point bound.

use std::net::TcpListener;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc;
use std::time::Duration;

use ndarray::Array2;
use sgnn_graph::Csr;
use sgnn_train::daemon::SumService;
use sgnn_train::distributed::{coordinate, exchange_scale, CoordLink, ScaledExchange, SharedLink};
use sgnn_train::exchange::Exchange;
use sgnn_train::train::Collective;
use sgnn_train::TrainError;
use sgnn_transport::reference::reference_sums;
use sgnn_wire::codec::FixedPoint;

/// Starts a coordinator for `workers` on a free port; returns its address and its thread.
fn coordinator(
    workers: usize,
) -> (
    String,
    std::thread::JoinHandle<Result<sgnn_train::distributed::CoordinatorStats, TrainError>>,
) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let h = std::thread::spawn(move || {
        let stop = AtomicBool::new(false);
        coordinate(l, workers, Duration::from_secs(20), &stop, &mut |_| {})
    });
    (addr, h)
}

#[test]
fn the_coordinator_sums_and_maximises_across_workers() {
    let (addr, h) = coordinator(3);
    let threads: Vec<_> = (0..3u32)
        .map(|w| {
            let addr = addr.clone();
            std::thread::spawn(move || {
                let mut link = SharedLink::new(
                    CoordLink::connect(&addr, w, Box::new(|why| panic!("aborted: {why}"))).unwrap(),
                );
                let mut v = vec![w as f64, 1.0, -(w as f64)];
                link.all_reduce_sum(&mut v).unwrap();
                let mut m = vec![w as f64 * 10.0, -(w as f64)];
                link.all_reduce_max(&mut m).unwrap();
                link.0.borrow_mut().done().unwrap();
                (v, m)
            })
        })
        .collect();
    for t in threads {
        let (v, m) = t.join().unwrap();
        assert_eq!(v, vec![3.0, 3.0, -3.0]);
        assert_eq!(m, vec![20.0, 0.0]);
    }
    let stats = h.join().unwrap().unwrap();
    assert_eq!(stats.reductions, 2);
}

#[test]
fn a_worker_that_dies_stops_every_other_worker_at_once() {
    let (addr, h) = coordinator(3);
    let (tx, rx) = mpsc::channel::<(u32, String)>();
    let mut links = Vec::new();
    for w in 0..3u32 {
        let tx = tx.clone();
        links.push(
            CoordLink::connect(
                &addr,
                w,
                Box::new(move |why| {
                    let _ = tx.send((w, why));
                }),
            )
            .unwrap(),
        );
    }
    // Workers 0 and 2 wait in a sum that can never complete; worker 1 dies.
    let l0 = links.remove(0);
    let waiter = std::thread::spawn(move || {
        let mut l0 = SharedLink::new(l0);
        let mut v = vec![1.0];
        // The abort callback fires on the reader thread; the sum itself never returns a
        // result, so it fails once the link's reader has gone.
        l0.all_reduce_sum(&mut v)
    });
    drop(links.remove(0)); // worker 1: its connection closes before DONE
    let mut told: Vec<(u32, String)> = (0..2)
        .map(|_| rx.recv_timeout(Duration::from_secs(10)).unwrap())
        .collect();
    told.sort();
    assert_eq!(told[0].0, 0);
    assert_eq!(told[1].0, 2);
    for (_, why) in &told {
        assert!(why.contains("worker 1 died"), "{why}");
    }
    let err = h.join().unwrap().unwrap_err().to_string();
    assert!(err.contains("worker 1 died"), "{err}");
    assert!(waiter.join().unwrap().is_err());
}

/// The daemon's arithmetic in one process: fixed-point encoding of every term, int32 sums,
/// decoding (`reference_sums`, which the daemons equal bit for bit).
struct ModelDaemon {
    graph: Csr,
    fixed: FixedPoint,
}

impl SumService for ModelDaemon {
    fn propagate(
        &mut self,
        _layer: u32,
        _backward: bool,
        dim: usize,
        values: Vec<f32>,
    ) -> Result<Vec<f32>, TrainError> {
        Ok(reference_sums(&self.graph, self.fixed, dim, &values))
    }
}

#[test]
fn values_of_1e_minus_6_and_of_1e3_both_survive_the_exchange() {
    // A star: vertex 0 has 40 neighbours, so its sum has the most terms.
    let edges: Vec<(u32, u32)> = (1..=40).map(|v| (0, v)).collect();
    let (graph, _) = Csr::from_edges(41, &edges);
    let frac_bits = 16; // a plan made for values of about 1 (as `sgnn train` makes it)
    let max_degree = 40;
    let (addr, h) = coordinator(1);
    let link = SharedLink::new(CoordLink::connect(&addr, 0, Box::new(|w| panic!("{w}"))).unwrap());
    let daemon = ModelDaemon {
        graph: graph.clone(),
        fixed: FixedPoint::new(frac_bits, max_degree),
    };
    let mut ex = ScaledExchange::new(daemon, link.clone(), frac_bits, max_degree);
    for magnitude in [1e-6f32, 1e3] {
        let x = Array2::from_shape_fn((41, 3), |(v, j)| {
            magnitude * (1.0 + 0.37 * v as f32 - 0.5 * j as f32).sin()
        });
        let got = ex.neighbour_sum(0, true, x.view()).unwrap();
        let s = *ex.scales.last().unwrap();
        for v in 0..41u32 {
            let terms = graph.degree(v) as u32;
            let bound = ex.error_bound(terms, s);
            for j in 0..3 {
                let exact: f64 = graph
                    .neighbors(v)
                    .iter()
                    .map(|&u| x[[u as usize, j]] as f64)
                    .sum();
                let err = (got[[v as usize, j]] as f64 - exact).abs();
                assert!(
                    err <= bound,
                    "magnitude {magnitude}: vertex {v} lane {j}: error {err} above the bound {bound}"
                );
                // And far below the values themselves: 1e-6 is not rounded away.
                if exact.abs() > magnitude as f64 * 0.1 {
                    assert!(
                        err / exact.abs() < 1e-5,
                        "magnitude {magnitude}: relative error {}",
                        err / exact.abs()
                    );
                }
            }
        }
    }
    // Without the scale, 1e-6 at 16 fraction bits would encode as 0.
    assert!(ex.scales[0] > 16 && ex.scales[1] < 0, "{:?}", ex.scales);
    link.0.borrow_mut().done().unwrap();
    h.join().unwrap().unwrap();
}

#[test]
fn the_scale_fills_the_range_and_leaves_zero_alone() {
    assert_eq!(exchange_scale(0.0, 100.0), 0);
    assert_eq!(exchange_scale(1.0, 1024.0), 10);
    assert_eq!(exchange_scale(1.5, 1024.0), 9);
    let s = exchange_scale(3e-7, 2048.0);
    assert!(3e-7 * 2f64.powi(s) <= 2048.0 && 3e-7 * 2f64.powi(s + 1) > 2048.0);
}
