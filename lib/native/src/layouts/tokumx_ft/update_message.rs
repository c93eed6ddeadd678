//! TokuMX 2.x's update messages: what an update that changes no indexed field sends to the `_id`
//! dictionary instead of the new document, and the callback that applies it when the engine
//! reaches the document (storage/env.cpp update_callback, ops/update.cpp ApplyUpdateMessage at
//! tokumx-2.0.1): `{t: "u", o: <the update's modifiers>, f: <flags>}`.
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicU64, Ordering};

use bson::{Bson, Document, RawDocumentBuf};

use crate::calls::{Assign, Update};
use crate::engines::fractal::Fractal;
use crate::error::Result;
use crate::layouts::document;
use crate::layouts::fields::Fields;

/// The message was sent without reading the document (fastUpdates): an error applying it is
/// counted and swallowed, as TokuMX counted fastUpdates.errors.
pub const FAST_UPDATE_PERFORMED: i32 = 1;
/// A missing document is no error (fastUpdates on the primary key): nothing is created.
pub const NO_OLDOBJ_OK: i32 = 2;

static ERRORS: AtomicU64 = AtomicU64::new(0);

/// Messages that could not be applied (TokuMX's fastUpdates.errors).
pub fn errors() -> u64 {
    ERRORS.load(Ordering::Relaxed)
}

/// The update's modifiers as the client sent them: `{$set: {...}}`, `{$inc: {...}}` or both.
pub fn modifiers(update: &Update) -> Result<RawDocumentBuf> {
    let mut doc = RawDocumentBuf::new();
    for (name, part) in [("$set", &update.set), ("$inc", &update.inc)] {
        if let Some(part) = part.as_ref().filter(|p| !p.is_empty()) {
            let fields = Fields::from_pairs(part.iter().collect());
            doc.append(<&bson::raw::CStr>::try_from(name)?, document::raw(fields.encode(None)?)?);
        }
    }
    Ok(doc)
}

pub fn message(mods: &RawDocumentBuf, flags: i32) -> Result<Vec<u8>> {
    Ok(bson::rawdoc! {"t": "u", "o": mods.clone(), "f": flags}.into_bytes())
}

/// The modifiers of a message as an Update ($set and $inc, the ones the workloads send).
fn update_of(mods: &Document) -> Update {
    let part = |name: &str| mods.get_document(name).ok().filter(|d| !d.is_empty()).map(|d| Assign::from(d.clone()));
    Update { set: part("$set"), inc: part("$inc"), ..Default::default() }
}

/// The new document for `old` (None when the message leaves it as it is).
fn apply(old: Option<&[u8]>, message: &[u8]) -> std::result::Result<Option<Vec<u8>>, String> {
    let message = Document::from_reader(message).map_err(|e| format!("an unreadable update message: {e}"))?;
    let flags = match message.get("f") {
        Some(Bson::Int32(f)) => *f,
        _ => 0,
    };
    let Some(old) = old else {
        return if flags & NO_OLDOBJ_OK != 0 { Ok(None) } else { Err("an update message for a missing document".into()) };
    };
    let mods = message.get_document("o").map_err(|e| format!("an update message without modifiers: {e}"))?;
    let before = document::decode(old).map_err(|e| e.message)?;
    let (after, modified) = document::apply(&before, &update_of(mods)).map_err(|e| e.message)?;
    if !modified {
        return Ok(None);
    }
    document::encode(&after).map(Some).map_err(|e| e.message)
}

/// The engine's update callback (registered through the shim; called on the engine's threads).
pub extern "C" fn on_update(old: *const u8, old_len: usize, has_old: c_int, extra: *const u8, extra_len: usize,
                            setter: *mut c_void) -> c_int {
    let outcome = std::panic::catch_unwind(|| {
        let old = (has_old != 0).then(|| unsafe { std::slice::from_raw_parts(old, old_len) });
        let message = unsafe { std::slice::from_raw_parts(extra, extra_len) };
        apply(old, message)
    });
    match outcome {
        Ok(Ok(Some(new))) => Fractal::set_updated_value(setter, Some(&new)),
        Ok(Ok(None)) => {}
        Ok(Err(_)) | Err(_) => {
            // TokuMX swallowed (and counted) the errors of a fast update and stopped the server on
            // any other; here the document is left as it was and the error counted.
            ERRORS.fetch_add(1, Ordering::Relaxed);
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    #[test]
    fn a_message_applies_its_modifiers() {
        let old = doc! {"_id": 1, "k": 5, "c": "x"}.to_vec().unwrap();
        let update = Update { set: Some(Assign::of([("c", Bson::String("y".into()))])), inc: Some(Assign::of([("k", Bson::Int32(2))])),
                              ..Default::default() };
        let m = message(&modifiers(&update).unwrap(), 0).unwrap();
        let new = apply(Some(&old), &m).unwrap().unwrap();
        assert_eq!(Document::from_reader(new.as_slice()).unwrap(), doc! {"_id": 1, "k": 7, "c": "y"});
    }

    #[test]
    fn a_fast_update_of_a_missing_document_creates_nothing() {
        let update = Update { inc: Some(Assign::of([("k", Bson::Int32(1))])), ..Default::default() };
        let mods = modifiers(&update).unwrap();
        assert_eq!(apply(None, &message(&mods, FAST_UPDATE_PERFORMED | NO_OLDOBJ_OK).unwrap()).unwrap(), None);
        assert!(apply(None, &message(&mods, 0).unwrap()).is_err());
    }
}
