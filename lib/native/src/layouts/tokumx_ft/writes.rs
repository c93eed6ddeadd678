//! How TokuMX wrote: the dictionary calls of an insert, an update and a delete, per release.
//!
//! 1.0.4 (namespace_details.cpp insertIntoIndexes / updateObject / deleteFromIndexes, index.cpp
//! insertPair / uniqueCheck / deletePair): each index in turn, the `_id` first, with TokuMX's own
//! unique check (a serializable cursor's read) before each unique put; every put with flags 0
//! (a point write lock and an insert message); deletes DB_DELETE_ANY (no read); an update reads
//! the document, puts the whole new one, and moves the secondary keys that changed.
//!
//! 2.0.1 (collection.cpp insertIntoIndexes / updateObject / updateObjectMods /
//! deleteFromIndexes): one put_multiple per insert, the `_id` with DB_NOOVERWRITE (the engine's
//! own unique check, its rightmost-leaf fast path included), the secondary keys generated first;
//! del_multiple per delete; an update that changes no indexed field is an update message on the
//! `_id` dictionary (`{t: "u", o: <modifiers>, f: 0}`) after the read of the document, and with
//! fastUpdates (ops/update.cpp canRunFastUpdate) without it; any other update rewrites the
//! document and the changed keys (update_multiple).
use bson::{rawdoc, Bson, Document, RawDocumentBuf};

use super::keyv1::{self, Flavour};
use super::update_message::{self, FAST_UPDATE_PERFORMED, NO_OLDOBJ_OK};
use super::{Collection, Ctx, Index};
use crate::calls::{Filter, IndexSpec, Update, UpdateResult};
use crate::engines::fractal::Txn;
use crate::error::{Error, Result};
use crate::layouts::document;
use crate::layouts::fields::Fields;

/// A document found by a write: its primary key (as a key and as the BSON {"": _id}) and,
/// unless only the key was read, its bytes.
pub(super) struct Found {
    pub pk_key: Vec<u8>,
    pub pk_object: Vec<u8>,
    pub raw: Option<Vec<u8>>,
}

impl Ctx {
    fn flavour(&self) -> Flavour {
        self.store.flavour
    }

    /// Adds a write's operation to its transaction's oplog entry, built only where the store keeps
    /// an oplog (a standalone server logs nothing).
    fn log_op(&mut self, op: impl FnOnce() -> Result<RawDocumentBuf>) -> Result<()> {
        if self.store.oplog.is_some() {
            self.pending_ops.push(op()?);
        }
        Ok(())
    }

    // -- schema ----------------------------------------------------------------------------------
    pub(super) fn create_collection_named(&mut self, name: &str, capped_bytes: Option<i64>) -> Result<()> {
        if capped_bytes.is_some() {
            return Err(Error::other(format!("capped collection {name:?}: TokuMX's capped collections are not \
                                             modelled on the fractal tree here (no experiment runs one)")));
        }
        if self.store.collections.read().unwrap().contains_key(name) {
            return Ok(());
        }
        let coll = self.store.open_collection(name, &[])?;
        self.store.save_catalog(&coll)?;
        self.store.collections.write().unwrap().entry(name.to_string()).or_insert(coll);
        Ok(())
    }

    /// A new index: its dictionary, the entries of the documents already there, and the catalog.
    /// (TokuMX built a foreground index with the engine's bulk loader; the workloads create
    /// theirs before inserting, so the entries here are none or few.)
    pub(super) fn create_index_on(&mut self, collection: &str, spec: IndexSpec) -> Result<()> {
        let coll = self.collection(collection)?;
        if coll.indexes().iter().any(|i| i.spec.name == spec.name) {
            return Ok(());
        }
        let index = self.store.open_index(&coll, spec)?;
        let docs = self.documents(&coll)?;
        let flavour = self.flavour();
        self.write_call(|c, txn| {
            for raw in &docs {
                let doc = document::decode(raw)?;
                let id = doc.get("_id").cloned().unwrap_or(Bson::Null);
                let pk = keyv1::pk_object(&[&id])?;
                let fields = Fields::of(&doc);
                let mut key = Vec::new();
                keyv1::secondary_key(&mut key, &fields.key_values(None, &index.names), &pk, flavour)?;
                c.store.engine.put(txn, index.table, &key, &[], 0)?;
            }
            Ok(())
        })?;
        let mut list = Vec::clone(&coll.indexes());
        list.push(index);
        *coll.indexes.write().unwrap() = std::sync::Arc::new(list);
        self.store.save_catalog(&coll)
    }

