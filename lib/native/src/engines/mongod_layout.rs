//! How mongod and MongoRocks configured their engines in the posts' era, as settings the engine
//! adapters apply. Every value names the source it is read from (mongodb/mongo at r3.0.7 and
//! r3.2.0, mongodb-partners/mongo-rocks at r3.2.0; paths under src/mongo/db/storage/ for mongo).
//! The README's "What runs natively" section lists the same table for readers.
use serde_json::{json, Value};

/// mongod 3.2's journal flusher (wiredtiger/wiredtiger_kv_engine.cpp, WiredTigerJournalFlusher):
/// `log_flush("sync=on")` every journalCommitIntervalMs, which is 100 when unset. (3.0.7 had no
/// such thread.)
pub const JOURNAL_COMMIT_MS: i64 = 100;

/// A WiredTiger tree as one of the posts' MongoDB releases shipped it (tools/wiredtiger.sources),
/// opened the way that release's mongod opened it: its wiredtiger_open string, its record store's
/// create string and its journal flushing, read from mongod's source at the tag
/// (src/mongo/db/storage/wiredtiger/ at r3.0.4, r3.0.7, r3.1.5 and r3.2.0-rc0/rc1).
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum MongodTree {
    /// mongodb-3.0.4 (WiredTiger 2.5.3): seed 001's "MongoDB 3.0.x".
    R304,
    /// 2.6.1, standing for mongod 3.1.5's snapshot of 2.6 (seed 001's "MongoDB 3.1.5").
    R315,
    /// mongodb-3.0.7 (2.5.3): seed 000's `307` systems.
    R307,
    /// mongodb-3.2.0-rc1 (2.6.2): seed 000's `320` systems (MongoDB 3.2.0rc0; rc0 and rc1 open
    /// WiredTiger alike).
    R320,
}

impl MongodTree {
    pub fn of(release: &str) -> Option<Self> {
        match release {
            "mongodb-3.0.4" => Some(Self::R304),
            "2.6.1" => Some(Self::R315),
            "mongodb-3.0.7" => Some(Self::R307),
            "mongodb-3.2.0-rc1" => Some(Self::R320),
            _ => None,
        }
    }

    /// The journal flusher's period: 3.2.0-rc0 brought WiredTigerJournalFlusher (every 100 ms);
    /// 3.0.x and 3.1.5 had none (the log reached disk when its buffers filled, at a checkpoint,
    /// or when a j:true write synced it).
    pub fn journal_commit_ms(self) -> i64 {
        if self == Self::R320 { JOURNAL_COMMIT_MS } else { 0 }
    }

    /// `config_base=false` came with 3.2.0-rc0 (wiredtiger_kv_engine.cpp).
    fn config_base(self) -> bool {
        self == Self::R320
    }

    /// With journaling off, 3.0.7 and 3.2.0-rc appended `log=(enabled=false)`; 3.0.4 and 3.1.5
    /// passed no log= at all (WiredTiger's default is off).
    fn says_log_off(self) -> bool {
        matches!(self, Self::R307 | Self::R320)
    }

    /// WiredTigerRecordStore::generateCreateString: `leaf_value_max=1MB` at r3.0.4, 64MB from r3.0.5.
    fn leaf_value_max(self) -> &'static str {
        if self == Self::R304 { "1MB" } else { "64MB" }
    }
}

/// The oplog's record table: mongod journals it even where its user tables are not journaled
/// (WiredTigerUtil::useTableLogging), so an engine adapter tells it apart by this name.
pub const OPLOG_TABLE: &str = "collection-oplog.rs";

