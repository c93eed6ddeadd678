//! How a Ctx writes a document as mongod laid it out: the record, its `_id` and index entries,
//! and the oplog entry, in the call's transaction.
use super::*;

impl Ctx {
    // -- index entries ------------------------------------------------------------------------
    /// The entry of a document in an index; `generated_id` stands for an `_id` the document is
    /// being given as it is inserted.
    pub(super) fn put_index_entry(&mut self, index: &Index, doc: &Fields, generated_id: Option<&Bson>, rid: i64) -> Result<()> {
        let values = doc.key_values(generated_id, &index.names);
        if !self.put_entry(index.table, index.spec.unique, &values, &index.directions, rid)? {
            return Err(Error::duplicate(format!("E11000 duplicate key error index: {}", index.spec.name)));
        }
        Ok(())
    }

    pub(super) fn delete_index_entry(&mut self, index: &Index, doc: &Fields, rid: i64) -> Result<()> {
        let values = doc.key_values(None, &index.names);
        self.delete_entry(index.table, index.spec.unique, &values, &index.directions, rid)
    }

    pub(super) fn put_id_entry(&mut self, coll: &Collection, id: &Bson, rid: i64) -> Result<()> {
        let Some(table) = coll.id_index else { return Ok(()) };
        if !self.put_entry(table, true, &[id], &[1], rid)? {
            return Err(Error::duplicate(format!("E11000 duplicate key error collection: {} index: _id_", coll.name)));
        }
        Ok(())
    }

    pub(super) fn delete_id_entry(&mut self, coll: &Collection, id: &Bson, rid: i64) -> Result<()> {
        let Some(table) = coll.id_index else { return Ok(()) };
        self.delete_entry(table, true, &[id], &[1], rid)
    }

    /// Writes one index entry as mongod lays it out: a unique index's key is the fields and its
    /// value the record id and type bits; a standard index's key ends with the record id and its
    /// value is the type bits. False when a unique key is taken. Built in the thread's buffers.
    /// Where every key ends with its record id (TokuMXse: RecordStore::rid_in_value), a unique
    /// index first looks for any entry with the same fields (KVSortedDataImpl::insert's
    /// dupKeyCheck over [fields + the smallest record id, fields + the largest]).
    fn put_entry(&mut self, table: Table, unique: bool, values: &[&Bson], directions: &[i8], rid: i64) -> Result<bool> {
        let in_value = self.store.rid_in_value(unique);
        let mut b = std::mem::take(&mut self.keys);
        b.type_bits.clear();
        b.value.clear();
        let written = keys::encode_into(&mut b.key, values, directions, &mut b.type_bits).and_then(|()| {
            if unique && !in_value {
                let fields = b.key.len();
                b.value.extend_from_slice(&b.key);
                keys::append_record_id(&mut b.value, 0);
                keys::append_record_id(&mut b.key, i64::MAX);
                let taken = self.kv.any_in_range(table, &b.value, &b.key)?;
                b.key.truncate(fields);
                b.value.clear();
                if taken {
                    return Ok(false);
                }
            }
            keys::append_record_id(if in_value { &mut b.value } else { &mut b.key }, rid);
            keys::append_type_bits_value(&mut b.value, &b.type_bits, values);
            if in_value { self.kv.insert_new(table, &b.key, &b.value) } else { self.kv.put(table, &b.key, &b.value).map(|()| true) }
        });
        self.keys = b;
        written
    }

    /// Removes one index entry, laid out as `put_entry` wrote it.
    fn delete_entry(&mut self, table: Table, unique: bool, values: &[&Bson], directions: &[i8], rid: i64) -> Result<()> {
        let mut b = std::mem::take(&mut self.keys);
        b.type_bits.clear();
        let done = keys::encode_into(&mut b.key, values, directions, &mut b.type_bits).and_then(|()| {
            if !self.store.rid_in_value(unique) {
                keys::append_record_id(&mut b.key, rid);
            }
            self.kv.delete(table, &b.key)
        });
        self.keys = b;
        done
    }

    // -- documents ----------------------------------------------------------------------------
    /// Writes a new document: record, `_id` entry, index entries, oplog entry. Returns its
    /// record id and size.
    pub(super) fn insert_one(&mut self, coll: &Arc<Collection>, doc: &Document) -> Result<(i64, i64)> {
        self.insert_fields(coll, &Fields::of(doc))
    }

    /// `insert_one` of a document given as its fields (an upsert's new document is never built).
    /// A document without `_id` gets a new ObjectId, first, as mongod gives it
    /// (fixDocumentForInsert); the oplog's entries get none (it has no `_id` index).
    pub(super) fn insert_fields(&mut self, coll: &Arc<Collection>, doc: &Fields) -> Result<(i64, i64)> {
        let generated = (coll.id_index.is_some() && doc.get("_id").is_none())
            .then(|| Bson::ObjectId(bson::oid::ObjectId::new()));
        let id = generated.as_ref().or_else(|| doc.get("_id"));
        let raw = doc.encode(id)?;
        let rid = self.next_record_id(coll, raw.len() as i64)?;
        if let Some(id) = id {
            self.put_id_entry(coll, id, rid)?;
        }
        self.finish_insert(coll, doc, generated.as_ref(), rid, raw)
    }

