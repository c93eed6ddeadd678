//! TokuMX's dictionary keys: MongoDB 2.x's compact index key format (KeyV1), and a secondary
//! key's primary key appended to it in plain BSON.
//!
//! The format, from TokuMX's src/mongo/db/storage/key.cpp and key.h (tags 1.0.4 and
//! tokumx-2.0.1: KeyV1Owned's constructor, KeyV1::toBson, class Key): each of a key's values is
//! one type byte (a canonical type in the low four bits, a subtype in the next two, 0x40 when
//! another value follows) and its payload: numbers as an 8-byte little-endian double whatever
//! their BSON type (int32 and int64 keep their type in the subtype bits), strings of up to 255
//! bytes behind a length byte, ObjectIds as their 12 bytes, short binary data behind a
//! length-and-subtype byte. A key with any value the compact form cannot hold (a longer string,
//! an int64 a double cannot hold exactly in 1.x, NaN, an object...) is stored whole as BSON
//! behind an 0xFF byte ("traditional"). A secondary index's key is its KeyV1 followed directly by
//! the BSON object {"": _id}: KeyV1 says where it ends, the BSON its own length.
//!
//! Keys are compared by the comparator TokuMX installed for every dictionary (storage/env.cpp
//! dbt_key_compare), compiled into the fractal tree's shim (shim/ft_shim.c eb_ft_tokumx_compare)
//! since the engine calls it on every comparison: value by value in the index's order, numbers by
//! value, then the primary keys.
use bson::{Bson, Document};

use crate::error::{Error, Result};

const MINKEY: u8 = 0x01;
const NULL: u8 = 0x02;
const DOUBLE: u8 = 0x04;
const STRING: u8 = 0x06;
const BINDATA: u8 = 0x07;
const OID: u8 = 0x08;
const FALSE: u8 = 0x0a;
const TRUE: u8 = 0x0b;
const DATE: u8 = 0x0c;
const MAXKEY: u8 = 0x0e;
const INT: u8 = 0x10 | DOUBLE;
const LONG: u8 = 0x20 | DOUBLE;
/// TokuMX 2.x only: an int64 a double cannot hold, as itself (key.cpp at tokumx-2.0.1, cint64).
const INT64: u8 = 0x30 | DOUBLE;
const HASMORE: u8 = 0x40;
/// A key stored as BSON (KeyV1's IsBSON sentinel).
pub const IS_BSON: u8 = 0xff;
/// The magic byte of an ObjectId-only key: TokuMX 2.x compares `_id` keys that start with it by
/// memcmp in the engine (set_memcmp_magic; storage/key.cpp memcmpMagic).
pub const OID_MAGIC: u8 = OID;

/// BinData lengths the compact form holds, and their codes (key.cpp BinDataLengthToCode).
const BINDATA_LENGTHS: [usize; 16] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 24, 32];

/// Which TokuMX wrote the key: 1.x stores a long a double cannot hold as BSON, 2.x as itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavour {
    V1,
    V2,
}

/// Appends the KeyV1 of `values` (an index key's values in index order) to `out`.
pub fn encode(out: &mut Vec<u8>, values: &[&Bson], flavour: Flavour) -> Result<()> {
    let start = out.len();
    for (i, value) in values.iter().enumerate() {
        let more = if i + 1 < values.len() { HASMORE } else { 0 };
        if !compact(out, value, more, flavour) {
            out.truncate(start);
            return traditional(out, values);
        }
    }
    if values.is_empty() {
        // An empty key pattern never reaches a dictionary; keep the format's one-byte minimum.
        out.push(NULL);
    }
    Ok(())
}

/// One value in the compact form, or false when it has none.
fn compact(out: &mut Vec<u8>, value: &Bson, more: u8, flavour: Flavour) -> bool {
    match value {
        Bson::MinKey => out.push(MINKEY | more),
        Bson::Null | Bson::Undefined => out.push(NULL | more),
        Bson::MaxKey => out.push(MAXKEY | more),
        Bson::Boolean(b) => out.push(if *b { TRUE } else { FALSE } | more),
        Bson::ObjectId(oid) => {
            out.push(OID | more);
            out.extend_from_slice(&oid.bytes());
        }
        Bson::Binary(bin) => {
            let subtype = u8::from(bin.subtype);
            let code = BINDATA_LENGTHS.iter().position(|l| *l == bin.bytes.len());
            // Subtypes 0-7 (but 2, the deprecated byte array) and 0x80-0x87.
            let nibble = match subtype {
                2 => return false,
                0..=7 => subtype,
                0x80..=0x87 => (subtype - 0x80) | 0x08,
                _ => return false,
            };
            let Some(code) = code else { return false };
            out.push(BINDATA | more);
            out.push(((code as u8) << 4) | nibble);
            out.extend_from_slice(&bin.bytes);
        }
        Bson::DateTime(d) => {
            out.push(DATE | more);
            out.extend_from_slice(&d.timestamp_millis().to_le_bytes());
        }
        Bson::String(s) => {
            if s.len() > 255 {
                return false;
            }
            out.push(STRING | more);
            out.push(s.len() as u8);
            out.extend_from_slice(s.as_bytes());
        }
        Bson::Int32(v) => {
            out.push(INT | more);
            out.extend_from_slice(&(*v as f64).to_le_bytes());
        }
        Bson::Int64(v) => {
            const EXACT: i64 = 2 << 52;
            if *v >= EXACT || *v <= -EXACT {
                if flavour == Flavour::V1 {
                    return false;
                }
                out.push(INT64 | more);
                out.extend_from_slice(&v.to_le_bytes());
            } else {
                out.push(LONG | more);
                out.extend_from_slice(&(*v as f64).to_le_bytes());
            }
        }
        Bson::Double(v) => {
            if v.is_nan() {
                return false;
            }
            out.push(DOUBLE | more);
            out.extend_from_slice(&v.to_le_bytes());
        }
        _ => return false,
    }
    true
}