    // -- inserts -----------------------------------------------------------------------------------
    /// One client insert message: every document in one transaction (instance.cpp
    /// receivedInsert: one Client::Transaction around insertObjects), logged as one oplog entry.
    pub(super) fn insert_documents(&mut self, collection: &str, docs: &[Document]) -> Result<usize> {
        let coll = self.collection(collection)?;
        self.write_call(|c, txn| {
            for doc in docs {
                c.insert_document(txn, &coll, doc)?;
            }
            Ok(docs.len())
        })
    }

    fn insert_document(&mut self, txn: &Txn, coll: &Collection, doc: &Document) -> Result<()> {
        let fields = Fields::of(doc);
        // addIdField: an ObjectId first where the document has no `_id`.
        let generated = doc.get("_id").is_none().then(|| Bson::ObjectId(bson::oid::ObjectId::new()));
        let id = generated.as_ref().or_else(|| doc.get("_id")).unwrap();
        let raw = fields.encode(Some(id))?;
        self.insert_raw(txn, coll, &fields, generated.as_ref(), id, &raw)?;
        self.log_op(|| Ok(rawdoc! {"op": "i", "ns": coll.ns.as_str(), "o": document::raw(raw)?}))?;
        Ok(())
    }

    /// The document's entries in every dictionary, as its release wrote them.
    fn insert_raw(&mut self, txn: &Txn, coll: &Collection, fields: &Fields, generated: Option<&Bson>, id: &Bson,
                  raw: &[u8]) -> Result<()> {
        let engine = self.store.engine.clone();
        let flavour = self.flavour();
        let pk_key = keyv1::primary_key(id, flavour)?;
        let pk_object = keyv1::pk_object(&[id])?;
        let indexes = coll.indexes();
        let mut secondary: Vec<(&Index, Vec<u8>, Vec<Bson>)> = Vec::with_capacity(indexes.len());
        for index in indexes.iter() {
            let values: Vec<Bson> = fields.key_values(generated, &index.names).into_iter().cloned().collect();
            let mut key = Vec::with_capacity(64);
            keyv1::secondary_key(&mut key, &values.iter().collect::<Vec<_>>(), &pk_object, flavour)?;
            secondary.push((index, key, values));
        }
        let duplicate = |name: &str| Error::duplicate(format!("E11000 duplicate key error index: {}.${name}", coll.ns));
        match flavour {
            Flavour::V1 => {
                if self.v1_unique_check(txn, coll.pk, &pk_key, None)? {
                    return Err(duplicate("_id_"));
                }
                engine.put(txn, coll.pk, &pk_key, raw, 0)?;
                for (index, key, values) in &secondary {
                    if index.spec.unique && self.v1_unique_check(txn, index.table, &key[..keyv1::size(key)?], Some(values))? {
                        return Err(duplicate(&index.spec.name));
                    }
                    engine.put(txn, index.table, key, &[], 0)?;
                }
            }
            Flavour::V2 => {
                for (index, key, _) in &secondary {
                    if index.spec.unique && self.v2_unique_check(txn, index, &key[..keyv1::size(key)?])? {
                        return Err(duplicate(&index.spec.name));
                    }
                }
                let f = engine.flags();
                let others: Vec<(crate::engines::Table, &[u8], u32)> =
                    secondary.iter().map(|(index, key, _)| (index.table, key.as_slice(), 0)).collect();
                engine.put_multiple(txn, coll.pk, &pk_key, raw, f.no_overwrite, &others)
                    .map_err(|e| if e.kind == crate::error::Kind::DuplicateKey { duplicate("_id_") } else { e })?;
            }
        }
        Ok(())
    }

