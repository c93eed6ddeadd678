//! The fractal tree: PerconaFT (Tokutek's ft-index, later TokuFT), the engine inside TokuMX and
//! TokuMXse, at the release tags the posts ran.
//!
//! Each release is built from its source by tools/build_perconaft.sh and reached through its own
//! shim (shim/ft_shim.c, compiled against that release's db.h by build.rs), loaded at run time:
//! one release per process, chosen by the system's `version`. The release also names the server
//! whose layout runs over it: a `tokumx-*` release runs TokuMX's (layouts/tokumx_ft, which calls
//! this module's dictionary, transaction and cursor calls directly), a `tokumxse-*` release
//! mongod 3.0's record store as TokuMXse's tokuft engine laid it out (layouts/mongod_kv, through
//! the key-value contract below).
//!
//! The environment is opened as each server opened it (TokuMX: storage/env.cpp startup at 1.0.4
//! and tokumx-2.0.1; TokuMXse: tokuft/tokuft_engine.cpp TokuFTEngine's constructor at
//! tokumxse-1.0.0-rc.6): the same flags, cache, lock memory and timeout, checkpoint and cleaner
//! periods, log fsync period and redzone; TokuMX installs its key comparator, TokuMXse keeps the
//! engine's memcmp. Every setting's value and source is in the run's manifest.
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::Path;
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{Mutex, OnceLock, RwLock};

use libloading::Library;
use serde_json::{json, Value};

use super::{past_range, Engine, Options, Session, Table, TableKind, Visit};
use crate::error::{Error, Result};

type Env = c_void;
type Db = c_void;
type RawTxn = c_void;
type Dbc = c_void;
type RowFn = unsafe extern "C" fn(*mut c_void, *const c_void, usize, *const c_void, usize) -> c_int;
/// The update handler the shim calls for each update message (eb_ft_set_update_handler).
pub type UpdateHandler = extern "C" fn(*const u8, usize, c_int, *const u8, usize, *mut c_void) -> c_int;

#[repr(C)]
struct EnvConfig {
    cache_bytes: u64,
    lock_memory_bytes: u64,
    lock_timeout_ms: u64,
    checkpoint_s: u32,
    cleaner_period_s: u32,
    cleaner_iterations: u32,
    fsync_log_period_ms: u32,
    redzone_percent: i32,
    direct_io: i32,
    compress_buffers: i32,
    tokumx_compare: i32,
    product_name: *const c_char,
}

#[repr(C)]
struct DbConfig {
    page_size: u32,
    read_page_size: u32,
    compression: i32,
    fanout: u32,
    memcmp_magic: u32,
    descriptor: *const c_void,
    descriptor_len: usize,
    clustering: i32,
}