/// The whole key as BSON {"": v1, "": v2, ...} behind IS_BSON.
fn traditional(out: &mut Vec<u8>, values: &[&Bson]) -> Result<()> {
    out.push(IS_BSON);
    out.extend_from_slice(&pk_object(values)?);
    Ok(())
}

/// {"": v1, "": v2, ...}: the BSON object a primary key is appended to a secondary key as.
pub fn pk_object(values: &[&Bson]) -> Result<Vec<u8>> {
    let mut doc = bson::RawDocumentBuf::new();
    for value in values {
        doc.append(<&bson::raw::CStr>::try_from("")?, bson::RawBson::try_from((*value).clone())?);
    }
    Ok(doc.into_bytes())
}

/// The length of the KeyV1 at the start of `key` (KeyV1::dataSize): what follows it is a
/// secondary key's primary key.
pub fn size(key: &[u8]) -> Result<usize> {
    let bad = || Error::other(format!("a malformed TokuMX key: {key:02x?}"));
    if key.first() == Some(&IS_BSON) {
        let len = key.get(1..5).ok_or_else(bad)?;
        return Ok(1 + i32::from_le_bytes(len.try_into().unwrap()) as usize);
    }
    let mut at = 0;
    loop {
        let byte = *key.get(at).ok_or_else(bad)?;
        at += 1 + payload(byte, key.get(at + 1).copied()).ok_or_else(bad)?;
        if byte & HASMORE == 0 {
            return Ok(at);
        }
    }
}

/// The payload's length after a type byte (`next` is the byte after it).
fn payload(byte: u8, next: Option<u8>) -> Option<usize> {
    Some(match byte & 0x0f {
        MINKEY | NULL | FALSE | TRUE | MAXKEY => 0,
        DOUBLE | DATE => 8,
        OID => 12,
        STRING => 1 + next? as usize,
        BINDATA => 1 + BINDATA_LENGTHS[(next? >> 4) as usize],
        _ => return None,
    })
}

/// The values of a KeyV1 (KeyV1::toBson), and the primary key after it when there is one.
pub fn decode(key: &[u8]) -> Result<(Vec<Bson>, Option<Bson>)> {
    let end = size(key)?;
    let values = if key[0] == IS_BSON {
        // Every field is named "": read the elements in order (a Document would keep one).
        let mut values = Vec::new();
        for element in bson::RawDocument::from_bytes(&key[1..end])?.iter() {
            values.push(Bson::try_from(element?.1)?);
        }
        values
    } else {
        decode_compact(&key[..end])?
    };
    let pk = if end < key.len() {
        Some(Document::from_reader(&key[end..])?.into_iter().next().map(|(_, v)| v).unwrap_or(Bson::Null))
    } else {
        None
    };
    Ok((values, pk))
}

fn decode_compact(key: &[u8]) -> Result<Vec<Bson>> {
    let mut values = Vec::new();
    let mut at = 0;
    let f64_at = |at: usize| f64::from_le_bytes(key[at..at + 8].try_into().unwrap());
    loop {
        let byte = key[at];
        at += 1;
        let value = match byte & 0x3f {
            MINKEY => Bson::MinKey,
            NULL => Bson::Null,
            FALSE => Bson::Boolean(false),
            TRUE => Bson::Boolean(true),
            MAXKEY => Bson::MaxKey,
            DOUBLE => Bson::Double(f64_at(at)),
            INT => Bson::Int32(f64_at(at) as i32),
            LONG => Bson::Int64(f64_at(at) as i64),
            INT64 => Bson::Int64(i64::from_le_bytes(key[at..at + 8].try_into().unwrap())),
            DATE => Bson::DateTime(bson::DateTime::from_millis(i64::from_le_bytes(key[at..at + 8].try_into().unwrap()))),
            OID => Bson::ObjectId(bson::oid::ObjectId::from_bytes(key[at..at + 12].try_into().unwrap())),
            STRING => {
                let len = key[at] as usize;
                Bson::String(String::from_utf8_lossy(&key[at + 1..at + 1 + len]).into_owned())
            }
            BINDATA => {
                let code = key[at];
                let len = BINDATA_LENGTHS[(code >> 4) as usize];
                let nibble = code & 0x0f;
                let subtype = if nibble & 0x08 != 0 { 0x80 | (nibble & 0x07) } else { nibble };
                Bson::Binary(bson::Binary { subtype: subtype.into(), bytes: key[at + 1..at + 1 + len].to_vec() })
            }
            other => return Err(Error::other(format!("a TokuMX key with an unknown type byte {other:#04x}"))),
        };
        at += payload(byte, key.get(at).copied()).unwrap_or(0);
        values.push(value);
        if byte & HASMORE == 0 {
            return Ok(values);
        }
    }
}