pub struct WiredTigerLayout {
    pub release: String,
    pub cache_mb: i64,
    pub compressor: String,
    pub journal: bool,
    /// storage.wiredTiger.engineConfig.journalCompressor (mongod's default: snappy; the LinkBench
    /// and sysbench posts ran none).
    pub journal_compressor: String,
    pub checkpoint_s: i64,
    /// checkpoint=(log_size=...): 3.0/3.2 also checkpointed after 2 GB of journal; 3.6 and later
    /// pass no such trigger (0 here).
    pub checkpoint_log_size_mb: i64,
    /// session_max (3.x: 20000; 8.0: 33000).
    pub session_max: i64,
    /// eviction=(threads_min, threads_max) (3.x: 1 (WiredTiger's default), 4; 8.0: 4, 4).
    pub eviction_threads: (i64, i64),
    /// eviction_dirty_target / eviction_dirty_trigger in percent of the cache; None leaves the
    /// release's default (2.7.0, in 3.2.0: 80 / 95; 2.9.0 and later: 5 / 20).
    pub eviction_dirty: (Option<i64>, Option<i64>),
    /// file_manager=(close_idle_time) in seconds (3.x: 100000; 8.0: 600).
    pub close_idle_time_s: i64,
    /// MongoDB 8.0 does not journal a replica set's user tables (log=(enabled=false); the oplog
    /// keeps them durable); 3.x journaled every table.
    pub unlogged_user_tables: bool,
    pub lsm: bool,
    pub prefix_compression: bool,
    /// LSM tables: the in-memory chunk size (WiredTiger's default is 10 MB, which mongod kept).
    pub lsm_chunk_mb: i64,
    /// Compressor extension libraries to load (releases that build compressors as extensions).
    pub extensions: Vec<String>,
}

impl WiredTigerLayout {
    fn major(&self) -> u32 {
        if MongodTree::of(&self.release).is_some() {
            return 2;   // every tagged tree is a 2.x WiredTiger
        }
        self.release.split('.').next().and_then(|m| m.parse().ok()).unwrap_or(0)
    }

    fn tree(&self) -> Option<MongodTree> {
        MongodTree::of(&self.release)
    }

    /// A tagged tree runs with what its mongod passed and nothing else: mongod 3.0/3.2 set no
    /// eviction threads_min and no dirty targets, so a value other than the tree's own would be a
    /// setting no post ran. Checked before anything opens.
    pub fn check_tree_settings(&self) -> Result<(), String> {
        if self.tree().is_none() {
            return Ok(());
        }
        if self.eviction_threads.0 != 1 {
            return Err(format!("wiredtiger: option eviction_threads_min is {} but WiredTiger as {} shipped \
                                it (version {}) runs as its mongod opened it, with the tree's default 1 \
                                (mongod set only threads_max)", self.eviction_threads.0, self.release, self.release));
        }
        if self.eviction_dirty != (None, None) {
            return Err(format!("wiredtiger: options eviction_dirty_target/eviction_dirty_trigger must be unset \
                                (null) for version {}: its mongod set neither (the tree's defaults, 80/95, apply)",
                               self.release));
        }
        Ok(())
    }

    /// wiredtiger/wiredtiger_kv_engine.cpp, the WiredTigerKVEngine constructor at r3.2.0:
    /// create,cache_size=..,session_max=20000,eviction=(threads_max=4),config_base=false,
    /// statistics=(fast),log=(enabled=true,archive=true,path=journal,compressor=snappy),
    /// file_manager=(close_idle_time=100000),checkpoint=(wait=<syncdelay>,log_size=2GB),
    /// statistics_log=(wait=0); transaction_sync is left at WiredTiger's default (off).
    /// WiredTiger 10 renamed the log's `archive` to `remove`; the meaning is the same.
    ///
    /// A tagged tree (MongodTree) gets its own release's string: no threads_min, no dirty targets,
    /// config_base only from 3.2.0-rc0, and no log= at all with journaling off at 3.0.4 / 3.1.5.
    pub fn connection_config(&self) -> String {
        let remove = if self.major() >= 10 { "remove" } else { "archive" };
        let tree = self.tree();
        let log = if self.journal {
            format!("log=(enabled=true,{remove}=true,path=journal,compressor={}),", self.journal_compressor)
        } else if tree.map_or(true, |t| t.says_log_off()) {
            "log=(enabled=false),".to_string()
        } else {
            String::new()
        };
        let log_size = if self.checkpoint_log_size_mb > 0 { format!(",log_size={}MB", self.checkpoint_log_size_mb) } else { String::new() };
        let mut dirty = String::new();
        if let Some(target) = self.eviction_dirty.0 {
            dirty.push_str(&format!("eviction_dirty_target={target},"));
        }
        if let Some(trigger) = self.eviction_dirty.1 {
            dirty.push_str(&format!("eviction_dirty_trigger={trigger},"));
        }
        let eviction = match tree {
            Some(_) => format!("eviction=(threads_max={})", self.eviction_threads.1),
            None => format!("eviction=(threads_min={},threads_max={})", self.eviction_threads.0, self.eviction_threads.1),
        };
        let config_base = if tree.map_or(true, |t| t.config_base()) { "config_base=false," } else { "" };
        let mut config = format!(
            "create,cache_size={}M,session_max={},{eviction},{dirty}{config_base}\
             statistics=(fast),{log}file_manager=(close_idle_time={}),checkpoint=(wait={}{log_size}),statistics_log=(wait=0)",
            self.cache_mb, self.session_max, self.close_idle_time_s, self.checkpoint_s);
        if !self.extensions.is_empty() {
            config.push_str(&format!(",extensions=[{}]", self.extensions.join(",")));
        }
        config
    }

