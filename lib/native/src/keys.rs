//! Index keys in the shape of mongod's KeyString (V0, key_string.cpp in r3.0.7 / r3.2.0), and
//! record-id keys.
//!
//! An index key is its field values, each a type byte followed by the value, then an end byte;
//! byte order equals MongoDB's order of the values (numbers of every type compare by value).
//! Numbers take as many bytes as their magnitude needs, as in mongod, so index sizes and prefix
//! compression behave as there: the type byte says the sign and the byte count, and the
//! magnitude's low bit says whether an 8-byte fraction follows. Descending fields are stored
//! with every byte inverted. A standard (non-unique) index appends the record id in mongod's
//! variable-length form (2 to 9 bytes, its length readable from the last byte); a unique index
//! keeps the record id in the value. What the key cannot say about a number's BSON type
//! (int32, int64 or double) is kept as "type bits" in the value, as mongod does, so an
//! index-only (covered) read returns the types that were stored. The type-byte values are
//! mongod's; the number layout follows the same principles but is not byte-identical.
use bson::{spec::BinarySubtype, Binary, Bson};

use crate::error::{Error, Result};

const NULLISH: u8 = 20;
const NUMERIC_NAN: u8 = 30;
const NUMERIC_NEGATIVE_LARGE: u8 = 31;
const NUMERIC_ZERO: u8 = 41;
const NUMERIC_POSITIVE_LARGE: u8 = 51;
const STRING: u8 = 60;
const BINDATA: u8 = 90;
const OID: u8 = 100;
const BOOL_FALSE: u8 = 110;
const BOOL_TRUE: u8 = 111;
const DATE: u8 = 120;
pub const END: u8 = 4;

const TWO_63: f64 = 9_223_372_036_854_775_808.0;

// Type bits: how to turn a number back into its BSON type.
const TB_INT32: u8 = 0;
const TB_INT64: u8 = 1;
const TB_DOUBLE: u8 = 2;

/// A record id as an 8-byte key whose byte order is the ids' numeric order.
#[inline]
pub fn record_key(id: i64) -> [u8; 8] {
    ((id as u64) ^ (1 << 63)).to_be_bytes()
}

#[inline]
pub fn record_id(key: &[u8]) -> i64 {
    let mut raw = [0u8; 8];
    raw.copy_from_slice(&key[..8]);
    (u64::from_be_bytes(raw) ^ (1 << 63)) as i64
}

/// Appends mongod's variable-length record id (KeyString::appendRecordId): the count of extra
/// bytes (0-7) in the high 3 bits of the first byte and the low 3 bits of the last, the value
/// big-endian across them (5 + 8*extra + 5 bits).
pub fn append_record_id(out: &mut Vec<u8>, id: i64) {
    let raw = id as u64;
    let bits = 64 - raw.leading_zeros() as usize;
    let extra = if bits <= 10 { 0 } else { (bits - 10).div_ceil(8) };
    out.push(((extra as u8) << 5) | ((raw >> (5 + 8 * extra)) & 0x1f) as u8);
    for i in (0..extra).rev() {
        out.push((raw >> (5 + 8 * i)) as u8);
    }
    out.push((((raw & 0x1f) << 3) as u8) | extra as u8);
}

/// The record id at the start of a unique index's value, and the bytes it took.
pub fn read_record_id(value: &[u8]) -> (i64, usize) {
    let extra = (value[0] >> 5) as usize;
    let mut raw = (value[0] & 0x1f) as u64;
    for &b in &value[1..1 + extra] {
        raw = (raw << 8) | b as u64;
    }
    raw = (raw << 5) | (value[1 + extra] >> 3) as u64;
    (raw as i64, extra + 2)
}

/// The record id at the end of a standard index key, and the length of the key before it.
pub fn split_record_id(key: &[u8]) -> (usize, i64) {
    let last = key[key.len() - 1];
    let extra = (last & 0x7) as usize;
    let start = key.len() - 2 - extra;
    let mut raw = (key[start] & 0x1f) as u64;
    for &b in &key[start + 1..key.len() - 1] {
        raw = (raw << 8) | b as u64;
    }
    raw = (raw << 5) | (last >> 3) as u64;
    (start, raw as i64)
}

