//! Documents and the small part of MongoDB's query language the workloads use: equality and
//! `$lt` filters, `$set`, `$inc`, `$setOnInsert` and replacement updates, and projections.
use bson::oid::ObjectId;
use bson::{Bson, Document, RawDocument, RawDocumentBuf};

pub use crate::calls::{as_i64, int};
use crate::calls::{Cond, Filter, Update};
use crate::error::{Error, Result};

fn numeric(v: &Bson) -> Option<f64> {
    match v {
        Bson::Int32(x) => Some(*x as f64),
        Bson::Int64(x) => Some(*x as f64),
        Bson::Double(x) => Some(*x),
        _ => None,
    }
}

/// MongoDB equality: numbers by value whatever their type; everything else exactly.
pub fn values_equal(a: &Bson, b: &Bson) -> bool {
    match (numeric(a), numeric(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

pub fn matches(doc: &Document, filter: &Filter) -> bool {
    filter.iter().all(|(field, cond)| {
        let value = doc.get(field);
        match cond {
            Cond::Eq(want) => match value {
                Some(v) => values_equal(v, want),
                None => matches!(want, Bson::Null),
            },
            Cond::Lt(bound) => match (value.and_then(numeric), numeric(bound)) {
                (Some(v), Some(b)) => v < b,
                _ => false,
            },
        }
    })
}


fn add(current: Option<&Bson>, delta: &Bson) -> Result<Bson> {
    Ok(match (current, delta) {
        (None, d) => d.clone(),
        (Some(Bson::Int32(a)), Bson::Int32(b)) => match a.checked_add(*b) {
            Some(v) => Bson::Int32(v),
            None => Bson::Int64(*a as i64 + *b as i64),
        },
        (Some(a), b) => match (a, b) {
            (Bson::Double(_), _) | (_, Bson::Double(_)) => Bson::Double(numeric(a).unwrap_or(0.0) + numeric(b).unwrap_or(0.0)),
            _ => {
                let (x, y) = (as_i64(Some(a)), as_i64(Some(b)));
                match (x, y) {
                    (Some(x), Some(y)) => Bson::Int64(x + y),
                    _ => return Err(Error::other(format!("$inc: cannot add {b} to a non-number {a}"))),
                }
            }
        },
    })
}

/// The document after the update (the `_id` never changes), and whether the update changed
/// anything. As mongod 3.2's modifiers decide (mongo@r3.2.0 src/mongo/db/ops/modifier_set.cpp,
/// modifier_inc.cpp): a `$set` to a value equal to the current one (numbers by value, whatever
/// their type) and an `$inc` whose result is identical (same type and value) are no-ops; an
/// update whose every modifier is a no-op writes nothing (UpdateStage writes only when
/// docWasModified). A replacement is compared with the stored bytes by the caller
/// (ModifierObjectReplace: binaryEqual).
pub fn apply(before: &Document, update: &Update) -> Result<(Document, bool)> {
    if let Some(replacement) = &update.replace {
        let mut after = Document::new();
        if let Some(id) = before.get("_id") {
            after.insert("_id", id.clone());
        }
        for (k, v) in replacement {
            if k != "_id" {
                after.insert(k.clone(), v.clone());
            }
        }
        return Ok((after, true));
    }
    let mut after = before.clone();
    let mut modified = false;
    if let Some(set) = &update.set {
        for (k, v) in set {
            if !after.get(k).is_some_and(|current| values_equal(current, v)) {
                modified = true;
                after.insert(k.clone(), v.clone());
            }
        }
    }
    if let Some(inc) = &update.inc {
        for (k, d) in inc {
            let value = add(after.get(k), d)?;
            if after.get(k) != Some(&value) {
                modified = true;
                after.insert(k.clone(), value);
            }
        }
    }
    Ok((after, modified))
}

/// The document an upsert inserts: the key's fields, the filter's equalities, then
/// $setOnInsert, $set and $inc (or the replacement), as mongod builds it.
pub fn upsert_document(key_fields: &[String], key: &[Bson], update: &Update) -> Document {
    let mut doc = Document::new();
    for (field, value) in key_fields.iter().zip(key) {
        doc.insert(field.clone(), value.clone());
    }
    for (field, cond) in &update.filter {
        if let Cond::Eq(v) = cond {
            doc.insert(field.clone(), v.clone());
        }
    }
    if let Some(replacement) = &update.replace {
        for (k, v) in replacement {
            doc.insert(k.clone(), v.clone());
        }
    } else {
        for part in [&update.set_on_insert, &update.set, &update.inc].into_iter().flatten() {
            for (k, v) in part {
                doc.insert(k.clone(), v.clone());
            }
        }
    }
    doc
}

/// Decodes a stored document.
pub fn decode(raw: &[u8]) -> Result<Document> {
    Ok(Document::from_reader(raw)?)
}

pub fn encode(doc: &Document) -> Result<Vec<u8>> {
    Ok(doc.to_vec()?)
}

pub fn raw(bytes: Vec<u8>) -> Result<RawDocumentBuf> {
    Ok(RawDocumentBuf::from_bytes(bytes)?)
}

pub fn raw_ref(bytes: &[u8]) -> Result<&RawDocument> {
    Ok(RawDocument::from_bytes(bytes)?)
}

/// A document without `_id` encoded with this one first: its own encoding with the `_id`
/// element spliced in after the length (BSON: int32 total length, the elements, a 0 byte),
/// so the document is not copied field by field to put a field in front.
pub fn encode_with_id(doc: &Document, id: &ObjectId) -> Result<Vec<u8>> {
    const ID_ELEMENT: &[u8] = b"\x07_id\0"; // type 7 (ObjectId), the key as a C string
    let body = doc.to_vec()?;
    let total = body.len() + ID_ELEMENT.len() + 12;
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(&(total as i32).to_le_bytes());
    out.extend_from_slice(ID_ELEMENT);
    out.extend_from_slice(&id.bytes());
    out.extend_from_slice(&body[4..]);
    Ok(out)
}

/// `{_id: <id>}`, an oplog entry's `o2` (and a delete's `o`).
pub fn id_only(id: Option<&Bson>) -> Result<RawDocumentBuf> {
    let mut doc = Document::new();
    doc.insert("_id", id.cloned().unwrap_or(Bson::Null));
    Ok(RawDocumentBuf::try_from(&doc)?)
}

/// An update's modifiers as its oplog entry records them: `{$set: {...}, $inc: {...}}`.
pub fn modifiers(update: &Update) -> Result<RawDocumentBuf> {
    let mut doc = Document::new();
    doc.insert("$set", update.set.clone().unwrap_or_default());
    doc.insert("$inc", update.inc.clone().unwrap_or_default());
    Ok(RawDocumentBuf::try_from(&doc)?)
}

/// `_id` first, as mongod stores it (it moves `_id` to the front when a client did not).
pub fn with_id_first(doc: &Document) -> Option<Document> {
    match doc.keys().next() {
        Some(k) if k == "_id" => None,
        _ if doc.contains_key("_id") => {
            let mut out = Document::new();
            out.insert("_id", doc.get("_id").unwrap().clone());
            for (k, v) in doc {
                if k != "_id" {
                    out.insert(k.clone(), v.clone());
                }
            }
            Some(out)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    #[test]
    fn an_id_spliced_in_front_reads_back_as_the_document_with_it_first() {
        let id = ObjectId::new();
        let doc = doc! {"id1": 7i64, "data": "x", "nested": {"a": 1}};
        let bytes = encode_with_id(&doc, &id).unwrap();
        let back = decode(&bytes).unwrap();
        assert_eq!(back.keys().collect::<Vec<_>>(), ["_id", "id1", "data", "nested"]);
        assert_eq!(back, doc! {"_id": id, "id1": 7i64, "data": "x", "nested": {"a": 1}});
        // The same bytes the bson crate writes for that document.
        assert_eq!(bytes, encode(&back).unwrap());
    }
}