/// db.h's constants, read from the shim (they are the release's).
pub struct Flags {
    pub serializable: u32,
    pub snapshot: u32,
    pub read_only: u32,
    pub inherit_isolation: u32,
    pub nosync: u32,
    pub rmw: u32,
    pub prelocked: u32,
    pub prelocked_write: u32,
    pub no_overwrite: u32,
    pub delete_any: u32,
    pub disable_prefetching: u32,
    notfound: c_int,
    keyexist: c_int,
    lock_notgranted: c_int,
    deadlock: c_int,
    out_of_locks: c_int,
    huge_pages: c_int,
    compression: [(&'static str, i32); 4],
}

/// The shim's functions (shim/ft_shim.c), resolved once per process.
struct Api {
    _lib: Library,
    release: String,
    flags: Flags,
    has_multiple: bool,
    has_fanout: bool,
    version: unsafe extern "C" fn(*mut c_int, *mut c_int, *mut c_int) -> *const c_char,
    strerror: unsafe extern "C" fn(c_int) -> *const c_char,
    last_error: unsafe extern "C" fn() -> *const c_char,
    env_open: unsafe extern "C" fn(*const c_char, *const EnvConfig, *mut *mut Env) -> c_int,
    env_close: unsafe extern "C" fn(*mut Env) -> c_int,
    checkpoint: unsafe extern "C" fn(*mut Env) -> c_int,
    status: unsafe extern "C" fn(*mut Env, extern "C" fn(*mut c_void, *const c_char, f64), *mut c_void) -> c_int,
    set_update_handler: unsafe extern "C" fn(UpdateHandler),
    update_set: unsafe extern "C" fn(*mut c_void, *const u8, usize),
    update_delete: unsafe extern "C" fn(*mut c_void),
    db_open: unsafe extern "C" fn(*mut Env, *mut RawTxn, *const c_char, *const DbConfig, *mut *mut Db) -> c_int,
    db_close: unsafe extern "C" fn(*mut Db) -> c_int,
    db_stat: unsafe extern "C" fn(*mut Db, *mut u64, *mut u64, *mut u64) -> c_int,
    txn_begin: unsafe extern "C" fn(*mut Env, *mut RawTxn, u32, *mut *mut RawTxn) -> c_int,
    txn_commit: unsafe extern "C" fn(*mut RawTxn, u32) -> c_int,
    txn_abort: unsafe extern "C" fn(*mut RawTxn) -> c_int,
    get: unsafe extern "C" fn(*mut Db, *mut RawTxn, u32, *const c_void, usize, RowFn, *mut c_void) -> c_int,
    put: unsafe extern "C" fn(*mut Db, *mut RawTxn, *const c_void, usize, *const c_void, usize, u32) -> c_int,
    del: unsafe extern "C" fn(*mut Db, *mut RawTxn, *const c_void, usize, u32) -> c_int,
    update: unsafe extern "C" fn(*mut Db, *mut RawTxn, *const c_void, usize, *const c_void, usize, u32) -> c_int,
    #[allow(clippy::type_complexity)]
    put_multiple: unsafe extern "C" fn(*mut Env, *mut RawTxn, *mut Db, *const c_void, usize, *const c_void, usize, u32,
                                       *const *mut Db, *const *const c_void, *const usize, *const u32) -> c_int,
    #[allow(clippy::type_complexity)]
    del_multiple: unsafe extern "C" fn(*mut Env, *mut RawTxn, *mut Db, *const c_void, usize, *const c_void, usize, u32,
                                       *const *mut Db, *const *const c_void, *const usize, *const u32) -> c_int,
    cursor_open: unsafe extern "C" fn(*mut Db, *mut RawTxn, u32, *mut *mut Dbc) -> c_int,
    cursor_close: unsafe extern "C" fn(*mut Dbc) -> c_int,
    cursor_set_bounds: unsafe extern "C" fn(*mut Dbc, *const c_void, usize, *const c_void, usize, c_int) -> c_int,
    cursor_seek: unsafe extern "C" fn(*mut Dbc, u32, *const c_void, usize, c_int, RowFn, *mut c_void) -> c_int,
    cursor_set: unsafe extern "C" fn(*mut Dbc, u32, *const c_void, usize, RowFn, *mut c_void) -> c_int,
    cursor_step: unsafe extern "C" fn(*mut Dbc, u32, c_int, RowFn, *mut c_void) -> c_int,
}

/// The releases this runner was built with: (release tag, shim path).
pub fn releases() -> Vec<(String, String)> {
    option_env!("EB_FT_SHIMS").unwrap_or("")
        .split(';')
        .filter_map(|entry| entry.split_once('=').map(|(r, shim)| (r.to_string(), shim.to_string())))
        .collect()
}

static API: OnceLock<std::result::Result<Api, String>> = OnceLock::new();

fn load(release: &str) -> Result<&'static Api> {
    match API.get_or_init(|| load_release(release)) {
        Err(e) => Err(Error::other(e.clone())),
        Ok(api) if api.release != release => Err(Error::other(format!(
            "PerconaFT {} is already loaded in this process; one release per runner", api.release))),
        Ok(api) => Ok(api),
    }
}

fn load_release(release: &str) -> std::result::Result<Api, String> {
    let known = releases();
    let (_, shim) = known.iter().find(|(r, _)| r == release).ok_or_else(|| {
        format!("PerconaFT {release} is not built into this runner; available: {}",
                known.iter().map(|(r, _)| r.as_str()).collect::<Vec<_>>().join(", "))
    })?;
    unsafe {
        let lib = Library::new(shim).map_err(|e| format!("could not load the PerconaFT {release} shim {shim}: {e}"))?;
        macro_rules! sym {
            ($name:literal) => {
                *lib.get(concat!($name, "\0").as_bytes()).map_err(|e| format!("{shim}: {}: {e}", $name))?
            };
        }
        let constant: unsafe extern "C" fn(*const c_char) -> libc::c_long = sym!("eb_ft_const");
        let c = |name: &str| -> std::result::Result<i64, String> {
            let value = constant(CString::new(name).unwrap().as_ptr()) as i64;
            if value == -1 { Err(format!("{shim}: the shim does not know {name}")) } else { Ok(value) }
        };
        let flags = Flags {
            serializable: c("DB_SERIALIZABLE")? as u32,
            snapshot: c("DB_TXN_SNAPSHOT")? as u32,
            read_only: c("DB_TXN_READ_ONLY")? as u32,
            inherit_isolation: c("DB_INHERIT_ISOLATION")? as u32,
            nosync: c("DB_TXN_NOSYNC")? as u32,
            rmw: c("DB_RMW")? as u32,
            prelocked: c("DB_PRELOCKED")? as u32,
            prelocked_write: c("DB_PRELOCKED_WRITE")? as u32,
            no_overwrite: c("DB_NOOVERWRITE")? as u32,
            delete_any: c("DB_DELETE_ANY")? as u32,
            disable_prefetching: c("DBC_DISABLE_PREFETCHING")? as u32,
            // Error codes are negative: read as they are (c() only refuses -1, which none is).
            notfound: c("DB_NOTFOUND")? as c_int,
            keyexist: c("DB_KEYEXIST")? as c_int,
            lock_notgranted: c("DB_LOCK_NOTGRANTED")? as c_int,
            deadlock: c("DB_LOCK_DEADLOCK")? as c_int,
            out_of_locks: c("TOKUDB_OUT_OF_LOCKS")? as c_int,
            huge_pages: c("TOKUDB_HUGE_PAGES_ENABLED")? as c_int,
            compression: [("none", c("TOKU_NO_COMPRESSION")? as i32), ("quicklz", c("TOKU_QUICKLZ_METHOD")? as i32),
                          ("lzma", c("TOKU_LZMA_METHOD")? as i32), ("zlib", c("TOKU_ZLIB_WITHOUT_CHECKSUM_METHOD")? as i32)],
        };
        let has_multiple: unsafe extern "C" fn() -> c_int = sym!("eb_ft_has_multiple");
        let has_fanout: unsafe extern "C" fn() -> c_int = sym!("eb_ft_has_fanout");
        Ok(Api {
            release: release.to_string(),
            flags,
            has_multiple: has_multiple() != 0,
            has_fanout: has_fanout() != 0,
            version: sym!("eb_ft_version"),
            strerror: sym!("eb_ft_strerror"),
            last_error: sym!("eb_ft_last_error"),
            env_open: sym!("eb_ft_env_open"),
            env_close: sym!("eb_ft_env_close"),
            checkpoint: sym!("eb_ft_checkpoint"),
            status: sym!("eb_ft_status"),
            set_update_handler: sym!("eb_ft_set_update_handler"),
            update_set: sym!("eb_ft_update_set"),
            update_delete: sym!("eb_ft_update_delete"),
            db_open: sym!("eb_ft_db_open"),
            db_close: sym!("eb_ft_db_close"),
            db_stat: sym!("eb_ft_db_stat"),
            txn_begin: sym!("eb_ft_txn_begin"),
            txn_commit: sym!("eb_ft_txn_commit"),
            txn_abort: sym!("eb_ft_txn_abort"),
            get: sym!("eb_ft_get"),
            put: sym!("eb_ft_put"),
            del: sym!("eb_ft_del"),
            update: sym!("eb_ft_update"),
            put_multiple: sym!("eb_ft_put_multiple"),
            del_multiple: sym!("eb_ft_del_multiple"),
            cursor_open: sym!("eb_ft_cursor_open"),
            cursor_close: sym!("eb_ft_cursor_close"),
            cursor_set_bounds: sym!("eb_ft_cursor_set_bounds"),
            cursor_seek: sym!("eb_ft_cursor_seek"),
            cursor_set: sym!("eb_ft_cursor_set"),
            cursor_step: sym!("eb_ft_cursor_step"),
            _lib: lib,
        })
    }
}

impl Api {
    fn error(&self, code: c_int, what: &str) -> Error {
        let text = unsafe { CStr::from_ptr((self.strerror)(code)) }.to_string_lossy().into_owned();
        let last = unsafe { CStr::from_ptr((self.last_error)()) }.to_string_lossy().into_owned();
        let f = &self.flags;
        if code == f.lock_notgranted || code == f.deadlock || code == f.out_of_locks {
            // TokuMX returned a lock timeout to its client; TokuMXse turned it into a
            // WriteConflictException that mongod retried (tokuft_errors.cpp). The caller retries.
            return Error::conflict(format!("{what}: {text}"));
        }
        if code == f.keyexist {
            return Error::duplicate(format!("{what}: {text}"));
        }
        if code == f.huge_pages {
            return Error::other(format!(
                "{what}: PerconaFT refuses to start while transparent huge pages are enabled ({text}); set \
                 /sys/kernel/mm/transparent_hugepage/enabled to madvise or never (as root: echo madvise > \
                 /sys/kernel/mm/transparent_hugepage/enabled), or run with TOKU_HUGE_PAGES_OK=1 at your own risk"));
        }
        if code == libc::ENOSPC {
            // A put or an update is refused once free space falls below the red zone
            // (fs_redzone_percent of the filesystem; src/ydb_write.cc env_check_avail_fs_space).
            return Error::fatal(format!("{what}: {text}: the disk is full, or has less free space than PerconaFT's \
                                         red zone (fs_redzone_percent of the filesystem), where it refuses writes"));
        }
        let detail = if last.is_empty() { String::new() } else { format!("; PerconaFT: {last}") };
        Error::other(format!("{what}: {text} ({code}){detail}"))
    }