/// Encodes one value; `tb` collects its type bits.
fn append_value(out: &mut Vec<u8>, value: &Bson, tb: &mut Vec<u8>) -> Result<()> {
    match value {
        Bson::Null | Bson::Undefined => out.push(NULLISH),
        Bson::Int32(v) => {
            append_number(out, *v as f64, Some(*v as i64));
            tb.push(TB_INT32);
        }
        Bson::Int64(v) => {
            append_number(out, *v as f64, Some(*v));
            tb.push(TB_INT64);
        }
        Bson::Double(v) => {
            append_number(out, *v, None);
            tb.push(TB_DOUBLE);
        }
        Bson::String(s) => {
            out.push(STRING);
            append_escaped(out, s.as_bytes());
        }
        Bson::Binary(b) => {
            out.push(BINDATA);
            let len = b.bytes.len();
            if len < 0xff {
                out.push(len as u8);
            } else {
                out.push(0xff);
                out.extend_from_slice(&(len as u32).to_be_bytes());
            }
            out.push(u8::from(b.subtype));
            out.extend_from_slice(&b.bytes);
        }
        Bson::ObjectId(oid) => {
            out.push(OID);
            out.extend_from_slice(&oid.bytes());
        }
        Bson::Boolean(b) => out.push(if *b { BOOL_TRUE } else { BOOL_FALSE }),
        Bson::DateTime(d) => {
            out.push(DATE);
            out.extend_from_slice(&record_key(d.timestamp_millis()));
        }
        other => return Err(Error::other(format!("cannot use a value of type {:?} in an index key", other.element_type()))),
    }
    Ok(())
}

fn append_escaped(out: &mut Vec<u8>, bytes: &[u8]) {
    for &b in bytes {
        out.push(b);
        if b == 0 {
            out.push(0xff);
        }
    }
    out.push(0);
}

/// A number: `exact` carries an integer's exact value (an f64 cannot hold every int64).
fn append_number(out: &mut Vec<u8>, x: f64, exact: Option<i64>) {
    if x.is_nan() {
        out.push(NUMERIC_NAN);
        return;
    }
    let negative = match exact { Some(v) => v < 0, None => x < 0.0 };
    let (magnitude, fraction): (u64, f64) = match exact {
        Some(0) => {
            out.push(NUMERIC_ZERO);
            return;
        }
        Some(v) => (v.unsigned_abs(), 0.0),
        None => {
            let a = x.abs();
            if a == 0.0 {
                out.push(NUMERIC_ZERO);
                return;
            }
            if a >= TWO_63 {
                let bits = a.to_bits().to_be_bytes();
                if negative {
                    out.push(NUMERIC_NEGATIVE_LARGE);
                    out.extend(bits.iter().map(|b| !b));
                } else {
                    out.push(NUMERIC_POSITIVE_LARGE);
                    out.extend_from_slice(&bits);
                }
                return;
            }
            let whole = a.trunc();
            (whole as u64, a - whole)
        }
    };
    if magnitude >= 1 << 63 {
        // i64::MIN: beyond what the shifted form holds; stored like a large double.
        out.push(if negative { NUMERIC_NEGATIVE_LARGE } else { NUMERIC_POSITIVE_LARGE });
        let bits = TWO_63.to_bits().to_be_bytes();
        out.extend(bits.iter().map(|b| if negative { !b } else { *b }));
        return;
    }
    let has_fraction = fraction != 0.0;
    let shifted = (magnitude << 1) | has_fraction as u64;
    let width = (8 - (shifted.leading_zeros() / 8) as usize).max(1);
    let start = out.len();
    out.push(if negative { 40 - width as u8 } else { 42 + width as u8 });
    out.extend_from_slice(&shifted.to_be_bytes()[8 - width..]);
    if has_fraction {
        out.extend_from_slice(&fraction.to_bits().to_be_bytes());
    }
    if negative {
        for b in &mut out[start + 1..] {
            *b = !*b;
        }
    }
}

/// The key of `values` under an index with these directions (1 / -1), ending with END; the
/// values' type bits go to `tb`.
pub fn encode(values: &[&Bson], directions: &[i8], tb: &mut Vec<u8>) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(16 * values.len() + 10);
    encode_into(&mut out, values, directions, tb)?;
    Ok(out)
}

/// `encode` into a caller's buffer (cleared first), so the write path reuses one buffer per
/// thread instead of allocating a key per index entry.
pub fn encode_into(out: &mut Vec<u8>, values: &[&Bson], directions: &[i8], tb: &mut Vec<u8>) -> Result<()> {
    out.clear();
    append_fields(out, values, directions, tb)?;
    out.push(END);
    Ok(())
}

/// The fields alone (no END): a prefix for range scans.
pub fn append_fields(out: &mut Vec<u8>, values: &[&Bson], directions: &[i8], tb: &mut Vec<u8>) -> Result<()> {
    for (i, value) in values.iter().enumerate() {
        let start = out.len();
        append_value(out, value, tb)?;
        if directions.get(i).copied().unwrap_or(1) < 0 {
            for b in &mut out[start..] {
                *b = !*b;
            }
        }
    }
    Ok(())
}