    /// TokuMX 1.0.4's uniqueCheck (index.cpp): a cursor of the serializable transaction, one
    /// read: c_getf_set on the `_id` key (a point read lock), or, for a unique secondary key,
    /// c_getf_set_range to the key with MinKey as its primary key and a comparison of the values
    /// found (a read lock from there to the key found).
    fn v1_unique_check(&mut self, txn: &Txn, table: crate::engines::Table, key: &[u8], values: Option<&[Bson]>) -> Result<bool> {
        let engine = self.store.engine.clone();
        let f = engine.flags();
        let mut cursor = engine.cursor(txn, table, f.serializable)?;
        match values {
            None => cursor.set(0, key, &mut |_, _| false),
            Some(values) => {
                let mut start = key.to_vec();
                start.extend_from_slice(&keyv1::min_pk());
                let mut same = false;
                cursor.seek(0, &start, false, &mut |k, _| {
                    same = keyv1::decode(k).is_ok_and(|(found, _)| equal_values(&found, values));
                    false
                })?;
                Ok(same)
            }
        }
    }

    /// TokuMX 2.0.1's IndexInterface::uniqueCheck for a unique secondary key: a read-modify-write
    /// cursor whose bounds (the key with MinKey and MaxKey as primary keys) are locked up front,
    /// then one read from the start.
    fn v2_unique_check(&mut self, txn: &Txn, index: &Index, values_key: &[u8]) -> Result<bool> {
        let engine = self.store.engine.clone();
        let f = engine.flags();
        let (low, high) = ([values_key, &keyv1::min_pk()].concat(), [values_key, &keyv1::max_pk()].concat());
        let mut cursor = engine.cursor(txn, index.table, f.serializable | f.rmw)?;
        cursor.set_bounds(&low, &high, true)?;
        cursor.seek(f.prelocked | f.prelocked_write, &low, false, &mut |_, _| false)
    }

    // -- finding what a write changes ----------------------------------------------------------------
    /// The document a write targets (the first match of an equality on `_id` or on an index's
    /// fields), read as the release's write path read it; with `fetch` false only its primary
    /// key is read (2.x's fastUpdates on a covered query).
    pub(super) fn find_for_write(&mut self, txn: &Txn, coll: &Collection, index: Option<&Index>, key: &[Bson], fetch: bool)
                                 -> Result<Option<Found>> {
        let engine = self.store.engine.clone();
        let f = engine.flags();
        let flavour = self.flavour();
        match index {
            None => {
                let id = key.first().ok_or_else(|| Error::other("a write by _id needs the _id value"))?;
                let pk_key = keyv1::primary_key(id, flavour)?;
                let pk_object = keyv1::pk_object(&[id])?;
                let mut raw = None;
                let found = match flavour {
                    // 1.0.4: no _id shortcut for a clustering primary key (update.cpp mayUpdateById);
                    // the query runs as an index cursor over [pk, pk], prelocked for writing.
                    Flavour::V1 => {
                        let mut cursor = engine.cursor(txn, coll.pk, f.serializable | f.rmw)?;
                        cursor.set_bounds(&pk_key, &pk_key, true)?;
                        cursor.seek(f.prelocked | f.prelocked_write, &pk_key, false, &mut |_, v| {
                            raw = Some(v.to_vec());
                            false
                        })?
                    }
                    // 2.0.1: queryByPKHack / findByPK, a point read with a write lock.
                    Flavour::V2 => engine.get(txn, coll.pk, f.serializable | f.rmw, &pk_key, &mut |_, v| {
                        raw = Some(v.to_vec());
                        false
                    })?,
                };
                Ok(found.then_some(Found { pk_key, pk_object, raw }))
            }
            Some(index) => {
                let (low, high) = equality_bounds(index, key, flavour)?;
                let mut cursor = engine.cursor(txn, index.table, f.serializable | f.rmw)?;
                let mut entry = None;
                let mut take = |k: &[u8], _: &[u8]| {
                    entry = Some(k.to_vec());
                    false
                };
                match flavour {
                    // 1.0.4: the write cursor prelocks its whole range (indexcursor.cpp _prelockRange).
                    Flavour::V1 => {
                        cursor.set_bounds(&low, &high, true)?;
                        cursor.seek(f.prelocked | f.prelocked_write, &low, false, &mut take)?;
                    }
                    // 2.0.1: a justOne write does not prelock: the read locks [start, found].
                    Flavour::V2 => {
                        cursor.set_bounds(&low, &high, false)?;
                        cursor.seek(0, &low, false, &mut take)?;
                    }
                }
                drop(cursor);
                let Some(entry) = entry else { return Ok(None) };
                let split = keyv1::size(&entry)?;
                let pk_object = entry[split..].to_vec();
                let id = Document::from_reader(pk_object.as_slice())?.into_iter().next().map(|(_, v)| v).unwrap_or(Bson::Null);
                let pk_key = keyv1::primary_key(&id, flavour)?;
                let raw = if fetch { self.find_by_pk(txn, coll, &pk_key)? } else { None };
                if fetch && raw.is_none() {
                    return Ok(None);
                }
                Ok(Some(Found { pk_key, pk_object, raw }))
            }
        }
    }