    fn check(&self, code: c_int, what: &str) -> Result<()> {
        if code == 0 { Ok(()) } else { Err(self.error(code, what)) }
    }

    /// Ok(false) for DB_NOTFOUND, the other codes as check() does.
    fn found(&self, code: c_int, what: &str) -> Result<bool> {
        if code == self.flags.notfound { Ok(false) } else { self.check(code, what).map(|()| true) }
    }
}

/// The server whose layout a release runs under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Server {
    /// TokuMX 1.x (seed 004's): KeyV1 keys, its own unique checks, one put per dictionary.
    TokuMX1,
    /// TokuMX 2.x (seed 002's): put_multiple and del_multiple, update messages, fastUpdates.
    TokuMX2,
    /// TokuMXse (MongoDB 3.0's storage API): the tokuft engine's dictionaries under mongod's
    /// record store.
    TokuMXse,
}

impl Server {
    pub fn of_release(release: &str) -> Result<Server> {
        if release.starts_with("tokumxse-") {
            Ok(Server::TokuMXse)
        } else if release.starts_with("tokumx-1.") {
            Ok(Server::TokuMX1)
        } else if release.starts_with("tokumx-2.") {
            Ok(Server::TokuMX2)
        } else {
            Err(Error::other(format!("fractal: version {release:?} names no server; allowed: tokumx-1.x, tokumx-2.x, tokumxse-*")))
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Server::TokuMX1 => "TokuMX 1.x",
            Server::TokuMX2 => "TokuMX 2.x",
            Server::TokuMXse => "TokuMXse",
        }
    }

    pub fn is_tokumx(self) -> bool {
        self != Server::TokuMXse
    }
}

/// A dictionary's options (TokuMX: storage/env.cpp db_open at 1.0.4, storage/dictionary.cpp at
/// 2.0.1; TokuMXse: tokuft_dictionary_options.cpp), each from the system's engine options.
#[derive(Clone, Debug)]
pub struct DictionaryOptions {
    pub page_size: u32,
    pub read_page_size: u32,
    pub compression: String,
    /// None: the release's fixed 16 (1.x has no setting).
    pub fanout: Option<u32>,
}

/// How one dictionary is created: its descriptor (what TokuMX's comparator reads), whether
/// put_multiple gives it the whole row, and the key byte the engine compares by memcmp.
#[derive(Clone, Debug, Default)]
pub struct DictionarySpec {
    pub descriptor: Vec<u8>,
    pub clustering: bool,
    pub memcmp_magic: Option<u8>,
}

/// The engine's settings, each read from the system's options (lib/enginebench/engines.py
/// FractalOptions gives every one, with its source).
struct Config {
    release: String,
    server: Server,
    cache_mb: i64,
    lock_memory_mb: Option<i64>,
    lock_timeout_ms: i64,
    checkpoint_s: i64,
    cleaner_period_s: i64,
    cleaner_iterations: i64,
    log_flush_ms: i64,
    redzone_percent: i64,
    direct_io: bool,
    compress_buffers: Option<bool>,
    dictionaries: DictionaryOptions,
    fast_updates: bool,
}

fn physical_memory_mb() -> i64 {
    let pages = unsafe { libc::sysconf(libc::_SC_PHYS_PAGES) };
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    (pages as i64 * size as i64) >> 20
}

fn read_options(options: &serde_json::Map<String, Value>) -> Result<Config> {
    let o = Options::new("fractal", options);
    let release = o.string("version", &[])?;
    let server = Server::of_release(&release)?;
    let tokumx = server.is_tokumx();
    let config = Config {
        server,
        // Half of the machine's memory: TokuMX's calculate_cachesize (storage/env.cpp) and
        // TokuMXse's cacheSize 0 (tokuft_engine_options.cpp), both physical memory / 2.
        cache_mb: o.int_or_server("cache_size_mb", physical_memory_mb() / 2)?,
        lock_memory_mb: o.optional_int("locktree_max_mb")?,
        // TokuMX's lockTimeout 4000 ms (cmdline.h); TokuMXse's tokuftEngineLockTimeout 100 ms.
        lock_timeout_ms: o.int_or_server("lock_timeout_ms", if tokumx { 4000 } else { 100 })?,
        checkpoint_s: o.int("checkpoint_s")?,
        cleaner_period_s: o.int("cleaner_period_s")?,
        cleaner_iterations: o.int("cleaner_iterations")?,
        log_flush_ms: o.int("log_flush_ms")?,
        redzone_percent: o.int("fs_redzone_percent")?,
        direct_io: o.boolean("direct_io")?,
        // TokuMXse turned it off (compressBuffersBeforeEviction false); TokuMX 2.x left the
        // engine's default (on); 1.x has no such setting.
        compress_buffers: o.raw_bool("compress_buffers_before_eviction")?.or(if tokumx { None } else { Some(false) }),
        dictionaries: DictionaryOptions {
            page_size: (o.int("page_size_kb")? << 10) as u32,
            read_page_size: (o.int("read_page_size_kb")? << 10) as u32,
            compression: o.string("compression", &["zlib", "quicklz", "lzma", "none"])?,
            fanout: o.optional_int("fanout")?.map(|f| f as u32),
        },
        fast_updates: o.boolean("fast_updates")?,
        release,
    };
    o.finish()?;
    if config.fast_updates && server != Server::TokuMX2 {
        return Err(Error::other(format!("fractal: fast_updates is a TokuMX 2.x parameter (fastUpdates); version {} has none",
                                        config.release)));
    }
    Ok(config)
}

/// One open dictionary.
struct Dictionary {
    db: *mut Db,
    name: String,
}

/// One engine call, as a test records it (Fractal::record_calls): the call, its dictionary, its
/// key, its value or message, and its flags.
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    pub op: &'static str,
    pub dictionary: String,
    pub key: Vec<u8>,
    pub value: Vec<u8>,
    pub flags: u32,
}

type Recorder = std::sync::Arc<Mutex<Vec<Call>>>;

pub struct Fractal {
    api: &'static Api,
    /// Held by each status read and by close: the environment is never read while it closes.
    status_lock: std::sync::Arc<Mutex<()>>,
    /// The calls made while a test records them; off (and never locked) otherwise.
    recording: std::sync::atomic::AtomicBool,
    recorder: Mutex<Option<Recorder>>,
    env: AtomicPtr<Env>,
    dictionaries: RwLock<Vec<Dictionary>>,
    names: Mutex<HashMap<String, Table>>,
    server: Server,
    options: DictionaryOptions,
    nosync: bool,
    fast_updates: bool,
    settings: Value,
}

// The environment and dictionary handles are thread-safe (PerconaFT's ydb locks what it shares);
// transactions and cursors stay with the thread that opened them.
unsafe impl Send for Fractal {}
unsafe impl Sync for Fractal {}

