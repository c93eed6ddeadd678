//! The Store calls (lib/native/src/calls.rs) on the record store: schema, writes and reads.
use super::*;

impl Store for Ctx {
    // -- schema -------------------------------------------------------------------------------
    fn create_collection(&mut self, name: &str, capped_bytes: Option<i64>) -> Result<()> {
        if self.store.collections.read().unwrap().contains_key(name) {
            return Ok(());
        }
        let coll = Arc::new(self.store.new_collection(name, capped_bytes, true, &json!({}))?);
        self.store.save_catalog(&coll)?;
        self.store.collections.write().unwrap().entry(name.to_string()).or_insert(coll);
        Ok(())
    }

    fn create_index(&mut self, collection: &str, spec: IndexSpec) -> Result<()> {
        let coll = self.collection(collection)?;
        if coll.indexes().iter().any(|i| i.spec.name == spec.name) {
            return Ok(());
        }
        let table = self.store.engine.table(&format!("index-{collection}-{}", spec.name), TableKind::Index)?;
        let index = Arc::new(Index::new(spec, table));
        // Entries for documents already present (the workloads create their indexes first).
        let mut docs = Vec::new();
        self.read_call(&coll, |c| {
            c.kv.scan(coll.records, b"", None, false, &mut |k, v| {
                if !capped::is_filler(v) {
                    docs.push((keys::record_id(k), v.to_vec()));
                }
                true
            })
        })?;
        self.write_call(&coll, |c| {
            for (rid, raw) in &docs {
                let doc = document::decode(raw)?;
                c.put_index_entry(&index, &Fields::of(&doc), None, *rid)?;
            }
            Ok(())
        })?;
        coll.add_index(index);
        self.store.save_catalog(&coll)
    }

    // -- the Store calls ----------------------------------------------------------------------
    /// Inserts documents; a duplicate key fails the group it is in (DuplicateKey).
    fn insert_many(&mut self, collection: &str, docs: &[Document]) -> Result<usize> {
        let coll = self.collection(collection)?;
        if self.in_txn {
            for doc in docs {
                self.insert_one(&coll, doc)?;
            }
            return Ok(docs.len());
        }
        for group in docs.chunks(self.store.options.insert_group.max(1)) {
            self.write_call(&coll, |c| {
                for doc in group {
                    c.insert_one(&coll, doc)?;
                }
                Ok(())
            })?;
        }
        Ok(docs.len())
    }

    fn update(&mut self, collection: &str, index: Option<&str>, key: &[Bson], update: &Update) -> Result<UpdateResult> {
        let coll = self.collection(collection)?;
        if coll.capped.is_some() && update.upsert {
            return Err(Error::other(format!("upserts into capped collection {collection:?} are not supported; insert instead")));
        }
        let key_fields = Self::key_field_names(&coll, index)?;
        self.write_call(&coll, |c| {
            let found = c.locate(&coll, index, key, update.filter.is_empty(), true)?;
            let before = match &found {
                Some((_, raw)) => Some(document::decode(raw)?),
                None => None,
            };
            let matched = before.as_ref().map(|d| document::matches(d, &update.filter)).unwrap_or(false);
            if !matched {
                if !update.upsert {
                    return Ok(UpdateResult { matched: false, upserted: false, before: None, acknowledged: true });
                }
                c.insert_fields(&coll, &Fields::upsert(&key_fields, key, update))?;
                return Ok(UpdateResult { matched: false, upserted: true, before: None, acknowledged: true });
            }
            let (rid, raw) = found.unwrap();
            let before = before.unwrap();
            let (after, modified) = document::apply(&before, update)?;
            let encoded = document::encode(&after)?;
            if !modified || (update.replace.is_some() && encoded == raw) {
                // A no-op: nothing written, nothing logged (UpdateStage::transformAndUpdate).
                return Ok(UpdateResult { matched: true, upserted: false, acknowledged: true,
                                         before: if update.return_before { Some(before) } else { None } });
            }
            if coll.capped.is_some() && encoded.len() != raw.len() {
                // As MongoDB before 3.2 required: a capped document keeps its size.
                return Err(Error::other(format!("an update may not change the size of a document in capped collection {collection:?}")));
            }
            let (old_fields, new_fields) = (Fields::of(&before), Fields::of(&after));
            let mut indexed = false;
            for index in coll.indexes().iter() {
                let old = old_fields.key_values(None, &index.names);
                let new = new_fields.key_values(None, &index.names);
                if old.iter().zip(&new).any(|(a, b)| a != b) {
                    indexed = true;
                    c.delete_index_entry(index, &old_fields, rid)?;
                    c.put_index_entry(index, &new_fields, None, rid)?;
                }
            }
            c.rewrite_record(&coll, rid, &raw, &encoded, indexed)?;
            let id = document::id_only(before.get("_id"))?;
            let change = match &update.replace {
                Some(_) => document::raw(encoded)?,
                None => document::modifiers(update)?,
            };
            c.log("u", &coll, &change, Some(&id))?;
            Ok(UpdateResult { matched: true, upserted: false, before: if update.return_before { Some(before) } else { None },
                               acknowledged: true })
        })
    }

