//! What the fractal tree's layout tests share: a store of one PerconaFT release in a folder of its
//! own, the calls it made, and keys written out byte by byte in the servers' formats. Each release
//! is its own test binary: a process loads one PerconaFT release (engines/fractal.rs).
#![allow(dead_code)]

use bson::{Bson, Document};

use enginebench_runner::engines::fractal::{self, Call};

/// Whether this runner was built with `release` (the test says so and passes when it was not:
/// a checkout whose setup has not built PerconaFT, tools/build_perconaft.sh), and a guard that
/// keeps the file's tests one at a time: PerconaFT opens one environment per process at a time.
pub fn built(release: &str) -> Option<std::sync::MutexGuard<'static, ()>> {
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    if !fractal::releases().iter().any(|(r, _)| r == release) {
        eprintln!("PerconaFT {release} is not built into this runner (make setup builds it); skipped");
        return None;
    }
    Some(ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner()))
}

/// The calls on one dictionary, in order, as (op, key, value, flags).
pub fn on<'a>(calls: &'a [Call], dictionary: &str) -> Vec<(&'a str, &'a [u8], &'a [u8], u32)> {
    calls.iter().filter(|c| c.dictionary == dictionary)
        .map(|c| (c.op, c.key.as_slice(), c.value.as_slice(), c.flags)).collect()
}

/// KeyV1 of one double (TokuMX 1.0.4/2.0.1 src/mongo/db/storage/key.cpp: a number is the type
/// byte, 0x04 double | 0x10 int | 0x20 long, and its value as a little-endian double).
pub fn keyv1_number(type_byte: u8, value: f64) -> Vec<u8> {
    let mut out = vec![type_byte];
    out.extend_from_slice(&value.to_le_bytes());
    out
}

/// BSON of {"": value} (storage/key.h: the primary key a secondary key carries).
pub fn pk_bson(value: Bson) -> Vec<u8> {
    let mut doc = Document::new();
    doc.insert("", value);
    doc.to_vec().unwrap()
}

pub fn bson(doc: &Document) -> Vec<u8> {
    doc.to_vec().unwrap()
}