/// A primary-key dictionary's key: the KeyV1 of {"": _id}.
pub fn primary_key(id: &Bson, flavour: Flavour) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(16);
    encode(&mut out, &[id], flavour)?;
    Ok(out)
}

/// A secondary dictionary's key: the KeyV1 of the index's values, then {"": _id} as BSON
/// (storage::Key(key, &pk)).
pub fn secondary_key(out: &mut Vec<u8>, values: &[&Bson], pk: &[u8], flavour: Flavour) -> Result<()> {
    encode(out, values, flavour)?;
    out.extend_from_slice(pk);
    Ok(())
}

/// The BSON of {"": MinKey} and {"": MaxKey}: appended to a secondary key's values, they bound
/// every entry with those values (TokuMX's cursors and unique checks: indexcursor.cpp).
pub fn min_pk() -> Vec<u8> {
    pk_object(&[&Bson::MinKey]).expect("MinKey encodes")
}

pub fn max_pk() -> Vec<u8> {
    pk_object(&[&Bson::MaxKey]).expect("MaxKey encodes")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(values: &[Bson], flavour: Flavour) -> Vec<u8> {
        let mut out = Vec::new();
        encode(&mut out, &values.iter().collect::<Vec<_>>(), flavour).unwrap();
        out
    }

    /// The worked bytes of key.cpp's format (the values KeyV1Owned writes for them).
    #[test]
    fn writes_the_compact_form() {
        assert_eq!(key(&[Bson::Int32(1)], Flavour::V1), [0x14, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f]);
        assert_eq!(key(&[Bson::String("ab".into())], Flavour::V1), [0x06, 2, b'a', b'b']);
        assert_eq!(key(&[Bson::Null], Flavour::V1), [0x02]);
        let mut compound = vec![0x44];
        compound.extend_from_slice(&1.5f64.to_le_bytes());
        compound.extend_from_slice(&[0x06, 1, b'x']);
        assert_eq!(key(&[Bson::Double(1.5), Bson::String("x".into())], Flavour::V1), compound);
        let gtid = Bson::Binary(bson::Binary { subtype: bson::spec::BinarySubtype::Generic, bytes: vec![7; 16] });
        assert_eq!(&key(&[gtid], Flavour::V1)[..2], &[0x07, 0xc0]);
    }

    #[test]
    fn falls_back_to_bson_where_1x_did() {
        let big = Bson::Int64(1 << 60);
        assert_eq!(key(&[big.clone()], Flavour::V1)[0], IS_BSON);
        assert_eq!(key(&[big.clone()], Flavour::V2)[0], INT64);
        assert_eq!(key(&[Bson::String("x".repeat(256))], Flavour::V2)[0], IS_BSON);
        for flavour in [Flavour::V1, Flavour::V2] {
            let k = key(&[Bson::Int32(3), big.clone()], flavour);
            assert_eq!(decode(&k).unwrap().0, vec![Bson::Int32(3), big.clone()]);
        }
    }

    #[test]
    fn a_secondary_key_carries_its_primary_key() {
        let id = Bson::ObjectId(bson::oid::ObjectId::new());
        let pk = pk_object(&[&id]).unwrap();
        let mut k = Vec::new();
        secondary_key(&mut k, &[&Bson::Double(7.0)], &pk, Flavour::V2).unwrap();
        assert_eq!(size(&k).unwrap(), 9);
        assert_eq!(k.len(), 9 + 19);
        assert_eq!(decode(&k).unwrap(), (vec![Bson::Double(7.0)], Some(id)));
    }

    #[test]
    fn decodes_what_it_encodes() {
        let values = vec![Bson::MinKey, Bson::Int32(-4), Bson::Int64(9), Bson::Double(2.5), Bson::String("s".into()),
                          Bson::ObjectId(bson::oid::ObjectId::new()), Bson::Boolean(true),
                          Bson::DateTime(bson::DateTime::from_millis(77)), Bson::MaxKey];
        let k = key(&values, Flavour::V1);
        assert_eq!(decode(&k).unwrap(), (values, None));
    }
}
