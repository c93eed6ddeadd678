//! How a Ctx reaches documents, as mongod 3.2's planner did: IDHACK point lookups, index seeks
//! then record fetches, ranges and $or clauses.
use super::*;

impl Ctx {
    /// The record id and stored bytes of the document with this key, or None, reached the way
    /// mongod 3.2's planner reached it (mongo@r3.2.0 src/mongo/db/query/get_executor.cpp):
    /// - IDHACK, only for an `_id`-only equality (`idhack`: no other condition,
    ///   CanonicalQuery::isSimpleIdQuery): a point lookup in the `_id` index (IDHackStage,
    ///   IndexAccessMethod::findSingle: WiredTigerIndexUnique seekExact is WT_CURSOR::search,
    ///   RocksUniqueIndex's a Get), then the record;
    /// - every other equality, on `_id` with more conditions or on any other index, unique or
    ///   not: an index cursor seek (IXSCAN: IndexScan::initIndexScan calls seek(), which is
    ///   search_near on WiredTiger and an iterator Seek on MongoRocks, no bloom filter), then the
    ///   record (FETCH: a point lookup, WT search / Rocks Get).
    pub(super) fn locate(&mut self, coll: &Collection, index: Option<&str>, key: &[Bson], idhack: bool, for_update: bool)
              -> Result<Option<(i64, Vec<u8>)>> {
        let rid = match index {
            None if idhack && self.store.rid_in_value(true) => {
                let table = coll.id_index.ok_or_else(|| Error::other(format!("{} has no _id index", coll.name)))?;
                let id = key.first().ok_or_else(|| Error::other("a lookup by _id needs the _id value"))?;
                let encoded = keys::encode(&[id], &[1], &mut Vec::new())?;
                self.scratch.clear();
                let mut value = std::mem::take(&mut self.scratch);
                let found = self.kv.get(table, &encoded, &mut value)?;
                let rid = if found { Some(keys::read_record_id(&value).0) } else { None };
                self.scratch = value;
                rid
            }
            None => {
                let table = coll.id_index.ok_or_else(|| Error::other(format!("{} has no _id index", coll.name)))?;
                self.seek(table, &[1], self.store.rid_in_value(true), key, 1)?
            }
            Some(name) => self.with_index(coll, name, |c, index| {
                let in_value = c.store.rid_in_value(index.spec.unique);
                c.seek(index.table, &index.directions, in_value, key, index.names.len())
            })?,
        };
        let Some(rid) = rid else { return Ok(None) };
        let mut raw = Vec::new();
        let found = if for_update {
            self.kv.get_for_update(coll.records, &keys::record_key(rid), &mut raw)?
        } else {
            self.kv.get(coll.records, &keys::record_key(rid), &mut raw)?
        };
        Ok(if found { Some((rid, raw)) } else { None })
    }

    /// IXSCAN's first entry for an equality on the index's leading fields: a cursor positioned
    /// at the key (Session::scan stops after one entry) and the record id it points at.
    /// `unique`: the index keeps its record ids in its values (RecordStore::rid_in_value).
    pub(super) fn seek(&mut self, table: Table, directions: &[i8], unique: bool, key: &[Bson], fields: usize) -> Result<Option<i64>> {
        let refs: Vec<&Bson> = key.iter().collect();
        let mut prefix = Vec::new();
        keys::append_fields(&mut prefix, &refs, &directions[..refs.len().min(directions.len())], &mut Vec::new())?;
        if key.len() == fields {
            prefix.push(keys::END);
        }
        let end = keys::prefix_successor(&prefix);
        let mut rid = None;
        self.kv.scan(table, &prefix, end.as_deref(), false, &mut |k, v| {
            rid = Some(if unique { keys::read_record_id(v).0 } else { keys::split_record_id(k).1 });
            false
        })?;
        Ok(rid)
    }

    pub(super) fn key_field_names(coll: &Collection, index: Option<&str>) -> Result<Arc<[String]>> {
        static ID: std::sync::LazyLock<Arc<[String]>> = std::sync::LazyLock::new(|| Arc::from(["_id".to_string()]));
        Ok(match index {
            None => ID.clone(),
            Some(name) => coll.index(name)?.names.clone(),
        })
    }

    /// The table and [start, end) byte range of a Range over an index (or the _id index).
    pub(super) fn range_bounds(&self, coll: &Collection, index: Option<&Index>, range: &Range) -> Result<(Table, Vec<u8>, Option<Vec<u8>>)> {
        let (table, directions): (Table, &[i8]) = match index {
            Some(i) => (i.table, &i.directions),
            None => (coll.id_index.ok_or_else(|| Error::other("no _id index"))?, &[1]),
        };
        let prefix: Vec<&Bson> = range.prefix.iter().collect();
        let mut base = Vec::new();
        keys::append_fields(&mut base, &prefix, &directions[..prefix.len().min(directions.len())], &mut Vec::new())?;
        let rest = &directions[prefix.len().min(directions.len())..];
        let (mut low, mut high) = (range.low.as_ref(), range.high.as_ref());
        let width = low.map(|l| l.len()).max(high.map(|h| h.len())).unwrap_or(0);
        if rest.iter().take(width).any(|d| *d < 0) {
            if width > 1 {
                return Err(Error::other("tuple bounds over descending index fields are not supported"));
            }
            std::mem::swap(&mut low, &mut high); // a descending field stores high values first
        }
        let bound = |values: &Vec<Bson>| -> Result<Vec<u8>> {
            let refs: Vec<&Bson> = values.iter().collect();
            let mut out = base.clone();
            keys::append_fields(&mut out, &refs, &rest[..refs.len().min(rest.len())], &mut Vec::new())?;
            Ok(out)
        };
        let start = match low { Some(l) => bound(l)?, None => base.clone() };
        let end = match high { Some(h) => keys::prefix_successor(&bound(h)?), None => keys::prefix_successor(&base) };
        Ok((table, start, end))
    }

