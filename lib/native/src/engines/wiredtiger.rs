//! WiredTiger (b-tree or LSM tables), configured as mongod configures it.
//!
//! The connection and table configuration strings come from engines::mongod_layout, which names
//! the mongod source each setting is read from. The release is a system option (`version`):
//! each release the build found has its own shim (build.rs), loaded at run time.
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::Path;
use std::ptr;
use std::sync::{Mutex, OnceLock};

use libloading::Library;
use serde_json::{json, Value};

use super::{past_range, Engine, Options, Session, Table, TableKind, Visit};
use crate::error::{Error, Result};
use crate::engines::mongod_layout;

type Conn = c_void;
type WtSession = c_void;
type Cursor = c_void;

/// The shim's functions (shim/wt_shim.c), resolved once per process.
struct Api {
    _lib: Library,
    version: unsafe extern "C" fn(*mut c_int, *mut c_int, *mut c_int) -> *const c_char,
    strerror: unsafe extern "C" fn(c_int) -> *const c_char,
    last_error: unsafe extern "C" fn() -> *const c_char,
    panicked: unsafe extern "C" fn() -> c_int,
    open: unsafe extern "C" fn(*const c_char, *const c_char, *mut *mut Conn) -> c_int,
    conn_close: unsafe extern "C" fn(*mut Conn, *const c_char) -> c_int,
    open_session: unsafe extern "C" fn(*mut Conn, *const c_char, *mut *mut WtSession) -> c_int,
    session_close: unsafe extern "C" fn(*mut WtSession) -> c_int,
    create: unsafe extern "C" fn(*mut WtSession, *const c_char, *const c_char) -> c_int,
    begin: unsafe extern "C" fn(*mut WtSession, *const c_char) -> c_int,
    commit: unsafe extern "C" fn(*mut WtSession) -> c_int,
    rollback: unsafe extern "C" fn(*mut WtSession) -> c_int,
    checkpoint: unsafe extern "C" fn(*mut WtSession, *const c_char) -> c_int,
    truncate: unsafe extern "C" fn(*mut WtSession, *mut Cursor, *mut Cursor) -> c_int,
    log_flush: unsafe extern "C" fn(*mut WtSession, *const c_char) -> c_int,
    open_cursor: unsafe extern "C" fn(*mut WtSession, *const c_char, *const c_char, *mut *mut Cursor) -> c_int,
    cursor_close: unsafe extern "C" fn(*mut Cursor) -> c_int,
    reset: unsafe extern "C" fn(*mut Cursor) -> c_int,
    set_key_bytes: unsafe extern "C" fn(*mut Cursor, *const c_void, usize),
    set_key_int: unsafe extern "C" fn(*mut Cursor, i64),
    set_value_bytes: unsafe extern "C" fn(*mut Cursor, *const c_void, usize),
    get_key_bytes: unsafe extern "C" fn(*mut Cursor, *mut *const c_void, *mut usize) -> c_int,
    get_key_int: unsafe extern "C" fn(*mut Cursor, *mut i64) -> c_int,
    get_value_bytes: unsafe extern "C" fn(*mut Cursor, *mut *const c_void, *mut usize) -> c_int,
    search: unsafe extern "C" fn(*mut Cursor) -> c_int,
    search_near: unsafe extern "C" fn(*mut Cursor, *mut c_int) -> c_int,
    next: unsafe extern "C" fn(*mut Cursor) -> c_int,
    prev: unsafe extern "C" fn(*mut Cursor) -> c_int,
    insert: unsafe extern "C" fn(*mut Cursor) -> c_int,
    remove: unsafe extern "C" fn(*mut Cursor) -> c_int,
    stat_row: unsafe extern "C" fn(*mut Cursor, *mut *const c_char, *mut i64) -> c_int,
    notfound: c_int,
    duplicate_code: c_int,
    rollback_code: c_int,
    panic_code: c_int,
    lib_dir: String,
    release: String,
}

/// The releases this runner was built with: (release, shim path, library folder).
pub fn releases() -> Vec<(String, String, String)> {
    env!("EB_WT_SHIMS")
        .split(';')
        .filter_map(|entry| {
            let (version, rest) = entry.split_once('=')?;
            let (shim, lib_dir) = rest.split_once('=')?;
            Some((version.to_string(), shim.to_string(), lib_dir.to_string()))
        })
        .collect()
}

static API: OnceLock<std::result::Result<Api, String>> = OnceLock::new();