impl Fractal {
    pub fn open(dir: &Path, options: &serde_json::Map<String, Value>, handler: Option<UpdateHandler>) -> Result<Self> {
        let config = read_options(options)?;
        let api = load(&config.release)?;
        if config.dictionaries.fanout.is_some_and(|f| f != 16) && !api.has_fanout {
            return Err(Error::other(format!("fractal: PerconaFT {} has a fixed fanout of 16 (no set_fanout); fanout {:?} \
                                             cannot be set", config.release, config.dictionaries.fanout)));
        }
        let f = &api.flags;
        compression_code(api, &config.dictionaries.compression)?;
        let tokumx = config.server.is_tokumx();
        let cache_bytes = (config.cache_mb as u64) << 20;
        // TokuMX: a tenth of the cache for the locktree (env.cpp startup); TokuMXse: the engine's
        // default (64 MB; its own option never reached it: see engines.py).
        let lock_memory = config.lock_memory_mb.map(|mb| (mb as u64) << 20)
            .unwrap_or(if tokumx { cache_bytes / 10 } else { 0 });
        let product = CString::new(if tokumx { "tokumx" } else { "tokuft" }).unwrap();
        let env_config = EnvConfig {
            cache_bytes,
            lock_memory_bytes: lock_memory,
            lock_timeout_ms: config.lock_timeout_ms as u64,
            checkpoint_s: config.checkpoint_s as u32,
            cleaner_period_s: config.cleaner_period_s as u32,
            cleaner_iterations: config.cleaner_iterations as u32,
            fsync_log_period_ms: config.log_flush_ms as u32,
            redzone_percent: config.redzone_percent as i32,
            direct_io: config.direct_io as i32,
            compress_buffers: config.compress_buffers.map(|b| b as i32).unwrap_or(-1),
            tokumx_compare: tokumx as i32,
            product_name: product.as_ptr(),
        };
        if let Some(handler) = handler {
            unsafe { (api.set_update_handler)(handler) };
        } else if !tokumx {
            unsafe { (api.set_update_handler)(apply_damages) };
        }
        let home = CString::new(dir.display().to_string()).map_err(|_| Error::other("a data folder with a NUL byte"))?;
        let mut env: *mut Env = ptr::null_mut();
        let code = unsafe { (api.env_open)(home.as_ptr(), &env_config, &mut env) };
        api.check(code, &format!("PerconaFT {} could not open its environment in {}", config.release, dir.display()))?;
        let (mut major, mut minor, mut patch) = (0, 0, 0);
        let banner = unsafe { CStr::from_ptr((api.version)(&mut major, &mut minor, &mut patch)) }.to_string_lossy().into_owned();
        let settings = json!({
            "release": config.release, "server": config.server.name(), "banner": banner,
            "cache_size_mb": config.cache_mb, "locktree_max_mb": lock_memory >> 20,
            "lock_timeout_ms": config.lock_timeout_ms, "checkpoint_s": config.checkpoint_s,
            "cleaner_period_s": config.cleaner_period_s, "cleaner_iterations": config.cleaner_iterations,
            "log_flush_ms": config.log_flush_ms, "commit": if config.log_flush_ms > 0 { "DB_TXN_NOSYNC" } else { "fsync" },
            "fs_redzone_percent": config.redzone_percent, "direct_io": config.direct_io,
            "compress_buffers_before_eviction": config.compress_buffers,
            "page_size_kb": config.dictionaries.page_size >> 10, "read_page_size_kb": config.dictionaries.read_page_size >> 10,
            "compression": config.dictionaries.compression, "fanout": config.dictionaries.fanout.unwrap_or(16),
            "fast_updates": config.fast_updates,
            "comparator": if tokumx { "TokuMX's (KeyV1, then the primary key)" } else { "the engine's memcmp" },
            "allocator": "tcmalloc, as every engine here (TokuMX and TokuMXse linked jemalloc)",
            "flags": {"serializable": f.serializable},
        });
        Ok(Fractal {
            api,
            env: AtomicPtr::new(env),
            dictionaries: RwLock::new(Vec::new()),
            status_lock: Default::default(),
            names: Mutex::new(HashMap::new()),
            recording: std::sync::atomic::AtomicBool::new(false),
            recorder: Mutex::new(None),
            server: config.server,
            options: config.dictionaries,
            nosync: config.log_flush_ms > 0,
            fast_updates: config.fast_updates,
            settings,
        })
    }

    /// PerconaFT does not fail a write the disk has no room for: it retries it every second,
    /// forever (portability/file.cc, try_again_after_handling_write_error), and the run would
    /// hang until its watchdog. This thread reads the engine's filesystem state every second and,
    /// once a writer is blocked so (FS_BLOCKED), reports the cause and ends the process at once:
    /// a clean close would wait on the blocked writer (the driver then removes the data).
    fn watch_for_a_full_disk(self: &std::sync::Arc<Self>) {
        let engine = std::sync::Arc::downgrade(self);
        std::thread::Builder::new().name("ft-full-disk".into()).spawn(move || loop {
            std::thread::sleep(std::time::Duration::from_secs(1));
            let Some(engine) = engine.upgrade() else { return };
            let state = {
                let _held = engine.status_lock.lock().unwrap();
                let env = engine.env.load(Ordering::Acquire);
                if env.is_null() {
                    return;
                }
                let mut rows: Vec<(String, i64)> = Vec::new();
                unsafe { (engine.api.status)(env, status_row, &mut rows as *mut _ as *mut c_void) };
                rows.into_iter().find(|(name, _)| name == "ft.eb_fs_state").map(|(_, v)| v)
            };
            if state == Some(3) {
                let error = "No space left on device: PerconaFT is retrying a write the disk has no room for \
                             (its filesystem state FS_BLOCKED); it would retry forever, so the runner ends here";
                eprintln!("{error}");
                crate::events::emit("failed", json!({"error": format!("Fatal: {error}"), "fatal": true,
                                                     "t": crate::events::now()}));
                unsafe { libc::_exit(2) };
            }
        }).expect("cannot start the full-disk watcher");
    }

    /// Opens it (Fractal::open) with the full-disk watcher running: how the runner opens it.
    pub fn open_watched(dir: &Path, options: &serde_json::Map<String, Value>, handler: Option<UpdateHandler>)
                        -> Result<std::sync::Arc<Self>> {
        let engine = std::sync::Arc::new(Fractal::open(dir, options, handler)?);
        engine.watch_for_a_full_disk();
        Ok(engine)
    }

    fn env(&self) -> Result<*mut Env> {
        let env = self.env.load(Ordering::Acquire);
        if env.is_null() { Err(Error::other("the PerconaFT environment is closed")) } else { Ok(env) }
    }

    pub fn server(&self) -> Server {
        self.server
    }

