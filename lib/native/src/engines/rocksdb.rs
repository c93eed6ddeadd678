//! RocksDB, laid out and configured as MongoRocks did it, through RocksDB's C API.
//!
//! One key space; every table is a 4-byte prefix, as MongoRocks gave each collection and index
//! (the prefixes are kept under a metadata prefix so a reopened database finds them). The
//! options come from engines::mongod_layout::RocksLayout, which cites MongoRocks' source.
//!
//! Transactions as MongoRocks ran them (mongo-rocks r3.2.0, src/rocks_recovery_unit.cpp): a
//! plain DB; each write transaction reads at a snapshot, gathers its writes in a
//! WriteBatchWithIndex (read back by its own reads and scans) and applies it with one DB write
//! at commit. Conflicts are MongoRocks' own (rocks_conflicts.rs): a write to a key another open
//! transaction wrote, or that was committed after this transaction's snapshot, fails at once
//! and the record store retries the operation. Read-only calls read a plain snapshot.
use std::ffi::{c_char, c_int, c_uchar, c_void, CStr, CString};
use std::path::Path;
use std::ptr;
use std::sync::Mutex;

use serde_json::Value;

use super::rocks_conflicts::{ConflictTracker, Transaction};
use super::{Engine, Options, Session, Table, TableKind, Visit};
use crate::error::{Error, Result};
use crate::engines::mongod_layout::{RocksLayout, OPLOG_TABLE};

#[allow(non_camel_case_types)]
mod ffi {
    use super::*;
    pub enum rocksdb_options_t {}
    pub enum rocksdb_block_based_table_options_t {}
    pub enum rocksdb_cache_t {}
    pub enum rocksdb_filterpolicy_t {}
    pub enum rocksdb_t {}
    pub enum rocksdb_writebatch_wi_t {}
    pub enum rocksdb_writeoptions_t {}
    pub enum rocksdb_readoptions_t {}
    pub enum rocksdb_snapshot_t {}
    pub enum rocksdb_iterator_t {}
    pub enum rocksdb_pinnableslice_t {}
    pub enum rocksdb_flushoptions_t {}
    pub enum rocksdb_ratelimiter_t {}

