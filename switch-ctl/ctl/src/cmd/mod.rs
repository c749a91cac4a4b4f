//! The subcommands of `switch-ctl`, one module each: its flags (clap) and what it prints.
//! What they compute is the libraries': planning is `sgnn-planner`'s, plans are `sgnn-plan`'s,
//! and programming and reading a switch is `switch_ctl`'s.

pub mod bench;
pub mod clear;
pub mod dump;
pub mod load;
pub mod plan;
pub mod progress;
pub mod show;
pub mod target;