    /// Index entries in range, in order (or reversed), after `skip`, at most `limit`, each as
    /// `take` makes it from the entry's key and value (a record id, or copies for a covered query).
    pub(super) fn entries<T>(&mut self, coll: &Collection, index: Option<&Index>, range: &Range,
                             mut take: impl FnMut(&[u8], &[u8]) -> T) -> Result<Vec<T>> {
        let scans = if range.as_or { self.or_clauses(coll, index, range)? } else { vec![self.range_bounds(coll, index, range)?] };
        let mut out = Vec::new();
        let mut skipped = 0usize;
        let limit = range.limit.unwrap_or(usize::MAX);
        for (table, start, end) in scans {
            if out.len() >= limit {
                break;
            }
            self.query_scan(table, &start, end.as_deref(), range.reverse, &mut |k, v| {
                if skipped < range.skip {
                    skipped += 1;
                    return true;
                }
                out.push(take(k, v));
                out.len() < limit
            })?;
        }
        Ok(out)
    }

    /// A query's scan as mongod's plan executor ran it (StoreOptions::yields): every so many
    /// entries or so much time it yields, its engine letting the snapshot go
    /// (Session::yield_snapshot), and resumes past the last entry it returned with a new seek, as
    /// the servers' cursors restored (mongo-rocks r3.2.0 rocks_index.cpp restore: a new iterator
    /// and seekCursor when the snapshot moved; mongo r3.2.0 wiredtiger_index.cpp restore:
    /// seekWTCursor, search_near). An explicit transaction's scan does not yield.
    pub(super) fn query_scan(&mut self, table: Table, start: &[u8], end: Option<&[u8]>, reverse: bool,
                             visit: Visit) -> Result<()> {
        let yields = if self.in_txn { None } else { self.store.options.yields };
        let Some((every, period)) = yields else { return self.kv.scan(table, start, end, reverse, visit) };
        let (mut low, mut high) = (start.to_vec(), end.map(|e| e.to_vec()));
        loop {
            let began = std::time::Instant::now();
            let (mut n, mut resume) = (0usize, None::<Vec<u8>>);
            self.kv.scan(table, &low, high.as_deref(), reverse, &mut |k, v| {
                if !visit(k, v) {
                    return false;
                }
                n += 1;
                if n >= every || began.elapsed() >= period {
                    resume = Some(k.to_vec());
                    return false;
                }
                true
            })?;
            let Some(last) = resume else { return Ok(()) };
            self.kv.yield_snapshot()?;
            if reverse {
                high = Some(last);
            } else {
                low = last;
                low.push(0); // the smallest key after it
            }
        }
    }

    /// The index ranges of a tuple bound's `$or` clauses, most specific first, as mongod's OR
    /// stage scans them: (a = x, b = y, c >= z), then (a = x, b > y), then (a > x). Each clause is
    /// a seek of its own; their ranges follow one another, so no entry is returned twice.
    pub(super) fn or_clauses(&self, coll: &Collection, index: Option<&Index>, range: &Range) -> Result<Vec<(Table, Vec<u8>, Option<Vec<u8>>)>> {
        let (table, directions): (Table, &[i8]) = match index {
            Some(i) => (i.table, &i.directions),
            None => (coll.id_index.ok_or_else(|| Error::other("no _id index"))?, &[1]),
        };
        let low = range.low.as_ref().ok_or_else(|| Error::other("an $or range needs a low tuple bound"))?;
        let base: Vec<&Bson> = range.prefix.iter().collect();
        if directions.iter().any(|d| *d < 0) {
            return Err(Error::other("$or ranges over descending index fields are not supported"));
        }
        let mut clauses = Vec::new();
        for depth in (1..=low.len()).rev() {
            let mut equal = base.clone();
            equal.extend(low[..depth - 1].iter());
            let mut bound = equal.clone();
            bound.push(&low[depth - 1]);
            let encoded = |values: &[&Bson]| -> Result<Vec<u8>> {
                let mut out = Vec::new();
                keys::append_fields(&mut out, values, &directions[..values.len().min(directions.len())], &mut Vec::new())?;
                Ok(out)
            };
            let at = encoded(&bound)?;
            // The last clause's bound is inclusive ($gte); the others' strict ($gt): past every
            // key that starts with that value.
            let start = if depth == low.len() { at } else { keys::prefix_successor(&at).unwrap_or(at) };
            let end = if equal.is_empty() { None } else { keys::prefix_successor(&encoded(&equal)?) };
            clauses.push((table, start, end));
        }
        Ok(clauses)
    }

    pub(super) fn entry_record_id(unique: bool, key: &[u8], value: &[u8]) -> i64 {
        if unique { keys::read_record_id(value).0 } else { keys::split_record_id(key).1 }
    }
}