    // Linked statically, as the MongoRocks builds of the posts were (mongo-rocks-3.0.4-pre-STATIC):
    // no dynamic-library indirection on its thread-local state. The library is RocksDB's release
    // build of the source Debian ships (tools/build_rocksdb.sh: Debian's own defines no NDEBUG);
    // its compressors stay Debian's shared libraries.
    #[link(name = "rocksdb", kind = "static")]
    #[link(name = "snappy")]
    #[link(name = "z")]
    #[link(name = "bz2")]
    #[link(name = "lz4")]
    #[link(name = "zstd")]
    #[link(name = "stdc++")]
    extern "C" {
        pub fn rocksdb_options_create() -> *mut rocksdb_options_t;
        pub fn rocksdb_options_destroy(o: *mut rocksdb_options_t);
        pub fn rocksdb_options_set_create_if_missing(o: *mut rocksdb_options_t, v: c_uchar);
        pub fn rocksdb_options_set_compression_per_level(o: *mut rocksdb_options_t, levels: *const c_int, n: usize);
        pub fn rocksdb_options_set_write_buffer_size(o: *mut rocksdb_options_t, v: usize);
        pub fn rocksdb_options_set_max_write_buffer_number(o: *mut rocksdb_options_t, v: c_int);
        pub fn rocksdb_options_set_level0_slowdown_writes_trigger(o: *mut rocksdb_options_t, v: c_int);
        pub fn rocksdb_options_set_max_background_compactions(o: *mut rocksdb_options_t, v: c_int);
        pub fn rocksdb_options_set_max_background_flushes(o: *mut rocksdb_options_t, v: c_int);
        pub fn rocksdb_options_set_target_file_size_base(o: *mut rocksdb_options_t, v: u64);
        pub fn rocksdb_options_set_max_bytes_for_level_base(o: *mut rocksdb_options_t, v: u64);
        pub fn rocksdb_options_set_level_compaction_dynamic_level_bytes(o: *mut rocksdb_options_t, v: c_uchar);
        pub fn rocksdb_options_set_max_open_files(o: *mut rocksdb_options_t, v: c_int);
        pub fn rocksdb_options_set_optimize_filters_for_hits(o: *mut rocksdb_options_t, v: c_int);
        pub fn rocksdb_options_set_wal_dir(o: *mut rocksdb_options_t, dir: *const c_char);
        pub fn rocksdb_options_enable_statistics(o: *mut rocksdb_options_t);
        pub fn rocksdb_options_statistics_get_string(o: *mut rocksdb_options_t) -> *mut c_char;
        pub fn rocksdb_options_set_block_based_table_factory(o: *mut rocksdb_options_t, t: *mut rocksdb_block_based_table_options_t);
        pub fn rocksdb_block_based_options_create() -> *mut rocksdb_block_based_table_options_t;
        pub fn rocksdb_block_based_options_destroy(t: *mut rocksdb_block_based_table_options_t);
        pub fn rocksdb_block_based_options_set_block_size(t: *mut rocksdb_block_based_table_options_t, v: usize);
        pub fn rocksdb_block_based_options_set_block_cache(t: *mut rocksdb_block_based_table_options_t, c: *mut rocksdb_cache_t);
        pub fn rocksdb_block_based_options_set_filter_policy(t: *mut rocksdb_block_based_table_options_t, f: *mut rocksdb_filterpolicy_t);
        pub fn rocksdb_block_based_options_set_format_version(t: *mut rocksdb_block_based_table_options_t, v: c_int);
        pub fn rocksdb_filterpolicy_create_bloom(bits_per_key: f64) -> *mut rocksdb_filterpolicy_t;
        pub fn rocksdb_cache_create_lru(capacity: usize) -> *mut rocksdb_cache_t;
        pub fn rocksdb_cache_destroy(c: *mut rocksdb_cache_t);
        pub fn rocksdb_open(o: *const rocksdb_options_t, name: *const c_char, err: *mut *mut c_char) -> *mut rocksdb_t;
        pub fn rocksdb_close(db: *mut rocksdb_t);
        pub fn rocksdb_property_int(db: *mut rocksdb_t, name: *const c_char, out: *mut u64) -> c_int;
        pub fn rocksdb_flush(db: *mut rocksdb_t, o: *const rocksdb_flushoptions_t, err: *mut *mut c_char);
        pub fn rocksdb_flush_wal(db: *mut rocksdb_t, sync: c_uchar, err: *mut *mut c_char);
        pub fn rocksdb_create_snapshot(db: *mut rocksdb_t) -> *const rocksdb_snapshot_t;
        pub fn rocksdb_release_snapshot(db: *mut rocksdb_t, s: *const rocksdb_snapshot_t);
        pub fn rocksdb_get_pinned(db: *mut rocksdb_t, o: *const rocksdb_readoptions_t,
                                  key: *const c_char, klen: usize, err: *mut *mut c_char) -> *mut rocksdb_pinnableslice_t;
        pub fn rocksdb_put(db: *mut rocksdb_t, o: *const rocksdb_writeoptions_t,
                           key: *const c_char, klen: usize, val: *const c_char, vlen: usize, err: *mut *mut c_char);
        pub fn rocksdb_create_iterator(db: *mut rocksdb_t, o: *const rocksdb_readoptions_t) -> *mut rocksdb_iterator_t;
        pub fn rocksdb_flushoptions_create() -> *mut rocksdb_flushoptions_t;
        pub fn rocksdb_flushoptions_set_wait(o: *mut rocksdb_flushoptions_t, v: c_uchar);
        pub fn rocksdb_flushoptions_destroy(o: *mut rocksdb_flushoptions_t);
        pub fn rocksdb_writebatch_wi_create(reserved_bytes: usize, overwrite_keys: c_uchar) -> *mut rocksdb_writebatch_wi_t;
        pub fn rocksdb_writebatch_wi_destroy(b: *mut rocksdb_writebatch_wi_t);
        pub fn rocksdb_writebatch_wi_clear(b: *mut rocksdb_writebatch_wi_t);
        pub fn rocksdb_writebatch_wi_count(b: *mut rocksdb_writebatch_wi_t) -> c_int;
        pub fn rocksdb_suggest_compact_range(db: *mut rocksdb_t, start: *const c_char, slen: usize, limit: *const c_char,
                                             llen: usize, err: *mut *mut c_char);
        pub fn rocksdb_writebatch_wi_put(b: *mut rocksdb_writebatch_wi_t, key: *const c_char, klen: usize,
                                         val: *const c_char, vlen: usize);
        pub fn rocksdb_writebatch_wi_delete(b: *mut rocksdb_writebatch_wi_t, key: *const c_char, klen: usize);
        pub fn rocksdb_writebatch_wi_get_from_batch_and_db(b: *mut rocksdb_writebatch_wi_t, db: *mut rocksdb_t,
                                                           o: *const rocksdb_readoptions_t, key: *const c_char, klen: usize,
                                                           vlen: *mut usize, err: *mut *mut c_char) -> *mut c_char;
        pub fn rocksdb_write_writebatch_wi(db: *mut rocksdb_t, o: *const rocksdb_writeoptions_t,
                                           b: *mut rocksdb_writebatch_wi_t, err: *mut *mut c_char);
        pub fn rocksdb_writebatch_wi_create_iterator_with_base(b: *mut rocksdb_writebatch_wi_t,
                                                               base: *mut rocksdb_iterator_t) -> *mut rocksdb_iterator_t;
        pub fn rocksdb_writeoptions_create() -> *mut rocksdb_writeoptions_t;
        pub fn rocksdb_writeoptions_set_sync(o: *mut rocksdb_writeoptions_t, v: c_uchar);
        pub fn rocksdb_writeoptions_destroy(o: *mut rocksdb_writeoptions_t);
        pub fn rocksdb_readoptions_create() -> *mut rocksdb_readoptions_t;
        pub fn rocksdb_readoptions_set_snapshot(o: *mut rocksdb_readoptions_t, s: *const rocksdb_snapshot_t);
        pub fn rocksdb_readoptions_set_iterate_upper_bound(o: *mut rocksdb_readoptions_t, key: *const c_char, klen: usize);
        pub fn rocksdb_readoptions_destroy(o: *mut rocksdb_readoptions_t);
        pub fn rocksdb_pinnableslice_value(s: *const rocksdb_pinnableslice_t, len: *mut usize) -> *const c_char;
        pub fn rocksdb_pinnableslice_destroy(s: *mut rocksdb_pinnableslice_t);
        pub fn rocksdb_iter_seek(i: *mut rocksdb_iterator_t, key: *const c_char, klen: usize);
        pub fn rocksdb_iter_seek_for_prev(i: *mut rocksdb_iterator_t, key: *const c_char, klen: usize);
        pub fn rocksdb_iter_seek_to_last(i: *mut rocksdb_iterator_t);
        pub fn rocksdb_property_value(db: *mut rocksdb_t, name: *const c_char) -> *mut c_char;
        pub fn rocksdb_set_options(db: *mut rocksdb_t, count: c_int, keys: *const *const c_char,
                                   values: *const *const c_char, err: *mut *mut c_char);
        pub fn rocksdb_set_perf_level(level: c_int);
        pub fn rocksdb_perfcontext_create() -> *mut c_void;
        pub fn rocksdb_perfcontext_reset(context: *mut c_void);
        pub fn rocksdb_perfcontext_metric(context: *mut c_void, metric: c_int) -> u64;
        pub fn rocksdb_perfcontext_destroy(context: *mut c_void);
        pub fn rocksdb_iter_valid(i: *const rocksdb_iterator_t) -> c_uchar;
        pub fn rocksdb_iter_next(i: *mut rocksdb_iterator_t);
        pub fn rocksdb_iter_prev(i: *mut rocksdb_iterator_t);
        pub fn rocksdb_iter_key(i: *const rocksdb_iterator_t, len: *mut usize) -> *const c_char;
        pub fn rocksdb_iter_value(i: *const rocksdb_iterator_t, len: *mut usize) -> *const c_char;
        pub fn rocksdb_iter_get_error(i: *const rocksdb_iterator_t, err: *mut *mut c_char);
        pub fn rocksdb_iter_destroy(i: *mut rocksdb_iterator_t);
        pub fn rocksdb_free(p: *mut c_void);
        pub fn rocksdb_get_options_from_string(base: *const rocksdb_options_t, opts: *const c_char,
                                               new: *mut rocksdb_options_t, err: *mut *mut c_char);
        pub fn rocksdb_ratelimiter_create(rate_bytes_per_sec: i64, refill_period_us: i64, fairness: i32) -> *mut rocksdb_ratelimiter_t;
        pub fn rocksdb_options_set_ratelimiter(o: *mut rocksdb_options_t, limiter: *mut rocksdb_ratelimiter_t);
        pub fn rocksdb_ratelimiter_destroy(limiter: *mut rocksdb_ratelimiter_t);
    }
}
use ffi::*;

