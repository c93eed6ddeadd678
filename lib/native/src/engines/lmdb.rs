//! LMDB: the memory-mapped B+tree, standing in for MongoDB's mmap engines (MMAPv1, TokuMX's
//! predecessor baseline) of the posts.
//!
//! One named sub-database per table. LMDB has a single writer at a time (a write transaction
//! waits for the previous one to commit) and readers on MVCC snapshots that never wait. Like
//! MMAPv1 it has no cache of its own: what is cached is what the OS page cache keeps. Commits
//! are not synced (MDB_NOSYNC; MMAPv1 flushed its data files every 60 s, `syncdelay`), and
//! read-ahead is off so random reads of an uncached database do not pull in their neighbours.
use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};
use std::path::Path;
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Mutex;

use serde_json::{json, Value};

use super::{past_range, Engine, Options, Session, Table, TableKind, Visit};
use crate::error::{Error, Result};

#[allow(non_camel_case_types)]
mod ffi {
    use super::*;
    pub enum MDB_env {}
    pub enum MDB_txn {}
    pub enum MDB_cursor {}
    pub type MDB_dbi = c_uint;
    #[repr(C)]
    pub struct MDB_val {
        pub mv_size: usize,
        pub mv_data: *mut c_void,
    }
    #[repr(C)]
    #[derive(Default)]
    pub struct MDB_envinfo {
        pub me_mapaddr: usize,
        pub me_mapsize: usize,
        pub me_last_pgno: usize,
        pub me_last_txnid: usize,
        pub me_maxreaders: c_uint,
        pub me_numreaders: c_uint,
    }
    #[repr(C)]
    #[derive(Default)]
    pub struct MDB_stat {
        pub ms_psize: c_uint,
        pub ms_depth: c_uint,
        pub ms_branch_pages: usize,
        pub ms_leaf_pages: usize,
        pub ms_overflow_pages: usize,
        pub ms_entries: usize,
    }
    // Debian's LMDB built with frame pointers (tools/build_lmdb.sh; build.rs finds it), linked
    // statically: its functions (all named mdb_*) are in the runner's symbols.
    #[link(name = "lmdb", kind = "static")]
    extern "C" {
        pub fn mdb_version(major: *mut c_int, minor: *mut c_int, patch: *mut c_int) -> *const c_char;
        pub fn mdb_strerror(err: c_int) -> *const c_char;
        pub fn mdb_env_create(env: *mut *mut MDB_env) -> c_int;
        pub fn mdb_env_set_mapsize(env: *mut MDB_env, size: usize) -> c_int;
        pub fn mdb_env_set_maxdbs(env: *mut MDB_env, dbs: MDB_dbi) -> c_int;
        pub fn mdb_env_set_maxreaders(env: *mut MDB_env, readers: c_uint) -> c_int;
        pub fn mdb_env_open(env: *mut MDB_env, path: *const c_char, flags: c_uint, mode: u32) -> c_int;
        pub fn mdb_env_close(env: *mut MDB_env);
        pub fn mdb_env_sync(env: *mut MDB_env, force: c_int) -> c_int;
        pub fn mdb_env_info(env: *mut MDB_env, info: *mut MDB_envinfo) -> c_int;
        pub fn mdb_env_stat(env: *mut MDB_env, stat: *mut MDB_stat) -> c_int;
        pub fn mdb_txn_begin(env: *mut MDB_env, parent: *mut MDB_txn, flags: c_uint, txn: *mut *mut MDB_txn) -> c_int;
        pub fn mdb_txn_commit(txn: *mut MDB_txn) -> c_int;
        pub fn mdb_txn_abort(txn: *mut MDB_txn);
        pub fn mdb_txn_reset(txn: *mut MDB_txn);
        pub fn mdb_txn_renew(txn: *mut MDB_txn) -> c_int;
        pub fn mdb_dbi_open(txn: *mut MDB_txn, name: *const c_char, flags: c_uint, dbi: *mut MDB_dbi) -> c_int;
        pub fn mdb_get(txn: *mut MDB_txn, dbi: MDB_dbi, key: *mut MDB_val, data: *mut MDB_val) -> c_int;
        pub fn mdb_put(txn: *mut MDB_txn, dbi: MDB_dbi, key: *mut MDB_val, data: *mut MDB_val, flags: c_uint) -> c_int;
        pub fn mdb_del(txn: *mut MDB_txn, dbi: MDB_dbi, key: *mut MDB_val, data: *mut MDB_val) -> c_int;
        pub fn mdb_cursor_open(txn: *mut MDB_txn, dbi: MDB_dbi, cursor: *mut *mut MDB_cursor) -> c_int;
        pub fn mdb_cursor_close(cursor: *mut MDB_cursor);
        pub fn mdb_cursor_get(cursor: *mut MDB_cursor, key: *mut MDB_val, data: *mut MDB_val, op: c_int) -> c_int;
    }
}
use ffi::*;