    pub fn flags(&self) -> &'static Flags {
        &self.api.flags
    }

    pub fn fast_updates(&self) -> bool {
        self.fast_updates
    }

    pub fn has_multiple(&self) -> bool {
        self.api.has_multiple
    }

    /// The commit flags: DB_TXN_NOSYNC while the log is fsynced in the background every
    /// `log_flush_ms` (both servers), else a synchronous commit.
    pub fn commit_flags(&self) -> u32 {
        if self.nosync { self.api.flags.nosync } else { 0 }
    }

    /// Opens (creating if needed) the dictionary `name`, in a transaction of its own.
    pub fn dictionary(&self, name: &str, spec: &DictionarySpec) -> Result<Table> {
        let mut names = self.names.lock().unwrap();
        if let Some(table) = names.get(name) {
            return Ok(*table);
        }
        let env = self.env()?;
        let api = self.api;
        let config = DbConfig {
            page_size: self.options.page_size,
            read_page_size: self.options.read_page_size,
            compression: compression_code(api, &self.options.compression)?,
            fanout: self.options.fanout.unwrap_or(0),
            memcmp_magic: spec.memcmp_magic.map(u32::from).unwrap_or(0),
            descriptor: spec.descriptor.as_ptr() as *const c_void,
            descriptor_len: spec.descriptor.len(),
            clustering: spec.clustering as i32,
        };
        let cname = CString::new(name).map_err(|_| Error::other(format!("dictionary name {name:?} has a NUL byte")))?;
        let txn = self.begin(api.flags.serializable, None)?;
        let mut db: *mut Db = ptr::null_mut();
        let code = unsafe { (api.db_open)(env, txn.raw, cname.as_ptr(), &config, &mut db) };
        api.check(code, &format!("PerconaFT: opening dictionary {name}"))?;
        txn.commit(0)?;
        let mut dictionaries = self.dictionaries.write().unwrap();
        dictionaries.push(Dictionary { db, name: name.to_string() });
        let table = Table(dictionaries.len() - 1);
        names.insert(name.to_string(), table);
        Ok(table)
    }

    /// Records every call from now on (the layouts' tests check them against the servers').
    pub fn record_calls(&self) -> Recorder {
        let recorder: Recorder = Default::default();
        *self.recorder.lock().unwrap() = Some(recorder.clone());
        self.recording.store(true, Ordering::Release);
        recorder
    }

    fn recorder(&self) -> Option<Recorder> {
        if !self.recording.load(Ordering::Relaxed) {
            return None;
        }
        self.recorder.lock().unwrap().clone()
    }

    fn note(&self, op: &'static str, table: Table, key: &[u8], value: &[u8], flags: u32) {
        if let Some(recorder) = self.recorder() {
            let dictionary = self.dictionaries.read().unwrap()[table.0].name.clone();
            recorder.lock().unwrap().push(Call { op, dictionary, key: key.to_vec(), value: value.to_vec(), flags });
        }
    }

    fn db(&self, table: Table) -> *mut Db {
        self.dictionaries.read().unwrap()[table.0].db
    }

    /// A transaction (txn_begin), nested in `parent` when given.
    pub fn begin(&self, flags: u32, parent: Option<&Txn>) -> Result<Txn> {
        let env = self.env()?;
        let mut raw: *mut RawTxn = ptr::null_mut();
        let code = unsafe { (self.api.txn_begin)(env, parent.map(|p| p.raw).unwrap_or(ptr::null_mut()), flags, &mut raw) };
        self.api.check(code, "PerconaFT: txn_begin")?;
        Ok(Txn { api: self.api, raw })
    }

    /// db->getf_set: the value of `key` to `visit`, false when absent.
    pub fn get(&self, txn: &Txn, table: Table, flags: u32, key: &[u8], visit: &mut dyn FnMut(&[u8], &[u8]) -> bool) -> Result<bool> {
        self.note("get", table, key, &[], flags);
        let mut call = RowCall { visit, panicked: false };
        let code = unsafe { (self.api.get)(self.db(table), txn.raw, flags, key.as_ptr() as _, key.len(), on_row, call.ctx()) };
        call.check();
        self.api.found(code, "PerconaFT: getf_set")
    }

    pub fn put(&self, txn: &Txn, table: Table, key: &[u8], value: &[u8], flags: u32) -> Result<()> {
        self.note("put", table, key, value, flags);
        let code = unsafe { (self.api.put)(self.db(table), txn.raw, key.as_ptr() as _, key.len(), value.as_ptr() as _, value.len(), flags) };
        self.api.check(code, "PerconaFT: put")
    }

    /// db->del; false when the key was absent (only a delete without DB_DELETE_ANY looks).
    pub fn del(&self, txn: &Txn, table: Table, key: &[u8], flags: u32) -> Result<bool> {
        self.note("del", table, key, &[], flags);
        let code = unsafe { (self.api.del)(self.db(table), txn.raw, key.as_ptr() as _, key.len(), flags) };
        self.api.found(code, "PerconaFT: del")
    }

    /// db->update: an update message for `key`, applied by the update handler when the engine
    /// reaches the key's value (on a flush to the leaf, or a read).
    pub fn update(&self, txn: &Txn, table: Table, key: &[u8], message: &[u8], flags: u32) -> Result<()> {
        self.note("update", table, key, message, flags);
        let code = unsafe { (self.api.update)(self.db(table), txn.raw, key.as_ptr() as _, key.len(), message.as_ptr() as _, message.len(), flags) };
        self.api.check(code, "PerconaFT: update")
    }

    /// env->put_multiple (2.x): the row into `src` with `src_flags`, and each (dictionary, key,
    /// flags) of `others`, whose values the engine asks the shim for (the whole row for a
    /// clustering dictionary, nothing otherwise).
    pub fn put_multiple(&self, txn: &Txn, src: Table, key: &[u8], value: &[u8], src_flags: u32,
                        others: &[(Table, &[u8], u32)]) -> Result<()> {
        self.multiple(txn, src, key, value, src_flags, others, true)
    }

    /// env->del_multiple (2.x): the row's keys from `src` and from each of `others`.
    pub fn del_multiple(&self, txn: &Txn, src: Table, key: &[u8], value: &[u8], src_flags: u32,
                        others: &[(Table, &[u8], u32)]) -> Result<()> {
        self.multiple(txn, src, key, value, src_flags, others, false)
    }

    #[allow(clippy::too_many_arguments)]
    fn multiple(&self, txn: &Txn, src: Table, key: &[u8], value: &[u8], src_flags: u32,
                others: &[(Table, &[u8], u32)], put: bool) -> Result<()> {
        if !self.api.has_multiple {
            return Err(Error::other(format!("PerconaFT {}: put_multiple and del_multiple take the 2.x arguments here", self.api.release)));
        }
        let env = self.env()?;
        let op = if put { "put_multiple" } else { "del_multiple" };
        self.note(op, src, key, value, src_flags);
        for (table, k, f) in others {
            self.note(op, *table, k, &[], *f);
        }
        let src_db = self.db(src);
        let mut dbs = vec![src_db];
        let mut keys: Vec<*const c_void> = vec![key.as_ptr() as _];
        let mut lens = vec![key.len()];
        let mut flags = vec![src_flags];
        for (table, k, f) in others {
            dbs.push(self.db(*table));
            keys.push(k.as_ptr() as _);
            lens.push(k.len());
            flags.push(*f);
        }
        let call = if put { self.api.put_multiple } else { self.api.del_multiple };
        let code = unsafe { call(env, txn.raw, src_db, key.as_ptr() as _, key.len(), value.as_ptr() as _, value.len(),
                                 dbs.len() as u32, dbs.as_ptr(), keys.as_ptr(), lens.as_ptr(), flags.as_ptr()) };
        self.api.check(code, if put { "PerconaFT: put_multiple" } else { "PerconaFT: del_multiple" })
    }

    /// A cursor (db->cursor) on `table` in `txn`.
    pub fn cursor<'t>(&self, txn: &'t Txn, table: Table, flags: u32) -> Result<Cursor<'t>> {
        let mut raw: *mut Dbc = ptr::null_mut();
        let code = unsafe { (self.api.cursor_open)(self.db(table), txn.raw, flags, &mut raw) };
        self.api.check(code, "PerconaFT: cursor")?;
        let trace = self.recorder().map(|r| (r, self.dictionaries.read().unwrap()[table.0].name.clone()));
        if let Some((recorder, dictionary)) = &trace {
            recorder.lock().unwrap().push(Call { op: "cursor", dictionary: dictionary.clone(), key: Vec::new(), value: Vec::new(), flags });
        }
        Ok(Cursor { api: self.api, raw, trace, _txn: std::marker::PhantomData })
    }

    /// The update handler's way to give the engine a new value (or delete it).
    pub fn set_updated_value(setter: *mut c_void, value: Option<&[u8]>) {
        let Some(Ok(api)) = API.get() else { return };
        unsafe {
            match value {
                Some(v) => (api.update_set)(setter, v.as_ptr(), v.len()),
                None => (api.update_delete)(setter),
            }
        }
    }

    /// One dictionary's (keys, data bytes, file bytes), from the engine's in-memory statistics (stat64).
    pub fn dictionary_stat(&self, table: Table) -> Result<(u64, u64, u64)> {
        let (mut keys, mut data, mut file) = (0, 0, 0);
        let code = unsafe { (self.api.db_stat)(self.db(table), &mut keys, &mut data, &mut file) };
        self.api.check(code, "PerconaFT: stat64").map(|()| (keys, data, file))
    }

    /// The files' share of each dictionary: (keys, data bytes, file bytes), by name.
    pub fn dictionary_sizes(&self) -> Vec<(String, u64, u64, u64)> {
        let dictionaries = self.dictionaries.read().unwrap();
        dictionaries.iter().filter_map(|d| {
            let (mut keys, mut data, mut file) = (0, 0, 0);
            let code = unsafe { (self.api.db_stat)(d.db, &mut keys, &mut data, &mut file) };
            (code == 0).then(|| (d.name.clone(), keys, data, file))
        }).collect()
    }
}