    /// findByPK in a write: 1.0.4 a new cursor of the transaction (a point read lock), 2.0.1 a
    /// point read with a write lock (DB_SERIALIZABLE | DB_RMW).
    fn find_by_pk(&mut self, txn: &Txn, coll: &Collection, pk_key: &[u8]) -> Result<Option<Vec<u8>>> {
        let engine = self.store.engine.clone();
        let f = engine.flags();
        let mut raw = None;
        let mut take = |_: &[u8], v: &[u8]| {
            raw = Some(v.to_vec());
            false
        };
        match self.flavour() {
            Flavour::V1 => {
                let mut cursor = engine.cursor(txn, coll.pk, 0)?;
                cursor.set(0, pk_key, &mut take)?;
            }
            Flavour::V2 => {
                engine.get(txn, coll.pk, f.serializable | f.rmw, pk_key, &mut take)?;
            }
        }
        Ok(raw)
    }

    // -- updates -------------------------------------------------------------------------------------
    pub(super) fn update_one(&mut self, collection: &str, index: Option<&str>, key: &[Bson], update: &Update) -> Result<UpdateResult> {
        let coll = self.collection(collection)?;
        let index = coll.named(index)?;
        let indexed = touches_index(&coll, update);
        let operators = update.replace.is_none();
        let fast = self.flavour() == Flavour::V2 && self.store.engine.fast_updates() && !update.upsert && operators
            && !indexed && update.filter.is_empty() && !update.return_before;
        self.write_call(|c, txn| {
            if fast {
                // fastUpdates: by `_id`, no read at all; by a (covered) secondary key, the index
                // entry alone; then the message (update.cpp updateByPK / tryFastUpdate).
                let (found, flags) = match index.as_deref() {
                    None => {
                        let id = key.first().ok_or_else(|| Error::other("a write by _id needs the _id value"))?;
                        (Some(Found { pk_key: keyv1::primary_key(id, c.flavour())?, pk_object: keyv1::pk_object(&[id])?,
                                      raw: None }), FAST_UPDATE_PERFORMED | NO_OLDOBJ_OK)
                    }
                    Some(idx) => (c.find_for_write(txn, &coll, Some(idx), key, false)?, FAST_UPDATE_PERFORMED),
                };
                let Some(found) = found else { return Ok(unmatched()) };
                c.send_update_message(txn, &coll, &found, update, flags)?;
                return Ok(UpdateResult { matched: true, upserted: false, before: None, acknowledged: true });
            }
            let found = c.find_for_write(txn, &coll, index.as_deref(), key, true)?;
            let before = match &found {
                Some(Found { raw: Some(raw), .. }) => Some(document::decode(raw)?),
                _ => None,
            };
            let matched = before.as_ref().is_some_and(|d| document::matches(d, &update.filter));
            if !matched {
                if !update.upsert {
                    return Ok(unmatched());
                }
                let key_fields = match index.as_deref() {
                    Some(i) => i.names.clone(),
                    None => vec!["_id".to_string()],
                };
                let fields = Fields::upsert(&key_fields, key, update);
                let generated = fields.get("_id").is_none().then(|| Bson::ObjectId(bson::oid::ObjectId::new()));
                let id = generated.clone().or_else(|| fields.get("_id").cloned()).unwrap();
                let raw = fields.encode(Some(&id))?;
                c.insert_raw(txn, &coll, &fields, generated.as_ref(), &id, &raw)?;
                c.log_op(|| Ok(rawdoc! {"op": "i", "ns": coll.ns.as_str(), "o": document::raw(raw)?}))?;
                return Ok(UpdateResult { matched: false, upserted: true, before: None, acknowledged: true });
            }
            let found = found.unwrap();
            let before = before.unwrap();
            let (after, modified) = document::apply(&before, update)?;
            let returned = if update.return_before { Some(before.clone()) } else { None };
            if !modified {
                return Ok(UpdateResult { matched: true, upserted: false, before: returned, acknowledged: true });
            }
            if c.flavour() == Flavour::V2 && operators && !indexed {
                // updateObjectMods: the message, after the read (no put, no secondary key).
                c.send_update_message(txn, &coll, &found, update, 0)?;
            } else {
                c.rewrite(txn, &coll, &found, &before, &after)?;
                c.log_op(|| Ok(rawdoc! {"op": "u", "ns": coll.ns.as_str(), "pk": raw_pk(&found)?,
                                        "o": document::raw(found.raw.clone().unwrap())?,
                                        "o2": document::raw(document::encode(&after)?)?}))?;
            }
            Ok(UpdateResult { matched: true, upserted: false, before: returned, acknowledged: true })
        })
    }

