//! A document's top-level fields as borrowed (name, value) pairs, in order: what a write reads
//! its index keys from and encodes its record from. An insert and an upsert's new document are
//! written from these without first being built as a `Document` (an ordered hash map whose every
//! key is copied and hashed) and encoded from it: a write touches a handful of fields, which a
//! linear search finds sooner than a hash.
use bson::raw::CStr;
use bson::{Bson, Document, RawBson, RawBsonRef, RawDocumentBuf};
use smallvec::SmallVec;

use crate::calls::{Cond, Update};
use crate::error::Result;

pub struct Fields<'a>(Vec<(&'a str, &'a Bson)>);

impl<'a> Fields<'a> {
    pub fn from_pairs(pairs: Vec<(&'a str, &'a Bson)>) -> Self {
        Fields(pairs)
    }

    pub fn of(doc: &'a Document) -> Self {
        Fields(doc.iter().map(|(k, v)| (k.as_str(), v)).collect())
    }

    /// The document an upsert inserts: the key's fields, the filter's equalities, then
    /// $setOnInsert, $set and $inc (or the replacement), as mongod builds it. A field named twice
    /// keeps its first place and its last value (as inserting it into a Document again does).
    pub fn upsert(key_fields: &'a [String], key: &'a [Bson], update: &'a Update) -> Self {
        let mut fields = Fields(Vec::with_capacity(16));
        for (field, value) in key_fields.iter().zip(key) {
            fields.set(field, value);
        }
        for (field, cond) in &update.filter {
            if let Cond::Eq(value) = cond {
                fields.set(field, value);
            }
        }
        let parts = match &update.replace {
            Some(replacement) => [Some(replacement), None, None],
            None => [update.set_on_insert.as_ref(), update.set.as_ref(), update.inc.as_ref()],
        };
        for part in parts.into_iter().flatten() {
            for (field, value) in part.iter() {
                fields.set(field, value);
            }
        }
        fields
    }

    fn set(&mut self, name: &'a str, value: &'a Bson) {
        match self.0.iter_mut().find(|(n, _)| *n == name) {
            Some(slot) => slot.1 = value,
            None => self.0.push((name, value)),
        }
    }

    pub fn get(&self, name: &str) -> Option<&'a Bson> {
        self.0.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
    }

    /// The values of an index's fields (Null for a missing one); `id` stands for an `_id` the
    /// document is being given as it is inserted. Inline up to four fields: no allocation per
    /// index entry written.
    pub fn key_values(&self, id: Option<&'a Bson>, names: &[String]) -> SmallVec<[&'a Bson; 4]> {
        const NULL: &Bson = &Bson::Null;
        names.iter().map(|n| self.get(n).or(if n == "_id" { id } else { None }).unwrap_or(NULL)).collect()
    }

    /// The stored bytes: with an `id`, `_id` first and then every other field in order, as
    /// mongod stores a document (fixDocumentForInsert moves or adds `_id` in front); without
    /// one, the fields as they are. The same bytes as encoding the equivalent Document.
    pub fn encode(&self, id: Option<&Bson>) -> Result<Vec<u8>> {
        let mut out = super::document::with_capacity(self.0.len() * 24 + 32);
        if let Some(id) = id {
            append(&mut out, "_id", id)?;
        }
        for (name, value) in &self.0 {
            if id.is_none() || *name != "_id" {
                append(&mut out, name, value)?;
            }
        }
        Ok(out.into_bytes())
    }
}

