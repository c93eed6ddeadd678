/*
 * The fractal tree (PerconaFT) as the native runner calls it: a flat C API over one release's
 * BDB-style interface (db.h, generated per release), compiled once per release by build.rs and
 * loaded at run time (src/engines/fractal.rs), as the WiredTiger shim is. Every function is a
 * thin wrapper: the calls, flags and their order are the caller's, who takes them from the
 * server it reproduces (TokuMX's storage/ code, TokuMXse's tokuft engine).
 *
 * Two pieces of a server live here because the engine calls them itself, on its own threads:
 *  - eb_ft_tokumx_compare, TokuMX's key comparator (storage/env.cpp dbt_key_compare at 1.0.4 and
 *    tokumx-2.0.1): KeyV1 value by value in the index's order, read from the dictionary's
 *    descriptor, then the primary keys appended to secondary keys, as BSON (key.cpp, key.h);
 *  - the update callback (env->set_update), which hands each update message to the handler the
 *    runner registered (the TokuMX layout applies its modifiers; TokuMXse's applies byte
 *    ranges).
 *
 * Release differences are compile-time switches set by build.rs from the release's db.h:
 * EB_FT_LOCK_TIMEOUT_CALLBACK (set_lock_timeout takes a callback, 2.x), EB_FT_FANOUT and
 * EB_FT_MEMCMP_MAGIC (per-dictionary fanout and memcmp magic, 2.x), EB_FT_COMPRESS_BUFFERS
 * (db_env_set_compress_buffers_before_eviction, 2.x), EB_FT_DBT_ARRAY (put_multiple and
 * del_multiple take DBT arrays, 2.x).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <db.h>

/* Two of the engine's own functions its status rows need: the partitioned counters' sum (C),
 * and the conversion of its cycle-counter times to seconds (C++, declared by its mangled name). */
uint64_t read_partitioned_counter(struct partitioned_counter *);
double eb_tokutime_to_seconds(uint64_t) __asm__("_Z19tokutime_to_secondsm");

/* ------------------------------------------------------------------------------------------ */
/* Errors and constants                                                                        */

/* The engine's last error message (set_errcall), for the runner's error text. */
static __thread char last_error[1024];
static char env_error[1024];

static void on_error(const DB_ENV *env, const char *prefix, const char *message) {
    (void)env;
    snprintf(env_error, sizeof env_error, "%s: %s", prefix ? prefix : "PerconaFT", message);
    fprintf(stderr, "%s\n", env_error);
}

const char *eb_ft_last_error(void) {
    return last_error[0] ? last_error : env_error;
}

const char *eb_ft_strerror(int code) {
    return db_strerror(code);
}

const char *eb_ft_version(int *major, int *minor, int *patch) {
    return db_version(major, minor, patch);
}

/* A constant of db.h by name (the runner reads them once when it loads the shim). */
long eb_ft_const(const char *name) {
#define C(n) if (strcmp(name, #n) == 0) return (long)(n);
    C(DB_NOTFOUND) C(DB_KEYEXIST) C(DB_LOCK_NOTGRANTED) C(DB_LOCK_DEADLOCK) C(TOKUDB_OUT_OF_LOCKS)
    C(TOKUDB_HUGE_PAGES_ENABLED) C(TOKUDB_CURSOR_CONTINUE)
    C(DB_SERIALIZABLE) C(DB_TXN_SNAPSHOT) C(DB_TXN_READ_ONLY) C(DB_INHERIT_ISOLATION) C(DB_TXN_NOSYNC)
    C(DB_READ_UNCOMMITTED) C(DB_RMW) C(DB_PRELOCKED) C(DB_PRELOCKED_WRITE) C(DB_NOOVERWRITE)
    C(DB_DELETE_ANY) C(DBC_DISABLE_PREFETCHING)
    C(TOKU_NO_COMPRESSION) C(TOKU_QUICKLZ_METHOD) C(TOKU_LZMA_METHOD) C(TOKU_ZLIB_WITHOUT_CHECKSUM_METHOD)
#undef C
    return -1;
}