fn load(release: &str) -> Result<&'static Api> {
    let loaded = API.get_or_init(|| load_release(release));
    match loaded {
        Err(e) => Err(Error::other(e.clone())),
        Ok(api) if api.release != release => Err(Error::other(format!(
            "WiredTiger {} is already loaded in this process; one release per runner", api.release))),
        Ok(api) => Ok(api),
    }
}

/// The shim and library folder of a release built into this runner.
fn release_files(release: &str) -> std::result::Result<(String, String), String> {
    let known = releases();
    let (_, shim, lib_dir) = known.iter().find(|(v, _, _)| v == release).ok_or_else(|| {
        format!("WiredTiger {release} is not built into this runner; available: {}",
                known.iter().map(|(v, _, _)| v.as_str()).collect::<Vec<_>>().join(", "))
    })?;
    Ok((shim.clone(), lib_dir.clone()))
}

/// A constant the shim exports as a function (WiredTiger's error codes differ by release).
unsafe fn shim_code(lib: &Library, shim: &str, name: &str) -> std::result::Result<c_int, String> {
    let f: libloading::Symbol<unsafe extern "C" fn() -> c_int> =
        lib.get(format!("{name}\0").as_bytes()).map_err(|e| format!("{shim}: {name}: {e}"))?;
    Ok(f())
}

fn load_release(release: &str) -> std::result::Result<Api, String> {
    let (shim, lib_dir) = release_files(release)?;
    unsafe {
        let lib = Library::new(&shim).map_err(|e| format!("could not load the WiredTiger {release} shim {shim}: {e}"))?;
        macro_rules! sym {
            ($name:literal) => {
                *lib.get(concat!($name, "\0").as_bytes()).map_err(|e| format!("{shim}: {}: {e}", $name))?
            };
        }
        let notfound = shim_code(&lib, &shim, "eb_wt_code_notfound")?;
        let rollback_code = shim_code(&lib, &shim, "eb_wt_code_rollback")?;
        let duplicate_code = shim_code(&lib, &shim, "eb_wt_code_duplicate_key")?;
        let panic_code = shim_code(&lib, &shim, "eb_wt_code_panic")?;
        Ok(Api {
            version: sym!("eb_wt_version"),
            strerror: sym!("eb_wt_strerror"),
            last_error: sym!("eb_wt_last_error"),
            panicked: sym!("eb_wt_panicked"),
            open: sym!("eb_wt_open"),
            conn_close: sym!("eb_wt_conn_close"),
            open_session: sym!("eb_wt_open_session"),
            session_close: sym!("eb_wt_session_close"),
            create: sym!("eb_wt_create"),
            begin: sym!("eb_wt_begin"),
            commit: sym!("eb_wt_commit"),
            rollback: sym!("eb_wt_rollback"),
            checkpoint: sym!("eb_wt_checkpoint"),
            truncate: sym!("eb_wt_truncate"),
            log_flush: sym!("eb_wt_log_flush"),
            open_cursor: sym!("eb_wt_open_cursor"),
            cursor_close: sym!("eb_wt_cursor_close"),
            reset: sym!("eb_wt_cursor_reset"),
            set_key_bytes: sym!("eb_wt_set_key_bytes"),
            set_key_int: sym!("eb_wt_set_key_int"),
            set_value_bytes: sym!("eb_wt_set_value_bytes"),
            get_key_bytes: sym!("eb_wt_get_key_bytes"),
            get_key_int: sym!("eb_wt_get_key_int"),
            get_value_bytes: sym!("eb_wt_get_value_bytes"),
            search: sym!("eb_wt_search"),
            search_near: sym!("eb_wt_search_near"),
            next: sym!("eb_wt_next"),
            prev: sym!("eb_wt_prev"),
            insert: sym!("eb_wt_insert"),
            remove: sym!("eb_wt_remove"),
            stat_row: sym!("eb_wt_stat_row"),
            notfound,
            duplicate_code,
            rollback_code,
            panic_code,
            lib_dir,
            release: release.to_string(),
            _lib: lib,
        })
    }
}

impl Api {
    fn error(&self, code: c_int, what: &str) -> Error {
        let text = unsafe { CStr::from_ptr((self.strerror)(code)) }.to_string_lossy().into_owned();
        if code == self.rollback_code {
            return Error::conflict(format!("{what}: {text}"));
        }
        if code == self.panic_code || unsafe { (self.panicked)() } != 0 || code == libc::ENOSPC {
            let last = unsafe { CStr::from_ptr((self.last_error)()) }.to_string_lossy().into_owned();
            return Error::fatal(format!("{what}: {text}; WiredTiger: {last}"));
        }
        Error::other(format!("{what}: {text}"))
    }

