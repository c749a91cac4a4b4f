//! The software switch as `switch-ctl load` leaves it: the plan's tables, workers on ports
//! `0..M`, registers fresh at round 0 block 0.

use sgnn_plan::Plan;
use sgnn_wire::addressing::{worker_ip, worker_mac};
use softswitch::{Pipeline, SwitchConfig, Tables, WorkerPort};

/// Workers `0..workers` on ports `0..workers`, with their addresses.
pub fn worker_ports(workers: u16) -> Vec<WorkerPort> {
    (0..workers)
        .map(|w| WorkerPort {
            port: w,
            mac: worker_mac(w),
            ip: worker_ip(w),
        })
        .collect()
}

/// A software switch loaded with `plan` (every block's entries), workers on ports 0..M.
pub fn loaded_switch(plan: &Plan) -> Pipeline {
    let workers = plan.workers() as u16;
    Pipeline::new(
        SwitchConfig {
            workers,
            ..SwitchConfig::for_plan(plan)
        },
        Tables::from_plan(plan, &worker_ports(workers)),
    )
}