    /// An update message on the `_id` dictionary: `{t: "u", o: <modifiers>, f: <flags>}`
    /// (collection.cpp updateObjectMods), applied by update_message::on_update when the engine
    /// reaches the document; logged as TokuMX logged it (`op: "ur"`).
    fn send_update_message(&mut self, txn: &Txn, coll: &Collection, found: &Found, update: &Update, flags: i32) -> Result<()> {
        let mods = update_message::modifiers(update)?;
        let message = update_message::message(&mods, flags)?;
        self.store.engine.update(txn, coll.pk, &found.pk_key, &message, 0)?;
        self.log_op(|| Ok(rawdoc! {"op": "ur", "ns": coll.ns.as_str(), "pk": raw_pk(found)?, "m": mods, "f": flags}))?;
        Ok(())
    }

    /// The new document over the old: the whole document on the `_id` dictionary (a put that
    /// overwrites), and each secondary key that changed moved (a blind delete, then a put).
    fn rewrite(&mut self, txn: &Txn, coll: &Collection, found: &Found, before: &Document, after: &Document) -> Result<()> {
        let engine = self.store.engine.clone();
        let f = engine.flags();
        let flavour = self.flavour();
        let (old, new) = (Fields::of(before), Fields::of(after));
        for index in coll.indexes().iter() {
            let (a, b) = (old.key_values(None, &index.names), new.key_values(None, &index.names));
            if a.iter().zip(&b).all(|(x, y)| x == y) {
                continue;
            }
            let (mut old_key, mut new_key) = (Vec::new(), Vec::new());
            keyv1::secondary_key(&mut old_key, &a, &found.pk_object, flavour)?;
            keyv1::secondary_key(&mut new_key, &b, &found.pk_object, flavour)?;
            engine.del(txn, index.table, &old_key, f.delete_any)?;
            if index.spec.unique {
                let values: Vec<Bson> = b.iter().map(|v| (*v).clone()).collect();
                let taken = match flavour {
                    Flavour::V1 => self.v1_unique_check(txn, index.table, &new_key[..keyv1::size(&new_key)?], Some(&values))?,
                    Flavour::V2 => self.v2_unique_check(txn, index, &new_key[..keyv1::size(&new_key)?])?,
                };
                if taken {
                    return Err(Error::duplicate(format!("E11000 duplicate key error index: {}.${}", coll.ns, index.spec.name)));
                }
            }
            engine.put(txn, index.table, &new_key, &[], 0)?;
        }
        engine.put(txn, coll.pk, &found.pk_key, &document::encode(after)?, 0)
    }