fn compression_code(api: &Api, name: &str) -> Result<i32> {
    api.flags.compression.iter().find(|(n, _)| *n == name).map(|(_, c)| *c)
        .ok_or_else(|| Error::other(format!("fractal: compression {name:?}; allowed: zlib, quicklz, lzma, none")))
}

/// A transaction: aborted when dropped unless committed.
pub struct Txn {
    api: &'static Api,
    raw: *mut RawTxn,
}

impl Txn {
    pub fn commit(mut self, flags: u32) -> Result<()> {
        let raw = std::mem::replace(&mut self.raw, ptr::null_mut());
        let code = unsafe { (self.api.txn_commit)(raw, flags) };
        self.api.check(code, "PerconaFT: commit")
    }
}

impl Drop for Txn {
    fn drop(&mut self) {
        if !self.raw.is_null() {
            unsafe { (self.api.txn_abort)(self.raw) };
        }
    }
}

/// A cursor of one transaction, closed when dropped.
pub struct Cursor<'t> {
    api: &'static Api,
    raw: *mut Dbc,
    trace: Option<(Recorder, String)>,
    _txn: std::marker::PhantomData<&'t Txn>,
}

impl Cursor<'_> {
    fn note(&self, op: &'static str, key: &[u8], value: &[u8], flags: u32) {
        if let Some((recorder, dictionary)) = &self.trace {
            recorder.lock().unwrap().push(Call { op, dictionary: dictionary.clone(), key: key.to_vec(), value: value.to_vec(), flags });
        }
    }

    /// c_set_bounds: the range the cursor will read, locked up front when `prelock` (for a
    /// serializable or read-modify-write cursor).
    pub fn set_bounds(&mut self, low: &[u8], high: &[u8], prelock: bool) -> Result<()> {
        self.note(if prelock { "c_set_bounds_prelocked" } else { "c_set_bounds" }, low, high, 0);
        let code = unsafe { (self.api.cursor_set_bounds)(self.raw, low.as_ptr() as _, low.len(), high.as_ptr() as _, high.len(), prelock as c_int) };
        self.api.check(code, "PerconaFT: c_set_bounds")
    }

    /// c_getf_set_range (or _reverse; an empty key: c_getf_first or _last): rows from the first
    /// key >= `key` (<= it, reversed) to `visit` while it returns true and the engine has them
    /// in the same basement node; false when there is no such key.
    pub fn seek(&mut self, flags: u32, key: &[u8], reverse: bool, visit: &mut dyn FnMut(&[u8], &[u8]) -> bool) -> Result<bool> {
        self.note(if reverse { "c_getf_set_range_reverse" } else { "c_getf_set_range" }, key, &[], flags);
        let mut call = RowCall { visit, panicked: false };
        let code = unsafe { (self.api.cursor_seek)(self.raw, flags, key.as_ptr() as _, key.len(), reverse as c_int, on_row, call.ctx()) };
        call.check();
        self.api.found(code, "PerconaFT: c_getf_set_range")
    }

    /// c_getf_set: exactly `key`.
    pub fn set(&mut self, flags: u32, key: &[u8], visit: &mut dyn FnMut(&[u8], &[u8]) -> bool) -> Result<bool> {
        self.note("c_getf_set", key, &[], flags);
        let mut call = RowCall { visit, panicked: false };
        let code = unsafe { (self.api.cursor_set)(self.raw, flags, key.as_ptr() as _, key.len(), on_row, call.ctx()) };
        call.check();
        self.api.found(code, "PerconaFT: c_getf_set")
    }

    /// c_getf_next (c_getf_prev): the following rows, as `seek` gives them.
    pub fn step(&mut self, flags: u32, reverse: bool, visit: &mut dyn FnMut(&[u8], &[u8]) -> bool) -> Result<bool> {
        self.note(if reverse { "c_getf_prev" } else { "c_getf_next" }, &[], &[], flags);
        let mut call = RowCall { visit, panicked: false };
        let code = unsafe { (self.api.cursor_step)(self.raw, flags, reverse as c_int, on_row, call.ctx()) };
        call.check();
        self.api.found(code, "PerconaFT: c_getf_next")
    }
}

impl Drop for Cursor<'_> {
    fn drop(&mut self) {
        unsafe { (self.api.cursor_close)(self.raw) };
    }
}

/// A Rust visitor behind the shim's row callback.
struct RowCall<'a> {
    visit: &'a mut dyn FnMut(&[u8], &[u8]) -> bool,
    panicked: bool,
}

impl RowCall<'_> {
    fn ctx(&mut self) -> *mut c_void {
        self as *mut Self as *mut c_void
    }

    fn check(&self) {
        if self.panicked {
            // A visitor panicked inside the engine's call; nothing can unwind through it.
            eprintln!("a row visitor panicked inside PerconaFT; aborting");
            std::process::abort();
        }
    }
}

