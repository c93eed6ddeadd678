//! How TokuMX read: queries in a read-only snapshot (no locks), an index cursor for an equality
//! or a range, and each secondary entry's document fetched from the `_id` dictionary by its
//! primary key (indexcursor.cpp, ops/query.cpp, namespace_details.cpp / collection.cpp findByPK at
//! 1.0.4 and tokumx-2.0.1). Cursors bulk-fetch (the engine hands over the rest of a basement node
//! per call, as TokuMX's RowBuffer asked it to), bounded by c_set_bounds.
use bson::{Bson, Document, RawDocumentBuf};

use super::keyv1::{self, Flavour};
use super::writes::equality_bounds;
use super::{Collection, Ctx, Index};
use crate::calls::{PageEntry, Range};
use crate::engines::fractal::Txn;
use crate::engines::Table;
use crate::error::{Error, Result};
use crate::layouts::document;

/// Which side of a bound a key is built for.
#[derive(Clone, Copy, PartialEq)]
enum Side {
    Low,
    High,
}

impl Ctx {
    /// A point read of the `_id` dictionary (findByPK: db->getf_set).
    fn by_pk(&self, txn: &Txn, coll: &Collection, pk_key: &[u8]) -> Result<Option<Vec<u8>>> {
        let mut raw = None;
        self.store.engine.get(txn, coll.pk, 0, pk_key, &mut |_, v| {
            raw = Some(v.to_vec());
            false
        })?;
        Ok(raw)
    }

    /// The getf flags of a query that wants one document (findOne): 1.0.4 prelocked (a
    /// snapshot locks nothing) and no prefetching; 2.0.1 no prefetching (indexcursor.cpp
    /// getf_flags).
    fn one_row_flags(&self) -> u32 {
        let f = self.store.flags();
        match self.store.flavour {
            Flavour::V1 => f.prelocked | f.prelocked_write | f.disable_prefetching,
            Flavour::V2 => f.disable_prefetching,
        }
    }

    /// The document whose key equals `key`: by `_id` a point read, by a secondary index the first
    /// entry with those values, then its document by primary key.
    fn find_one(&mut self, txn: &Txn, coll: &Collection, index: Option<&Index>, key: &[Bson]) -> Result<Option<Vec<u8>>> {
        let flavour = self.store.flavour;
        match index {
            None => {
                let id = key.first().ok_or_else(|| Error::other("a lookup by _id needs the _id value"))?;
                self.by_pk(txn, coll, &keyv1::primary_key(id, flavour)?)
            }
            Some(index) => {
                let (low, high) = equality_bounds(index, key, flavour)?;
                let engine = self.store.engine.clone();
                let mut cursor = engine.cursor(txn, index.table, 0)?;
                cursor.set_bounds(&low, &high, false)?;
                let mut pk = None;
                cursor.seek(self.one_row_flags(), &low, false, &mut |k, _| {
                    pk = keyv1::size(k).ok().map(|end| k[end..].to_vec());
                    false
                })?;
                drop(cursor);
                match pk {
                    Some(pk) => self.by_pk(txn, coll, &primary_key_of(&pk, flavour)?),
                    None => Ok(None),
                }
            }
        }
    }

    pub(super) fn get_one(&mut self, collection: &str, index: Option<&str>, key: &[Bson]) -> Result<Option<RawDocumentBuf>> {
        let coll = self.collection(collection)?;
        let index = coll.named(index)?;
        self.read_call(|c, txn| c.find_one(txn, &coll, index.as_deref(), key)?.map(document::raw).transpose())
    }