/// Type bits as stored in an index value: nothing when every number decodes to its own type
/// by default (integers to int32 when they fit, else int64; fractions to double), else a
/// count byte (high bit set) and one code per number.
/// Appended to an index value being built (after its record id, if any).
pub fn append_type_bits_value(out: &mut Vec<u8>, tb: &[u8], values: &[&Bson]) {
    let default_ok = values.iter().all(|v| match v {
        Bson::Int32(_) => true,
        Bson::Int64(x) => i32::try_from(*x).is_err(),
        Bson::Double(x) => x.fract() != 0.0 && x.abs() < TWO_63 && !x.is_nan(),
        _ => true,
    });
    if !default_ok {
        out.push(0x80 | tb.len() as u8);
        out.extend_from_slice(tb);
    }
}

/// Decodes an ascending key's fields (up to END); `type_bits` as stored in the value.
pub fn decode(key: &[u8], type_bits: &[u8]) -> Result<Vec<Bson>> {
    let codes: &[u8] = if type_bits.first().map(|b| b & 0x80 != 0).unwrap_or(false) { &type_bits[1..] } else { &[] };
    let mut numbers = 0usize;
    let mut values = Vec::new();
    let mut pos = 0;
    while pos < key.len() && key[pos] != END {
        let tag = key[pos];
        pos += 1;
        let value = match tag {
            NULLISH => Bson::Null,
            NUMERIC_NAN..=NUMERIC_POSITIVE_LARGE => {
                let (x, exact, used) = decode_number(tag, &key[pos..])?;
                pos += used;
                let code = codes.get(numbers).copied();
                numbers += 1;
                number_bson(x, exact, code)
            }
            STRING => {
                let (bytes, used) = unescape(&key[pos..])?;
                pos += used;
                Bson::String(String::from_utf8(bytes).map_err(|_| Error::other("index key: invalid UTF-8 string"))?)
            }
            BINDATA => {
                let (len, head) = if key[pos] < 0xff {
                    (key[pos] as usize, 1)
                } else {
                    (u32::from_be_bytes(key[pos + 1..pos + 5].try_into().unwrap()) as usize, 5)
                };
                let subtype = BinarySubtype::from(key[pos + head]);
                let start = pos + head + 1;
                pos = start + len;
                Bson::Binary(Binary { subtype, bytes: key[start..start + len].to_vec() })
            }
            OID => {
                let mut raw = [0u8; 12];
                raw.copy_from_slice(&key[pos..pos + 12]);
                pos += 12;
                Bson::ObjectId(bson::oid::ObjectId::from_bytes(raw))
            }
            BOOL_FALSE => Bson::Boolean(false),
            BOOL_TRUE => Bson::Boolean(true),
            DATE => {
                let ms = record_id(&key[pos..pos + 8]);
                pos += 8;
                Bson::DateTime(bson::DateTime::from_millis(ms))
            }
            other => return Err(Error::other(format!("index key: unknown type byte {other} at offset {}", pos - 1))),
        };
        values.push(value);
    }
    Ok(values)
}

fn number_bson(x: f64, exact: Option<i64>, code: Option<u8>) -> Bson {
    match (code, exact) {
        (Some(TB_DOUBLE), _) | (_, None) => Bson::Double(x),
        (Some(TB_INT64), Some(v)) => Bson::Int64(v),
        (Some(TB_INT32), Some(v)) => Bson::Int32(v as i32),
        (_, Some(v)) => i32::try_from(v).map(Bson::Int32).unwrap_or(Bson::Int64(v)),
    }
}