const MDB_NOSYNC: c_uint = 0x10000;
const MDB_NOMETASYNC: c_uint = 0x40000;
const MDB_NOTLS: c_uint = 0x200000;
const MDB_NORDAHEAD: c_uint = 0x800000;
const MDB_RDONLY: c_uint = 0x20000;
const MDB_CREATE: c_uint = 0x40000;
const MDB_NOTFOUND: c_int = -30798;
const MDB_KEYEXIST: c_int = -30799;
const MDB_NOOVERWRITE: c_uint = 0x10;
// MDB_cursor_op (lmdb.h)
const OP_FIRST: c_int = 0;
// lmdb.h's error codes (0.9.24).
const MDB_MAP_FULL: c_int = -30792;
const MDB_PANIC: c_int = -30795;
const OP_LAST: c_int = 6;
const OP_NEXT: c_int = 8;
const OP_PREV: c_int = 12;
const OP_SET_RANGE: c_int = 17;

fn check(code: c_int, what: &str) -> Result<()> {
    if code == 0 {
        return Ok(());
    }
    let text = unsafe { CStr::from_ptr(mdb_strerror(code)) }.to_string_lossy().into_owned();
    if code == libc::ENOSPC || code == libc::EIO || code == MDB_MAP_FULL || code == MDB_PANIC {
        // A full map or disk, or the device's I/O error (LMDB's commit has reported a full tmpfs
        // as EIO too): nothing more can be written, and the environment may not be usable.
        return Err(Error::fatal(format!("{what}: {text}")));
    }
    Err(Error::other(format!("{what}: {text}")))
}

fn val(data: &[u8]) -> MDB_val {
    MDB_val { mv_size: data.len(), mv_data: data.as_ptr() as *mut c_void }
}

unsafe fn bytes<'a>(v: &MDB_val) -> &'a [u8] {
    if v.mv_size == 0 { &[] } else { std::slice::from_raw_parts(v.mv_data as *const u8, v.mv_size) }
}

pub struct Lmdb {
    /// Set at open and cleared at close, read by every transaction's begin: an atomic load, where
    /// a lock was a cache line every client thread wrote (1% of a four-client read phase).
    env: AtomicPtr<MDB_env>,
    dbis: Mutex<Vec<(String, MDB_dbi)>>,
    settings: Value,
}

// An LMDB environment opened with MDB_NOTLS is shared by all threads; transactions are not.
unsafe impl Send for Lmdb {}
unsafe impl Sync for Lmdb {}

impl Lmdb {
    pub fn open(dir: &Path, options: &serde_json::Map<String, Value>) -> Result<Self> {
        let o = Options::new("lmdb", options);
        let map_gb = o.int("map_size_gb")?;
        let readahead = o.boolean("readahead")?;
        o.finish()?;
        let mut env: *mut MDB_env = ptr::null_mut();
        unsafe {
            check(mdb_env_create(&mut env), "LMDB env_create")?;
            check(mdb_env_set_mapsize(env, (map_gb as usize) << 30), "LMDB set_mapsize")?;
            check(mdb_env_set_maxdbs(env, 256), "LMDB set_maxdbs")?;
            check(mdb_env_set_maxreaders(env, 1024), "LMDB set_maxreaders")?;
            let mut flags = MDB_NOSYNC | MDB_NOMETASYNC | MDB_NOTLS;
            if !readahead {
                flags |= MDB_NORDAHEAD;
            }
            let path = CString::new(dir.display().to_string()).unwrap();
            if let Err(e) = check(mdb_env_open(env, path.as_ptr(), flags, 0o644), &format!("LMDB could not open {}", dir.display())) {
                mdb_env_close(env);
                return Err(e);
            }
        }
        let (mut major, mut minor, mut patch) = (0, 0, 0);
        unsafe { mdb_version(&mut major, &mut minor, &mut patch) };
        Ok(Lmdb {
            env: AtomicPtr::new(env),
            dbis: Mutex::new(Vec::new()),
            settings: json!({"release": format!("{major}.{minor}.{patch}"), "build": env!("EB_LMDB_BUILD_INFO"), "map_size_gb": map_gb,
                             "readahead": readahead, "sync": false,
                             "cache": "OS page cache only (memory-mapped)"}),
        })
    }

    fn env(&self) -> *mut MDB_env {
        self.env.load(Ordering::Acquire)
    }
}

