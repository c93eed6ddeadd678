//! The server layouts: how one MongoDB server laid its collections and indexes out over a storage
//! engine's tables, each an implementation of the Store calls (crate::calls::Store). A folder is
//! named for its server and the engines under it:
//!
//! - `mongod_kv`: mongod 3.x's record store (a table per collection keyed by a record id, a table
//!   per index), over the key-value contract of crate::engines: WiredTiger, RocksDB (as
//!   MongoRocks), LMDB (standing in for MMAPv1) and the fractal tree (as TokuMXse's tokuft engine);
//! - `tokumx_ft`: TokuMX's, over the fractal tree only (the collection clustered in its `_id`
//!   index, secondary keys carrying the primary key, update messages).
pub mod document;
pub mod fields;
pub mod mongod_kv;
pub mod tokumx_ft;