static DBT dbt(const void *data, size_t size) {
    DBT d;
    memset(&d, 0, sizeof d);
    d.data = (void *)data;
    d.size = (uint32_t)size;
    return d;
}

/* ------------------------------------------------------------------------------------------ */
/* TokuMX's comparator                                                                         */

enum { cminkey = 1, cnull = 2, cdouble = 4, cstring = 6, cbindata = 7, coid = 8, cfalse = 10, ctrue = 11,
       cdate = 12, cmaxkey = 14, cint64 = 0x34, chasmore = 0x40, cisbson = 0xff };
static const int bindata_length[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 24, 32};

static double le_double(const unsigned char *p) { double d; memcpy(&d, p, 8); return d; }
static int64_t le_int64(const unsigned char *p) { int64_t v; memcpy(&v, p, 8); return v; }
static int32_t le_int32(const unsigned char *p) { int32_t v; memcpy(&v, p, 4); return v; }

/* BSON's canonical type order (mongo's canonicalizeBSONType) for the types keys hold. */
static int bson_canonical(int type) {
    switch (type) {
    case 0xff: return -1;                          /* MinKey */
    case 0x0a: case 0x06: return 5;                /* null, undefined */
    case 0x01: case 0x10: case 0x12: return 10;    /* double, int32, int64 */
    case 0x02: case 0x0e: return 15;               /* string, symbol */
    case 0x03: return 20;                          /* object */
    case 0x04: return 25;                          /* array */
    case 0x05: return 30;                          /* binary */
    case 0x07: return 35;                          /* ObjectId */
    case 0x08: return 40;                          /* bool */
    case 0x09: return 45;                          /* date */
    case 0x11: return 47;                          /* timestamp */
    case 0x7f: return 127;                         /* MaxKey */
    default: return 100 + type;
    }
}

static double bson_number(int type, const unsigned char *v) {
    return type == 0x01 ? le_double(v) : type == 0x10 ? (double)le_int32(v) : (double)le_int64(v);
}

/* The size of a BSON element's value. */
static size_t bson_value_size(int type, const unsigned char *v) {
    switch (type) {
    case 0x01: case 0x09: case 0x11: case 0x12: return 8;
    case 0x10: return 4;
    case 0x02: case 0x0e: return 4 + (size_t)le_int32(v);
    case 0x03: case 0x04: return (size_t)le_int32(v);
    case 0x05: return 5 + (size_t)le_int32(v);
    case 0x07: return 12;
    case 0x08: return 1;
    default: return 0;
    }
}

/* Two BSON objects compared element by element, as BSONObj::woCompare does for the keys TokuMX
 * stores: canonical type, then value (numbers by value); field names are not compared. Bits of
 * `descending` negate a field's result. */
static int bson_compare(const unsigned char *l, const unsigned char *r, uint32_t descending) {
    const unsigned char *lend = l + le_int32(l) - 1, *rend = r + le_int32(r) - 1;
    l += 4; r += 4;
    for (uint32_t mask = 1;; mask <<= 1) {
        if (l >= lend || r >= rend)
            return (l < lend) - (r < rend);
        int lt = *l++, rt = *r++;
        l += strlen((const char *)l) + 1;
        r += strlen((const char *)r) + 1;
        int c = bson_canonical(lt) - bson_canonical(rt);
        if (c == 0) {
            switch (bson_canonical(lt)) {
            case 10: {
                double a = bson_number(lt, l), b = bson_number(rt, r);
                c = (a > b) - (a < b);
                break;
            }
            case 15: {
                int32_t la = le_int32(l) - 1, lb = le_int32(r) - 1;
                c = memcmp(l + 4, r + 4, (size_t)(la < lb ? la : lb));
                if (c == 0) c = la - lb;
                break;
            }
            case 30: {
                int32_t la = le_int32(l), lb = le_int32(r);
                c = la != lb ? la - lb : l[4] != r[4] ? l[4] - r[4] : memcmp(l + 5, r + 5, (size_t)la);
                break;
            }
            case 35: c = memcmp(l, r, 12); break;
            case 40: c = l[0] - r[0]; break;
            case 45: { int64_t a = le_int64(l), b = le_int64(r); c = (a > b) - (a < b); break; }
            case -1: case 5: case 127: c = 0; break;
            default: {
                size_t la = bson_value_size(lt, l), lb = bson_value_size(rt, r);
                c = memcmp(l, r, la < lb ? la : lb);
                if (c == 0) c = (la > lb) - (la < lb);
            }
            }
        }
        if (c != 0)
            return (descending & mask) ? -c : c;
        l += bson_value_size(lt, l);
        r += bson_value_size(rt, r);
    }
}

