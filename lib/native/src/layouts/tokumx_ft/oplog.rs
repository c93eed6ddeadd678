//! TokuMX's oplog (a replica set primary's): one entry per committed write transaction, inserted
//! into `local.oplog.rs` in the same transaction just before it commits, keyed by a GTID
//! (oplog.cpp writeEntryToOplog, txn_context.cpp, gtid.cpp at 1.0.4 and tokumx-2.0.1):
//! `{_id: BinData(16 bytes: primary sequence, GT sequence, big-endian), ts, h, a: true, ops: [...]}`,
//! a put with DB_PRELOCKED_WRITE and no unique check. It is an ordinary collection, not capped:
//! 1.0.4 trimmed it one entry at a time after expireOplogDays (the post set 5), 2.0.1 dropped
//! whole daily partitions after 14 days; no run here lasts a day, so nothing is trimmed.
use std::sync::Mutex;

use bson::{rawdoc, Bson, RawArrayBuf, RawBson};

use super::keyv1::{self, Flavour};
use super::{Ctx, TokuMX};
use crate::engines::fractal::Txn;
use crate::engines::Table;
use crate::error::Result;

pub(super) struct Oplog {
    table: Table,
    gtid: Mutex<(u64, i64)>,
}

impl Oplog {
    pub(super) fn open(store: &TokuMX) -> Result<Oplog> {
        // 2.0.1's oplog is partitioned: its newest partition takes the inserts.
        let name = match store.flavour {
            Flavour::V1 => "local.oplog.rs.$_id_",
            Flavour::V2 => "local.oplog.rs$$p0.$_id_",
        };
        let mut spec = store.pk_spec();
        spec.memcmp_magic = None;
        let table = store.engine.dictionary(name, &spec)?;
        // A reopened oplog goes on from its newest entry's GTID (gtid.cpp: the GTID manager starts
        // from the last entry), so no entry is written over.
        let f = store.flags();
        let txn = store.engine.begin(f.snapshot | f.read_only, None)?;
        let mut last = 0u64;
        store.engine.cursor(&txn, table, 0)?.seek(0, &[], true, &mut |k, _| {
            if let Some(seq) = k.get(k.len().saturating_sub(8)..).and_then(|b| <[u8; 8]>::try_from(b).ok()) {
                last = u64::from_be_bytes(seq);
            }
            false
        })?;
        Ok(Oplog { table, gtid: Mutex::new((last, 0)) })
    }
}

impl Ctx {
    /// The transaction's oplog entry, when it wrote something and the store keeps an oplog.
    pub(super) fn log_pending(&mut self, txn: &Txn) -> Result<()> {
        let Some(oplog) = &self.store.oplog else {
            self.pending_ops.clear();
            return Ok(());
        };
        if self.pending_ops.is_empty() {
            return Ok(());
        }
        let millis = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_millis() as i64;
        let (gtid, hash) = {
            let mut state = oplog.gtid.lock().unwrap();
            state.0 += 1;
            // gtid.cpp getGTIDForPrimary: h = (lastHash * 131 + ts) * 17 + selfID.
            state.1 = state.1.wrapping_mul(131).wrapping_add(millis).wrapping_mul(17);
            (state.0, state.1)
        };
        let mut id = Vec::with_capacity(16);
        id.extend_from_slice(&0u64.to_be_bytes());
        id.extend_from_slice(&gtid.to_be_bytes());
        let id = Bson::Binary(bson::Binary { subtype: bson::spec::BinarySubtype::Generic, bytes: id });
        let ts = match self.store.flavour {
            Flavour::V1 => Bson::Timestamp(bson::Timestamp { time: (millis >> 32) as u32, increment: millis as u32 }),
            Flavour::V2 => Bson::DateTime(bson::DateTime::from_millis(millis)),
        };
        let mut ops = RawArrayBuf::new();
        for op in self.pending_ops.drain(..) {
            ops.push(op);
        }
        let key = keyv1::primary_key(&id, self.store.flavour)?;
        let id = RawBson::try_from(id)?;
        let ts = RawBson::try_from(ts)?;
        let entry = rawdoc! {"_id": id, "ts": ts, "h": hash, "a": true, "ops": ops};
        let f = self.store.flags();
        self.store.engine.put(txn, oplog.table, &key, entry.as_bytes(), f.prelocked_write)
    }
}
