//! TokuMX 1.0.4's layout over PerconaFT tokumx-1.0.4: the dictionaries, keys and values an insert,
//! an update and a delete produce, against TokuMX's source at tag 1.0.4 (Tokutek/mongo):
//! src/mongo/db/namespace_details.cpp (IndexedCollection::insertObject, insertIntoIndexes,
//! updateObject, deleteFromIndexes, findByPK), src/mongo/db/index.cpp (IndexDetails::insertPair,
//! uniqueCheck, deletePair), src/mongo/db/storage/key.h and key.cpp (the keys),
//! src/mongo/db/indexcursor.cpp (a write cursor's prelocked range), ops/update.cpp.
mod common;

use bson::{doc, Bson};

use common::fractal::{built, bson, keyv1_number, on, pk_bson};
use common::{full_options, TempDir};
use enginebench_runner::calls::{Assign, IndexSpec, Store, Update};
use enginebench_runner::layouts::tokumx_ft::{Options, TokuMX};

const RELEASE: &str = "tokumx-1.0.4";
const PK: &str = "enginebench.c.$_id_";
const X: &str = "enginebench.c.$x_1";

fn open(dir: &TempDir) -> std::sync::Arc<TokuMX> {
    let options = full_options("fractal", &format!(r#"{{"version": "{RELEASE}", "cache_size_mb": 32}}"#));
    // The engine's own options: the record store's (run::open_store takes them) go.
    let (_, options) = enginebench_runner::run::store_options("fractal", &options).unwrap();
    let store = TokuMX::open(&dir.0, &options, Options { oplog: false }).unwrap();
    let mut ctx = store.session().unwrap();
    ctx.create_collection("c", None).unwrap();
    ctx.create_index("c", IndexSpec::new("x_1", &[("x", 1)], false)).unwrap();
    ctx.insert_many("c", &[doc! {"_id": 1, "x": 7.0, "y": "a"}]).unwrap();
    store
}

#[test]
fn an_insert_checks_the_id_then_puts_the_document_and_the_secondary_key() {
    let Some(_one) = built(RELEASE) else { return };
    let dir = TempDir::new("tokumx104-insert");
    let store = open(&dir);
    let f = store.engine.flags();
    let calls = store.engine.record_calls();
    let mut ctx = store.session().unwrap();
    ctx.insert_many("c", &[doc! {"_id": 2, "x": 8.0, "y": "b"}]).unwrap();
    let calls = calls.lock().unwrap().clone();
    let pk = keyv1_number(0x14, 2.0); // {"": NumberInt(2)}: cint, the value as a double
    // index.cpp uniqueCheck on the _id: a serializable cursor's c_getf_set; then insertPair's put.
    assert_eq!(on(&calls, PK), vec![("cursor", &[][..], &[][..], f.serializable), ("c_getf_set", &pk[..], &[][..], 0),
                                    ("put", &pk[..], &bson(&doc! {"_id": 2, "x": 8.0, "y": "b"})[..], 0)]);
    // A non-unique secondary: no read; its key is KeyV1({"": 8.0}) then BSON {"": 2}, its value empty.
    let key = [keyv1_number(0x04, 8.0), pk_bson(Bson::Int32(2))].concat();
    assert_eq!(on(&calls, X), vec![("put", &key[..], &[][..], 0)]);
    drop(ctx);
    store.close().unwrap();
}

#[test]
fn an_update_reads_through_the_index_and_puts_the_whole_document() {
    let Some(_one) = built(RELEASE) else { return };
    let dir = TempDir::new("tokumx104-update");
    let store = open(&dir);
    let f = store.engine.flags();
    let calls = store.engine.record_calls();
    let mut ctx = store.session().unwrap();
    let set_y = Update { set: Some(Assign::of([("y", Bson::String("z".into()))])), ..Default::default() };
    assert!(ctx.update("c", Some("x_1"), &[Bson::Double(7.0)], &set_y).unwrap().matched);
    let calls = calls.lock().unwrap().clone();
    let low = [keyv1_number(0x04, 7.0), pk_bson(Bson::MinKey)].concat();
    let high = [keyv1_number(0x04, 7.0), pk_bson(Bson::MaxKey)].concat();
    // The write cursor prelocks its range and reads one entry (indexcursor.cpp); no key moves.
    assert_eq!(on(&calls, X), vec![("cursor", &[][..], &[][..], f.serializable | f.rmw),
                                   ("c_set_bounds_prelocked", &low[..], &high[..], 0),
                                   ("c_getf_set_range", &low[..], &[][..], f.prelocked | f.prelocked_write)]);
    // findByPK (a cursor of the transaction), then the whole new document put over the old.
    let pk = keyv1_number(0x14, 1.0);
    assert_eq!(on(&calls, PK), vec![("cursor", &[][..], &[][..], 0), ("c_getf_set", &pk[..], &[][..], 0),
                                    ("put", &pk[..], &bson(&doc! {"_id": 1, "x": 7.0, "y": "z"})[..], 0)]);
    assert!(!calls.iter().any(|c| c.op == "update"), "1.0.4 sends no update messages");
    drop(ctx);
    store.close().unwrap();
}

#[test]
fn an_update_of_an_indexed_field_moves_its_key_and_a_delete_reads_nothing() {
    let Some(_one) = built(RELEASE) else { return };
    let dir = TempDir::new("tokumx104-delete");
    let store = open(&dir);
    let f = store.engine.flags();
    let calls = store.engine.record_calls();
    let mut ctx = store.session().unwrap();
    let set_x = Update { set: Some(Assign::of([("x", Bson::Double(9.0))])), ..Default::default() };
    ctx.update("c", None, &[Bson::Int32(1)], &set_x).unwrap();
    let moved = calls.lock().unwrap().clone();
    let (old, new) = ([keyv1_number(0x04, 7.0), pk_bson(Bson::Int32(1))].concat(),
                      [keyv1_number(0x04, 9.0), pk_bson(Bson::Int32(1))].concat());
    assert_eq!(on(&moved, X), vec![("del", &old[..], &[][..], f.delete_any), ("put", &new[..], &[][..], 0)]);
    calls.lock().unwrap().clear();
    assert!(ctx.delete("c", None, &[Bson::Int32(1)], &Vec::new()).unwrap());
    let deleted = calls.lock().unwrap().clone();
    let pk = keyv1_number(0x14, 1.0);
    // deleteFromIndexes: every key with DB_DELETE_ANY (a blind delete, no read inside the engine).
    assert_eq!(on(&deleted, PK).last().unwrap(), &("del", &pk[..], &[][..], f.delete_any));
    assert_eq!(on(&deleted, X), vec![("del", &new[..], &[][..], f.delete_any)]);
    assert_eq!(ctx.get("c", None, &[Bson::Int32(1)]).unwrap(), None);
    drop(ctx);
    store.close().unwrap();
}