unsafe extern "C" fn on_row(ctx: *mut c_void, key: *const c_void, key_len: usize, val: *const c_void, val_len: usize) -> c_int {
    let call = &mut *(ctx as *mut RowCall);
    let key = std::slice::from_raw_parts(key as *const u8, key_len);
    let val = if val.is_null() || val_len == 0 { &[][..] } else { std::slice::from_raw_parts(val as *const u8, val_len) };
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (call.visit)(key, val))) {
        Ok(more) => more as c_int,
        Err(_) => {
            call.panicked = true;
            0
        }
    }
}

/// The engine status rows a run samples (ft/ft-ops.cc, ft/cachetable.cc, ft/checkpoint.cc and
/// src/ydb.cc status tables), as `ft.<row>`: the cache's size and limit, its misses, evictions
/// and prefetches (the TokuMX post graphed those three), checkpoints and their time, bytes the
/// engine wrote (nodes and log), locktree waits and timeouts, and the filesystem's state.
fn status_wanted(name: &str) -> bool {
    const WANTED: &[&str] = &[
        "CT_SIZE_CURRENT", "CT_SIZE_LIMIT", "CT_SIZE_WRITING", "CT_SIZE_NONLEAF", "CT_SIZE_LEAF", "CT_SIZE_ROLLBACK",
        "CT_SIZE_CACHEPRESSURE", "CT_MISS", "CT_MISSTIME", "CT_PREFETCHES", "CT_EVICTIONS", "CT_LONG_WAIT_PRESSURE_COUNT",
        "CT_WAIT_PRESSURE_COUNT", "CP_CHECKPOINT_COUNT", "CP_TIME_CHECKPOINT_DURATION", "CP_TIME_CHECKPOINT_DURATION_LAST",
        "CP_LONG_BEGIN_COUNT", "CP_LONG_BEGIN_TIME", "CP_FOOTPRINT", "LOGGER_BYTES_WRITTEN", "LOGGER_NUM_WRITES",
        "LOGGER_UNCOMPRESSED_BYTES_WRITTEN", "LTM_WAIT_COUNT", "LTM_TIMEOUT_COUNT", "LTM_SIZE_CURRENT", "LTM_ESCALATION_COUNT",
        "eb_fs_state", "eb_panic",
    ];
    WANTED.contains(&name) || (name.starts_with("FT_DISK_FLUSH_") && name.contains("BYTES"))
        || name.starts_with("FT_UPDATES") || name.starts_with("FT_MSG_") && name.ends_with("_BYTES_IN")
}

extern "C" fn status_row(ctx: *mut c_void, name: *const c_char, value: f64) {
    let rows = unsafe { &mut *(ctx as *mut Vec<(String, i64)>) };
    let name = unsafe { CStr::from_ptr(name) }.to_string_lossy();
    if status_wanted(&name) {
        rows.push((format!("ft.{name}"), value as i64));
    }
}

impl Engine for Fractal {
    fn name(&self) -> &str {
        "fractal"
    }

    fn version(&self) -> String {
        self.api.release.clone()
    }

    /// TokuMXse's KV layout (kv_sorted_data_impl.cpp, kv_record_store.cpp at tokumxse-1.0.0-rc.6).
    fn record_store_layout(&self) -> super::RecordStoreLayout {
        super::RecordStoreLayout { record_id_in_every_key: true, reads_record_before_write: true }
    }

    fn config(&self) -> Value {
        self.settings.clone()
    }

    /// A table of mongod's record store as TokuMXse's tokuft engine made it: one dictionary,
    /// its descriptor the KVDictionary encoding's (a record store 0x00, an index 0x01 and its
    /// ordering bits, here none), compared by the engine's memcmp (kv_dictionary.cpp).
    fn table(&self, name: &str, kind: TableKind) -> Result<Table> {
        let descriptor = match kind {
            TableKind::Records => vec![0x00],
            TableKind::Index => vec![0x01, 0, 0, 0, 0],
            TableKind::Metadata => Vec::new(),
        };
        self.dictionary(name, &DictionarySpec { descriptor, ..Default::default() })
    }

    fn session(&self) -> Result<Box<dyn Session>> {
        Ok(Box::new(KvSession { engine: self as *const Fractal, txn: None, write: false }))
    }

    fn stats(&self) -> Vec<(String, i64)> {
        let _held = self.status_lock.lock().unwrap();
        let Ok(env) = self.env() else { return Vec::new() };
        let mut rows: Vec<(String, i64)> = Vec::new();
        unsafe { (self.api.status)(env, status_row, &mut rows as *mut _ as *mut c_void) };
        rows
    }

    fn checkpoint(&self) -> Result<()> {
        let code = unsafe { (self.api.checkpoint)(self.env()?) };
        self.api.check(code, "PerconaFT: checkpoint")
    }

    fn close(&self) -> Result<()> {
        let _held = self.status_lock.lock().unwrap();
        let env = self.env.swap(ptr::null_mut(), Ordering::AcqRel);
        if env.is_null() {
            return Ok(());
        }
        let mut first_error = None;
        for dictionary in self.dictionaries.write().unwrap().drain(..) {
            let code = unsafe { (self.api.db_close)(dictionary.db) };
            if code != 0 && first_error.is_none() {
                first_error = Some(self.api.error(code, &format!("PerconaFT: closing {}", dictionary.name)));
            }
        }
        self.names.lock().unwrap().clear();
        let code = unsafe { (self.api.env_close)(env) };
        if let Some(e) = first_error {
            return Err(e);
        }
        self.api.check(code, "PerconaFT: closing the environment")
    }
}

/// The key-value contract as TokuMXse's tokuft engine used the dictionaries
/// (tokuft/tokuft_dictionary.cpp, tokuft_recovery_unit.cpp at tokumxse-1.0.0-rc.6): a write's
/// transaction is serializable (its reads lock what they read), a read's a read-only snapshot
/// that locks nothing; puts are blind inserts that lock their key, deletes look the key up first
/// (no DB_DELETE_ANY), and every commit is DB_TXN_NOSYNC, the log fsynced every
/// journalCommitInterval.
struct KvSession {
    engine: *const Fractal,
    txn: Option<Txn>,
    write: bool,
}

impl KvSession {
    fn engine(&self) -> &Fractal {
        unsafe { &*self.engine }
    }

    fn txn(&self) -> Result<&Txn> {
        self.txn.as_ref().ok_or_else(|| Error::other("a PerconaFT call outside a transaction"))
    }

    /// A read's flags: a write's transaction reads with locks, a snapshot prelocked (none).
    fn read_flags(&self) -> u32 {
        let f = self.engine().flags();
        if self.write { 0 } else { f.prelocked | f.prelocked_write }
    }
}

impl Session for KvSession {
    fn begin(&mut self, write: bool) -> Result<()> {
        let f = self.engine().flags();
        let flags = if write { f.serializable } else { f.snapshot | f.read_only };
        self.txn = Some(self.engine().begin(flags, None)?);
        self.write = write;
        Ok(())
    }

    fn commit(&mut self) -> Result<()> {
        let flags = self.engine().commit_flags();
        match self.txn.take() {
            Some(txn) => txn.commit(flags),
            None => Ok(()),
        }
    }