    /// Documents whose key is prefix + (v,) for each v, in the index's order of v.
    pub(super) fn get_each(&mut self, collection: &str, index: &str, prefix: &[Bson], last_values: &[Bson])
                           -> Result<Vec<RawDocumentBuf>> {
        let coll = self.collection(collection)?;
        let index = coll.index(index)?;
        let mut values: Vec<&Bson> = last_values.iter().collect();
        values.sort_by(|a, b| bson_order(a, b));
        values.dedup_by(|a, b| document::values_equal(a, b));
        if index.spec.fields.get(prefix.len()).is_some_and(|(_, d)| *d < 0) {
            values.reverse();
        }
        self.read_call(|c, txn| {
            let mut out = Vec::new();
            let mut key = prefix.to_vec();
            for value in values {
                key.push(value.clone());
                if let Some(raw) = c.find_one(txn, &coll, Some(&index), &key)? {
                    out.push(document::raw(raw)?);
                }
                key.pop();
            }
            Ok(out)
        })
    }

    /// The [low, high] key ranges of a Range: one, or one per clause of a tuple bound's `$or`
    /// (the most specific first, as mongod's OR stage ran them: see layouts/mongod_kv's
    /// or_clauses).
    fn ranges(&self, index: Option<&Index>, range: &Range) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let flavour = self.store.flavour;
        let directions: Vec<i8> = match index {
            Some(i) => i.spec.fields.iter().map(|(_, d)| *d).collect(),
            None => vec![1],
        };
        let secondary = index.is_some();
        let key = |values: &[&Bson], side: Side| -> Result<Vec<u8>> {
            let mut all: Vec<&Bson> = values.to_vec();
            for direction in directions.iter().skip(values.len()) {
                let lowest = (*direction > 0) == (side == Side::Low);
                all.push(if lowest { &Bson::MinKey } else { &Bson::MaxKey });
            }
            let mut out = Vec::new();
            if secondary {
                let pk = if side == Side::Low { keyv1::min_pk() } else { keyv1::max_pk() };
                keyv1::secondary_key(&mut out, &all, &pk, flavour)?;
            } else {
                keyv1::encode(&mut out, &all, flavour)?;
            }
            Ok(out)
        };
        let prefix: Vec<&Bson> = range.prefix.iter().collect();
        if !range.as_or {
            let (mut low, mut high) = (range.low.as_ref(), range.high.as_ref());
            if directions.get(prefix.len()).is_some_and(|d| *d < 0) {
                std::mem::swap(&mut low, &mut high); // a descending field: its high values come first
            }
            fn with<'a>(prefix: &[&'a Bson], bound: Option<&'a Vec<Bson>>) -> Vec<&'a Bson> {
                prefix.iter().copied().chain(bound.into_iter().flatten()).collect()
            }
            return Ok(vec![(key(&with(&prefix, low), Side::Low)?, key(&with(&prefix, high), Side::High)?)]);
        }
        let low = range.low.as_ref().ok_or_else(|| Error::other("an $or range needs a low tuple bound"))?;
        if directions.iter().any(|d| *d < 0) {
            return Err(Error::other("$or ranges over descending index fields are not supported"));
        }
        let mut clauses = Vec::new();
        for depth in (1..=low.len()).rev() {
            let mut equal = prefix.clone();
            equal.extend(low[..depth - 1].iter());
            let mut bound = equal.clone();
            bound.push(&low[depth - 1]);
            // The last clause's bound is inclusive ($gte), the others' strict ($gt): after every
            // key with that value.
            let start = key(&bound, if depth == low.len() { Side::Low } else { Side::High })?;
            clauses.push((start, key(&equal, Side::High)?));
        }
        Ok(clauses)
    }

    /// Entries of an index (or the `_id` dictionary) in range, after `skip`, at most `limit`,
    /// each as `take` makes it from the entry's key and value.
    fn entries<T>(&mut self, txn: &Txn, table: Table, index: Option<&Index>, range: &Range,
                  mut take: impl FnMut(&[u8], &[u8]) -> Result<T>) -> Result<Vec<T>> {
        let engine = self.store.engine.clone();
        let limit = range.limit.unwrap_or(usize::MAX);
        let mut out = Vec::new();
        let mut skipped = 0usize;
        let mut failed = None;
        for (low, high) in self.ranges(index, range)? {
            if out.len() >= limit {
                break;
            }
            let mut cursor = engine.cursor(txn, table, 0)?;
            cursor.set_bounds(&low, &high, false)?;
            let more = std::cell::Cell::new(true);
            let mut each = |k: &[u8], v: &[u8]| -> bool {
                if skipped < range.skip {
                    skipped += 1;
                    return true;
                }
                match take(k, v) {
                    Ok(item) => out.push(item),
                    Err(e) => failed = Some(e),
                }
                more.set(failed.is_none() && out.len() < limit);
                more.get()
            };
            let start = if range.reverse { &high } else { &low };
            if cursor.seek(0, start, range.reverse, &mut each)? {
                while more.get() && cursor.step(0, range.reverse, &mut each)? {}
            }
            if let Some(e) = failed.take() {
                return Err(e);
            }
        }
        Ok(out)
    }

    pub(super) fn scan_range(&mut self, collection: &str, index: Option<&str>, range: &Range) -> Result<Vec<RawDocumentBuf>> {
        let coll = self.collection(collection)?;
        let index = coll.named(index)?;
        let flavour = self.store.flavour;
        self.read_call(|c, txn| match index.as_deref() {
            None => c.entries(txn, coll.pk, None, range, |_, v| match &range.fields {
                None => document::raw(v.to_vec()),
                Some(fields) => document::project(v, fields),
            }),
            Some(idx) => {
                // A projection inside the index is answered from its keys (a covered query).
                let covered = range.fields.as_ref().is_some_and(|f| f.iter().all(|n| idx.names.contains(n) && n != "_id"));
                if covered {
                    let fields = range.fields.as_ref().unwrap();
                    return c.entries(txn, idx.table, Some(idx), range, |k, _| {
                        let (values, _) = keyv1::decode(k)?;
                        let mut doc = Document::new();
                        for field in fields {
                            let at = idx.names.iter().position(|n| n == field).unwrap();
                            doc.insert(field.clone(), values[at].clone());
                        }
                        Ok(RawDocumentBuf::try_from(&doc)?)
                    });
                }
                let pks = c.entries(txn, idx.table, Some(idx), range, |k, _| Ok(k[keyv1::size(k)?..].to_vec()))?;
                let mut out = Vec::with_capacity(pks.len());
                for pk in pks {
                    if let Some(raw) = c.by_pk(txn, &coll, &primary_key_of(&pk, flavour)?)? {
                        out.push(match &range.fields {
                            None => document::raw(raw)?,
                            Some(fields) => document::project(&raw, fields)?,
                        });
                    }
                }
                Ok(out)
            }
        })
    }

    /// A count: with no query, 1.0.4 read every document of the `_id` dictionary (ops/count.cpp:
    /// a table scan whose rows are copied), 2.0.1 counted the keys of the smallest secondary
    /// index (IndexScanCountCursor, no copy); with a range, the index's entries in it.
    pub(super) fn count_range(&mut self, collection: &str, index: Option<&str>, range: &Range) -> Result<usize> {
        let coll = self.collection(collection)?;
        let index = coll.named(index)?;
        let whole = index.is_none() && range.prefix.is_empty() && range.low.is_none() && range.high.is_none();
        self.read_call(|c, txn| {
            if whole {
                if c.store.flavour == Flavour::V1 {
                    let copied = c.entries(txn, coll.pk, None, range, |_, v| Ok(v.len()))?;
                    return Ok(copied.len());
                }
                let smallest = coll.indexes().iter()
                    .map(|i| Ok((c.store.engine.dictionary_stat(i.table)?.1, i.clone())))
                    .collect::<Result<Vec<_>>>()?
                    .into_iter().min_by_key(|(bytes, _)| *bytes).map(|(_, i)| i);
                let n = match &smallest {
                    Some(i) => c.entries(txn, i.table, Some(i), &Range { skip: range.skip, limit: range.limit, ..Default::default() },
                                         |_, _| Ok(()))?.len(),
                    None => c.entries(txn, coll.pk, None, range, |_, _| Ok(()))?.len(),
                };
                return Ok(n);
            }
            let table = index.as_ref().map(|i| i.table).unwrap_or(coll.pk);
            Ok(c.entries(txn, table, index.as_deref(), range, |_, _| Ok(()))?.len())
        })
    }

    /// Up to `n` entries of an index after the raw key `after`, read in one short transaction.
    pub(super) fn page(&mut self, collection: &str, index: Option<&str>, after: Option<&[u8]>, n: usize, fetch: bool)
                       -> Result<Vec<PageEntry>> {
        let coll = self.collection(collection)?;
        let index = coll.named(index)?;
        let table = index.as_ref().map(|i| i.table).unwrap_or(coll.pk);
        let flavour = self.store.flavour;
        self.read_call(|c, txn| {
            let engine = c.store.engine.clone();
            let mut cursor = engine.cursor(txn, table, 0)?;
            let mut raw: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
            let more = std::cell::Cell::new(true);
            let mut each = |k: &[u8], v: &[u8]| {
                if after.is_some_and(|a| a == k) {
                    return true;
                }
                raw.push((k.to_vec(), v.to_vec()));
                more.set(raw.len() < n);
                more.get()
            };
            if cursor.seek(0, after.unwrap_or(&[]), false, &mut each)? {
                while more.get() && cursor.step(0, false, &mut each)? {}
            }
            drop(cursor);
            let mut page = Vec::with_capacity(raw.len());
            for (key, value) in raw {
                let (fields, pk) = keyv1::decode(&key)?;
                let doc = match (fetch, index.is_some(), pk) {
                    (false, _, _) => None,
                    (true, false, _) => Some(document::raw(value)?),
                    (true, true, Some(pk)) => c.by_pk(txn, &coll, &keyv1::primary_key(&pk, flavour)?)?.map(document::raw).transpose()?,
                    (true, true, None) => None,
                };
                page.push((key, fields, doc));
            }
            Ok(page)
        })
    }

    /// Documents in their natural order: TokuMX's is the `_id` order (a collection is its `_id`
    /// index).
    pub(super) fn natural_order(&mut self, collection: &str, limit: Option<usize>) -> Result<Vec<RawDocumentBuf>> {
        let range = Range { limit, ..Default::default() };
        self.scan_range(collection, None, &range)
    }

    /// Every document's bytes (an index build over existing documents).
    pub(super) fn documents(&mut self, coll: &Collection) -> Result<Vec<Vec<u8>>> {
        self.read_call(|c, txn| c.entries(txn, coll.pk, None, &Range::default(), |_, v| Ok(v.to_vec())))
    }
}

/// The `_id` dictionary's key for a primary key appended to a secondary key (BSON {"": _id}).
fn primary_key_of(pk_object: &[u8], flavour: Flavour) -> Result<Vec<u8>> {
    let id = Document::from_reader(pk_object)?.into_iter().next().map(|(_, v)| v).unwrap_or(Bson::Null);
    keyv1::primary_key(&id, flavour)
}

/// An order of values for sorting `$in` lists: numbers by value, else by their encodings.
fn bson_order(a: &Bson, b: &Bson) -> std::cmp::Ordering {
    let number = |v: &Bson| match v {
        Bson::Int32(x) => Some(*x as f64),
        Bson::Int64(x) => Some(*x as f64),
        Bson::Double(x) => Some(*x),
        _ => None,
    };
    match (number(a), number(b)) {
        (Some(x), Some(y)) => x.partial_cmp(&y).unwrap_or(std::cmp::Ordering::Equal),
        _ => {
            let mut ka = Vec::new();
            let mut kb = Vec::new();
            let _ = keyv1::encode(&mut ka, &[a], Flavour::V2);
            let _ = keyv1::encode(&mut kb, &[b], Flavour::V2);
            ka.cmp(&kb)
        }
    }
}
