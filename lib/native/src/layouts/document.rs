//! Documents and the small part of MongoDB's query language the workloads use: equality and
//! `$lt` filters, `$set`, `$inc`, `$setOnInsert` and replacement updates, and projections.
use bson::{Bson, Document, RawDocument, RawDocumentBuf};

pub use crate::calls::{as_i64, int};
use crate::calls::{Cond, Filter, Update};
use crate::error::{Error, Result};
use super::fields::Fields;

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
        for (k, v) in replacement.iter() {
            if k != "_id" {
                after.insert(k, v.clone());
            }
        }
        return Ok((after, true));
    }
    let mut after = before.clone();
    let mut modified = false;
    if let Some(set) = &update.set {
        for (k, v) in set.iter() {
            if !after.get(k).is_some_and(|current| values_equal(current, v)) {
                modified = true;
                after.insert(k, v.clone());
            }
        }
    }
    if let Some(inc) = &update.inc {
        for (k, d) in inc.iter() {
            let value = add(after.get(k), d)?;
            if after.get(k) != Some(&value) {
                modified = true;
                after.insert(k, value);
            }
        }
    }
    Ok((after, modified))
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

/// An empty document in a buffer that holds `capacity` bytes before it reallocates: for a
/// document whose size is known (or bounded) before it is written.
pub fn with_capacity(capacity: usize) -> RawDocumentBuf {
    let mut bytes = Vec::with_capacity(capacity.max(5));
    bytes.extend_from_slice(&[5, 0, 0, 0, 0]); // its length, 5, and the terminating 0
    RawDocumentBuf::from_bytes(bytes).expect("the empty document is valid BSON")
}

pub fn raw_ref(bytes: &[u8]) -> Result<&RawDocument> {
    Ok(RawDocument::from_bytes(bytes)?)
}

/// A projection of stored bytes: the named fields, in the order named, a missing one left out;
/// read from the bytes and copied as they are (the document is never decoded).
pub fn project(stored: &[u8], fields: &[String]) -> Result<RawDocumentBuf> {
    let doc = raw_ref(stored)?;
    // Never larger than the stored document: sized once, not grown field by field.
    let mut out = with_capacity(stored.len());
    for field in fields {
        if let Some(value) = doc.get(field)? {
            out.append(<&bson::raw::CStr>::try_from(field.as_str())?, value);
        }
    }
    Ok(out)
}

/// `{_id: <id>}`, an oplog entry's `o2` (and a delete's `o`).
pub fn id_only(id: Option<&Bson>) -> Result<RawDocumentBuf> {
    let fields = Fields::from_pairs(vec![("_id", id.unwrap_or(&Bson::Null))]);
    raw(fields.encode(None)?)
}

/// An update's modifiers as its oplog entry records them: `{$set: {...}, $inc: {...}}`.
pub fn modifiers(update: &Update) -> Result<RawDocumentBuf> {
    let mut doc = RawDocumentBuf::new();
    for (name, part) in [("$set", &update.set), ("$inc", &update.inc)] {
        let fields = Fields::from_pairs(part.iter().flat_map(|p| p.iter()).collect());
        doc.append(<&bson::raw::CStr>::try_from(name)?, raw(fields.encode(None)?)?);
    }
    Ok(doc)
}
