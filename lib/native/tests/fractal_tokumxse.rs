//! TokuMXse RC6's layout (mongod 3.0's record store over PerconaFT tokumxse-1.0.0-rc.6): the
//! dictionaries, keys and values an insert, an update and a delete produce, against TokuMXse's
//! source at tag tokumxse-1.0.0-rc.6 (Tokutek/tokumxse): src/mongo/db/storage/kv/dictionary/
//! kv_record_store.cpp (insertRecord: a put with skipPessimisticLocking, DB_PRELOCKED_WRITE;
//! updateRecord and deleteRecord: a read of the record first; updateWithDamages: an update
//! message), kv_sorted_data_impl.cpp (every index key ends with its record id, a unique one
//! checked by dupKeyCheck first), tokuft/tokuft_dictionary.cpp (the flags: a locked put, a delete
//! without DB_DELETE_ANY, a dupKeyCheck cursor whose range is locked up front),
//! kv/dictionary/kv_dictionary_update.cpp (the damages message).
//! Differences the layout keeps from mongod's: record keys are the record id in 8 bytes (TokuMXse:
//! KeyString's 2-9), and the record is written after its index entries (TokuMXse: before).
mod common;

use std::sync::Arc;

use bson::{doc, Bson};

use common::fractal::{built, bson, on};
use common::{full_options, TempDir};
use enginebench_runner::calls::{Assign, IndexSpec, Store, Update};
use enginebench_runner::engines::fractal::Fractal;
use enginebench_runner::engines::Engine;
use enginebench_runner::keys;
use enginebench_runner::layouts::mongod_kv::{Locking, RecordStore, StoreOptions};

const RELEASE: &str = "tokumxse-1.0.0-rc.6";

fn open(dir: &TempDir) -> (Arc<Fractal>, Arc<RecordStore>) {
    let options = full_options("fractal", &format!(r#"{{"version": "{RELEASE}", "cache_size_mb": 32}}"#));
    // The engine's own options: the record store's (run::open_store takes them) go.
    let (_, options) = enginebench_runner::run::store_options("fractal", &options).unwrap();
    let engine = Arc::new(Fractal::open(&dir.0, &options, None).unwrap());
    let store = RecordStore::open(engine.clone() as Arc<dyn Engine>, StoreOptions {
        insert_group: 1, oplog: false, oplog_bytes: 0, locking: Locking::None, ring_capped: false, yields: None }).unwrap();
    let mut ctx = store.session().unwrap();
    ctx.create_collection("c", None).unwrap();
    ctx.create_index("c", IndexSpec::new("x_1", &[("x", 1)], false)).unwrap();
    ctx.insert_many("c", &[doc! {"_id": 1, "x": 7, "y": "aaaa"}]).unwrap();
    (engine, store)
}

/// An index key: KeyString of the values, the end byte, then the record id (key_string.cpp).
fn index_key(value: i32, rid: i64) -> Vec<u8> {
    let mut out = keys::encode(&[&Bson::Int32(value)], &[1], &mut Vec::new()).unwrap();
    keys::append_record_id(&mut out, rid);
    out
}

#[test]
fn an_insert_puts_the_record_unlocked_and_checks_the_unique_id_by_a_range_read() {
    let Some(_one) = built(RELEASE) else { return };
    let dir = TempDir::new("tokumxse-insert");
    let (engine, store) = open(&dir);
    let f = engine.flags();
    let calls = engine.record_calls();
    let mut ctx = store.session().unwrap();
    ctx.insert_many("c", &[doc! {"_id": 2, "x": 8, "y": "bbbb"}]).unwrap();
    let calls = calls.lock().unwrap().clone();
    assert_eq!(on(&calls, "collection-c"), vec![("put", &keys::record_key(2)[..], &bson(&doc! {"_id": 2, "x": 8, "y": "bbbb"})[..],
                                                  f.prelocked_write)]);
    let id = on(&calls, "index-c-_id_");
    let (low, high) = (index_key(2, 0), index_key(2, i64::MAX));
    assert_eq!(id[0], ("cursor", &[][..], &[][..], 0));
    assert_eq!(id[1], ("c_set_bounds_prelocked", &low[..], &high[..], 0));
    assert_eq!(id[2], ("c_getf_set_range", &low[..], &[][..], f.prelocked | f.prelocked_write));
    assert_eq!(id[3], ("put", &index_key(2, 2)[..], &[][..], 0));
    assert_eq!(on(&calls, "index-c-x_1"), vec![("put", &index_key(8, 2)[..], &[][..], 0)]);
    drop(ctx);
    store.close().unwrap();
}

#[test]
fn a_same_size_update_is_a_damages_message_and_others_read_the_record_first() {
    let Some(_one) = built(RELEASE) else { return };
    let dir = TempDir::new("tokumxse-update");
    let (engine, store) = open(&dir);
    let calls = engine.record_calls();
    let mut ctx = store.session().unwrap();
    let same_size = Update { set: Some(Assign::of([("y", Bson::String("zzzz".into()))])), ..Default::default() };
    ctx.update("c", None, &[Bson::Int32(1)], &same_size).unwrap();
    let recorded = calls.lock().unwrap().clone();
    let record = on(&recorded, "collection-c");
    // The plan's fetch (a locking read), then updateWithDamages: one damaged range, "zzzz".
    assert_eq!(record[0].0, "get");
    assert_eq!(record[1].0, "update");
    let message = record[1].2;
    assert_eq!(message[0], 0);
    assert_eq!(usize::from_ne_bytes(message[1..9].try_into().unwrap()), 1);
    assert!(message.ends_with(b"zzzz"));
    assert_eq!(ctx.get("c", None, &[Bson::Int32(1)]).unwrap().unwrap().get_str("y").unwrap(), "zzzz");
    calls.lock().unwrap().clear();
    let longer = Update { set: Some(Assign::of([("y", Bson::String("longer".into()))])), ..Default::default() };
    ctx.update("c", None, &[Bson::Int32(1)], &longer).unwrap();
    let recorded = calls.lock().unwrap().clone();
    let ops: Vec<&str> = on(&recorded, "collection-c").iter().map(|c| c.0).collect();
    // The fetch, updateRecord's own read (its size counter), then the whole record.
    assert_eq!(ops, vec!["get", "get", "put"]);
    drop(ctx);
    store.close().unwrap();
}

#[test]
fn a_delete_reads_the_record_twice_and_deletes_without_delete_any() {
    let Some(_one) = built(RELEASE) else { return };
    let dir = TempDir::new("tokumxse-delete");
    let (engine, store) = open(&dir);
    let calls = engine.record_calls();
    let mut ctx = store.session().unwrap();
    assert!(ctx.delete("c", None, &[Bson::Int32(1)], &Vec::new()).unwrap());
    let recorded = calls.lock().unwrap().clone();
    let record: Vec<(&str, u32)> = on(&recorded, "collection-c").iter().map(|c| (c.0, c.3)).collect();
    assert_eq!(record, vec![("get", 0), ("get", 0), ("del", 0)]);
    assert_eq!(on(&recorded, "index-c-x_1"), vec![("del", &index_key(7, 1)[..], &[][..], 0)]);
    assert_eq!(on(&recorded, "index-c-_id_").last().unwrap(), &("del", &index_key(1, 1)[..], &[][..], 0));
    drop(ctx);
    store.close().unwrap();
}