// Compression types of RocksDB's C API (c.h: rocksdb_no_compression ...).
const NO_COMPRESSION: c_int = 0;

fn compression_code(name: &str) -> Option<c_int> {
    Some(match name {
        "none" => 0,
        "snappy" => 1,
        "zlib" => 2,
        "lz4" => 4,
        "zstd" => 7,
        _ => return None,
    })
}

/// Turns a C API error string into an Error: Busy / TimedOut are write conflicts (a key
/// locked by, or changed under, another transaction); an IO error that ran out of space is fatal.
fn take_error(err: *mut c_char, what: &str) -> Result<()> {
    if err.is_null() {
        return Ok(());
    }
    let text = unsafe { CStr::from_ptr(err) }.to_string_lossy().into_owned();
    unsafe { rocksdb_free(err as *mut c_void) };
    if text.starts_with("Resource busy") || text.starts_with("Operation timed out") || text.starts_with("Operation aborted") {
        return Err(Error::conflict(format!("{what}: {text}")));
    }
    if text.contains("No space left on device") || text.starts_with("IO error") {
        return Err(Error::fatal(format!("{what}: {text}")));
    }
    Err(Error::other(format!("{what}: {text}")))
}

/// MongoRocks' storage.rocksdb.configString: RocksDB's own option syntax, applied over everything
/// above (GetOptionsFromString), as RocksEngine::_options() applied it last. The `2015` settings
/// use it for what RocksDB 4.x did by default and 7.8.3 does not.
unsafe fn apply_config_string(opts: *mut rocksdb_options_t, config: &str) -> Result<*mut rocksdb_options_t> {
    if config.is_empty() {
        return Ok(opts);
    }
    let text = CString::new(config).map_err(|_| Error::other("rocksdb: config_string has a NUL byte"))?;
    let out = rocksdb_options_create();
    let mut err: *mut c_char = ptr::null_mut();
    rocksdb_get_options_from_string(opts, text.as_ptr(), out, &mut err);
    rocksdb_options_destroy(opts);
    if let Err(e) = take_error(err, &format!("rocksdb: config_string {config:?}")) {
        rocksdb_options_destroy(out);
        return Err(e);
    }
    Ok(out)
}

const META: [u8; 4] = [0, 0, 0, 0];

pub struct RocksDb {
    db: *mut rocksdb_t,
    options: *mut rocksdb_options_t,
    cache: *mut rocksdb_cache_t,
    write_options: *mut rocksdb_writeoptions_t,
    conflicts: ConflictTracker,
    prefixes: Mutex<Vec<(String, [u8; 4])>>,
    settings: Value,
    closed: Mutex<bool>,
    flusher: Mutex<Option<(std::sync::Arc<std::sync::atomic::AtomicBool>, std::thread::JoinHandle<()>)>>,
    /// Scans as MongoRocks made them (RocksLayout::scans), rather than bounded at their range.
    mongorocks_scans: bool,
    reads_before_write: bool,
    tombstones: Option<TombstoneCompactions>,
    /// The oplog's prefix once its table exists (its scans never ask for a compaction).
    oplog_prefix: Mutex<Option<[u8; 4]>>,
    /// MongoRocks' soft_rate_limit, kept by the runner (rocks_throttle.rs), where set.
    throttle: Mutex<Option<super::rocks_throttle::Poller>>,
}

/// MongoRocks' RocksCompactionScheduler (RocksLayout::tombstone_compaction_skips): one timer for
/// the whole engine, started when it opens.
struct TombstoneCompactions {
    skips: u64,
    interval: std::time::Duration,
    last: Mutex<std::time::Instant>,
    suggested: std::sync::atomic::AtomicI64,
}

// RocksDB's DB, options and caches are thread-safe; transactions stay with their thread.
unsafe impl Send for RocksDb {}
unsafe impl Sync for RocksDb {}

struct SendDb(*mut rocksdb_t);
unsafe impl Send for SendDb {}