    fn check(&self, code: c_int, what: &str) -> Result<()> {
        if code == 0 { Ok(()) } else { Err(self.error(code, what)) }
    }
}

fn cstring(s: &str) -> CString {
    CString::new(s).expect("configuration strings have no NUL bytes")
}

struct TableInfo {
    uri: CString,
    kind: TableKind,
}

pub struct WiredTiger {
    api: &'static Api,
    conn: Mutex<*mut Conn>,
    tables: Mutex<Vec<TableInfo>>,
    name: String,
    settings: Value,
    record_config: String,
    /// The oplog's: always a b-tree file, as mongod made it (WiredTigerLayout::oplog_table_config).
    oplog_config: String,
    index_config: String,
    metadata_config: String,
    /// mongod's record store searches for a record before rewriting or deleting it
    /// (WiredTigerRecordStore::updateRecord and deleteRecord at r3.2.0: search, get_value, write).
    reads_before_write: bool,
    /// mongod's journal flusher: the log is synced every `journal_commit_ms` (see start_journal).
    flusher: Mutex<Option<(std::sync::Arc<std::sync::atomic::AtomicBool>, std::thread::JoinHandle<()>)>>,
}

// The connection handle is thread-safe (WiredTiger's documented contract); sessions are not and
// stay with the thread that opened them.
unsafe impl Send for WiredTiger {}
unsafe impl Sync for WiredTiger {}

struct SendPtr(*mut Conn);
unsafe impl Send for SendPtr {}

/// The params' engine options, read and checked (an unknown key or value is an error): the
/// layout mongod would give WiredTiger (its extensions still to find), the journal's commit
/// interval in milliseconds, and whether the record store reads a record before rewriting it.
fn read_options(options: &serde_json::Map<String, Value>) -> Result<(mongod_layout::WiredTigerLayout, i64, bool)> {
    let o = Options::new("wiredtiger", options);
    let release = o.string("version", &[])?;
    let table_type = o.string("table_type", &["btree", "lsm"])?;
    let cache_mb = o.int("cache_size_mb")?;
    let layout = mongod_layout::WiredTigerLayout {
        release,
        cache_mb,
        compressor: o.string("block_compressor", &["none", "snappy", "zstd", "zlib"])?,
        journal: o.boolean("log")?,
        journal_compressor: o.string("journal_compressor", &["none", "snappy", "zlib", "zstd"])?,
        checkpoint_s: o.int("checkpoint_s")?,
        checkpoint_log_size_mb: o.int("checkpoint_log_size_mb")?,
        session_max: o.int("session_max")?,
        eviction_threads: (o.int("eviction_threads_min")?, o.int("eviction_threads_max")?),
        eviction_dirty: (o.optional_int("eviction_dirty_target")?, o.optional_int("eviction_dirty_trigger")?),
        close_idle_time_s: o.int("close_idle_time_s")?,
        unlogged_user_tables: o.boolean("unlogged_user_tables")?,
        lsm: table_type == "lsm",
        prefix_compression: o.boolean_or_server("index_prefix_compression", true)?,
        lsm_chunk_mb: o.int_or_server("lsm_chunk_mb", mongod_layout::WiredTigerLayout::default_lsm_chunk_mb(cache_mb))?,
        extensions: Vec::new(),
    };
    // The server's flusher: a tagged tree's own mongod's (3.0.x and 3.1.5 had none), else 3.2's.
    let flusher = mongod_layout::MongodTree::of(&layout.release).map_or(mongod_layout::JOURNAL_COMMIT_MS, |t| t.journal_commit_ms());
    let journal_commit_ms = o.int_or_server("journal_commit_ms", flusher)?;
    let reads_before_write = o.boolean("read_before_write")?;
    o.finish()?;
    layout.check_tree_settings().map_err(Error::other)?;
    Ok((layout, journal_commit_ms, reads_before_write))
}

/// A release that builds its compressors as extensions (Debian's) needs them loaded; one built
/// with them compiled in (ours) has no such file.
fn compressor_extensions(api: &Api, compressor: &str) -> Vec<String> {
    let ext = Path::new(&api.lib_dir).join(format!("libwiredtiger_{compressor}.so"));
    if compressor != "none" && ext.exists() { vec![ext.display().to_string()] } else { Vec::new() }
}

