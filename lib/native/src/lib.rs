//! enginebench's native runner as a library: the binary (main.rs) is its command line, and the
//! integration tests (lib/native/tests) drive the same modules.
//!
//! Layers, each using only those below it:
//!   calls       the Store calls every workload makes (a trait and its argument types)
//!   engines     the embedded engines' key-value contract and adapters
//!   store       mongod's record-store layout over an engine (implements calls::Store)
//!   target      where a system's calls run: the embedded record store, or a server
//!   workloads   each family's generator and loops, against calls::Store
//!   phase, plan the phase plan and its phases; run, serve, sample: the subcommands
pub mod calls;
pub mod control;
pub mod engines;
pub mod error;
pub mod events;
pub mod keys;
pub mod phase;
pub mod plan;
pub mod pyrandom;
pub mod recorder;
pub mod run;
pub mod sample;
pub mod serve;
pub mod store;
pub mod target;
pub mod workloads;