impl Engine for Lmdb {
    fn mmap_stand_in(&self) -> bool {
        ENTRY.mmap_stand_in
    }
    fn name(&self) -> &str {
        "lmdb"
    }

    fn version(&self) -> String {
        self.settings["release"].as_str().unwrap_or_default().to_string()
    }

    fn config(&self) -> Value {
        self.settings.clone()
    }

    fn table(&self, name: &str, _kind: TableKind) -> Result<Table> {
        let mut dbis = self.dbis.lock().unwrap();
        if let Some(i) = dbis.iter().position(|(n, _)| n == name) {
            return Ok(Table(i));
        }
        let cname = CString::new(name).unwrap();
        let mut dbi: MDB_dbi = 0;
        unsafe {
            let mut txn: *mut MDB_txn = ptr::null_mut();
            check(mdb_txn_begin(self.env(), ptr::null_mut(), 0, &mut txn), "LMDB txn_begin")?;
            if let Err(e) = check(mdb_dbi_open(txn, cname.as_ptr(), MDB_CREATE, &mut dbi), &format!("LMDB dbi_open {name}")) {
                mdb_txn_abort(txn);
                return Err(e);
            }
            check(mdb_txn_commit(txn), "LMDB commit")?;
        }
        dbis.push((name.to_string(), dbi));
        Ok(Table(dbis.len() - 1))
    }

    fn session(&self) -> Result<Box<dyn Session>> {
        Ok(Box::new(LmdbSession {
            engine: self as *const Lmdb,
            txn: ptr::null_mut(),
            reader: ptr::null_mut(),
            writing: false,
            dbis: self.dbis.lock().unwrap().iter().map(|(_, d)| *d).collect(),
        }))
    }

    fn stats(&self) -> Vec<(String, i64)> {
        let mut info = MDB_envinfo::default();
        let mut stat = MDB_stat::default();
        unsafe {
            mdb_env_info(self.env(), &mut info);
            mdb_env_stat(self.env(), &mut stat);
        }
        vec![("lmdb.last_pgno".into(), info.me_last_pgno as i64), ("lmdb.page_size".into(), stat.ms_psize as i64),
             ("lmdb.map_size".into(), info.me_mapsize as i64)]
    }

    fn checkpoint(&self) -> Result<()> {
        check(unsafe { mdb_env_sync(self.env(), 1) }, "LMDB sync")
    }

    fn close(&self) -> Result<()> {
        let env = self.env.swap(ptr::null_mut(), Ordering::AcqRel);
        if !env.is_null() {
            unsafe { mdb_env_close(env) };
        }
        Ok(())
    }
}

struct LmdbSession {
    engine: *const Lmdb,
    txn: *mut MDB_txn,
    /// This thread's read transaction, reset between uses and renewed (LMDB's cheap path).
    reader: *mut MDB_txn,
    writing: bool,
    dbis: Vec<MDB_dbi>,
}

impl LmdbSession {
    fn dbi(&mut self, table: Table) -> MDB_dbi {
        if table.0 >= self.dbis.len() {
            let engine = unsafe { &*self.engine };
            self.dbis = engine.dbis.lock().unwrap().iter().map(|(_, d)| *d).collect();
        }
        self.dbis[table.0]
    }
}

impl Session for LmdbSession {
    fn begin(&mut self, write: bool) -> Result<()> {
        let env = unsafe { &*self.engine }.env();
        unsafe {
            if write {
                check(mdb_txn_begin(env, ptr::null_mut(), 0, &mut self.txn), "LMDB txn_begin")?;
            } else if self.reader.is_null() {
                check(mdb_txn_begin(env, ptr::null_mut(), MDB_RDONLY, &mut self.reader), "LMDB txn_begin")?;
                self.txn = self.reader;
            } else {
                check(mdb_txn_renew(self.reader), "LMDB txn_renew")?;
                self.txn = self.reader;
            }
        }
        self.writing = write;
        Ok(())
    }

    fn commit(&mut self) -> Result<()> {
        if self.writing {
            self.writing = false;
            let txn = std::mem::replace(&mut self.txn, ptr::null_mut());
            check(unsafe { mdb_txn_commit(txn) }, "LMDB commit")
        } else {
            self.rollback();
            Ok(())
        }
    }

    fn rollback(&mut self) {
        if self.txn.is_null() {
            return;
        }
        unsafe {
            if self.writing {
                mdb_txn_abort(self.txn);
            } else {
                mdb_txn_reset(self.txn);
            }
        }
        self.txn = ptr::null_mut();
        self.writing = false;
    }