    fn rollback(&mut self) {
        self.txn = None; // aborted as it drops
    }

    fn get(&mut self, table: Table, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        let flags = self.read_flags();
        self.engine().get(self.txn()?, table, flags, key, &mut |_, v| {
            out.extend_from_slice(v);
            false
        })
    }

    fn put(&mut self, table: Table, key: &[u8], value: &[u8]) -> Result<()> {
        self.engine().put(self.txn()?, table, key, value, 0)
    }

    /// A record store's insert under a new record id: no lock (KVRecordStore::_insertRecord's
    /// skipPessimisticLocking, DB_PRELOCKED_WRITE).
    fn put_unregistered(&mut self, table: Table, key: &[u8], value: &[u8]) -> Result<()> {
        let flags = self.engine().flags().prelocked_write;
        self.engine().put(self.txn()?, table, key, value, flags)
    }

    fn insert_new(&mut self, table: Table, key: &[u8], value: &[u8]) -> Result<bool> {
        let flags = self.engine().flags().no_overwrite;
        match self.engine().put(self.txn()?, table, key, value, flags) {
            Err(e) if e.kind == crate::error::Kind::DuplicateKey => Ok(false),
            other => other.map(|()| true),
        }
    }

    /// TokuFTDictionary::remove: flags 0, so the engine looks the key up before it deletes.
    fn delete(&mut self, table: Table, key: &[u8]) -> Result<()> {
        self.engine().del(self.txn()?, table, key, 0).map(|_| ())
    }

    /// TokuFTDictionary::dupKeyCheck: a cursor bounded to [low, high] and locked over it up front,
    /// then one seek to `low`.
    fn any_in_range(&mut self, table: Table, low: &[u8], high: &[u8]) -> Result<bool> {
        let engine = self.engine();
        let f = engine.flags();
        let txn = self.txn()?;
        let mut cursor = engine.cursor(txn, table, 0)?;
        cursor.set_bounds(low, high, true)?;
        let mut inside = false;
        cursor.seek(f.prelocked | f.prelocked_write, low, false, &mut |k, _| {
            inside = k <= high;
            false
        })?;
        Ok(inside)
    }

    /// An update that changes bytes but not the size, and no index: TokuMXse sent the changed
    /// byte ranges as an update message (KVRecordStore::updateWithDamages,
    /// KVUpdateWithDamagesMessage in kv_dictionary_update.cpp) rather than the document.
    fn update_in_place(&mut self, table: Table, key: &[u8], old: &[u8], new: &[u8]) -> Result<bool> {
        if old.len() != new.len() {
            return Ok(false);
        }
        let message = damages_message(old, new);
        self.engine().update(self.txn()?, table, key, &message, 0)?;
        Ok(true)
    }

    fn scan(&mut self, table: Table, low: &[u8], high: Option<&[u8]>, reverse: bool, visit: Visit) -> Result<()> {
        let engine = self.engine();
        let flags = self.read_flags();
        let txn = self.txn()?;
        let mut cursor = engine.cursor(txn, table, 0)?;
        let going = std::cell::Cell::new(true);
        let mut each = |k: &[u8], v: &[u8]| -> bool {
            if reverse && high.is_some_and(|h| k >= h) {
                return true; // the reverse seek lands on `high` itself: skip it
            }
            if past_range(k, low, high, reverse) {
                going.set(false);
                return false;
            }
            going.set(visit(k, v));
            going.get()
        };
        // ftcxx's BufferedCursor: one row from the seek, then bulk fetches of what follows.
        let start = if reverse { high.unwrap_or(&[]) } else { low };
        if !cursor.seek(flags, start, reverse, &mut each)? {
            return Ok(());
        }
        while going.get() {
            if !cursor.step(flags, reverse, &mut each)? {
                break;
            }
        }
        Ok(())
    }
}

/// The message of KVUpdateWithDamagesMessage: a type byte 0, the count of damages, then each
/// damage's target offset (u32) and size, then the damaged bytes, packed
/// (kv/dictionary/kv_dictionary_update.cpp at tokumxse-1.0.0-rc.6; sizes as the host's size_t).
fn damages_message(old: &[u8], new: &[u8]) -> Vec<u8> {
    let mut damages: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while i < old.len() {
        if old[i] != new[i] {
            let start = i;
            while i < old.len() && old[i] != new[i] {
                i += 1;
            }
            damages.push((start, i - start));
        }
        i += 1;
    }
    let mut out = vec![0u8];
    out.extend_from_slice(&damages.len().to_ne_bytes());
    for (offset, size) in &damages {
        out.extend_from_slice(&(*offset as u32).to_ne_bytes());
        out.extend_from_slice(&size.to_ne_bytes());
    }
    for (offset, size) in &damages {
        out.extend_from_slice(&new[*offset..offset + size]);
    }
    out
}

/// TokuMXse's update callback (tokuft_engine.cpp tokuft_update): the old value with the
/// message's byte ranges written over it.
extern "C" fn apply_damages(old: *const u8, old_len: usize, has_old: c_int, extra: *const u8, extra_len: usize,
                            setter: *mut c_void) -> c_int {
    if has_old == 0 {
        return 0;
    }
    let (old, message) = unsafe { (std::slice::from_raw_parts(old, old_len), std::slice::from_raw_parts(extra, extra_len)) };
    match apply_damages_to(old, message) {
        Some(new) => {
            Fractal::set_updated_value(setter, Some(&new));
            0
        }
        None => libc::EINVAL,
    }
}

fn apply_damages_to(old: &[u8], message: &[u8]) -> Option<Vec<u8>> {
    const WORD: usize = std::mem::size_of::<usize>();
    let mut new = old.to_vec();
    let count = usize::from_ne_bytes(message.get(1..1 + WORD)?.try_into().ok()?);
    let headers = 1 + WORD;
    let mut data = headers + count * (4 + WORD);
    for i in 0..count {
        let at = headers + i * (4 + WORD);
        let offset = u32::from_ne_bytes(message.get(at..at + 4)?.try_into().ok()?) as usize;
        let size = usize::from_ne_bytes(message.get(at + 4..at + 4 + WORD)?.try_into().ok()?);
        new.get_mut(offset..offset + size)?.copy_from_slice(message.get(data..data + size)?);
        data += size;
    }
    Some(new)
}

/// This engine in the runner's registry (engines/mod.rs, written by build.rs).
pub const ENTRY: super::EngineEntry = super::EngineEntry {
    name: "fractal",
    open: |dir, options| Ok(Fractal::open_watched(dir, options, None)? as std::sync::Arc<dyn Engine>),
    releases: || releases().into_iter().map(|r| r.0).collect(),
    mmap_stand_in: false,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_damages_message_rebuilds_the_new_value() {
        let old = b"{ y: 'aaaa', k: 1 }".to_vec();
        let mut new = old.clone();
        new[7] = b'b';
        new[8] = b'c';
        new[17] = b'2';
        let message = damages_message(&old, &new);
        assert_eq!(message[0], 0);
        assert_eq!(usize::from_ne_bytes(message[1..9].try_into().unwrap()), 2);
        assert_eq!(apply_damages_to(&old, &message).unwrap(), new);
    }
}