/// Appends one element, borrowing the value's bytes where the value has them (no copy of a
/// string or binary); a nested document or array is encoded through the library.
fn append(out: &mut RawDocumentBuf, name: &str, value: &Bson) -> Result<()> {
    let key = <&CStr>::try_from(name)?;
    let borrowed = match value {
        Bson::Double(v) => RawBsonRef::Double(*v),
        Bson::String(v) => RawBsonRef::String(v),
        Bson::Boolean(v) => RawBsonRef::Boolean(*v),
        Bson::Null => RawBsonRef::Null,
        Bson::Int32(v) => RawBsonRef::Int32(*v),
        Bson::Int64(v) => RawBsonRef::Int64(*v),
        Bson::Timestamp(v) => RawBsonRef::Timestamp(*v),
        Bson::Binary(v) => RawBsonRef::Binary(v.as_raw_binary()),
        Bson::ObjectId(v) => RawBsonRef::ObjectId(*v),
        Bson::DateTime(v) => RawBsonRef::DateTime(*v),
        Bson::Decimal128(v) => RawBsonRef::Decimal128(*v),
        Bson::MaxKey => RawBsonRef::MaxKey,
        Bson::MinKey => RawBsonRef::MinKey,
        other => {
            out.append(key, RawBson::try_from(other.clone())?);
            return Ok(());
        }
    };
    out.append(key, borrowed);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{doc, oid::ObjectId};

    fn sample() -> Document {
        doc! {"a": 1, "s": "text", "b": bson::Binary { subtype: bson::spec::BinarySubtype::Generic, bytes: vec![1, 2, 3] },
              "n": Bson::Null, "d": 2.5, "l": 1i64 << 40, "t": true, "o": ObjectId::new(),
              "sub": {"x": [1, "y", {"z": 3}]}, "ts": bson::Timestamp { time: 7, increment: 9 },
              "when": bson::DateTime::from_millis(123), "max": Bson::MaxKey}
    }

    #[test]
    fn encodes_as_the_library_encodes_the_document() {
        let doc = sample();
        assert_eq!(Fields::of(&doc).encode(None).unwrap(), doc.to_vec().unwrap());
    }

    #[test]
    fn puts_the_id_first() {
        let doc = doc! {"a": 1, "_id": 5, "b": "x"};
        assert_eq!(Fields::of(&doc).encode(doc.get("_id")).unwrap(), doc! {"_id": 5, "a": 1, "b": "x"}.to_vec().unwrap());
        let id = Bson::ObjectId(ObjectId::new());
        let without_id = sample();
        let mut expected = doc! {"_id": id.clone()};
        expected.extend(without_id.clone());
        assert_eq!(Fields::of(&without_id).encode(Some(&id)).unwrap(), expected.to_vec().unwrap());
    }

    #[test]
    fn an_upsert_document_keeps_first_places_and_last_values() {
        let key_fields = vec!["k".to_string(), "j".to_string()];
        let key = vec![Bson::Int32(1), Bson::Int32(2)];
        let update = Update {
            filter: vec![("f".into(), Cond::Eq(Bson::Int32(3))), ("g".into(), Cond::Lt(Bson::Int32(4)))],
            set_on_insert: Some(doc! {"j": 20, "x": "new"}.into()),
            set: Some(doc! {"k": 10, "y": 1}.into()),
            inc: Some(doc! {"z": 1}.into()),
            upsert: true,
            ..Default::default()
        };
        let fields = Fields::upsert(&key_fields, &key, &update);
        assert_eq!(fields.encode(None).unwrap(), doc! {"k": 10, "j": 20, "f": 3, "x": "new", "y": 1, "z": 1}.to_vec().unwrap());
        let replace = Update { replace: Some(doc! {"j": 5, "r": true}.into()), set: Some(doc! {"ignored": 1}.into()),
                              ..Default::default() };
        assert_eq!(Fields::upsert(&key_fields, &key, &replace).encode(None).unwrap(),
                   doc! {"k": 1, "j": 5, "r": true}.to_vec().unwrap());
    }

    #[test]
    fn oplog_parts_are_the_documents_the_library_writes() {
        let id = Bson::Int32(4);
        assert_eq!(crate::layouts::document::id_only(Some(&id)).unwrap().as_bytes(), doc! {"_id": 4}.to_vec().unwrap());
        let update = Update { set: Some(doc! {"a": 1, "b": "x"}.into()), ..Default::default() };
        assert_eq!(crate::layouts::document::modifiers(&update).unwrap().as_bytes(),
                   doc! {"$set": {"a": 1, "b": "x"}, "$inc": {}}.to_vec().unwrap());
    }

    #[test]
    fn a_projection_of_stored_bytes_is_the_projected_document() {
        let stored = doc! {"_id": 1, "k": 5, "c": "text", "pad": "xx"}.to_vec().unwrap();
        let fields = ["c".to_string(), "missing".to_string(), "k".to_string()];
        assert_eq!(crate::layouts::document::project(&stored, &fields).unwrap().as_bytes(),
                   doc! {"c": "text", "k": 5}.to_vec().unwrap());
    }

    #[test]
    fn key_values_read_fields_the_given_id_and_null() {
        let doc = doc! {"a": 1, "b": "x"};
        let id = Bson::Int32(9);
        let values = Fields::of(&doc).key_values(Some(&id), &["b".into(), "_id".into(), "missing".into()]);
        assert_eq!(&values[..], &[&Bson::String("x".into()), &Bson::Int32(9), &Bson::Null]);
    }
}