impl RocksLayout {
    /// The params' engine options over MongoRocks' defaults; an unknown key or value is an error.
    fn from_options(options: &serde_json::Map<String, Value>) -> Result<RocksLayout> {
        let o = Options::new("rocksdb", options);
        let defaults = RocksLayout::default();
        let layout = RocksLayout {
            cache_mb: o.int("cache_size_mb")?,
            compression: o.string("compression", &["none", "snappy", "zlib", "lz4", "zstd"])?,
            write_buffer_mb: o.int_or_server("write_buffer_mb", defaults.write_buffer_mb)?,
            max_write_buffers: o.int_or_server("max_write_buffers", defaults.max_write_buffers)?,
            max_background_compactions: o.int_or_server("max_background_compactions", defaults.max_background_compactions)?,
            max_background_flushes: o.int_or_server("max_background_flushes", defaults.max_background_flushes)?,
            target_file_size_mb: o.int_or_server("target_file_size_mb", defaults.target_file_size_mb as i64)? as u64,
            max_bytes_for_level_base_mb: o.int_or_server("max_bytes_for_level_base_mb", defaults.max_bytes_for_level_base_mb as i64)? as u64,
            block_size_kb: o.int_or_server("block_size_kb", defaults.block_size_kb)?,
            bloom_bits: o.int_or_server("bloom_bits", defaults.bloom_bits)?,
            journal_commit_ms: o.int_or_server("journal_commit_ms", defaults.journal_commit_ms)?,
            statistics: o.boolean("statistics")?,
            rate_limit_mb: o.int("rate_limit_mb")?,
            config_string: o.string("config_string", &[])?,
            scans: o.string("scans", &["mongorocks", "bounded"])?,
            reads_before_write: o.boolean("read_before_write")?,
            tombstone_compaction_skips: o.int("tombstone_compaction_skips")?,
            tombstone_compaction_interval_s: o.int("tombstone_compaction_interval_s")?,
            soft_rate_limit: o.float("soft_rate_limit")?,
            ..defaults
        };
        o.finish()?;
        Ok(layout)
    }
}

/// RocksDB's options for a layout: the table (block cache, bloom filter, block size), the
/// memtables and levels, compression per level, the WAL folder, MongoRocks' rate limiter, then
/// the layout's config string. Returns them with the block cache (the caller destroys both) and
/// the compression per level.
unsafe fn db_options(layout: &RocksLayout, wal_dir: &CString) -> Result<(*mut rocksdb_options_t, *mut rocksdb_cache_t, Vec<c_int>)> {
    let opts = rocksdb_options_create();
    rocksdb_options_set_create_if_missing(opts, 1);
    let table = rocksdb_block_based_options_create();
    let cache = rocksdb_cache_create_lru((layout.cache_mb as usize) << 20);
    rocksdb_block_based_options_set_block_cache(table, cache);
    if layout.bloom_bits > 0 {
        rocksdb_block_based_options_set_filter_policy(table, rocksdb_filterpolicy_create_bloom(layout.bloom_bits as f64));
    }
    rocksdb_block_based_options_set_block_size(table, (layout.block_size_kb as usize) << 10);
    rocksdb_block_based_options_set_format_version(table, layout.format_version);
    rocksdb_options_set_block_based_table_factory(opts, table);
    rocksdb_block_based_options_destroy(table);
    rocksdb_options_set_write_buffer_size(opts, (layout.write_buffer_mb as usize) << 20);
    rocksdb_options_set_max_write_buffer_number(opts, layout.max_write_buffers as c_int);
    rocksdb_options_set_level0_slowdown_writes_trigger(opts, layout.level0_slowdown_writes_trigger);
    rocksdb_options_set_max_background_compactions(opts, layout.max_background_compactions as c_int);
    rocksdb_options_set_max_background_flushes(opts, layout.max_background_flushes as c_int);
    rocksdb_options_set_target_file_size_base(opts, layout.target_file_size_mb << 20);
    rocksdb_options_set_max_bytes_for_level_base(opts, layout.max_bytes_for_level_base_mb << 20);
    rocksdb_options_set_level_compaction_dynamic_level_bytes(opts, layout.dynamic_level_bytes as c_uchar);
    rocksdb_options_set_max_open_files(opts, -1);
    rocksdb_options_set_optimize_filters_for_hits(opts, layout.optimize_filters_for_hits as c_int);
    let below = compression_code(&layout.compression).unwrap_or(NO_COMPRESSION);
    let levels: Vec<c_int> = (0..layout.compression_levels)
        .map(|level| if level < layout.uncompressed_levels { NO_COMPRESSION } else { below })
        .collect();
    rocksdb_options_set_compression_per_level(opts, levels.as_ptr(), levels.len());
    rocksdb_options_set_wal_dir(opts, wal_dir.as_ptr());
    if layout.statistics {
        rocksdb_options_enable_statistics(opts);
    }
    // MongoRocks' write rate limiter (storage.rocksdb.maxWriteMBPerSec, 1024 MB/s): with a
    // limiter set, RocksDB also syncs files every 1 MB written (bytes_per_sync).
    let limiter = rocksdb_ratelimiter_create(layout.rate_limit_mb << 20, 100_000, 10);
    rocksdb_options_set_ratelimiter(opts, limiter);
    rocksdb_ratelimiter_destroy(limiter);
    match apply_config_string(opts, &layout.config_string) {
        Ok(opts) => Ok((opts, cache, levels)),
        Err(e) => {
            rocksdb_cache_destroy(cache);
            Err(e)
        }
    }
}

impl RocksDb {
    pub fn open(dir: &Path, options: &serde_json::Map<String, Value>) -> Result<Self> {
        let layout = RocksLayout::from_options(options)?;
        let path = CString::new(dir.display().to_string()).unwrap();
        let wal_dir = CString::new(dir.join("journal").display().to_string()).unwrap();
        unsafe {
            let (opts, cache, levels) = db_options(&layout, &wal_dir)?;
            let mut err: *mut c_char = ptr::null_mut();
            let db = rocksdb_open(opts, path.as_ptr(), &mut err);
            if let Err(e) = take_error(err, &format!("RocksDB could not open {}", dir.display())) {
                rocksdb_options_destroy(opts);
                rocksdb_cache_destroy(cache);
                return Err(e);
            }
            let write_options = rocksdb_writeoptions_create();
            rocksdb_writeoptions_set_sync(write_options, 0);
            let engine = RocksDb {
                db,
                options: opts,
                cache,
                write_options,
                conflicts: ConflictTracker::new(),
                prefixes: Mutex::new(Vec::new()),
                settings: layout.describe(&levels),
                closed: Mutex::new(false),
                flusher: Mutex::new(None),
                mongorocks_scans: layout.scans == "mongorocks",
                reads_before_write: layout.reads_before_write,
                tombstones: (layout.tombstone_compaction_skips > 0).then(|| TombstoneCompactions {
                    skips: layout.tombstone_compaction_skips as u64,
                    interval: std::time::Duration::from_secs(layout.tombstone_compaction_interval_s as u64),
                    last: Mutex::new(std::time::Instant::now()),
                    suggested: Default::default(),
                }),
                oplog_prefix: Mutex::new(None),
                throttle: Mutex::new(None),
            };
            engine.load_prefixes()?;
            if layout.journal_commit_ms > 0 {
                engine.start_journal(layout.journal_commit_ms as u64)?;
            }
            if layout.soft_rate_limit > 0.0 {
                engine.start_throttle(layout.soft_rate_limit)?;
            }
            Ok(engine)
        }
    }