/* The length of a KeyV1 (KeyV1::dataSize). */
static size_t keyv1_size(const unsigned char *k) {
    if (*k == cisbson)
        return 1 + (size_t)le_int32(k + 1);
    const unsigned char *p = k;
    for (;;) {
        int b = *p++;
        switch (b & 0x0f) {
        case cdouble: case cdate: p += 8; break;
        case coid: p += 12; break;
        case cstring: p += 1 + *p; break;
        case cbindata: p += 1 + bindata_length[*p >> 4]; break;
        default: break;
        }
        if (!(b & chasmore))
            return (size_t)(p - k);
    }
}

/* One value of each key (KeyV1's static compare in key.cpp), advancing both. */
static int keyv1_value(const unsigned char **lp, const unsigned char **rp) {
    const unsigned char *l = *lp, *r = *rp;
    int c = (*l & 0x0f) - (*r & 0x0f);
    if (c)
        return c;
    int lt = *l++, rt = *r++;
    switch (lt & 0x0f) {
    case cdouble: {
        /* 2.x keeps a long a double cannot hold as itself (cint64). */
        if ((lt & 0x3f) == cint64 || (rt & 0x3f) == cint64) {
            if ((lt & 0x3f) == cint64 && (rt & 0x3f) == cint64) {
                int64_t a = le_int64(l), b = le_int64(r);
                c = (a > b) - (a < b);
            } else {
                double a = (lt & 0x3f) == cint64 ? (double)le_int64(l) : le_double(l);
                double b = (rt & 0x3f) == cint64 ? (double)le_int64(r) : le_double(r);
                c = (a > b) - (a < b);
            }
        } else {
            double a = le_double(l), b = le_double(r);
            c = a < b ? -1 : a != b ? 1 : 0;
        }
        l += 8; r += 8;
        break;
    }
    case cstring: {
        int ls = *l++, rs = *r++;
        c = memcmp(l, r, (size_t)(ls < rs ? ls : rs));
        if (c == 0) c = ls - rs;
        l += ls; r += rs;
        break;
    }
    case cbindata: {
        int L = *l, R = *r, llen = bindata_length[L >> 4];
        if (L != R) {
            int rlen = bindata_length[R >> 4];
            c = llen != rlen ? llen - rlen : L - R;
        } else {
            c = memcmp(l + 1, r + 1, (size_t)llen);
        }
        l += 1 + llen; r += 1 + bindata_length[R >> 4];
        break;
    }
    case cdate: { int64_t a = le_int64(l), b = le_int64(r); c = (a > b) - (a < b); l += 8; r += 8; break; }
    case coid: c = memcmp(l, r, 12); l += 12; r += 12; break;
    default: break;
    }
    *lp = l; *rp = r;
    return c;
}