/// The settings a run records for this engine (its manifest's engine_config).
fn layout_settings(layout: &mongod_layout::WiredTigerLayout, journal_commit_ms: i64) -> Value {
    json!({
        "table_type": if layout.lsm { "lsm" } else { "btree" },
        "cache_size_mb": layout.cache_mb, "block_compressor": layout.compressor, "log": layout.journal,
        "checkpoint_s": layout.checkpoint_s, "journal_commit_ms": journal_commit_ms,
        "journal_compressor": layout.journal_compressor, "checkpoint_log_size_mb": layout.checkpoint_log_size_mb,
        "session_max": layout.session_max, "eviction_threads": [layout.eviction_threads.0, layout.eviction_threads.1],
        "eviction_dirty_target": layout.eviction_dirty.0, "eviction_dirty_trigger": layout.eviction_dirty.1,
        "close_idle_time_s": layout.close_idle_time_s, "unlogged_user_tables": layout.unlogged_user_tables,
        "index_prefix_compression": layout.prefix_compression,
        "lsm_chunk_mb": if layout.lsm { json!(layout.lsm_chunk_mb) } else { Value::Null },
    })
}

impl WiredTiger {
    pub fn open(dir: &Path, options: &serde_json::Map<String, Value>) -> Result<Self> {
        let (mut layout, journal_commit_ms, reads_before_write) = read_options(options)?;
        let api = load(&layout.release)?;
        layout.extensions = compressor_extensions(api, &layout.compressor);
        let conn_config = layout.connection_config();
        if layout.journal {
            // mongod creates the journal folder before it opens WiredTiger (log=(path=journal)).
            std::fs::create_dir_all(dir.join("journal"))?;
        }
        let mut conn: *mut Conn = ptr::null_mut();
        let home = cstring(&dir.display().to_string());
        let code = unsafe { (api.open)(home.as_ptr(), cstring(&conn_config).as_ptr(), &mut conn) };
        api.check(code, &format!("WiredTiger could not open {} with {conn_config}", dir.display()))?;
        let (mut major, mut minor, mut patch) = (0, 0, 0);
        let banner = unsafe { CStr::from_ptr((api.version)(&mut major, &mut minor, &mut patch)) }.to_string_lossy().into_owned();
        let (record_config, index_config) = (layout.record_table_config(), layout.index_table_config());
        let oplog_config = layout.oplog_table_config();
        let mut settings = layout_settings(&layout, journal_commit_ms);
        settings["read_before_write"] = json!(reads_before_write);
        settings["release"] = json!(format!("{major}.{minor}.{patch}"));
        settings["banner"] = json!(banner);
        if mongod_layout::MongodTree::of(&layout.release).is_some() {
            settings["tree"] = json!(layout.release);
        }
        settings["connection_config"] = json!(conn_config);
        settings["record_table_config"] = json!(record_config);
        settings["index_table_config"] = json!(index_config);
        settings["oplog_table_config"] = json!(oplog_config);
        let engine = WiredTiger {
            api,
            conn: Mutex::new(conn),
            tables: Mutex::new(Vec::new()),
            name: if layout.lsm { "wiredtiger-lsm".into() } else { "wiredtiger".into() },
            settings,
            record_config,
            oplog_config,
            index_config,
            metadata_config: layout.metadata_table_config(),
            reads_before_write,
            flusher: Mutex::new(None),
        };
        if layout.journal && journal_commit_ms > 0 {
            engine.start_journal(journal_commit_ms as u64)?;
        }
        Ok(engine)
    }