    fn table_type(&self) -> String {
        if self.lsm { format!("lsm,lsm=(chunk_size={}MB)", self.lsm_chunk_mb) } else { "file".into() }
    }

    /// The LSM chunk size for a cache: WiredTiger's 10 MB, scaled down with a small cache so the
    /// in-memory chunks of a system's tables fit in it at once (a 32 MB cache holding several
    /// 10 MB chunks left eviction unable to make room, and every thread waited on it).
    pub fn default_lsm_chunk_mb(cache_mb: i64) -> i64 {
        (cache_mb / 8).clamp(1, 10)
    }

    /// The catalog's table: never LSM (it holds a few rows rewritten in place).
    pub fn metadata_table_config(&self) -> String {
        "type=file,key_format=u,value_format=u".into()
    }

    /// wiredtiger/wiredtiger_record_store.cpp, WiredTigerRecordStore::generateCreateString
    /// (identical at r3.0.7 and r3.2.0): page sizes left at WiredTiger's defaults, snappy
    /// block compression (collectionConfig.blockCompressor), records keyed by a 64-bit record id.
    /// LSM tables are what `--wiredTigerCollectionConfigString=type=lsm` asked for.
    pub fn record_table_config(&self) -> String {
        format!("type={},memory_page_max=10m,split_pct=90,leaf_value_max={},checksum=on,block_compressor={},\
                 key_format=q,value_format=u{}", self.table_type(), self.leaf_value_max(), self.block_compressor(),
                self.table_log())
    }

    /// The oplog's table: a b-tree file whatever the collections' type, as mongod forced it
    /// after every user setting ("force file for oplog": `type=file,memory_page_max=10m` appended
    /// in WiredTigerRecordStore::generateCreateString, r3.0.7 and r3.2.0), so an LSM system's
    /// oplog is never an LSM tree; and journaled whatever the user tables' setting.
    pub fn oplog_table_config(&self) -> String {
        format!("type=file,memory_page_max=10m,split_pct=90,leaf_value_max={},checksum=on,block_compressor={},\
                 key_format=q,value_format=u", self.leaf_value_max(), self.block_compressor())
    }

    /// A user table's journaling: MongoDB 8.0 leaves a replica set's user tables out of the
    /// journal (WiredTigerUtil::useTableLogging); the oplog's table keeps it (oplog_table_config).
    fn table_log(&self) -> &str {
        if self.unlogged_user_tables { ",log=(enabled=false)" } else { "" }
    }

    /// wiredtiger/wiredtiger_index.cpp, WiredTigerIndex::generateCreateString (identical at
    /// r3.0.7 and r3.2.0): 16 KB pages, prefix compression on (indexConfig.prefixCompression
    /// defaults to true), and no block compression (indexBlockCompressor is never assigned, so
    /// the string reads `block_compressor=,`).
    pub fn index_table_config(&self) -> String {
        let prefix = if self.prefix_compression { "prefix_compression=true," } else { "prefix_compression=false," };
        format!("type={},internal_page_max=16k,leaf_page_max=16k,checksum=on,{prefix}block_compressor=,\
                 key_format=u,value_format=u{}", self.table_type(), self.table_log())
    }

    fn leaf_value_max(&self) -> &'static str {
        self.tree().map_or("64MB", |t| t.leaf_value_max())
    }

    fn block_compressor(&self) -> &str {
        if self.compressor == "none" { "" } else { &self.compressor }
    }
}