    fn delete(&mut self, collection: &str, index: Option<&str>, key: &[Bson], filter: &Filter) -> Result<bool> {
        let coll = self.collection(collection)?;
        if coll.capped.is_some() {
            return Err(Error::other(format!("cannot delete from capped collection {collection:?} (as MongoDB before 5.0 refused)")));
        }
        self.write_call(&coll, |c| {
            let Some((rid, raw)) = c.locate(&coll, index, key, filter.is_empty(), true)? else { return Ok(false) };
            let doc = document::decode(&raw)?;
            if !document::matches(&doc, filter) {
                return Ok(false);
            }
            c.remove_record(&coll, rid, &doc)?;
            c.log("d", &coll, &document::id_only(doc.get("_id"))?, None)?;
            Ok(true)
        })
    }

    fn get(&mut self, collection: &str, index: Option<&str>, key: &[Bson]) -> Result<Option<RawDocumentBuf>> {
        let coll = self.collection(collection)?;
        self.read_call(&coll, |c| match c.locate(&coll, index, key, true, false)? {
            Some((_, raw)) => Ok(Some(document::raw(raw)?)),
            None => Ok(None),
        })
    }

    /// Documents whose index key is prefix + (v,) for v in last_values ($in on the last
    /// field), in index order.
    fn get_many(&mut self, collection: &str, index: &str, prefix: &[Bson], last_values: &[Bson]) -> Result<Vec<RawDocumentBuf>> {
        let coll = self.collection(collection)?;
        let idx = coll.index(index)?;
        let descending = idx.directions.get(prefix.len()).copied().unwrap_or(1) < 0;
        let mut keyed: Vec<(Vec<u8>, &Bson)> = last_values.iter()
            .map(|v| Ok((keys::encode(&[v], &[1], &mut Vec::new())?, v)))
            .collect::<Result<_>>()?;
        keyed.sort_by(|a, b| a.0.cmp(&b.0));
        keyed.dedup_by(|a, b| a.0 == b.0);
        if descending {
            keyed.reverse();
        }
        self.read_call(&coll, |c| {
            let mut out = Vec::new();
            let mut key = prefix.to_vec();
            for (_, value) in &keyed {
                key.push((*value).clone());
                if let Some((_, raw)) = c.locate(&coll, Some(index), &key, false, false)? {
                    out.push(document::raw(raw)?);
                }
                key.pop();
            }
            Ok(out)
        })
    }

    fn count_in(&mut self, collection: &str, index: &str, prefix: &[Bson], last_values: &[Bson]) -> Result<usize> {
        // COUNT over IXSCAN + FETCH: the same index seeks and record fetches as the find.
        Ok(self.get_many(collection, index, prefix, last_values)?.len())
    }

    fn scan(&mut self, collection: &str, index: Option<&str>, range: &Range) -> Result<Vec<RawDocumentBuf>> {
        let coll = self.collection(collection)?;
        let idx = match index { Some(name) => Some(coll.index(name)?), None => None };
        let names = Self::key_field_names(&coll, index)?;
        // A projection inside the index is answered from the index alone (a covered query).
        let covered = match (&idx, &range.fields) {
            (Some(_), Some(fields)) => fields.iter().all(|f| names.contains(f) && f != "_id"),
            _ => false,
        };
        let unique = self.store.rid_in_value(idx.as_ref().map(|i| i.spec.unique).unwrap_or(true));
        self.read_call(&coll, |c| {
            if covered {
                let entries = c.entries(&coll, idx.as_deref(), range, |k, v| (k.to_vec(), v.to_vec()))?;
                let mut out = Vec::with_capacity(entries.len());
                for (key, value) in entries {
                    let bits = if unique { &value[keys::read_record_id(&value).1..] } else { &value[..] };
                    let (fields_end, _) = if unique { (key.len(), 0) } else { keys::split_record_id(&key) };
                    let decoded = keys::decode(&key[..fields_end], bits)?;
                    let mut doc = Document::new();
                    for field in range.fields.as_ref().unwrap() {
                        let i = names.iter().position(|n| n == field).unwrap();
                        doc.insert(field.clone(), decoded[i].clone());
                    }
                    out.push(RawDocumentBuf::try_from(&doc)?);
                }
                return Ok(out);
            }
            // IXSCAN then FETCH: the record ids first (no copy of an entry), then each record.
            let rids = c.entries(&coll, idx.as_deref(), range, |k, v| Self::entry_record_id(unique, k, v))?;
            let mut out = Vec::with_capacity(rids.len());
            for rid in rids {
                let mut raw = Vec::new();
                if c.kv.get(coll.records, &keys::record_key(rid), &mut raw)? {
                    match &range.fields {
                        None => out.push(document::raw(raw)?),
                        Some(fields) => out.push(document::project(&raw, fields)?),
                    }
                }
            }
            Ok(out)
        })
    }