/* KeyV1::woCompare. */
static int keyv1_compare(const unsigned char *l, const unsigned char *r, uint32_t descending) {
    if ((*l | *r) == cisbson) {
        /* Either key is stored as BSON (compareHybrid): both as BSON objects. A compact one is
         * never mixed with a BSON one in the keys this runner writes, but compare them anyway
         * by their bytes rather than read one as the other. */
        if (*l != cisbson || *r != cisbson)
            return *l == cisbson ? 1 : -1;
        return bson_compare(l + 1, r + 1, descending);
    }
    for (uint32_t mask = 1;; mask <<= 1) {
        int lb = *l, rb = *r;
        int c = keyv1_value(&l, &r);
        if (c)
            return (descending & mask) ? -c : c;
        c = (lb & chasmore) - (rb & chasmore);
        if (c)
            return c;
        if (!(lb & chasmore))
            return 0;
    }
}

/* TokuMX's dbt_key_compare: the index's KeyV1 in its order (the descriptor's first four bytes,
 * the Ordering's bits), then, where both keys carry one, the primary keys as BSON, ascending. */
int eb_ft_tokumx_compare(DB *db, const DBT *a, const DBT *b) {
    uint32_t descending = 0;
    if (db && db->cmp_descriptor && db->cmp_descriptor->dbt.size >= 4)
        memcpy(&descending, db->cmp_descriptor->dbt.data, 4);
    const unsigned char *l = a->data, *r = b->data;
    if (a->size == 0 || b->size == 0)
        return (a->size > 0) - (b->size > 0);
    int c = keyv1_compare(l, r, descending);
    if (c)
        return c < 0 ? -1 : 1;
    size_t ls = keyv1_size(l), rs = keyv1_size(r);
    if (a->size > ls && b->size > rs) {
        c = bson_compare(l + ls, r + rs, 0);
        if (c)
            return c < 0 ? -1 : 1;
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Update messages                                                                             */

/* The runner's handler: given the old value (or none) and the message, it calls
 * eb_ft_update_set once with the new value, or eb_ft_update_delete, or neither (no change). */
typedef int (*eb_ft_update_handler)(const void *old, size_t old_len, int has_old, const void *extra,
                                    size_t extra_len, void *setter);
static eb_ft_update_handler update_handler;

struct setter {
    void (*set_val)(const DBT *new_val, void *set_extra);
    void *set_extra;
};

void eb_ft_update_set(void *setter, const void *data, size_t len) {
    struct setter *s = setter;
    DBT v = dbt(data, len);
    s->set_val(&v, s->set_extra);
}

void eb_ft_update_delete(void *setter) {
    struct setter *s = setter;
    s->set_val(NULL, s->set_extra);
}

static int on_update(DB *db, const DBT *key, const DBT *old_val, const DBT *extra,
                     void (*set_val)(const DBT *new_val, void *set_extra), void *set_extra) {
    (void)db; (void)key;
    if (update_handler == NULL)
        return EINVAL;
    struct setter s = {set_val, set_extra};
    return update_handler(old_val ? old_val->data : NULL, old_val ? old_val->size : 0, old_val != NULL,
                          extra->data, extra->size, &s);
}

void eb_ft_set_update_handler(eb_ft_update_handler handler) {
    update_handler = handler;
}

#ifdef EB_FT_DBT_ARRAY
/* put_multiple's and del_multiple's rows for the other dictionaries: TokuMX 2.x generated the
 * secondary keys before the call and left only the values to this callback (storage/env.cpp
 * generate_row_for_put: the document for a clustering index, nothing otherwise). The keys come
 * in `dest_keys` already; a dictionary whose app_private is non-null is clustering. */
static int generate_row_for_put(DB *dest_db, DB *src_db, DBT_ARRAY *dest_keys, DBT_ARRAY *dest_vals,
                                const DBT *src_key, const DBT *src_val) {
    (void)src_db; (void)src_key;
    if (dest_vals == NULL)
        return 0;
    toku_dbt_array_resize(dest_vals, dest_keys->size);
    for (uint32_t i = 0; i < dest_keys->size; i++) {
        DBT *v = &dest_vals->dbts[i];
        v->flags = 0;
        v->data = dest_db->app_private ? src_val->data : NULL;
        v->size = dest_db->app_private ? src_val->size : 0;
    }
    return 0;
}

static int generate_row_for_del(DB *dest_db, DB *src_db, DBT_ARRAY *dest_keys, const DBT *src_key,
                                const DBT *src_val) {
    (void)dest_db; (void)src_db; (void)dest_keys; (void)src_key; (void)src_val;
    return 0;
}
#endif

/* ------------------------------------------------------------------------------------------ */
/* The environment                                                                             */

struct eb_ft_env_config {
    uint64_t cache_bytes;
    uint64_t lock_memory_bytes;     /* 0: the release's default */
    uint64_t lock_timeout_ms;
    uint32_t checkpoint_s;
    uint32_t cleaner_period_s;
    uint32_t cleaner_iterations;
    uint32_t fsync_log_period_ms;
    int32_t redzone_percent;
    int32_t direct_io;
    int32_t compress_buffers;        /* -1: the release's default */
    int32_t tokumx_compare;          /* 1: TokuMX's comparator; 0: the engine's memcmp */
    const char *product_name;
};

int eb_ft_env_open(const char *dir, const struct eb_ft_env_config *cfg, DB_ENV **out) {
    last_error[0] = 0;
    db_env_set_direct_io(cfg->direct_io != 0);
#ifdef EB_FT_COMPRESS_BUFFERS
    if (cfg->compress_buffers >= 0)
        db_env_set_compress_buffers_before_eviction(cfg->compress_buffers != 0);
#endif
    int r = db_env_set_toku_product_name(cfg->product_name);
    if (r) return r;
    DB_ENV *env;
    r = db_env_create(&env, 0);
    if (r) return r;
    env->set_errcall(env, on_error);
    env->set_errpfx(env, cfg->product_name);
    r = env->set_cachesize(env, (uint32_t)(cfg->cache_bytes >> 30), (uint32_t)(cfg->cache_bytes % (1u << 30)), 1);
    if (r) goto fail;
    if (cfg->lock_memory_bytes) {
        r = env->set_lk_max_memory(env, cfg->lock_memory_bytes);
        if (r) goto fail;
    }
#ifdef EB_FT_LOCK_TIMEOUT_CALLBACK
    r = env->set_lock_timeout(env, cfg->lock_timeout_ms, NULL);
#else
    r = env->set_lock_timeout(env, cfg->lock_timeout_ms);
#endif
    if (r) goto fail;
    if (cfg->tokumx_compare) {
        r = env->set_default_bt_compare(env, eb_ft_tokumx_compare);
        if (r) goto fail;
    }
    env->set_update(env, on_update);
#ifdef EB_FT_DBT_ARRAY
    env->set_generate_row_callback_for_put(env, generate_row_for_put);
    env->set_generate_row_callback_for_del(env, generate_row_for_del);
#endif
    env->change_fsync_log_period(env, cfg->fsync_log_period_ms);
    r = env->set_redzone(env, cfg->redzone_percent);
    if (r) goto fail;
    r = env->open(env, dir, DB_INIT_LOCK | DB_INIT_MPOOL | DB_INIT_TXN | DB_CREATE | DB_PRIVATE | DB_INIT_LOG | DB_RECOVER,
                  0755);
    if (r) goto fail;
    if ((r = env->checkpointing_set_period(env, cfg->checkpoint_s)) ||
        (r = env->cleaner_set_period(env, cfg->cleaner_period_s)) ||
        (r = env->cleaner_set_iterations(env, cfg->cleaner_iterations))) {
        env->close(env, 0);
        return r;
    }
    *out = env;
    return 0;
fail:
    snprintf(last_error, sizeof last_error, "%s", env_error);
    env->close(env, 0);
    return r;
}

int eb_ft_env_close(DB_ENV *env) {
    return env->close(env, 0);
}

int eb_ft_checkpoint(DB_ENV *env) {
    return env->txn_checkpoint(env, 0, 0, 0);
}

int eb_ft_log_flush(DB_ENV *env) {
    return env->log_flush(env, NULL);
}

/* Every engine status row with a number, to `row(ctx, name, value)` (its cycle-counter times in
 * microseconds, the others as the engine keeps them); the filesystem's redzone state as the row
 * "eb_fs_state" (0 green .. 3 blocked) and the panic code as "eb_panic". */
int eb_ft_status(DB_ENV *env, void (*row)(void *ctx, const char *name, double value), void *ctx) {
    uint64_t max_rows = 0, num_rows = 0, panic = 0;
    int r = env->get_engine_status_num_rows(env, &max_rows);
    if (r) return r;
    TOKU_ENGINE_STATUS_ROW_S *rows = calloc(max_rows ? max_rows : 1, sizeof *rows);
    if (!rows) return ENOMEM;
    fs_redzone_state redzone;
    char panic_text[256];
    r = env->get_engine_status(env, rows, max_rows, &num_rows, &redzone, &panic, panic_text, sizeof panic_text,
                               TOKU_ENGINE_STATUS);
    if (r == 0) {
        for (uint64_t i = 0; i < num_rows; i++) {
            const TOKU_ENGINE_STATUS_ROW_S *s = &rows[i];
            switch (s->type) {
            case FS_STATE: case UINT64: case UNIXTIME: row(ctx, s->keyname, (double)s->value.num); break;
            case TOKUTIME: row(ctx, s->keyname, 1e6 * eb_tokutime_to_seconds(s->value.num)); break; /* in µs */
            case PARCOUNT: row(ctx, s->keyname, (double)read_partitioned_counter(s->value.parcount)); break;
#ifdef EB_FT_STATUS_DOUBLE
            case DOUBLE: row(ctx, s->keyname, s->value.dnum); break;
#endif
            default: break;
            }
        }
        row(ctx, "eb_fs_state", (double)redzone);
        row(ctx, "eb_panic", (double)panic);
    }
    free(rows);
    return r;
}

/* ------------------------------------------------------------------------------------------ */
/* Dictionaries                                                                                */

struct eb_ft_db_config {
    uint32_t page_size;
    uint32_t read_page_size;
    int32_t compression;              /* a TOKU_COMPRESSION_METHOD */
    uint32_t fanout;                  /* 0: the release's (16 in 1.x, where it is fixed) */
    uint32_t memcmp_magic;            /* 0: none */
    const void *descriptor;           /* written on creation (DB_UPDATE_CMP_DESCRIPTOR) */
    size_t descriptor_len;
    int32_t clustering;               /* put_multiple gives it the whole row (app_private) */
};

int eb_ft_db_open(DB_ENV *env, DB_TXN *txn, const char *name, const struct eb_ft_db_config *cfg, DB **out) {
    DB *db;
    int r = db_create(&db, env, 0);
    if (r) return r;
    if ((r = db->set_readpagesize(db, cfg->read_page_size)) || (r = db->set_pagesize(db, cfg->page_size)) ||
        (r = db->set_compression_method(db, (TOKU_COMPRESSION_METHOD)cfg->compression)))
        goto fail;
#ifdef EB_FT_FANOUT
    if (cfg->fanout && (r = db->set_fanout(db, cfg->fanout)))
        goto fail;
    if (cfg->memcmp_magic && (r = db->set_memcmp_magic(db, (uint8_t)cfg->memcmp_magic)))
        goto fail;
#else
    if (cfg->fanout && cfg->fanout != 16) { r = EINVAL; goto fail; }
#endif
    r = db->open(db, txn, name, NULL, DB_BTREE, DB_CREATE, 0644);
    if (r) goto fail;
    if (cfg->descriptor_len) {
        DBT d = dbt(cfg->descriptor, cfg->descriptor_len);
        r = db->change_descriptor(db, txn, &d, DB_UPDATE_CMP_DESCRIPTOR);
        if (r) { db->close(db, 0); return r; }
    }
    db->app_private = cfg->clustering ? (void *)1 : NULL;
    *out = db;
    return 0;
fail:
    db->close(db, 0);
    return r;
}

int eb_ft_db_close(DB *db) {
    return db->close(db, 0);
}

/* The dictionary's keys, data bytes and file bytes (stat64). */
int eb_ft_db_stat(DB *db, uint64_t *keys, uint64_t *data_bytes, uint64_t *file_bytes) {
    DB_BTREE_STAT64 s;
    int r = db->stat64(db, NULL, &s);
    if (r == 0) { *keys = s.bt_nkeys; *data_bytes = s.bt_dsize; *file_bytes = s.bt_fsize; }
    return r;
}

/* ------------------------------------------------------------------------------------------ */
/* Transactions                                                                                */

int eb_ft_txn_begin(DB_ENV *env, DB_TXN *parent, uint32_t flags, DB_TXN **out) {
    return env->txn_begin(env, parent, out, flags);
}

int eb_ft_txn_commit(DB_TXN *txn, uint32_t flags) {
    return txn->commit(txn, flags);
}

int eb_ft_txn_abort(DB_TXN *txn) {
    return txn->abort(txn);
}

/* ------------------------------------------------------------------------------------------ */
/* Rows                                                                                        */

/* A row to the runner: returns 1 to be given the next row in the same call (the engine's bulk
 * fetch, up to the end of its basement node), 0 to stop. */
typedef int (*eb_ft_row_fn)(void *ctx, const void *key, size_t key_len, const void *val, size_t val_len);

struct row_call {
    eb_ft_row_fn fn;
    void *ctx;
};

static int on_row(DBT const *key, DBT const *val, void *extra) {
    struct row_call *c = extra;
    int more = c->fn(c->ctx, key->data, key->size, val ? val->data : NULL, val ? val->size : 0);
    return more ? TOKUDB_CURSOR_CONTINUE : 0;
}

int eb_ft_get(DB *db, DB_TXN *txn, uint32_t flags, const void *key, size_t key_len, eb_ft_row_fn fn, void *ctx) {
    DBT k = dbt(key, key_len);
    struct row_call c = {fn, ctx};
    return db->getf_set(db, txn, flags, &k, on_row, &c);
}

int eb_ft_put(DB *db, DB_TXN *txn, const void *key, size_t key_len, const void *val, size_t val_len, uint32_t flags) {
    DBT k = dbt(key, key_len), v = dbt(val, val_len);
    return db->put(db, txn, &k, &v, flags);
}

int eb_ft_del(DB *db, DB_TXN *txn, const void *key, size_t key_len, uint32_t flags) {
    DBT k = dbt(key, key_len);
    return db->del(db, txn, &k, flags);
}

int eb_ft_update(DB *db, DB_TXN *txn, const void *key, size_t key_len, const void *extra, size_t extra_len,
                 uint32_t flags) {
    DBT k = dbt(key, key_len), e = dbt(extra, extra_len);
    return db->update(db, txn, &k, &e, flags);
}

/* put_multiple: the row (key, val) into `src`, and into dbs[i] the key keys[i] with the value
 * generate_row_for_put gives it (2.x; 1.x TokuMX never called it). */
int eb_ft_put_multiple(DB_ENV *env, DB_TXN *txn, DB *src, const void *key, size_t key_len, const void *val,
                       size_t val_len, uint32_t n, DB **dbs, const void *const *keys, const size_t *key_lens,
                       uint32_t *flags) {
#ifdef EB_FT_DBT_ARRAY
    DBT k = dbt(key, key_len), v = dbt(val, val_len);
    DBT key_dbts[n], val_dbts[n];
    DBT_ARRAY key_arrays[n], val_arrays[n];
    for (uint32_t i = 0; i < n; i++) {
        key_dbts[i] = dbt(keys[i], key_lens[i]);
        memset(&val_dbts[i], 0, sizeof val_dbts[i]);
        key_arrays[i] = (DBT_ARRAY){.capacity = 1, .size = 1, .dbts = &key_dbts[i]};
        val_arrays[i] = (DBT_ARRAY){.capacity = 1, .size = 1, .dbts = &val_dbts[i]};
    }
    return env->put_multiple(env, src, txn, &k, &v, n, dbs, key_arrays, val_arrays, flags);
#else
    (void)env; (void)txn; (void)src; (void)key; (void)key_len; (void)val; (void)val_len; (void)n; (void)dbs;
    (void)keys; (void)key_lens; (void)flags;
    return EINVAL;
#endif
}

int eb_ft_del_multiple(DB_ENV *env, DB_TXN *txn, DB *src, const void *key, size_t key_len, const void *val,
                       size_t val_len, uint32_t n, DB **dbs, const void *const *keys, const size_t *key_lens,
                       uint32_t *flags) {
#ifdef EB_FT_DBT_ARRAY
    DBT k = dbt(key, key_len), v = dbt(val, val_len);
    DBT key_dbts[n];
    DBT_ARRAY key_arrays[n];
    for (uint32_t i = 0; i < n; i++) {
        key_dbts[i] = dbt(keys[i], key_lens[i]);
        key_arrays[i] = (DBT_ARRAY){.capacity = 1, .size = 1, .dbts = &key_dbts[i]};
    }
    return env->del_multiple(env, src, txn, &k, &v, n, dbs, key_arrays, flags);
#else
    (void)env; (void)txn; (void)src; (void)key; (void)key_len; (void)val; (void)val_len; (void)n; (void)dbs;
    (void)keys; (void)key_lens; (void)flags;
    return EINVAL;
#endif
}

int eb_ft_has_multiple(void) {
#ifdef EB_FT_DBT_ARRAY
    return 1;
#else
    return 0;
#endif
}

int eb_ft_has_fanout(void) {
#ifdef EB_FT_FANOUT
    return 1;
#else
    return 0;
#endif
}

/* ------------------------------------------------------------------------------------------ */
/* Cursors                                                                                     */

int eb_ft_cursor_open(DB *db, DB_TXN *txn, uint32_t flags, DBC **out) {
    return db->cursor(db, txn, out, flags);
}

int eb_ft_cursor_close(DBC *c) {
    return c->c_close(c);
}

/* c_set_bounds: [low, high], locked up front when `prelock` (a serializable or RMW cursor). */
int eb_ft_cursor_set_bounds(DBC *c, const void *low, size_t low_len, const void *high, size_t high_len, int prelock) {
    DBT l = dbt(low, low_len), h = dbt(high, high_len);
    return c->c_set_bounds(c, &l, &h, prelock != 0, DB_NOTFOUND);
}

/* Position: at the first key >= `key` (or, `reverse`, the last key <= it); an empty key means
 * the first (last) key of the dictionary. */
int eb_ft_cursor_seek(DBC *c, uint32_t flags, const void *key, size_t key_len, int reverse, eb_ft_row_fn fn,
                      void *ctx) {
    struct row_call call = {fn, ctx};
    if (key_len == 0)
        return reverse ? c->c_getf_last(c, flags, on_row, &call) : c->c_getf_first(c, flags, on_row, &call);
    DBT k = dbt(key, key_len);
    return reverse ? c->c_getf_set_range_reverse(c, flags, &k, on_row, &call)
                   : c->c_getf_set_range(c, flags, &k, on_row, &call);
}

/* Exactly `key` (c_getf_set). */
int eb_ft_cursor_set(DBC *c, uint32_t flags, const void *key, size_t key_len, eb_ft_row_fn fn, void *ctx) {
    struct row_call call = {fn, ctx};
    DBT k = dbt(key, key_len);
    return c->c_getf_set(c, flags, &k, on_row, &call);
}

int eb_ft_cursor_step(DBC *c, uint32_t flags, int reverse, eb_ft_row_fn fn, void *ctx) {
    struct row_call call = {fn, ctx};
    return reverse ? c->c_getf_prev(c, flags, on_row, &call) : c->c_getf_next(c, flags, on_row, &call);
}
