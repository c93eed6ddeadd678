//! Percona TokuMX 2.0.1's layout over PerconaFT tokumx-2.0.1: the dictionaries, keys and values an
//! insert, an update (with and without fastUpdates) and a delete produce, against TokuMX's source
//! at tag tokumx-2.0.1 (Tokutek/mongo): src/mongo/db/collection.cpp (insertIntoIndexes: one
//! env->put_multiple, the primary key DB_NOOVERWRITE; updateObjectMods: a db->update message;
//! deleteFromIndexes: env->del_multiple with DB_DELETE_ANY; findByPK), src/mongo/db/ops/update.cpp
//! (canRunFastUpdate, updateByPK, tryFastUpdate: the message {t: "u", o: mods, f: flags}),
//! src/mongo/db/storage/key.h and key.cpp (the keys), src/mongo/db/storage/env.cpp
//! (generate_row_for_put: an empty value for a non-clustering index).
mod common;

use bson::{doc, Bson};

use common::fractal::{built, bson, keyv1_number, on, pk_bson};
use common::{full_options, TempDir};
use enginebench_runner::calls::{Assign, IndexSpec, Store, Update};
use enginebench_runner::layouts::tokumx_ft::{Options, TokuMX};

const RELEASE: &str = "tokumx-2.0.1";
const PK: &str = "enginebench.c.$_id_";
const X: &str = "enginebench.c.$x_1";

fn open(dir: &TempDir, fast_updates: bool) -> std::sync::Arc<TokuMX> {
    let options = full_options("fractal", &format!(
        r#"{{"version": "{RELEASE}", "cache_size_mb": 32, "fast_updates": {fast_updates}}}"#));
    // The engine's own options: the record store's (run::open_store takes them) go.
    let (_, options) = enginebench_runner::run::store_options("fractal", &options).unwrap();
    let store = TokuMX::open(&dir.0, &options, Options { oplog: false }).unwrap();
    let mut ctx = store.session().unwrap();
    ctx.create_collection("c", None).unwrap();
    ctx.create_index("c", IndexSpec::new("x_1", &[("x", 1)], false)).unwrap();
    ctx.insert_many("c", &[doc! {"_id": 1, "x": 7.0, "k": 5}]).unwrap();
    store
}

fn inc_k() -> Update {
    Update { inc: Some(Assign::of([("k", Bson::Int32(1))])), ..Default::default() }
}

/// {t: "u", o: {$inc: {k: 1}}, f: flags}, the message updateObjectMods builds.
fn message(flags: i32) -> Vec<u8> {
    bson(&doc! {"t": "u", "o": {"$inc": {"k": 1}}, "f": flags})
}

#[test]
fn an_insert_is_one_put_multiple_with_the_primary_key_unique() {
    let Some(_one) = built(RELEASE) else { return };
    let dir = TempDir::new("tokumx201-insert");
    let store = open(&dir, false);
    let f = store.engine.flags();
    let calls = store.engine.record_calls();
    let mut ctx = store.session().unwrap();
    ctx.insert_many("c", &[doc! {"_id": 2, "x": 8.0, "k": 0}]).unwrap();
    let calls = calls.lock().unwrap().clone();
    let pk = keyv1_number(0x14, 2.0);
    assert_eq!(on(&calls, PK), vec![("put_multiple", &pk[..], &bson(&doc! {"_id": 2, "x": 8.0, "k": 0})[..], f.no_overwrite)]);
    let key = [keyv1_number(0x04, 8.0), pk_bson(Bson::Int32(2))].concat();
    assert_eq!(on(&calls, X), vec![("put_multiple", &key[..], &[][..], 0)]);
    drop(ctx);
    store.close().unwrap();
}

#[test]
fn an_update_of_no_indexed_field_reads_the_document_then_sends_a_message() {
    let Some(_one) = built(RELEASE) else { return };
    let dir = TempDir::new("tokumx201-update");
    let store = open(&dir, false);
    let f = store.engine.flags();
    let calls = store.engine.record_calls();
    let mut ctx = store.session().unwrap();
    ctx.update("c", None, &[Bson::Int32(1)], &inc_k()).unwrap();
    let recorded = calls.lock().unwrap().clone();
    let pk = keyv1_number(0x14, 1.0);
    // findByPK with a write lock, then the message with f 0; nothing put, no secondary touched.
    assert_eq!(on(&recorded, PK), vec![("get", &pk[..], &[][..], f.serializable | f.rmw),
                                       ("update", &pk[..], &message(0)[..], 0)]);
    assert!(on(&recorded, X).is_empty());
    assert_eq!(ctx.get("c", None, &[Bson::Int32(1)]).unwrap().unwrap().get_i32("k").unwrap(), 6);
    drop(ctx);
    store.close().unwrap();
}

#[test]
fn fast_updates_send_the_message_without_reading() {
    let Some(_one) = built(RELEASE) else { return };
    let dir = TempDir::new("tokumx201-fast");
    let store = open(&dir, true);
    let calls = store.engine.record_calls();
    let mut ctx = store.session().unwrap();
    ctx.update("c", None, &[Bson::Int32(1)], &inc_k()).unwrap();
    let by_pk = calls.lock().unwrap().clone();
    let pk = keyv1_number(0x14, 1.0);
    // updateByPK: FAST_UPDATE_PERFORMED | NO_OLDOBJ_OK, and no read at all.
    assert_eq!(on(&by_pk, PK), vec![("update", &pk[..], &message(3)[..], 0)]);
    assert!(!by_pk.iter().any(|c| c.op == "get" || c.op == "cursor"));
    calls.lock().unwrap().clear();
    // By a covered secondary key: the index entry alone, then the message with FAST_UPDATE_PERFORMED.
    ctx.update("c", Some("x_1"), &[Bson::Double(7.0)], &inc_k()).unwrap();
    let by_x = calls.lock().unwrap().clone();
    assert_eq!(on(&by_x, PK), vec![("update", &pk[..], &message(1)[..], 0)]);
    assert_eq!(on(&by_x, X)[0].0, "cursor");
    assert_eq!(ctx.get("c", None, &[Bson::Int32(1)]).unwrap().unwrap().get_i32("k").unwrap(), 7);
    drop(ctx);
    store.close().unwrap();
}

#[test]
fn a_delete_is_one_del_multiple_that_reads_nothing() {
    let Some(_one) = built(RELEASE) else { return };
    let dir = TempDir::new("tokumx201-delete");
    let store = open(&dir, false);
    let f = store.engine.flags();
    let calls = store.engine.record_calls();
    let mut ctx = store.session().unwrap();
    assert!(ctx.delete("c", None, &[Bson::Int32(1)], &Vec::new()).unwrap());
    let calls = calls.lock().unwrap().clone();
    let pk = keyv1_number(0x14, 1.0);
    let key = [keyv1_number(0x04, 7.0), pk_bson(Bson::Int32(1))].concat();
    let pk_calls = on(&calls, PK);
    assert_eq!(pk_calls[0], ("get", &pk[..], &[][..], f.serializable | f.rmw)); // the query's findByPK
    assert_eq!(pk_calls[1].0, "del_multiple");
    assert_eq!((pk_calls[1].1, pk_calls[1].3), (&pk[..], f.delete_any));
    assert_eq!(on(&calls, X), vec![("del_multiple", &key[..], &[][..], f.delete_any)]);
    drop(ctx);
    store.close().unwrap();
}