/// (value as f64, exact integer if it has no fraction, bytes used after the type byte)
fn decode_number(tag: u8, rest: &[u8]) -> Result<(f64, Option<i64>, usize)> {
    match tag {
        NUMERIC_NAN => Ok((f64::NAN, None, 0)),
        NUMERIC_ZERO => Ok((0.0, Some(0), 0)),
        NUMERIC_POSITIVE_LARGE | NUMERIC_NEGATIVE_LARGE => {
            let negative = tag == NUMERIC_NEGATIVE_LARGE;
            let mut raw = [0u8; 8];
            raw.copy_from_slice(&rest[..8]);
            if negative {
                raw.iter_mut().for_each(|b| *b = !*b);
            }
            let a = f64::from_bits(u64::from_be_bytes(raw));
            Ok((if negative { -a } else { a }, None, 8))
        }
        32..=39 | 43..=50 => {
            let negative = tag < NUMERIC_ZERO;
            let width = if negative { (40 - tag) as usize } else { (tag - 42) as usize };
            let flip = |b: u8| if negative { !b } else { b };
            let mut shifted = 0u64;
            for &b in &rest[..width] {
                shifted = (shifted << 8) | flip(b) as u64;
            }
            let magnitude = shifted >> 1;
            let mut used = width;
            let mut fraction = 0.0;
            if shifted & 1 == 1 {
                let mut raw = [0u8; 8];
                for (i, b) in rest[width..width + 8].iter().enumerate() {
                    raw[i] = flip(*b);
                }
                fraction = f64::from_bits(u64::from_be_bytes(raw));
                used += 8;
            }
            let a = magnitude as f64 + fraction;
            let x = if negative { -a } else { a };
            let exact = if fraction == 0.0 { Some(if negative { -(magnitude as i64) } else { magnitude as i64 }) } else { None };
            Ok((x, exact, used))
        }
        _ => Err(Error::other(format!("index key: unknown numeric type byte {tag}"))),
    }
}

fn unescape(rest: &[u8]) -> Result<(Vec<u8>, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        let b = *rest.get(i).ok_or_else(|| Error::other("index key: unterminated string"))?;
        if b == 0 {
            if rest.get(i + 1) == Some(&0xff) {
                out.push(0);
                i += 2;
                continue;
            }
            return Ok((out, i + 1));
        }
        out.push(b);
        i += 1;
    }
}

/// The smallest key greater than every key that starts with `prefix` (None: no bound).
pub fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut out = prefix.to_vec();
    while let Some(last) = out.pop() {
        if last != 0xff {
            out.push(last + 1);
            return Some(out);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(v: Bson) -> Vec<u8> {
        encode(&[&v], &[1], &mut Vec::new()).unwrap()
    }

    #[test]
    fn numbers_sort_by_value_across_types() {
        let values = [Bson::Double(f64::NEG_INFINITY), Bson::Int64(-(1 << 40)), Bson::Int32(-300), Bson::Double(-1.5),
                      Bson::Int32(-1), Bson::Double(-0.25), Bson::Int32(0), Bson::Double(0.25), Bson::Int32(1),
                      Bson::Double(1.5), Bson::Int32(2), Bson::Int32(255), Bson::Int64(1 << 40), Bson::Double(1e19),
                      Bson::Double(f64::INFINITY)];
        let keys: Vec<Vec<u8>> = values.iter().cloned().map(key).collect();
        for pair in keys.windows(2) {
            assert!(pair[0] < pair[1], "{pair:?}");
        }
        assert_eq!(key(Bson::Int32(5)), key(Bson::Int64(5)));
        assert_eq!(key(Bson::Int32(5)), key(Bson::Double(5.0)));
    }

    #[test]
    fn decodes_what_it_encodes_with_types() {
        let values = [Bson::Int32(7), Bson::Int64(7), Bson::Int64(1 << 40), Bson::Double(2.0), Bson::Double(-3.75),
                      Bson::String("a\0b".into()), Bson::Null, Bson::Boolean(true),
                      Bson::Binary(Binary { subtype: BinarySubtype::Generic, bytes: vec![0, 1, 255] })];
        let refs: Vec<&Bson> = values.iter().collect();
        let mut tb = Vec::new();
        let k = encode(&refs, &[1; 9], &mut tb).unwrap();
        let mut bits = Vec::new();
        append_type_bits_value(&mut bits, &tb, &refs);
        let back = decode(&k, &bits).unwrap();
        assert_eq!(back, values.to_vec());
    }

    #[test]
    fn record_ids_round_trip_in_order() {
        let ids = [1i64, 2, 31, 1023, 1024, 1 << 20, 1 << 40, i64::MAX];
        let mut last = Vec::new();
        for id in ids {
            let mut k = vec![1, 2, 3];
            append_record_id(&mut k, id);
            assert_eq!(split_record_id(&k), (3, id));
            assert_eq!(read_record_id(&k[3..]), (id, k.len() - 3));
            assert!(k[3..] > last[..], "{id}");
            last = k[3..].to_vec();
        }
    }

    #[test]
    fn descending_fields_reverse_order() {
        let a = encode(&[&Bson::Int32(1)], &[-1], &mut Vec::new()).unwrap();
        let b = encode(&[&Bson::Int32(2)], &[-1], &mut Vec::new()).unwrap();
        assert!(b < a);
    }
}