    fn get(&mut self, table: Table, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        let dbi = self.dbi(table);
        let mut k = val(key);
        let mut v = MDB_val { mv_size: 0, mv_data: ptr::null_mut() };
        let code = unsafe { mdb_get(self.txn, dbi, &mut k, &mut v) };
        if code == MDB_NOTFOUND {
            return Ok(false);
        }
        check(code, "LMDB get")?;
        out.extend_from_slice(unsafe { bytes(&v) });
        Ok(true)
    }

    fn put(&mut self, table: Table, key: &[u8], value: &[u8]) -> Result<()> {
        let dbi = self.dbi(table);
        let (mut k, mut v) = (val(key), val(value));
        check(unsafe { mdb_put(self.txn, dbi, &mut k, &mut v, 0) }, "LMDB put")
    }

    fn insert_new(&mut self, table: Table, key: &[u8], value: &[u8]) -> Result<bool> {
        let dbi = self.dbi(table);
        let (mut k, mut v) = (val(key), val(value));
        let code = unsafe { mdb_put(self.txn, dbi, &mut k, &mut v, MDB_NOOVERWRITE) };
        if code == MDB_KEYEXIST {
            return Ok(false);
        }
        check(code, "LMDB put").map(|_| true)
    }

    fn delete(&mut self, table: Table, key: &[u8]) -> Result<()> {
        let dbi = self.dbi(table);
        let mut k = val(key);
        let code = unsafe { mdb_del(self.txn, dbi, &mut k, ptr::null_mut()) };
        if code == MDB_NOTFOUND {
            return Ok(());
        }
        check(code, "LMDB delete")
    }

    fn scan(&mut self, table: Table, low: &[u8], high: Option<&[u8]>, reverse: bool, visit: Visit) -> Result<()> {
        let dbi = self.dbi(table);
        let mut cursor: *mut MDB_cursor = ptr::null_mut();
        check(unsafe { mdb_cursor_open(self.txn, dbi, &mut cursor) }, "LMDB cursor_open")?;
        let mut k = MDB_val { mv_size: 0, mv_data: ptr::null_mut() };
        let mut v = MDB_val { mv_size: 0, mv_data: ptr::null_mut() };
        let result = (|| -> Result<()> {
            let mut code = unsafe {
                if !reverse {
                    if low.is_empty() {
                        mdb_cursor_get(cursor, &mut k, &mut v, OP_FIRST)
                    } else {
                        k = val(low);
                        mdb_cursor_get(cursor, &mut k, &mut v, OP_SET_RANGE)
                    }
                } else {
                    match high {
                        None => mdb_cursor_get(cursor, &mut k, &mut v, OP_LAST),
                        Some(h) => {
                            // The last key below `high`: seek to it, then step back.
                            k = val(h);
                            let c = mdb_cursor_get(cursor, &mut k, &mut v, OP_SET_RANGE);
                            if c == MDB_NOTFOUND { mdb_cursor_get(cursor, &mut k, &mut v, OP_LAST) } else if c == 0 {
                                mdb_cursor_get(cursor, &mut k, &mut v, OP_PREV)
                            } else { c }
                        }
                    }
                }
            };
            while code == 0 {
                let key = unsafe { bytes(&k) };
                if past_range(key, low, high, reverse) {
                    return Ok(());
                }
                if !visit(key, unsafe { bytes(&v) }) {
                    return Ok(());
                }
                code = unsafe { mdb_cursor_get(cursor, &mut k, &mut v, if reverse { OP_PREV } else { OP_NEXT }) };
            }
            if code == MDB_NOTFOUND { Ok(()) } else { check(code, "LMDB cursor_get") }
        })();
        unsafe { mdb_cursor_close(cursor) };
        result
    }
}

impl Drop for LmdbSession {
    fn drop(&mut self) {
        self.rollback();
        if !self.reader.is_null() {
            unsafe { mdb_txn_abort(self.reader) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Kind;

    #[test]
    fn a_full_disk_or_an_io_error_is_fatal_and_a_missing_key_is_not() {
        for code in [libc::ENOSPC, libc::EIO, MDB_MAP_FULL, MDB_PANIC] {
            assert_eq!(check(code, "LMDB commit").unwrap_err().kind, Kind::Fatal, "code {code}");
        }
        assert_eq!(check(-30798, "LMDB get").unwrap_err().kind, Kind::Other); // MDB_NOTFOUND
        assert!(check(0, "LMDB commit").is_ok());
    }
}

/// This engine in the runner's registry (engines/mod.rs, written by build.rs).
pub const ENTRY: super::EngineEntry = super::EngineEntry {
    name: "lmdb",
    open: |dir, options| Ok(std::sync::Arc::new(Lmdb::open(dir, options)?)),
    releases: || vec!["0.9".to_string()],
    mmap_stand_in: true,
};