    /// MongoRocks syncs the WAL from a background thread every journal commit interval, not
    /// on each commit; same here.
    fn start_journal(&self, every_ms: u64) -> Result<()> {
        let db = SendDb(self.db);
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopping = stop.clone();
        let handle = std::thread::Builder::new().name("rocksdb-journal".into()).spawn(move || {
            let db = db;
            while !stopping.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::sleep(std::time::Duration::from_millis(every_ms));
                let mut err: *mut c_char = ptr::null_mut();
                unsafe { rocksdb_flush_wal(db.0, 1, &mut err) };
                if take_error(err, "RocksDB WAL sync").is_err() {
                    return;
                }
            }
        })?;
        *self.flusher.lock().unwrap() = Some((stop, handle));
        Ok(())
    }

    /// MongoRocks' soft_rate_limit (rocks_throttle.rs): RocksDB's own write delay, on while a
    /// level below L0 scores over `limit`.
    fn start_throttle(&self, limit: f64) -> Result<()> {
        let (reader, setter) = (SendDb(self.db), SendDb(self.db));
        let read_scores = move || {
            let reader = &reader;
            let name = CString::new("rocksdb.cfstats-no-file-histogram").unwrap();
            let text = unsafe { rocksdb_property_value(reader.0, name.as_ptr()) };
            if text.is_null() {
                return None;
            }
            let out = unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned();
            unsafe { rocksdb_free(text as *mut c_void) };
            Some(out)
        };
        let set_delay = move |on: bool| {
            let setter = &setter;
            let key = CString::new("soft_pending_compaction_bytes_limit").unwrap();
            // 1 byte: any pending compaction delays writes; 0: the pending-bytes rule is off.
            let value = CString::new(if on { "1" } else { "0" }).unwrap();
            let mut err: *mut c_char = ptr::null_mut();
            unsafe { rocksdb_set_options(setter.0, 1, &key.as_ptr(), &value.as_ptr(), &mut err) };
            take_error(err, "RocksDB set_options").is_ok()
        };
        let poller = super::rocks_throttle::Poller::start(limit, read_scores, set_delay)?;
        *self.throttle.lock().unwrap() = Some(poller);
        Ok(())
    }

    fn load_prefixes(&self) -> Result<()> {
        let mut found = Vec::new();
        unsafe {
            let read = rocksdb_readoptions_create();
            let it = rocksdb_create_iterator(self.db, read);
            rocksdb_iter_seek(it, META.as_ptr() as *const c_char, META.len());
            while rocksdb_iter_valid(it) != 0 {
                let key = slice(rocksdb_iter_key(it, &mut 0), it, true);
                if !key.starts_with(&META) {
                    break;
                }
                let value = slice(ptr::null(), it, false);
                let mut prefix = [0u8; 4];
                prefix.copy_from_slice(&value[..4]);
                found.push((String::from_utf8_lossy(&key[4..]).into_owned(), prefix));
                rocksdb_iter_next(it);
            }
            rocksdb_iter_destroy(it);
            rocksdb_readoptions_destroy(read);
        }
        *self.oplog_prefix.lock().unwrap() = found.iter().find(|(n, _)| n == OPLOG_TABLE).map(|(_, p)| *p);
        *self.prefixes.lock().unwrap() = found;
        Ok(())
    }

    /// One iterator step skipped `skipped` deletions in the table of `prefix`: at or above the
    /// threshold, and if the engine-wide interval has passed, the whole table's range is
    /// suggested for compaction (rocks_compaction_scheduler.cpp reportSkippedDeletionsAboveThreshold;
    /// its errors ignored there and here).
    fn skipped_deletions_in(&self, prefix: [u8; 4], skipped: u64) {
        let Some(t) = &self.tombstones else { return };
        if skipped < t.skips || *self.oplog_prefix.lock().unwrap() == Some(prefix) {
            return;
        }
        {
            let mut last = t.last.lock().unwrap();
            if last.elapsed() < t.interval {
                return;
            }
            *last = std::time::Instant::now();
        }
        let end = (u32::from_be_bytes(prefix) + 1).to_be_bytes();
        let mut err: *mut c_char = ptr::null_mut();
        unsafe {
            rocksdb_suggest_compact_range(self.db, prefix.as_ptr() as *const c_char, 4, end.as_ptr() as *const c_char,
                                          4, &mut err);
        }
        let _ = take_error(err, "RocksDB suggest_compact_range");
        t.suggested.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// RocksDB's perf context counts per thread (c.h: rocksdb_enable_count, and the metric's place
/// in its enum).
const PERF_ENABLE_COUNT: c_int = 2;
const PERF_INTERNAL_DELETE_SKIPPED: c_int = 11;

/// What `work` returns, with the deletions RocksDB's iterators stepped over on this thread while
/// it ran (the perf context's internal_delete_skipped_count: the figure MongoRocks watched to
/// schedule its compactions, rocks_recovery_unit.cpp PrefixStrippingIterator::endOp).
pub fn skipped_deletions<R>(work: impl FnOnce() -> R) -> (R, u64) {
    unsafe {
        rocksdb_set_perf_level(PERF_ENABLE_COUNT);
        let context = rocksdb_perfcontext_create();
        rocksdb_perfcontext_reset(context);
        let out = work();
        let skipped = rocksdb_perfcontext_metric(context, PERF_INTERNAL_DELETE_SKIPPED);
        rocksdb_perfcontext_destroy(context);
        (out, skipped)
    }
}

/// The iterator's current key (key=true) or value, borrowed until it moves.
unsafe fn slice<'a>(_unused: *const c_char, it: *mut rocksdb_iterator_t, key: bool) -> &'a [u8] {
    let mut len = 0usize;
    let data = if key { rocksdb_iter_key(it, &mut len) } else { rocksdb_iter_value(it, &mut len) };
    std::slice::from_raw_parts(data as *const u8, len)
}

impl Engine for RocksDb {
    fn trims_oplog_by_key_tracker(&self) -> bool {
        true
    }
    fn record_store_layout(&self) -> super::RecordStoreLayout {
        super::RecordStoreLayout { record_id_in_every_key: false, reads_record_before_write: self.reads_before_write }
    }
    fn name(&self) -> &str {
        "rocksdb"
    }

    fn version(&self) -> String {
        self.settings["release"].as_str().unwrap_or_default().to_string()
    }

    fn config(&self) -> Value {
        self.settings.clone()
    }

    fn table(&self, name: &str, _kind: TableKind) -> Result<Table> {
        let mut prefixes = self.prefixes.lock().unwrap();
        if let Some(i) = prefixes.iter().position(|(n, _)| n == name) {
            return Ok(Table(i));
        }
        let next = prefixes.iter().map(|(_, p)| u32::from_be_bytes(*p)).max().unwrap_or(0) + 1;
        let prefix = next.to_be_bytes();
        let mut key = META.to_vec();
        key.extend_from_slice(name.as_bytes());
        let mut err: *mut c_char = ptr::null_mut();
        unsafe {
            rocksdb_put(self.db, self.write_options, key.as_ptr() as *const c_char, key.len(),
                        prefix.as_ptr() as *const c_char, 4, &mut err);
        }
        take_error(err, "RocksDB could not record a table prefix")?;
        if name == OPLOG_TABLE {
            *self.oplog_prefix.lock().unwrap() = Some(prefix);
        }
        prefixes.push((name.to_string(), prefix));
        Ok(Table(prefixes.len() - 1))
    }

    fn session(&self) -> Result<Box<dyn Session>> {
        Ok(Box::new(RocksSession {
            engine: self as *const RocksDb,
            // MongoRocks' recovery unit: WriteBatchWithIndex(BytewiseComparator(), 0, true).
            batch: unsafe { rocksdb_writebatch_wi_create(0, 1) },
            txn: Transaction::default(),
            snapshot: ptr::null(),
            read: unsafe { rocksdb_readoptions_create() },
            writing: false,
            prefixes: self.prefixes.lock().unwrap().iter().map(|(_, p)| *p).collect(),
            key: Vec::with_capacity(64),
            perf: ptr::null_mut(),
        }))
    }

    fn stats(&self) -> Vec<(String, i64)> {
        let mut out = Vec::new();
        if let Some(t) = &self.tombstones {
            out.push(("mongorocks.tombstone_compactions".to_string(), t.suggested.load(std::sync::atomic::Ordering::Relaxed)));
        }
        if let Some(poller) = self.throttle.lock().unwrap().as_ref() {
            out.extend(poller.state.stats());
        }
        for name in RocksLayout::INT_PROPERTIES {
            let cname = CString::new(*name).unwrap();
            let mut value = 0u64;
            if unsafe { rocksdb_property_int(self.db, cname.as_ptr(), &mut value) } == 0 {
                out.push((name.to_string(), value as i64));
            }
        }
        let text = if self.settings["statistics"] == true {
            unsafe { rocksdb_options_statistics_get_string(self.options) }
        } else {
            ptr::null_mut()
        };
        if !text.is_null() {
            let stats = unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned();
            unsafe { rocksdb_free(text as *mut c_void) };
            for line in stats.lines() {
                if let Some((name, rest)) = line.split_once(" COUNT : ") {
                    if RocksLayout::TICKERS.contains(&name) {
                        if let Some(v) = rest.split_whitespace().next().and_then(|v| v.parse().ok()) {
                            out.push((name.to_string(), v));
                        }
                    }
                }
            }
        }
        out
    }

    fn checkpoint(&self) -> Result<()> {
        let mut err: *mut c_char = ptr::null_mut();
        unsafe {
            let flush = rocksdb_flushoptions_create();
            rocksdb_flushoptions_set_wait(flush, 1);
            rocksdb_flush(self.db, flush, &mut err);
            rocksdb_flushoptions_destroy(flush);
        }
        take_error(err, "RocksDB flush")
    }

    fn close(&self) -> Result<()> {
        if let Some(mut poller) = self.throttle.lock().unwrap().take() {
            poller.stop();
        }
        if let Some((stop, handle)) = self.flusher.lock().unwrap().take() {
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            let _ = handle.join();
        }
        let mut closed = self.closed.lock().unwrap();
        if !*closed {
            *closed = true;
            unsafe {
                rocksdb_close(self.db);
                rocksdb_writeoptions_destroy(self.write_options);
                rocksdb_options_destroy(self.options);
                rocksdb_cache_destroy(self.cache);
            }
        }
        Ok(())
    }
}

struct RocksSession {
    engine: *const RocksDb,
    batch: *mut rocksdb_writebatch_wi_t,
    txn: Transaction,
    snapshot: *const rocksdb_snapshot_t,
    read: *mut rocksdb_readoptions_t,
    writing: bool,
    prefixes: Vec<[u8; 4]>,
    key: Vec<u8>,
    /// This thread's RocksDB perf context, once a scan watches the deletions it skips.
    perf: *mut c_void,
}

impl RocksSession {
    fn engine(&self) -> &RocksDb {
        unsafe { &*self.engine }
    }

    /// This thread's perf context, counting from now on (MongoRocks turned counting on for a
    /// thread at its first iterator step: PrefixStrippingIterator::startOp), where tombstone
    /// compactions are on; null otherwise.
    fn skip_counter(&mut self) -> *mut c_void {
        if self.engine().tombstones.is_some() && self.perf.is_null() {
            unsafe {
                rocksdb_set_perf_level(PERF_ENABLE_COUNT);
                self.perf = rocksdb_perfcontext_create();
            }
        }
        self.perf
    }

    fn prefix(&mut self, table: Table) -> [u8; 4] {
        if table.0 >= self.prefixes.len() {
            let known: Vec<[u8; 4]> = self.engine().prefixes.lock().unwrap().iter().map(|(_, p)| *p).collect();
            self.prefixes = known;
        }
        self.prefixes[table.0]
    }

    /// prefix + key, in the session's reusable buffer.
    fn full_key(&mut self, table: Table, key: &[u8]) -> *const c_char {
        let prefix = self.prefix(table);
        self.key.clear();
        self.key.extend_from_slice(&prefix);
        self.key.extend_from_slice(key);
        self.key.as_ptr() as *const c_char
    }

    /// Register a write of the key in the session's buffer (full_key); a refusal is a write
    /// conflict, raised before anything is written, as MongoRocks did.
    fn register_write(&mut self) -> Result<()> {
        let engine = unsafe { &*self.engine };
        if engine.conflicts.register_write(&mut self.txn, &self.key) {
            Ok(())
        } else {
            Err(Error::conflict("RocksDB write conflict: the key was written by another transaction"))
        }
    }

    /// Writes the key in the session's buffer (full_key), already registered, into the batch.
    fn batch_put(&mut self, value: &[u8]) {
        unsafe {
            rocksdb_writebatch_wi_put(self.batch, self.key.as_ptr() as *const c_char, self.key.len(),
                                      value.as_ptr() as *const c_char, value.len())
        };
    }

    fn has_writes(&self) -> bool {
        self.writing && unsafe { rocksdb_writebatch_wi_count(self.batch) } > 0
    }

    fn release_snapshot(&mut self) {
        if !self.snapshot.is_null() {
            unsafe { rocksdb_release_snapshot(self.engine().db, self.snapshot) };
            self.snapshot = ptr::null();
        }
    }

    /// Ends a write transaction: its batch emptied, its keys released.
    fn end_write(&mut self, committed: bool) {
        self.writing = false;
        unsafe { rocksdb_writebatch_wi_clear(self.batch) };
        let engine = unsafe { &*self.engine };
        if committed {
            engine.conflicts.commit(&mut self.txn);
        } else {
            engine.conflicts.abort(&mut self.txn);
        }
    }
}

impl Session for RocksSession {
    fn begin(&mut self, write: bool) -> Result<()> {
        let engine = unsafe { &*self.engine };
        if write {
            // The conflict snapshot id before the engine's snapshot (rocks_recovery_unit.cpp's
            // snapshot()): a commit in between is then a conflict, never a lost update.
            engine.conflicts.begin(&mut self.txn);
        }
        self.snapshot = unsafe { rocksdb_create_snapshot(engine.db) };
        unsafe { rocksdb_readoptions_set_snapshot(self.read, self.snapshot) };
        self.writing = write;
        Ok(())
    }

    fn commit(&mut self) -> Result<()> {
        if !self.writing {
            self.rollback();
            return Ok(());
        }
        let mut err: *mut c_char = ptr::null_mut();
        if self.has_writes() {
            let engine = self.engine();
            unsafe { rocksdb_write_writebatch_wi(engine.db, engine.write_options, self.batch, &mut err) };
        }
        let outcome = take_error(err, "RocksDB commit");
        self.end_write(outcome.is_ok());
        self.release_snapshot();
        outcome
    }

    fn rollback(&mut self) {
        if self.writing {
            self.end_write(false);
        }
        self.release_snapshot();
    }

    fn yield_snapshot(&mut self) -> Result<()> {
        if !self.writing {
            // MongoRocks' abandonSnapshot (_releaseSnapshot), then a snapshot for what follows.
            let engine = self.engine();
            let fresh = unsafe { rocksdb_create_snapshot(engine.db) };
            self.release_snapshot();
            self.snapshot = fresh;
            unsafe { rocksdb_readoptions_set_snapshot(self.read, self.snapshot) };
        }
        Ok(())
    }

    fn get(&mut self, table: Table, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        let k = self.full_key(table, key);
        let len = self.key.len();
        let mut err: *mut c_char = ptr::null_mut();
        if self.has_writes() {
            // Read your own writes: the batch first, then the snapshot (RocksRecoveryUnit::Get).
            let mut vlen = 0usize;
            let value = unsafe {
                rocksdb_writebatch_wi_get_from_batch_and_db(self.batch, self.engine().db, self.read, k, len, &mut vlen, &mut err)
            };
            take_error(err, "RocksDB get")?;
            if value.is_null() {
                return Ok(false);
            }
            unsafe {
                out.extend_from_slice(std::slice::from_raw_parts(value as *const u8, vlen));
                rocksdb_free(value as *mut c_void);
            }
            return Ok(true);
        }
        let pinned = unsafe { rocksdb_get_pinned(self.engine().db, self.read, k, len, &mut err) };
        take_error(err, "RocksDB get")?;
        if pinned.is_null() {
            return Ok(false);
        }
        unsafe {
            let mut vlen = 0usize;
            let data = rocksdb_pinnableslice_value(pinned, &mut vlen);
            out.extend_from_slice(std::slice::from_raw_parts(data as *const u8, vlen));
            rocksdb_pinnableslice_destroy(pinned);
        }
        Ok(true)
    }

    fn put(&mut self, table: Table, key: &[u8], value: &[u8]) -> Result<()> {
        self.full_key(table, key);
        self.register_write()?;
        self.batch_put(value);
        Ok(())
    }

    fn insert_new(&mut self, table: Table, key: &[u8], value: &[u8]) -> Result<bool> {
        // MongoRocks' unique index insert (rocks_index.cpp, RocksUniqueIndex::insert): register
        // the write, read the key, write it if absent (registered once: the tracker is a mutex).
        self.full_key(table, key);
        self.register_write()?;
        let mut scratch = Vec::new();
        if self.get(table, key, &mut scratch)? {
            return Ok(false);
        }
        self.batch_put(value); // get left the same full key in the buffer
        Ok(true)
    }

    fn delete(&mut self, table: Table, key: &[u8]) -> Result<()> {
        let k = self.full_key(table, key);
        self.register_write()?;
        unsafe { rocksdb_writebatch_wi_delete(self.batch, k, self.key.len()) };
        Ok(())
    }

    fn put_unregistered(&mut self, table: Table, key: &[u8], value: &[u8]) -> Result<()> {
        self.full_key(table, key);
        self.batch_put(value);
        Ok(())
    }

    fn delete_unregistered(&mut self, table: Table, key: &[u8]) -> Result<()> {
        let k = self.full_key(table, key);
        unsafe { rocksdb_writebatch_wi_delete(self.batch, k, self.key.len()) };
        Ok(())
    }

    fn suggest_compaction(&mut self, table: Table, high: &[u8]) -> Result<()> {
        let prefix = self.prefix(table);
        let limit = self.full_key(table, high);
        let mut err: *mut c_char = ptr::null_mut();
        unsafe {
            rocksdb_suggest_compact_range(self.engine().db, prefix.as_ptr() as *const c_char, prefix.len(), limit,
                                          self.key.len(), &mut err)
        };
        take_error(err, "RocksDB suggest_compact_range")
    }

    fn scan(&mut self, table: Table, low: &[u8], high: Option<&[u8]>, reverse: bool, visit: Visit) -> Result<()> {
        let prefix = self.prefix(table);
        let mut start = prefix.to_vec();
        start.extend_from_slice(low);
        // The table's end (the next prefix) and the range's end (prefix + high, or the table's).
        let table_end = (u32::from_be_bytes(prefix) + 1).to_be_bytes().to_vec();
        let end = match high {
            Some(h) => {
                let mut e = prefix.to_vec();
                e.extend_from_slice(h);
                e
            }
            None => table_end.clone(),
        };
        let mongorocks = self.engine().mongorocks_scans;
        // Each iterator step's skipped deletions, for MongoRocks' tombstone compactions.
        let perf = self.skip_counter();
        let skipped = || if perf.is_null() { 0 } else { unsafe { rocksdb_perfcontext_metric(perf, PERF_INTERNAL_DELETE_SKIPPED) } };
        let mut counted = skipped();
        let mut stepped = |engine: &RocksDb| {
            if !perf.is_null() {
                let now = skipped();
                engine.skipped_deletions_in(prefix, now.saturating_sub(counted));
                counted = now;
            }
        };
        // MongoRocks bounded every iterator at the table's end (RocksLayout::scans), so a step
        // past the range's last key walks on to the next live key; bounded scans stop at the range.
        let bound = if mongorocks { &table_end } else { &end };
        unsafe {
            rocksdb_readoptions_set_iterate_upper_bound(self.read, bound.as_ptr() as *const c_char, bound.len());
            let mut it = rocksdb_create_iterator(self.engine().db, self.read);
            if self.has_writes() {
                // The transaction's own writes over the snapshot (NewIteratorWithBase); the
                // batch side ignores the upper bound, so the loop below checks it.
                it = rocksdb_writebatch_wi_create_iterator_with_base(self.batch, it);
            }
            if !reverse {
                rocksdb_iter_seek(it, start.as_ptr() as *const c_char, start.len());
            } else if mongorocks {
                // rocks_index.cpp seekCursor: Seek to the range's end, then Prev; SeekToLast (of
                // the table: the upper bound) where Seek found nothing.
                rocksdb_iter_seek(it, end.as_ptr() as *const c_char, end.len());
                stepped(self.engine());
                if rocksdb_iter_valid(it) != 0 {
                    rocksdb_iter_prev(it);
                } else {
                    rocksdb_iter_seek_to_last(it);
                }
            } else {
                rocksdb_iter_seek_for_prev(it, end.as_ptr() as *const c_char, end.len());
            }
            stepped(self.engine());
            // The batch side of a transaction's iterator knows no bound: step back over its keys
            // at or past the range's end (another table's writes).
            while reverse && rocksdb_iter_valid(it) != 0 && slice(ptr::null(), it, true) >= end.as_slice() {
                rocksdb_iter_prev(it);
            }
            while rocksdb_iter_valid(it) != 0 {
                let key = slice(ptr::null(), it, true);
                if (!reverse && key >= end.as_slice()) || (reverse && key < start.as_slice()) {
                    break;
                }
                if !visit(&key[4..], slice(ptr::null(), it, false)) {
                    break;
                }
                if reverse { rocksdb_iter_prev(it) } else { rocksdb_iter_next(it) }
                stepped(self.engine());
            }
            let mut err: *mut c_char = ptr::null_mut();
            rocksdb_iter_get_error(it, &mut err);
            rocksdb_iter_destroy(it);
            rocksdb_readoptions_set_iterate_upper_bound(self.read, ptr::null(), 0);
            take_error(err, "RocksDB scan")
        }
    }
}

impl Drop for RocksSession {
    fn drop(&mut self) {
        self.rollback();
        unsafe {
            rocksdb_writebatch_wi_destroy(self.batch);
            rocksdb_readoptions_destroy(self.read);
            if !self.perf.is_null() {
                rocksdb_perfcontext_destroy(self.perf);
            }
        }
    }
}

/// This engine in the runner's registry (engines/mod.rs, written by build.rs).
pub const ENTRY: super::EngineEntry = super::EngineEntry {
    name: "rocksdb",
    open: |dir, options| Ok(std::sync::Arc::new(RocksDb::open(dir, options)?)),
    releases: || vec![env!("EB_ROCKSDB_VERSION").to_string()],
    mmap_stand_in: false,
};