/// WiredTiger counters sampled per interval: what serverStatus.wiredTiger shows for cache
/// behaviour and write amplification. Several were renamed over the releases (WT-11171 moved
/// the checkpoint counters into a `checkpoint` section); every spelling is listed, and a
/// release reports the ones it has.
/// The statistics that mark WiredTiger's checkpoints (Engine::checkpoint_marks), in both
/// spellings: the generation is bumped as a checkpoint begins (txn_ckpt.c __txn_checkpoint at
/// mongodb-3.2.0-rc1 and 11.3.1), the total time grows as one ends.
pub const CHECKPOINT_STARTED: &[&str] = &["transaction: transaction checkpoint generation", "checkpoint: generation"];
pub const CHECKPOINT_FINISHED_MS: &[&str] =
    &["transaction: transaction checkpoint total time (msecs)", "checkpoint: total time (msecs)"];

pub fn wiredtiger_stat_wanted(desc: &str) -> bool {
    const WANTED: &[&str] = &[
        "cache: bytes read into cache",
        "cache: bytes written from cache",
        "cache: pages read into cache",
        "cache: pages written from cache",
        "cache: bytes currently in the cache",
        "cache: maximum bytes configured",
        "cache: pages evicted by application threads",
        "cache: unmodified pages evicted",
        "cache: modified pages evicted",
        "transaction: transaction checkpoints",
        "transaction: transaction checkpoint total time (msecs)",
        "checkpoint: number of checkpoints started",
        "checkpoint: number of checkpoints started by api",
        "checkpoint: total time (msecs)",
        "transaction: transactions rolled back",
        "transaction: transactions committed",
        "log: log bytes written",
        "log: log sync operations",
        "block-manager: bytes read",
        "block-manager: bytes written",
    ];
    WANTED.contains(&desc)
}

/// MongoRocks' RocksDB options: RocksEngine::_options() (mongo-rocks r3.2.0 src/rocks_engine.cpp;
/// the r3.0.7 in-tree rocks/rocks_engine.cpp sets the same, without optimize_filters_for_hits).
pub struct RocksLayout {
    pub cache_mb: i64,
    pub compression: String,
    /// write_buffer_size = 64 MB, max_write_buffer_number = 4
    pub write_buffer_mb: i64,
    pub max_write_buffers: i64,
    /// max_background_compactions = 8, max_background_flushes = 2
    pub max_background_compactions: i64,
    pub max_background_flushes: i64,
    /// block_size = 16 KB, NewBloomFilterPolicy(10, false), format_version = 2
    pub block_size_kb: i64,
    pub bloom_bits: i64,
    pub format_version: i32,
    /// level0_slowdown_writes_trigger = 8
    pub level0_slowdown_writes_trigger: i32,
    /// target_file_size_base = 64 MB, max_bytes_for_level_base = 512 MB,
    /// level_compaction_dynamic_level_bytes = true, optimize_filters_for_hits = true (r3.2.0)
    pub target_file_size_mb: u64,
    pub max_bytes_for_level_base_mb: u64,
    pub dynamic_level_bytes: bool,
    pub optimize_filters_for_hits: bool,
    /// compression_per_level = {none, none, <rocksdbCompression>}: levels 0 and 1 uncompressed,
    /// every deeper level compressed (RocksDB repeats the last entry).
    pub compression_levels: usize,
    pub uncompressed_levels: usize,
    /// mongo-rocks r3.2.0 has no periodic WAL sync (only j:true writes sync it), so none here.
    pub journal_commit_ms: i64,
    /// RocksDB's statistics (its tickers: block cache hits, bytes written, stalls): off, as
    /// MongoRocks r3.2.0 left options.statistics unset (they cost every read a few timers).
    pub statistics: bool,
    /// storage.rocksdb.maxWriteMBPerSec: NewGenericRateLimiter(1024 MB/s), always set.
    pub rate_limit_mb: i64,
    /// storage.rocksdb.configString, applied last (empty in the posts' configurations).
    pub config_string: String,
    /// How a scan meets RocksDB. "mongorocks" (r3.2.0): the iterator's upper bound is the end of
    /// the whole collection or index (rocks_recovery_unit.cpp NewIterator and
    /// PrefixStrippingIterator: rocksGetNextPrefix), the range's own end checked after each step
    /// (rocks_index.cpp updatePosition), so the last step walks over whatever lies between the
    /// range and the next live key, tombstones included; a reverse scan positions with Seek, then
    /// Prev, or SeekToLast where Seek found nothing (rocks_index.cpp seekCursor; RocksDB 4.x had
    /// no SeekForPrev). "bounded": the upper bound at the range's end and SeekForPrev, as
    /// today's RocksDB allows.
    pub scans: String,
    /// The record store reads a record before rewriting or deleting it (RocksRecordStore::
    /// updateRecord and deleteRecord at r3.2.0: registerWrite, then Get, for the data-size counter).
    pub reads_before_write: bool,
    /// MongoRocks' tombstone compactions (rocks_compaction_scheduler.h/.cpp at r3.2.0): when one
    /// iterator step skipped this many deletions or more (the perf context's
    /// internal_delete_skipped_count; 50,000 there), SuggestCompactRange over that collection or
    /// index, at most once per interval for the whole engine and none in the first interval after
    /// it opened (600 s there); never for the oplog. 0: none (RocksDB's own compactions only).
    pub tombstone_compaction_skips: i64,
    pub tombstone_compaction_interval_s: i64,
    /// soft_rate_limit = 2.5 (r3.2.0): writes delayed while a level below L0 holds more than 2.5
    /// times its target (RocksDB 4.x); RocksDB 7.8 has no such option, so the runner keeps the
    /// rule (engines/rocks_throttle.rs). 0: none.
    pub soft_rate_limit: f64,
}