    /// mongod does not sync the journal on commit; a background thread makes it durable every
    /// commit interval (storage.journal.commitIntervalMs). Same here, so the log's syncs cost
    /// what they cost mongod.
    fn start_journal(&self, every_ms: u64) -> Result<()> {
        let api = self.api;
        // A tree without WT_SESSION::log_flush (3.0.4's and 2.6.1: their mongod had no flusher)
        // cannot run one: say so now rather than flush nothing in the background.
        let mut probe: *mut WtSession = ptr::null_mut();
        api.check(unsafe { (api.open_session)(self.conn()?, ptr::null(), &mut probe) }, "WiredTiger open_session")?;
        let code = unsafe { (api.log_flush)(probe, cstring("sync=off").as_ptr()) };
        unsafe { (api.session_close)(probe) };
        if code == libc::ENOTSUP {
            return Err(Error::other(format!("wiredtiger: option journal_commit_ms is {every_ms} but this WiredTiger \
                                             ({}) has no log_flush: its mongod ran no journal flusher; set 0",
                                            self.settings["release"].as_str().unwrap_or("?"))));
        }
        api.check(code, "WiredTiger log_flush")?;
        let conn = SendPtr(*self.conn.lock().unwrap());
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopping = stop.clone();
        let handle = std::thread::Builder::new().name("wt-journal".into()).spawn(move || {
            let conn = conn;
            let mut session: *mut WtSession = ptr::null_mut();
            if unsafe { (api.open_session)(conn.0, ptr::null(), &mut session) } != 0 {
                return;
            }
            let sync = cstring("sync=on");
            while !stopping.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::sleep(std::time::Duration::from_millis(every_ms));
                if unsafe { (api.panicked)() } != 0 {
                    return; // never touch a panicked engine again
                }
                unsafe { (api.log_flush)(session, sync.as_ptr()) };
            }
            unsafe { (api.session_close)(session) };
        })?;
        *self.flusher.lock().unwrap() = Some((stop, handle));
        Ok(())
    }

    fn conn(&self) -> Result<*mut Conn> {
        let conn = *self.conn.lock().unwrap();
        if conn.is_null() {
            return Err(Error::other("WiredTiger connection is closed"));
        }
        Ok(conn)
    }

    /// The connection statistics whose descriptions `wanted` keeps (none from a panicked engine).
    fn statistics(&self, wanted: impl Fn(&str) -> bool) -> Vec<(String, i64)> {
        let api = self.api;
        if unsafe { (api.panicked)() } != 0 {
            return Vec::new();
        }
        self.with_session(|s| {
            let mut cursor: *mut Cursor = ptr::null_mut();
            let code = unsafe { (api.open_cursor)(s, cstring("statistics:").as_ptr(), ptr::null(), &mut cursor) };
            api.check(code, "WiredTiger statistics cursor")?;
            let mut out = Vec::new();
            while unsafe { (api.next)(cursor) } == 0 {
                let mut desc: *const c_char = ptr::null();
                let mut value = 0i64;
                if unsafe { (api.stat_row)(cursor, &mut desc, &mut value) } == 0 {
                    let desc = unsafe { CStr::from_ptr(desc) }.to_string_lossy();
                    if wanted(&desc) {
                        out.push((desc.into_owned(), value));
                    }
                }
            }
            unsafe { (api.cursor_close)(cursor) };
            Ok(out)
        })
        .unwrap_or_default()
    }

    fn with_session<T>(&self, f: impl FnOnce(*mut WtSession) -> Result<T>) -> Result<T> {
        let mut session: *mut WtSession = ptr::null_mut();
        let code = unsafe { (self.api.open_session)(self.conn()?, ptr::null(), &mut session) };
        self.api.check(code, "WiredTiger open_session")?;
        let out = f(session);
        unsafe { (self.api.session_close)(session) };
        out
    }
}

impl Engine for WiredTiger {
    fn name(&self) -> &str {
        &self.name
    }
    fn record_store_layout(&self) -> super::RecordStoreLayout {
        super::RecordStoreLayout { record_id_in_every_key: false, reads_record_before_write: self.reads_before_write }
    }

    /// The release, or a post's tree by its tag (two tags carry 2.5.3; engine_config's
    /// `release` keeps the WiredTiger release inside).
    fn version(&self) -> String {
        let tree = self.settings["tree"].as_str().or(self.settings["release"].as_str());
        tree.unwrap_or_default().to_string()
    }

    fn config(&self) -> Value {
        self.settings.clone()
    }

    fn table(&self, name: &str, kind: TableKind) -> Result<Table> {
        let uri = format!("table:{}", name.replace(':', "."));
        let mut tables = self.tables.lock().unwrap();
        if let Some(i) = tables.iter().position(|t| t.uri.to_str().unwrap() == uri) {
            return Ok(Table(i));
        }
        let config = match kind {
            TableKind::Records if name == mongod_layout::OPLOG_TABLE => &self.oplog_config,
            TableKind::Records => &self.record_config,
            TableKind::Index => &self.index_config,
            TableKind::Metadata => &self.metadata_config,
        };
        self.with_session(|s| {
            let code = unsafe { (self.api.create)(s, cstring(&uri).as_ptr(), cstring(config).as_ptr()) };
            self.api.check(code, &format!("WiredTiger could not create {uri} with {config}"))
        })?;
        tables.push(TableInfo { uri: cstring(&uri), kind });
        Ok(Table(tables.len() - 1))
    }

