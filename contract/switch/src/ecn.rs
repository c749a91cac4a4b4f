//! `p4/v1model/ecn.p4`: congestion marking. A frame the switch makes for a worker (Result,
//! Bypass, BlockAdvance) leaves with ECN CE in its IPv4 header and the `ecn` flag in its
//! SwitchGNN header when its egress queue holds more than `ecn_threshold` packets (the
//! [`crate::config`] setting; `u32::MAX`: never), or when one of the contributions it sums
//! arrived marked (`agg_ecn`, [`crate::aggregation::AGG_ECN`]). Counted as `ecn_marked`.

/// The IPv4 ECN code point "congestion experienced" (`ECN_CE`), defined with the IPv4 header.
pub use sgnn_wire::ipv4::ECN_CE;