    /// Index entries in range (a count scan: no document is read).
    fn count(&mut self, collection: &str, index: Option<&str>, range: &Range) -> Result<usize> {
        let coll = self.collection(collection)?;
        if index.is_none() && range.prefix.is_empty() && range.low.is_none() && range.high.is_none() {
            // No query: the collection's record count (mongod 3.2's CountStage::trivialCount).
            let n = coll.num_records.load(Ordering::Relaxed).max(0) as usize;
            return Ok(n.saturating_sub(range.skip).min(range.limit.unwrap_or(usize::MAX)));
        }
        let idx = match index { Some(name) => Some(coll.index(name)?), None => None };
        self.read_call(&coll, |c| {
            let (table, start, end) = c.range_bounds(&coll, idx.as_deref(), range)?;
            // COUNT_SCAN: index entries only; skip and limit as the count command applies them.
            let limit = range.limit.unwrap_or(usize::MAX);
            let mut n = 0usize;
            if limit > 0 {
                c.query_scan(table, &start, end.as_deref(), false, &mut |_, _| {
                    n += 1;
                    n < limit.saturating_add(range.skip)
                })?;
            }
            Ok(n.saturating_sub(range.skip).min(limit))
        })
    }

    /// One page of an index (or of the `_id` index) in key order: up to `n` entries after the
    /// raw key `after` (None: from the start), each as its raw key, its decoded fields and,
    /// with `fetch`, its document. Read in one short transaction, so a caller can walk an
    /// index page by page while doing other calls (the consistency check does).
    fn index_page(&mut self, collection: &str, index: Option<&str>, after: Option<&[u8]>, n: usize, fetch: bool)
                      -> Result<Vec<PageEntry>> {
        let coll = self.collection(collection)?;
        let idx = match index { Some(name) => Some(coll.index(name)?), None => None };
        let (table, unique) = match &idx {
            Some(i) => (i.table, self.store.rid_in_value(i.spec.unique)),
            None => (coll.id_index.ok_or_else(|| Error::other("no _id index"))?, self.store.rid_in_value(true)),
        };
        let mut start = after.map(|a| a.to_vec()).unwrap_or_default();
        if after.is_some() {
            start.push(0); // the smallest key after `after`
        }
        self.read_call(&coll, |c| {
            let mut raw: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
            c.kv.scan(table, &start, None, false, &mut |k, v| {
                raw.push((k.to_vec(), v.to_vec()));
                raw.len() < n
            })?;
            let mut page = Vec::with_capacity(raw.len());
            for (key, value) in raw {
                let (end, bits, rid) = if unique {
                    let (rid, used) = keys::read_record_id(&value);
                    (key.len(), &value[used..], rid)
                } else {
                    let (end, rid) = keys::split_record_id(&key);
                    (end, &value[..], rid)
                };
                let fields = keys::decode(&key[..end], bits)?;
                let doc = if fetch {
                    let mut bytes = Vec::new();
                    if c.kv.get(coll.records, &keys::record_key(rid), &mut bytes)? { Some(document::raw(bytes)?) } else { None }
                } else {
                    None
                };
                page.push((key, fields, doc));
            }
            Ok(page)
        })
    }

    /// Documents in natural (insertion) order, oldest first.
    fn natural(&mut self, collection: &str, limit: Option<usize>) -> Result<Vec<RawDocumentBuf>> {
        let coll = self.collection(collection)?;
        self.read_call(&coll, |c| {
            let mut out = Vec::new();
            let limit = limit.unwrap_or(usize::MAX);
            let order = capped::natural_order(c, &coll)?;
            for rid in order.into_iter().take(limit) {
                let mut raw = Vec::new();
                if c.kv.get(coll.records, &keys::record_key(rid), &mut raw)? {
                    out.push(document::raw(raw)?);
                }
            }
            Ok(out)
        })
    }

    fn transaction_dyn(&mut self, f: &mut dyn FnMut(&mut dyn Store) -> Result<()>) -> Result<()> {
        self.transaction(|c| f(c))
    }

    fn atomic(&self) -> bool {
        true
    }
}