    // -- deletes -------------------------------------------------------------------------------------
    pub(super) fn delete_one(&mut self, collection: &str, index: Option<&str>, key: &[Bson], filter: &Filter) -> Result<bool> {
        let coll = self.collection(collection)?;
        let index = coll.named(index)?;
        self.write_call(|c, txn| {
            let Some(found) = c.find_for_write(txn, &coll, index.as_deref(), key, true)? else { return Ok(false) };
            let raw = found.raw.clone().unwrap();
            let doc = document::decode(&raw)?;
            if !document::matches(&doc, filter) {
                return Ok(false);
            }
            c.remove(txn, &coll, &found, &doc, &raw)?;
            c.log_op(|| Ok(rawdoc! {"op": "d", "ns": coll.ns.as_str(), "o": document::raw(raw)?}))?;
            Ok(true)
        })
    }

    /// Every key of a document, deleted without reading (DB_DELETE_ANY): 1.x one del per
    /// dictionary, 2.x one del_multiple.
    fn remove(&mut self, txn: &Txn, coll: &Collection, found: &Found, doc: &Document, raw: &[u8]) -> Result<()> {
        let engine = self.store.engine.clone();
        let f = engine.flags();
        let flavour = self.flavour();
        let fields = Fields::of(doc);
        let mut keys = Vec::new();
        for index in coll.indexes().iter() {
            let mut key = Vec::new();
            keyv1::secondary_key(&mut key, &fields.key_values(None, &index.names), &found.pk_object, flavour)?;
            keys.push((index.table, key));
        }
        match flavour {
            Flavour::V1 => {
                engine.del(txn, coll.pk, &found.pk_key, f.delete_any)?;
                for (table, key) in &keys {
                    engine.del(txn, *table, key, f.delete_any)?;
                }
            }
            Flavour::V2 => {
                let others: Vec<(crate::engines::Table, &[u8], u32)> =
                    keys.iter().map(|(t, k)| (*t, k.as_slice(), f.delete_any)).collect();
                engine.del_multiple(txn, coll.pk, &found.pk_key, raw, f.delete_any, &others)?;
            }
        }
        Ok(())
    }
}

fn unmatched() -> UpdateResult {
    UpdateResult { matched: false, upserted: false, before: None, acknowledged: true }
}

fn raw_pk(found: &Found) -> Result<RawDocumentBuf> {
    document::raw(found.pk_object.clone())
}

/// Whether an update changes a field some secondary index holds (or replaces the document):
/// then TokuMX rewrote the document instead of sending a message (update.cpp doFullUpdate).
fn touches_index(coll: &Collection, update: &Update) -> bool {
    if update.replace.is_some() {
        return true;
    }
    let names: Vec<&str> = [&update.set, &update.inc].into_iter().flatten().flat_map(|a| a.iter().map(|(k, _)| k)).collect();
    coll.indexes().iter().any(|i| i.names.iter().any(|n| names.contains(&n.as_str())))
}

/// Values equal as TokuMX's comparator says (numbers by value).
fn equal_values(a: &[Bson], b: &[Bson]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| document::values_equal(x, y))
}

/// The bounds of every entry whose leading index fields equal `key`: the values, the index's
/// other fields at their lowest (highest) and MinKey (MaxKey) as the primary key
/// (indexcursor.cpp's bounds for a point interval).
pub(super) fn equality_bounds(index: &Index, key: &[Bson], flavour: Flavour) -> Result<(Vec<u8>, Vec<u8>)> {
    let mut low_values: Vec<&Bson> = key.iter().collect();
    let mut high_values: Vec<&Bson> = key.iter().collect();
    for (field, (_, direction)) in index.spec.fields.iter().enumerate().skip(key.len()) {
        let _ = field;
        let (lo, hi) = if *direction < 0 { (&Bson::MaxKey, &Bson::MinKey) } else { (&Bson::MinKey, &Bson::MaxKey) };
        low_values.push(lo);
        high_values.push(hi);
    }
    let (mut low, mut high) = (Vec::new(), Vec::new());
    keyv1::secondary_key(&mut low, &low_values, &keyv1::min_pk(), flavour)?;
    keyv1::secondary_key(&mut high, &high_values, &keyv1::max_pk(), flavour)?;
    Ok((low, high))
}
