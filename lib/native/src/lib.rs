//! enginebench's native runner as a library: the binary (main.rs) is its command line, and the
//! integration tests (lib/native/tests) drive the same modules.
//!
//! Layers, each using only those below it:
//!   calls       the Store calls every workload makes (a trait and its argument types)
//!   engines     the embedded engines' key-value contract and adapters
//!   layouts     how each server laid its collections out over an engine's tables (each
//!               implements calls::Store)
//!   executors   where a system's calls run: an embedded layout, or a server
//!   workloads   each family's generator and loops, against calls::Store
//!   phase, plan the phase plan and its phases; run, serve, sample: the subcommands
pub mod calls;
pub mod control;
pub mod engines;
pub mod error;
pub mod events;
pub mod executors;
pub mod keys;
pub mod layouts;
pub mod phase;
pub mod plan;
pub mod pyrandom;
pub mod recorder;
pub mod run;
pub mod sample;
pub mod serve;
pub mod workloads;