    /// As mongod opened its sessions and transactions (wiredtiger_session_cache.cpp and
    /// wiredtiger_recovery_unit.cpp, r3.0.4 to r3.2.0): `isolation=snapshot` on the session,
    /// `begin_transaction(NULL)`. The call shape matters to 2.5.3 (mongod 3.0's tree): a
    /// begin_transaction given any config string there inherits the connection's sync method and
    /// syncs the log on every commit.
    fn session(&self) -> Result<Box<dyn Session>> {
        let mut session: *mut WtSession = ptr::null_mut();
        let snapshot = cstring("isolation=snapshot");
        let code = unsafe { (self.api.open_session)(self.conn()?, snapshot.as_ptr(), &mut session) };
        self.api.check(code, "WiredTiger open_session")?;
        let tables = self.tables.lock().unwrap();
        let info = tables.iter().map(|t| (t.uri.clone(), t.kind)).collect();
        Ok(Box::new(WtSessionHandle {
            api: self.api,
            engine: self as *const WiredTiger,
            session,
            tables: info,
            cursors: Vec::new(),
            scan_cursors: Vec::new(),
            no_overwrite: cstring("overwrite=false"),
            in_txn: false,
            read_only: false,
        }))
    }

    fn stats(&self) -> Vec<(String, i64)> {
        self.statistics(mongod_layout::wiredtiger_stat_wanted)
            .into_iter().map(|(desc, value)| (format!("wt.{desc}"), value)).collect()
    }

    fn checkpoint_marks(&self) -> Option<super::CheckpointMarks> {
        let wanted = |d: &str| mongod_layout::CHECKPOINT_STARTED.contains(&d) || mongod_layout::CHECKPOINT_FINISHED_MS.contains(&d);
        let read = self.statistics(wanted);
        let find = |names: &[&str]| read.iter().find(|(d, _)| names.contains(&d.as_str())).map(|(_, v)| *v);
        Some(super::CheckpointMarks { started: find(mongod_layout::CHECKPOINT_STARTED)?,
                                      finished_ms: find(mongod_layout::CHECKPOINT_FINISHED_MS)? })
    }

    fn checkpoint(&self) -> Result<()> {
        self.with_session(|s| {
            let code = unsafe { (self.api.checkpoint)(s, ptr::null()) };
            self.api.check(code, "WiredTiger checkpoint")
        })
    }

    fn close(&self) -> Result<()> {
        if let Some((stop, handle)) = self.flusher.lock().unwrap().take() {
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            let _ = handle.join();
        }
        let mut conn = self.conn.lock().unwrap();
        if conn.is_null() {
            return Ok(());
        }
        if unsafe { (self.api.panicked)() } != 0 {
            // After a panic WiredTiger's own threads may never return: leave the connection to
            // the process's exit rather than wait on it.
            *conn = ptr::null_mut();
            return Err(self.api.error(self.api.panic_code, "WiredTiger panicked; connection abandoned"));
        }
        let code = unsafe { (self.api.conn_close)(*conn, ptr::null()) };
        *conn = ptr::null_mut();
        self.api.check(code, "WiredTiger close")
    }
}

struct WtSessionHandle {
    api: &'static Api,
    engine: *const WiredTiger,
    session: *mut WtSession,
    tables: Vec<(CString, TableKind)>,
    cursors: Vec<*mut Cursor>,
    scan_cursors: Vec<*mut Cursor>,
    no_overwrite: CString,
    in_txn: bool,
    /// The transaction was begun to read only (a query's: it may yield).
    read_only: bool,
}

impl WtSessionHandle {
    /// The table's cached cursor (opened on first use, as mongod's session cache keeps them).
    fn cursor(&mut self, table: Table, scan: bool) -> Result<*mut Cursor> {
        if table.0 >= self.tables.len() {
            // A table created after this session started: learn it from the engine.
            let engine = unsafe { &*self.engine };
            let tables = engine.tables.lock().unwrap();
            self.tables = tables.iter().map(|t| (t.uri.clone(), t.kind)).collect();
        }
        let list = if scan { &mut self.scan_cursors } else { &mut self.cursors };
        if list.len() <= table.0 {
            list.resize(table.0 + 1, ptr::null_mut());
        }
        if list[table.0].is_null() {
            let mut cursor: *mut Cursor = ptr::null_mut();
            let (uri, kind) = &self.tables[table.0];
            // As mongod's session cache opens them (wiredtiger_session_cache.cpp): record-store
            // cursors with "", index cursors with "overwrite=false".
            let config = match kind {
                TableKind::Records | TableKind::Metadata => ptr::null(),
                TableKind::Index => self.no_overwrite.as_ptr(),
            };
            let code = unsafe { (self.api.open_cursor)(self.session, uri.as_ptr(), config, &mut cursor) };
            self.api.check(code, &format!("WiredTiger open_cursor {}", uri.to_string_lossy()))?;
            list[table.0] = cursor;
        }
        Ok(list[table.0])
    }

