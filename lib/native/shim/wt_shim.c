/*
 * A flat C face of WiredTiger's API for the native runner.
 *
 * WiredTiger's API is a set of structs of function pointers whose layout changes between
 * releases (11.3.1 has methods 3.2.1 lacks), so the runner does not declare those structs
 * itself: this file is compiled against each release's own wiredtiger.h into a small shared
 * object linked with that release's library, and the runner loads the one its system asks for.
 * Every function here is a direct call of one WiredTiger method; nothing is cached or added.
 *
 * Errors: WiredTiger reports them through the event handler. The last error message is kept
 * (per process) so the runner can name the cause of a failure (e.g. "No space left on device")
 * and a panic (WT_PANIC) is remembered, after which the runner must not wait on the engine.
 * Once the engine panicked, the message kept is the error that made it panic: every call after
 * a panic reports the panic itself, which would bury its cause.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <wiredtiger.h>

static char last_error[1024];
static volatile int panicked;

static int
on_error(WT_EVENT_HANDLER *handler, WT_SESSION *session, int error, const char *message)
{
    (void)handler;
    (void)session;
    if (!panicked && (error != WT_PANIC || last_error[0] == '\0'))
        snprintf(last_error, sizeof(last_error), "%s", message);
    if (error == WT_PANIC)
        panicked = 1;
    fprintf(stderr, "wiredtiger: %s\n", message);
    fflush(stderr);
    return (0);
}

static int
on_message(WT_EVENT_HANDLER *handler, WT_SESSION *session, const char *message)
{
    (void)handler;
    (void)session;
    fprintf(stderr, "wiredtiger: %s\n", message);
    return (0);
}

static WT_EVENT_HANDLER handler = {on_error, on_message, NULL, NULL};

const char *eb_wt_last_error(void) { return last_error; }
int eb_wt_panicked(void) { return panicked; }

const char *
eb_wt_version(int *major, int *minor, int *patch)
{
    return wiredtiger_version(major, minor, patch);
}

const char *eb_wt_strerror(int error) { return wiredtiger_strerror(error); }

/* Return codes the runner tells apart; the same numbers in every release, read from the header. */
int eb_wt_code_notfound(void) { return WT_NOTFOUND; }
int eb_wt_code_rollback(void) { return WT_ROLLBACK; }
int eb_wt_code_duplicate_key(void) { return WT_DUPLICATE_KEY; }
int eb_wt_code_panic(void) { return WT_PANIC; }

int
eb_wt_open(const char *home, const char *config, WT_CONNECTION **conn)
{
    return wiredtiger_open(home, &handler, config, conn);
}

int eb_wt_conn_close(WT_CONNECTION *conn, const char *config) { return conn->close(conn, config); }

int
eb_wt_open_session(WT_CONNECTION *conn, const char *config, WT_SESSION **session)
{
    return conn->open_session(conn, NULL, config, session);
}

int eb_wt_session_close(WT_SESSION *s) { return s->close(s, NULL); }
int eb_wt_create(WT_SESSION *s, const char *uri, const char *config) { return s->create(s, uri, config); }
int eb_wt_begin(WT_SESSION *s, const char *config) { return s->begin_transaction(s, config); }
int eb_wt_commit(WT_SESSION *s) { return s->commit_transaction(s, NULL); }
int eb_wt_rollback(WT_SESSION *s) { return s->rollback_transaction(s, NULL); }
int eb_wt_checkpoint(WT_SESSION *s, const char *config) { return s->checkpoint(s, config); }
/* Deletes the range from start's key to stop's (both set, both included) without reading it. */
int eb_wt_truncate(WT_SESSION *s, WT_CURSOR *start, WT_CURSOR *stop) { return s->truncate(s, NULL, start, stop, NULL); }

int
eb_wt_open_cursor(WT_SESSION *s, const char *uri, const char *config, WT_CURSOR **cursor)
{
    return s->open_cursor(s, uri, NULL, config, cursor);
}

int eb_wt_cursor_close(WT_CURSOR *c) { return c->close(c); }
int eb_wt_cursor_reset(WT_CURSOR *c) { return c->reset(c); }

/* Keys and values of tables with key_format=u / value_format=u are byte strings (WT_ITEM);
 * record tables use key_format=q (a signed 64-bit record id), as mongod's record stores do. */
static WT_ITEM
item_of(const void *data, size_t size)
{
    WT_ITEM item;
    memset(&item, 0, sizeof(item));
    item.data = data;
    item.size = size;
    return item;
}

/* set_key and set_value keep the item's pointer and size, not the item, so a local item is
 * enough; the bytes it points to must stay valid until the cursor's next call. */
void
eb_wt_set_key_bytes(WT_CURSOR *c, const void *data, size_t size)
{
    WT_ITEM item = item_of(data, size);
    c->set_key(c, &item);
}

void eb_wt_set_key_int(WT_CURSOR *c, int64_t key) { c->set_key(c, key); }

void
eb_wt_set_value_bytes(WT_CURSOR *c, const void *data, size_t size)
{
    WT_ITEM item = item_of(data, size);
    c->set_value(c, &item);
}

int
eb_wt_get_key_bytes(WT_CURSOR *c, const void **data, size_t *size)
{
    WT_ITEM item;
    int ret = c->get_key(c, &item);
    *data = item.data;
    *size = item.size;
    return ret;
}

int eb_wt_get_key_int(WT_CURSOR *c, int64_t *key) { return c->get_key(c, key); }

int
eb_wt_get_value_bytes(WT_CURSOR *c, const void **data, size_t *size)
{
    WT_ITEM item;
    int ret = c->get_value(c, &item);
    *data = item.data;
    *size = item.size;
    return ret;
}

int eb_wt_search(WT_CURSOR *c) { return c->search(c); }
int eb_wt_search_near(WT_CURSOR *c, int *exact) { return c->search_near(c, exact); }
int eb_wt_next(WT_CURSOR *c) { return c->next(c); }
int eb_wt_prev(WT_CURSOR *c) { return c->prev(c); }
int eb_wt_insert(WT_CURSOR *c) { return c->insert(c); }
int eb_wt_remove(WT_CURSOR *c) { return c->remove(c); }

/* A statistics cursor's current row: its description and value. */
int
eb_wt_stat_row(WT_CURSOR *c, const char **desc, int64_t *value)
{
    const char *pvalue;
    return c->get_value(c, desc, &pvalue, value);
}

/* mongod's journal flusher: make the log durable up to now. */
#ifdef EB_WT_NO_LOG_FLUSH
/* A release without WT_SESSION::log_flush (build.rs): its mongod had no journal flusher. */
int eb_wt_log_flush(WT_SESSION *s, const char *config) { (void)s; (void)config; return ENOTSUP; }
#else
int eb_wt_log_flush(WT_SESSION *s, const char *config) { return s->log_flush(s, config); }
#endif