    pub(super) fn next_record_id(&mut self, coll: &Arc<Collection>, size: i64) -> Result<i64> {
        Ok(match &coll.capped {
            Some(capped) if capped.is_ring() => capped::ring_place(self, coll, size)?,
            // Deleters that start where their last pass ended must know which ids are still open.
            Some(capped) if !capped.background || self.store.oplog_trim.as_ref().is_some_and(|t| t.needs_open_entries()) => {
                let rid = capped.allocate(&coll.next_id);
                self.capped_allocated.push((coll.clone(), rid)); // released as the transaction ends
                rid
            }
            _ => coll.next_id.fetch_add(1, Ordering::Relaxed),
        })
    }

    /// The index entries, the record and the oplog entry of a new document.
    pub(super) fn finish_insert(&mut self, coll: &Arc<Collection>, doc: &Fields, generated_id: Option<&Bson>, rid: i64,
                     raw: Vec<u8>) -> Result<(i64, i64)> {
        for index in coll.indexes().iter() {
            self.put_index_entry(index, doc, generated_id, rid)?;
        }
        let size = self.put_record(coll, rid, &raw)?;
        self.log("i", coll, document::raw_ref(&raw)?, None)?;
        Ok((rid, size))
    }

    /// Stores a new record's bytes and counts it (and, in a capped collection, its space). Its
    /// record id was just allocated, so no other transaction can be writing it (put_unregistered).
    pub(super) fn put_record(&mut self, coll: &Arc<Collection>, rid: i64, raw: &[u8]) -> Result<i64> {
        let size = raw.len() as i64;
        self.kv.put_unregistered(coll.records, &keys::record_key(rid), raw)?;
        if let Some(capped) = &coll.capped {
            if capped.background {
                if let Some(trim) = &self.store.oplog_trim {
                    trim.on_insert(self.kv.as_mut(), rid, size)?;
                }
            }
            self.capped_inserts.push((coll.clone(), rid, size));
        }
        self.record_deltas.push((coll.clone(), 1));
        Ok(size)
    }

    /// Writes a document's new bytes over its old ones: as the engine's own in-place update where
    /// its server had one and nothing indexed changed (TokuMXse's updateWithDamages, for a
    /// same-size update), else whole, after reading the record again where the server did
    /// (updateRecord of TokuMXse, mongod 3.2's WiredTiger and MongoRocks:
    /// RecordStoreLayout::reads_record_before_write).
    pub(super) fn rewrite_record(&mut self, coll: &Collection, rid: i64, old: &[u8], new: &[u8], indexed: bool) -> Result<()> {
        let key = keys::record_key(rid);
        if !indexed && old.len() == new.len() && self.kv.update_in_place(coll.records, &key, old, new)? {
            return Ok(());
        }
        self.read_before_write(coll, &key)?;
        self.kv.put(coll.records, &key, new)
    }

    /// The read of a record its server made before rewriting or deleting it (for a size counter).
    fn read_before_write(&mut self, coll: &Collection, key: &[u8]) -> Result<()> {
        if self.store.layout.reads_record_before_write {
            let mut stored = std::mem::take(&mut self.scratch);
            stored.clear();
            let read = self.kv.get_for_update(coll.records, key, &mut stored);
            self.scratch = stored;
            read?;
        }
        Ok(())
    }

    /// Removes a document and its index entries (not logged: callers log what they mean).
    pub(super) fn remove_record(&mut self, coll: &Arc<Collection>, rid: i64, doc: &Document) -> Result<()> {
        self.record_deltas.push((coll.clone(), -1));
        if let Some(id) = doc.get("_id") {
            self.delete_id_entry(coll, id, rid)?;
        }
        let fields = Fields::of(doc);
        for index in coll.indexes().iter() {
            self.delete_index_entry(index, &fields, rid)?;
        }
        let key = keys::record_key(rid);
        self.read_before_write(coll, &key)?;
        self.kv.delete(coll.records, &key)
    }

    /// Appends the oplog entry of a write, in its transaction: built from the write's own bytes
    /// (`o`, `o2`), never from a copy of its document.
    pub(super) fn log(&mut self, op: &str, coll: &Collection, o: &RawDocument, o2: Option<&RawDocument>) -> Result<()> {
        let Some(oplog) = self.store.oplog.clone() else { return Ok(()) };
        if coll.name == oplog::NAME {
            return Ok(());
        }
        let entry = oplog::entry(op, &coll.ns, o, o2);
        let rid = self.next_record_id(&oplog, entry.as_bytes().len() as i64)?;
        self.put_record(&oplog, rid, entry.as_bytes())?;
        Ok(())
    }
}