impl Default for RocksLayout {
    fn default() -> Self {
        RocksLayout {
            cache_mb: 256,
            compression: "snappy".into(),
            write_buffer_mb: 64,
            max_write_buffers: 4,
            max_background_compactions: 8,
            max_background_flushes: 2,
            block_size_kb: 16,
            bloom_bits: 10,
            format_version: 2,
            level0_slowdown_writes_trigger: 8,
            target_file_size_mb: 64,
            max_bytes_for_level_base_mb: 512,
            dynamic_level_bytes: true,
            optimize_filters_for_hits: true,
            compression_levels: 3,
            uncompressed_levels: 2,
            journal_commit_ms: 0,
            statistics: false,
            rate_limit_mb: 1024,
            config_string: String::new(),
            scans: "mongorocks".into(),
            reads_before_write: true,
            tombstone_compaction_skips: 50_000,
            tombstone_compaction_interval_s: 600,
            soft_rate_limit: 2.5,
        }
    }
}

impl RocksLayout {
    pub const INT_PROPERTIES: &'static [&'static str] = &[
        "rocksdb.block-cache-usage", "rocksdb.total-sst-files-size", "rocksdb.estimate-pending-compaction-bytes",
        "rocksdb.num-running-compactions", "rocksdb.cur-size-all-mem-tables", "rocksdb.num-live-versions",
        "rocksdb.num-immutable-mem-table", "rocksdb.actual-delayed-write-rate", "rocksdb.is-write-stopped",
        "rocksdb.estimate-num-keys", "rocksdb.num-running-flushes",
    ];
    pub const TICKERS: &'static [&'static str] = &[
        "rocksdb.block.cache.miss", "rocksdb.block.cache.hit", "rocksdb.bytes.written", "rocksdb.compact.read.bytes",
        "rocksdb.compact.write.bytes", "rocksdb.flush.write.bytes", "rocksdb.stall.micros", "rocksdb.wal.bytes",
        "rocksdb.bloom.filter.useful", "rocksdb.number.keys.read", "rocksdb.number.db.seek",
    ];

    pub fn describe(&self, levels: &[i32]) -> Value {
        json!({
            "release": env!("EB_ROCKSDB_VERSION"), "build": env!("EB_ROCKSDB_BUILD_INFO"), "cache_size_mb": self.cache_mb, "compression": self.compression,
            "compression_per_level": levels, "write_buffer_mb": self.write_buffer_mb,
            "max_write_buffers": self.max_write_buffers, "max_background_compactions": self.max_background_compactions,
            "max_background_flushes": self.max_background_flushes, "block_size_kb": self.block_size_kb,
            "bloom_bits_per_key": self.bloom_bits, "format_version": self.format_version,
            "level0_slowdown_writes_trigger": self.level0_slowdown_writes_trigger,
            "target_file_size_mb": self.target_file_size_mb, "max_bytes_for_level_base_mb": self.max_bytes_for_level_base_mb,
            "level_compaction_dynamic_level_bytes": self.dynamic_level_bytes,
            "optimize_filters_for_hits": self.optimize_filters_for_hits, "wal": true, "wal_sync": false,
            "statistics": self.statistics, "rate_limit_mb": self.rate_limit_mb, "config_string": self.config_string,
            "scans": self.scans, "read_before_write": self.reads_before_write,
            "tombstone_compaction_skips": self.tombstone_compaction_skips,
            "tombstone_compaction_interval_s": self.tombstone_compaction_interval_s,
            "soft_rate_limit": self.soft_rate_limit,
            "transactions": "plain DB, snapshot per transaction, writes in a WriteBatchWithIndex applied at commit, write conflicts tracked as MongoRocks' RocksTransactionEngine did",
            "layout": "one key space, 4-byte big-endian prefix per collection and index (MongoRocks)",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(release: &str, journal: bool) -> WiredTigerLayout {
        WiredTigerLayout {
            release: release.into(), cache_mb: 1024, compressor: "snappy".into(), journal,
            journal_compressor: "snappy".into(), checkpoint_s: 60, checkpoint_log_size_mb: 2048, session_max: 20000,
            eviction_threads: (1, 4), eviction_dirty: (None, None), close_idle_time_s: 100000,
            unlogged_user_tables: false, lsm: false, prefix_compression: true, lsm_chunk_mb: 10, extensions: vec![],
        }
    }

    // The strings each tag's WiredTigerKVEngine constructor built (src/mongo/db/storage/wiredtiger/
    // wiredtiger_kv_engine.cpp at r3.0.4 and r3.2.0-rc1), with this layout's values.
    #[test]
    fn a_tagged_tree_gets_its_own_mongods_open_string() {
        assert_eq!(layout("mongodb-3.0.4", true).connection_config(),
                   "create,cache_size=1024M,session_max=20000,eviction=(threads_max=4),statistics=(fast),\
                    log=(enabled=true,archive=true,path=journal,compressor=snappy),\
                    file_manager=(close_idle_time=100000),checkpoint=(wait=60,log_size=2048MB),statistics_log=(wait=0)");
        assert_eq!(layout("mongodb-3.2.0-rc1", true).connection_config(),
                   "create,cache_size=1024M,session_max=20000,eviction=(threads_max=4),config_base=false,statistics=(fast),\
                    log=(enabled=true,archive=true,path=journal,compressor=snappy),\
                    file_manager=(close_idle_time=100000),checkpoint=(wait=60,log_size=2048MB),statistics_log=(wait=0)");
        assert!(!layout("mongodb-3.0.4", false).connection_config().contains(",log="));
        assert!(layout("mongodb-3.0.7", false).connection_config().contains("log=(enabled=false)"));
        assert!(layout("mongodb-3.0.4", true).record_table_config().contains("leaf_value_max=1MB"));
        assert!(layout("mongodb-3.0.7", true).record_table_config().contains("leaf_value_max=64MB"));
    }

    #[test]
    fn only_3_2_had_a_journal_flusher() {
        assert_eq!(MongodTree::of("mongodb-3.0.4").unwrap().journal_commit_ms(), 0);
        assert_eq!(MongodTree::of("2.6.1").unwrap().journal_commit_ms(), 0);
        assert_eq!(MongodTree::of("mongodb-3.0.7").unwrap().journal_commit_ms(), 0);
        assert_eq!(MongodTree::of("mongodb-3.2.0-rc1").unwrap().journal_commit_ms(), JOURNAL_COMMIT_MS);
        assert!(MongodTree::of("11.3.1").is_none());
    }

    #[test]
    fn a_tagged_tree_refuses_settings_its_mongod_never_passed() {
        let mut l = layout("mongodb-3.0.7", true);
        l.eviction_dirty = (Some(80), None);
        assert!(l.check_tree_settings().unwrap_err().contains("eviction_dirty_target"));
        let mut l = layout("2.6.1", true);
        l.eviction_threads = (4, 4);
        assert!(l.check_tree_settings().unwrap_err().contains("eviction_threads_min"));
        let mut today = layout("11.3.1", true);
        today.eviction_threads = (4, 4);
        assert!(today.check_tree_settings().is_ok());
    }
}
