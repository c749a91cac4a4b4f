//! SwitchGNN's P4Runtime layer.
//!
//! - [`proto`]: the P4Runtime messages, client and server, generated from this crate's own
//!   wire-compatible subset of the specification's `.proto` files.
//! - [`bfrt`]: the BfRt schema (`bf-rt.json`) of a Tofino program, by name and id.
//! - [`bfrt_double`]: an in-process BfRuntime server that checks every request against a
//!   `bf-rt.json`, for testing the BfRt backend without a Tofino.
//! - [`client`]: [`P4RuntimeClient`], a P4Runtime client: arbitration, pipeline, batched writes,
//!   reads.
//! - [`p4info`]: [`P4InfoIndex`], names to ids and widths; the canonical binary strings; loading
//!   P4Info files.
//! - [`schema`]: the P4Info the SwitchGNN P4 program must produce, and a comparison that lists
//!   every difference.
//!
//! The `Target` trait the control plane programs a switch through, with its P4Runtime, BfRt,
//! in-memory and fault-injecting backends, is `switch-ctl`'s (`switch_ctl::backend`,
//! `switch-ctl/ctl/src/backend.rs`).
#![warn(missing_docs)]

pub mod bfrt;
pub mod bfrt_double;
pub mod client;
pub mod p4info;
pub mod schema;
mod textformat;

pub use client::{ClientError, ClientOptions, ClientTls, P4RuntimeClient, WriteFailure};
pub use p4info::P4InfoIndex;

/// The generated P4Runtime and BfRuntime messages, clients and servers, in their packages.
#[allow(clippy::all)]
pub mod proto {
    /// `google.rpc`: the gRPC error model.
    pub mod google {
        /// `google.rpc`.
        pub mod rpc {
            include!(concat!(env!("OUT_DIR"), "/google.rpc.rs"));
        }
    }
    /// `bfrt_proto`: the BfRuntime service (a Tofino's bf_switchd) and its messages.
    #[allow(missing_docs)]
    pub mod bfrt_proto {
        include!(concat!(env!("OUT_DIR"), "/bfrt_proto.rs"));
    }
    /// `p4.v1` and `p4.config.v1`.
    pub mod p4 {
        /// `p4.v1`: the P4Runtime service and its messages.
        pub mod v1 {
            include!(concat!(env!("OUT_DIR"), "/p4.v1.rs"));
        }
        /// `p4.config.v1`.
        pub mod config {
            /// `p4.config.v1`: the P4Info.
            pub mod v1 {
                include!(concat!(env!("OUT_DIR"), "/p4.config.v1.rs"));
            }
        }
    }
}
