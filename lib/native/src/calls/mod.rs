//! The Store calls: what every workload asks of a system, whatever executes it.
//!
//! A workload is written once, against `Store`, and runs unchanged on every target: the
//! embedded record store (layouts::mongod_kv::Ctx, the engine inside this process), a MongoDB server through
//! the official Rust driver, or an old server through the legacy executor (executors::server).
//! The vocabulary is the subset of MongoDB the workloads use: documents keyed by `_id` or by an
//! index's fields, equality and `$lt` filters, `$set`/`$inc`/`$setOnInsert` and replacement
//! updates, ordered index ranges, counts, and transactions where the target has them.
//!
//! Keys: `index` None is the collection's `_id`; otherwise the name of an index created with
//! `create_index`, and a key lists that index's field values in index order.
pub mod json;
pub mod recording;
pub mod watched;

use std::borrow::Cow;

use bson::{Bson, Document, RawDocumentBuf};
use serde_json::{json, Value};

use crate::error::{Error, Result};

#[derive(Clone, Debug, PartialEq)]
pub struct IndexSpec {
    pub name: String,
    pub fields: Vec<(String, i8)>,
    pub unique: bool,
}

impl IndexSpec {
    pub fn new(name: &str, fields: &[(&str, i8)], unique: bool) -> Self {
        IndexSpec { name: name.into(), fields: fields.iter().map(|(f, d)| (f.to_string(), *d)).collect(), unique }
    }
    pub fn names(&self) -> Vec<String> {
        self.fields.iter().map(|(f, _)| f.clone()).collect()
    }
    pub fn to_json(&self) -> Value {
        json!({"name": self.name, "fields": self.fields.iter().map(|(f, d)| json!([f, d])).collect::<Vec<_>>(),
               "unique": self.unique})
    }
    pub fn from_json(v: &Value) -> Result<Self> {
        let bad = || Error::other(format!("an index spec needs name, fields [[field, 1|-1], ...] and unique (got {v})"));
        let fields = v["fields"].as_array().ok_or_else(bad)?
            .iter()
            .map(|f| Ok((f[0].as_str().ok_or_else(bad)?.to_string(), f[1].as_i64().ok_or_else(bad)? as i8)))
            .collect::<Result<Vec<_>>>()?;
        Ok(IndexSpec { name: v["name"].as_str().ok_or_else(bad)?.to_string(), fields,
                       unique: v["unique"].as_bool().unwrap_or(false) })
    }
}

/// Where a scan runs: an equality prefix over the index's first fields, then optional
/// inclusive bounds on what follows (a value for the next field, or several for the next
/// fields compared as a tuple: "seek to this key and scan on").
#[derive(Clone, Debug, Default)]
pub struct Range {
    pub prefix: Vec<Bson>,
    pub low: Option<Vec<Bson>>,
    pub high: Option<Vec<Bson>>,
    pub reverse: bool,
    pub skip: usize,
    pub limit: Option<usize>,
    /// A projection (without `_id`); inside the index it is a covered, index-only read.
    pub fields: Option<Vec<String>>,
    /// A tuple `low` bound sent as the client wrote it: the rooted `$or` of its clauses, unsorted
    /// and unhinted (iibench's queries). mongod 3.2 ran it as an OR stage, one index scan per
    /// clause in turn (mongo@r3.2.0 src/mongo/db/exec/or.cpp), not as one seek.
    pub as_or: bool,
}

/// An integer as pymongo encodes a Python int: int32 when it fits, else int64. Documents built
/// here have the same BSON types (and sizes) as those the Python side builds.
#[inline]
pub fn int(v: i64) -> Bson {
    match i32::try_from(v) {
        Ok(small) => Bson::Int32(small),
        Err(_) => Bson::Int64(v),
    }
}

pub fn bytes(data: Vec<u8>) -> Bson {
    Bson::Binary(bson::Binary { subtype: bson::spec::BinarySubtype::Generic, bytes: data })
}

/// A number field as i64 (int32, int64 or integral double).
pub fn as_i64(value: Option<&Bson>) -> Option<i64> {
    match value? {
        Bson::Int32(v) => Some(*v as i64),
        Bson::Int64(v) => Some(*v),
        Bson::Double(v) if v.fract() == 0.0 => Some(*v as i64),
        _ => None,
    }
}