    fn set_key(&self, cursor: *mut Cursor, table: Table, key: &[u8]) {
        unsafe {
            match self.tables[table.0].1 {
                TableKind::Records => (self.api.set_key_int)(cursor, crate::keys::record_id(key)),
                TableKind::Index | TableKind::Metadata => (self.api.set_key_bytes)(cursor, key.as_ptr() as *const c_void, key.len()),
            }
        }
    }

    /// The cursor's current key, in the record store's byte form.
    fn key<'a>(&self, cursor: *mut Cursor, table: Table, scratch: &'a mut [u8; 8]) -> Result<&'a [u8]> {
        unsafe {
            match self.tables[table.0].1 {
                TableKind::Records => {
                    let mut id = 0i64;
                    self.api.check((self.api.get_key_int)(cursor, &mut id), "WiredTiger get_key")?;
                    *scratch = crate::keys::record_key(id);
                    Ok(&scratch[..])
                }
                TableKind::Index | TableKind::Metadata => {
                    let (mut data, mut size) = (ptr::null(), 0usize);
                    self.api.check((self.api.get_key_bytes)(cursor, &mut data, &mut size), "WiredTiger get_key")?;
                    Ok(std::slice::from_raw_parts(data as *const u8, size))
                }
            }
        }
    }

    fn value<'a>(&self, cursor: *mut Cursor) -> Result<&'a [u8]> {
        let (mut data, mut size) = (ptr::null(), 0usize);
        unsafe {
            self.api.check((self.api.get_value_bytes)(cursor, &mut data, &mut size), "WiredTiger get_value")?;
            Ok(std::slice::from_raw_parts(data as *const u8, size))
        }
    }

    fn done(&self, cursor: *mut Cursor, code: c_int, what: &str) -> Result<()> {
        unsafe { (self.api.reset)(cursor) };
        self.api.check(code, what)
    }
}

impl Session for WtSessionHandle {
    fn begin(&mut self, write: bool) -> Result<()> {
        let code = unsafe { (self.api.begin)(self.session, ptr::null()) };
        self.api.check(code, "WiredTiger begin_transaction")?;
        self.in_txn = true;
        self.read_only = !write;
        Ok(())
    }

    fn yield_snapshot(&mut self) -> Result<()> {
        if self.in_txn && self.read_only {
            // WiredTigerRecoveryUnit::abandonSnapshot: the read transaction ends, a new one
            // begins; the cursors were reset after each scan (done()), so the next scan searches.
            unsafe { (self.api.rollback)(self.session) };
            let code = unsafe { (self.api.begin)(self.session, ptr::null()) };
            self.api.check(code, "WiredTiger begin_transaction")?;
        }
        Ok(())
    }

    fn commit(&mut self) -> Result<()> {
        self.in_txn = false;
        let code = unsafe { (self.api.commit)(self.session) };
        self.api.check(code, "WiredTiger commit_transaction")
    }

    fn rollback(&mut self) {
        if self.in_txn {
            self.in_txn = false;
            unsafe { (self.api.rollback)(self.session) };
        }
    }

    fn get(&mut self, table: Table, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        let cursor = self.cursor(table, false)?;
        self.set_key(cursor, table, key);
        let code = unsafe { (self.api.search)(cursor) };
        if code == self.api.notfound {
            unsafe { (self.api.reset)(cursor) };
            return Ok(false);
        }
        if code != 0 {
            return self.done(cursor, code, "WiredTiger search").map(|_| false);
        }
        let found = self.value(cursor).map(|v| out.extend_from_slice(v));
        unsafe { (self.api.reset)(cursor) };
        found.map(|_| true)
    }

    fn put(&mut self, table: Table, key: &[u8], value: &[u8]) -> Result<()> {
        // An index entry that exists already is the same entry: mongod's standard index insert
        // returns OK on WT_DUPLICATE_KEY.
        self.insert_new(table, key, value).map(|_| ())
    }