/// One condition of a filter on a document's field.
#[derive(Clone, Debug, PartialEq)]
pub enum Cond {
    Eq(Bson),
    Lt(Bson),
}

/// A conjunction of field conditions (`where` of the Store calls).
pub type Filter = Vec<(String, Cond)>;

/// Fields and their values, in order: one part of an update (`$set`, `$inc`, `$setOnInsert`) or
/// a replacement. A list rather than a Document: a call names a few fields, nearly always by
/// constant names, and building a Document copies and hashes every name (on the load's upserts
/// that was the largest item of the workload's own time).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Assign(pub Vec<(Cow<'static, str>, Bson)>);

impl Assign {
    pub fn of<const N: usize>(fields: [(&'static str, Bson); N]) -> Self {
        Assign(fields.into_iter().map(|(name, value)| (Cow::Borrowed(name), value)).collect())
    }
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Bson)> {
        self.0.iter().map(|(name, value)| (name.as_ref(), value))
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// As a document (a command's `$set`, a replacement on the wire).
    pub fn to_document(&self) -> Document {
        self.iter().map(|(name, value)| (name.to_string(), value.clone())).collect()
    }
}

impl From<Document> for Assign {
    fn from(doc: Document) -> Self {
        Assign(doc.into_iter().map(|(name, value)| (Cow::Owned(name), value)).collect())
    }
}

/// What an update does to the one document it targets.
#[derive(Clone, Debug, Default)]
pub struct Update {
    pub set: Option<Assign>,
    pub inc: Option<Assign>,
    pub set_on_insert: Option<Assign>,
    /// A replacement document: the stored document becomes {_id} + this (MongoDB's
    /// update without operators).
    pub replace: Option<Assign>,
    pub filter: Filter,
    pub upsert: bool,
    pub return_before: bool,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct UpdateResult {
    /// Whether a document matched; false also for an unacknowledged write (w:0), which never
    /// says (`acknowledged` false).
    pub matched: bool,
    pub upserted: bool,
    pub before: Option<Document>,
    pub acknowledged: bool,
}

/// One entry of an index page: where the page can continue after it (opaque to the caller:
/// the engine's key, or a server's key values), the entry's key values, and its document
/// when asked for.
pub type PageEntry = (Vec<u8>, Vec<Bson>, Option<RawDocumentBuf>);

/// The Store calls, for one thread (a worker owns its Store: an engine session, or a server
/// connection with its session).
pub trait Store {
    fn create_collection(&mut self, name: &str, capped_bytes: Option<i64>) -> Result<()>;
    fn create_index(&mut self, collection: &str, spec: IndexSpec) -> Result<()>;
    /// Inserts documents; a duplicate key fails with Kind::DuplicateKey.
    fn insert_many(&mut self, collection: &str, docs: &[Document]) -> Result<usize>;
    /// Updates the one document with this key (and matching `update.filter`); with upsert and
    /// no match, inserts the key's fields + the filter's equalities + the update's fields.
    fn update(&mut self, collection: &str, index: Option<&str>, key: &[Bson], update: &Update) -> Result<UpdateResult>;
    fn delete(&mut self, collection: &str, index: Option<&str>, key: &[Bson], filter: &Filter) -> Result<bool>;
    fn get(&mut self, collection: &str, index: Option<&str>, key: &[Bson]) -> Result<Option<RawDocumentBuf>>;
    /// Documents whose index key is prefix + (v,) for v in last_values ($in on the last
    /// field), in index order.
    fn get_many(&mut self, collection: &str, index: &str, prefix: &[Bson], last_values: &[Bson]) -> Result<Vec<RawDocumentBuf>>;
    fn scan(&mut self, collection: &str, index: Option<&str>, range: &Range) -> Result<Vec<RawDocumentBuf>>;
    /// How many documents `get_many` would return: a count of a `$in` (several index intervals,
    /// so mongod 3.2 counted over an index scan and a fetch of each match, not a COUNT_SCAN).
    fn count_in(&mut self, collection: &str, index: &str, prefix: &[Bson], last_values: &[Bson]) -> Result<usize>;
    /// Index entries in range (no document is read).
    fn count(&mut self, collection: &str, index: Option<&str>, range: &Range) -> Result<usize>;
    /// One page of an index in key order: up to `n` entries after `after` (a mark an earlier
    /// page returned; None: from the start), each read in a short transaction of its own so a
    /// caller can walk two indexes side by side (the consistency checks do).
    fn index_page(&mut self, collection: &str, index: Option<&str>, after: Option<&[u8]>, n: usize, fetch: bool)
                  -> Result<Vec<PageEntry>>;
    /// Documents in natural (insertion) order, oldest first.
    fn natural(&mut self, collection: &str, limit: Option<usize>) -> Result<Vec<RawDocumentBuf>>;
    /// Runs `f` atomically where the target has transactions, retried on write conflicts
    /// (so `f` must have no side effects other than Store calls); elsewhere once, without
    /// atomicity (`atomic` says which).
    fn transaction_dyn(&mut self, f: &mut dyn FnMut(&mut dyn Store) -> Result<()>) -> Result<()>;
    /// Whether `transaction_dyn` is atomic on this target.
    fn atomic(&self) -> bool;
    /// Whether `command` runs MongoDB commands here (server targets).
    fn runs_commands(&self) -> bool {
        false
    }
    /// A MongoDB command as a client sent it (Flashback's replay of a mongod capture); only
    /// server targets run them. A find's reply holds every document of its cursor.
    fn command(&mut self, _command: &Document) -> Result<Document> {
        Err(Error::other("this target runs Store calls, not MongoDB commands"))
    }
}

impl dyn Store + '_ {
    /// `transaction_dyn` with a result.
    pub fn transaction<T>(&mut self, mut f: impl FnMut(&mut dyn Store) -> Result<T>) -> Result<T> {
        let mut out = None;
        self.transaction_dyn(&mut |s| {
            out = Some(f(s)?);
            Ok(())
        })?;
        Ok(out.expect("a committed transaction returned its value"))
    }
}

/// A borrowed Store is a Store (a transaction's body hands its calls on through one).
impl<'b> Store for &'b mut (dyn Store + 'b) {
    fn create_collection(&mut self, name: &str, capped_bytes: Option<i64>) -> Result<()> {
        (**self).create_collection(name, capped_bytes)
    }
    fn create_index(&mut self, collection: &str, spec: IndexSpec) -> Result<()> {
        (**self).create_index(collection, spec)
    }
    fn insert_many(&mut self, collection: &str, docs: &[Document]) -> Result<usize> {
        (**self).insert_many(collection, docs)
    }
    fn update(&mut self, collection: &str, index: Option<&str>, key: &[Bson], update: &Update) -> Result<UpdateResult> {
        (**self).update(collection, index, key, update)
    }
    fn delete(&mut self, collection: &str, index: Option<&str>, key: &[Bson], filter: &Filter) -> Result<bool> {
        (**self).delete(collection, index, key, filter)
    }
    fn get(&mut self, collection: &str, index: Option<&str>, key: &[Bson]) -> Result<Option<RawDocumentBuf>> {
        (**self).get(collection, index, key)
    }
    fn get_many(&mut self, collection: &str, index: &str, prefix: &[Bson], last: &[Bson]) -> Result<Vec<RawDocumentBuf>> {
        (**self).get_many(collection, index, prefix, last)
    }
    fn scan(&mut self, collection: &str, index: Option<&str>, range: &Range) -> Result<Vec<RawDocumentBuf>> {
        (**self).scan(collection, index, range)
    }
    fn count_in(&mut self, collection: &str, index: &str, prefix: &[Bson], last: &[Bson]) -> Result<usize> {
        (**self).count_in(collection, index, prefix, last)
    }
    fn count(&mut self, collection: &str, index: Option<&str>, range: &Range) -> Result<usize> {
        (**self).count(collection, index, range)
    }
    fn index_page(&mut self, collection: &str, index: Option<&str>, after: Option<&[u8]>, n: usize, fetch: bool)
                  -> Result<Vec<PageEntry>> {
        (**self).index_page(collection, index, after, n, fetch)
    }
    fn natural(&mut self, collection: &str, limit: Option<usize>) -> Result<Vec<RawDocumentBuf>> {
        (**self).natural(collection, limit)
    }
    fn transaction_dyn(&mut self, f: &mut dyn FnMut(&mut dyn Store) -> Result<()>) -> Result<()> {
        (**self).transaction_dyn(f)
    }
    fn atomic(&self) -> bool {
        (**self).atomic()
    }
    fn runs_commands(&self) -> bool {
        (**self).runs_commands()
    }
    fn command(&mut self, command: &Document) -> Result<Document> {
        (**self).command(command)
    }
}