    fn insert_new(&mut self, table: Table, key: &[u8], value: &[u8]) -> Result<bool> {
        let cursor = self.cursor(table, false)?;
        self.set_key(cursor, table, key);
        unsafe { (self.api.set_value_bytes)(cursor, value.as_ptr() as *const c_void, value.len()) };
        let code = unsafe { (self.api.insert)(cursor) };
        if code == self.api.duplicate_code {
            unsafe { (self.api.reset)(cursor) };
            return Ok(false);
        }
        self.done(cursor, code, "WiredTiger insert").map(|_| true)
    }

    fn delete(&mut self, table: Table, key: &[u8]) -> Result<()> {
        let cursor = self.cursor(table, false)?;
        self.set_key(cursor, table, key);
        let code = unsafe { (self.api.remove)(cursor) };
        if code == self.api.notfound {
            unsafe { (self.api.reset)(cursor) };
            return Ok(());
        }
        self.done(cursor, code, "WiredTiger remove")
    }

    /// WT_SESSION::truncate between two cursors set to the range's ends (mongod's reclaimOplog).
    fn truncate(&mut self, table: Table, low: &[u8], high: &[u8]) -> Result<()> {
        let start = self.cursor(table, false)?;
        let stop = self.cursor(table, true)?;
        self.set_key(start, table, low);
        self.set_key(stop, table, high);
        let code = unsafe { (self.api.truncate)(self.session, start, stop) };
        unsafe {
            (self.api.reset)(start);
            (self.api.reset)(stop);
        }
        if code == self.api.notfound {
            return Ok(()); // an empty range
        }
        self.api.check(code, "WiredTiger truncate")
    }

    fn scan(&mut self, table: Table, low: &[u8], high: Option<&[u8]>, reverse: bool, visit: Visit) -> Result<()> {
        // A cursor of its own, so the visitor may do point reads on the same table meanwhile.
        let cursor = self.cursor(table, true)?;
        let result = self.scan_with(cursor, table, low, high, reverse, visit);
        unsafe { (self.api.reset)(cursor) };
        result
    }
}

impl WtSessionHandle {
    fn scan_with(&mut self, cursor: *mut Cursor, table: Table, low: &[u8], high: Option<&[u8]>, reverse: bool,
                 visit: Visit) -> Result<()> {
        let api = self.api;
        let step = |code: c_int| -> Result<bool> {
            if code == api.notfound { Ok(false) } else { api.check(code, "WiredTiger cursor step").map(|_| true) }
        };
        let mut scratch = [0u8; 8];
        let mut positioned = if !reverse {
            if low.is_empty() {
                step(unsafe { (api.next)(cursor) })?
            } else {
                self.set_key(cursor, table, low);
                let mut exact = 0;
                let code = unsafe { (api.search_near)(cursor, &mut exact) };
                if !step(code)? { false } else if exact < 0 { step(unsafe { (api.next)(cursor) })? } else { true }
            }
        } else {
            match high {
                None => step(unsafe { (api.prev)(cursor) })?,
                Some(h) => {
                    self.set_key(cursor, table, h);
                    let mut exact = 0;
                    let code = unsafe { (api.search_near)(cursor, &mut exact) };
                    if !step(code)? { false } else if exact >= 0 { step(unsafe { (api.prev)(cursor) })? } else { true }
                }
            }
        };
        while positioned {
            let key = self.key(cursor, table, &mut scratch)?;
            if past_range(key, low, high, reverse) {
                return Ok(());
            }
            let value = self.value(cursor)?;
            if !visit(key, value) {
                return Ok(());
            }
            positioned = step(unsafe { if reverse { (api.prev)(cursor) } else { (api.next)(cursor) } })?;
        }
        Ok(())
    }
}

impl Drop for WtSessionHandle {
    fn drop(&mut self) {
        if unsafe { (self.api.panicked)() } != 0 {
            return;
        }
        self.rollback();
        // Closing the session closes its cursors.
        unsafe { (self.api.session_close)(self.session) };
    }
}

/// This engine in the runner's registry (engines/mod.rs, written by build.rs).
pub const ENTRY: super::EngineEntry = super::EngineEntry {
    name: "wiredtiger",
    open: |dir, options| Ok(std::sync::Arc::new(WiredTiger::open(dir, options)?)),
    releases: || releases().into_iter().map(|r| r.0).collect(),
    mmap_stand_in: false,
};
