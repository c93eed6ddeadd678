//! A Ctx's locking and transactions: one engine transaction per Store call, or an explicit one
//! around several; write conflicts retried with mongod's backoff.
use super::*;

impl Ctx {
    // -- locking and transactions -------------------------------------------------------------
    /// Takes the emulated MMAPv1 locks for one call (none on engines with document-level
    /// concurrency, or inside a multi-call transaction that holds the database lock).
    pub(super) fn lock(&self, coll: &Collection, write: bool) -> Vec<Held> {
        let store = &self.store;
        lock::acquire(store.options.locking, &store.db_lock, &coll.lock, store.oplog.as_ref().map(|o| &o.lock), write)
    }

    /// A transaction of several calls may touch several collections: it holds its database
    /// exclusively (under either emulated lock) from begin to end.
    pub(super) fn transaction_lock(&self) -> Option<Held> {
        (self.store.options.locking != Locking::None).then(|| self.store.db_lock.write())
    }

    /// Runs `f` in one write transaction, retried on write conflicts with mongod's backoff
    /// (write_conflict_exception.cpp: none for 4 attempts, then 1 ms below 10, 5 ms below 100,
    /// then 10 ms). Inside a transaction already, `f` joins it.
    pub fn transaction<T>(&mut self, mut f: impl FnMut(&mut Ctx) -> Result<T>) -> Result<T> {
        if self.in_txn {
            return f(self);
        }
        let _held = self.transaction_lock();
        let store = self.store.clone();
        crate::layouts::retry_conflicts(&store.conflicts, || self.attempt(&mut f))
    }

    pub(super) fn attempt<T>(&mut self, f: &mut impl FnMut(&mut Ctx) -> Result<T>) -> Result<T> {
        self.kv.begin(true)?;
        self.in_txn = true;
        self.capped_inserts.clear();
        self.record_deltas.clear();
        let result = f(self);
        self.in_txn = false;
        let outcome = match result {
            Ok(value) => match self.kv.commit() {
                Ok(()) => Ok(value),
                Err(e) => {
                    self.kv.rollback();
                    Err(e)
                }
            },
            Err(e) => {
                self.kv.rollback();
                Err(e)
            }
        };
        self.capped_ids_finished();
        let value = outcome?;
        self.after_commit()?;
        Ok(value)
    }

    /// The capped record ids this transaction allocated are committed or rolled back: their
    /// collection's deleter may pass them (Capped::finished).
    fn capped_ids_finished(&mut self) {
        for (coll, rid) in self.capped_allocated.drain(..) {
            if let Some(capped) = &coll.capped {
                capped.finished(rid);
            }
        }
    }

    /// An explicit transaction (the serve protocol's begin / commit / abort): every call joins
    /// it until it ends. A conflict surfaces to the caller, who aborts and retries.
    pub fn begin_explicit(&mut self) -> Result<()> {
        if self.in_txn {
            return Err(Error::other("a transaction is already open on this session"));
        }
        // The emulated lock first, then the engine's writer: the order every call takes them in.
        self.txn_locks.extend(self.transaction_lock());
        if let Err(e) = self.kv.begin(true) {
            self.txn_locks.clear();
            return Err(e);
        }
        self.in_txn = true;
        self.capped_inserts.clear();
        self.record_deltas.clear();
        Ok(())
    }

    pub fn commit_explicit(&mut self) -> Result<()> {
        if !self.in_txn {
            return Err(Error::other("no transaction is open on this session"));
        }
        self.in_txn = false;
        let committed = self.kv.commit();
        if committed.is_err() {
            self.kv.rollback();
        }
        self.capped_ids_finished();
        let result = committed.and_then(|()| self.after_commit());
        self.txn_locks.clear();
        result
    }

    pub fn abort_explicit(&mut self) {
        if self.in_txn {
            self.in_txn = false;
            self.kv.rollback();
            self.capped_ids_finished();
        }
        self.txn_locks.clear();
    }

    /// One call: its own write transaction, after the emulated locks.
    pub(super) fn write_call<T>(&mut self, coll: &Arc<Collection>, mut f: impl FnMut(&mut Ctx) -> Result<T>) -> Result<T> {
        if self.in_txn {
            return f(self);
        }
        let store = self.store.clone();
        let _held = self.lock(coll, true);
        crate::layouts::retry_conflicts(&store.conflicts, || self.attempt(&mut f))
    }

    /// A read-only call: a snapshot read (or the caller's transaction).
    pub(super) fn read_call<T>(&mut self, coll: &Arc<Collection>, f: impl FnOnce(&mut Ctx) -> Result<T>) -> Result<T> {
        if self.in_txn {
            return f(self);
        }
        let _held = self.lock(coll, false);
        self.kv.begin(false)?;
        let result = f(self);
        self.kv.rollback();
        result
    }

    /// Capped collections past their size lose their oldest documents, in a transaction of
    /// their own after the insert's commit, as mongod's cappedDeleteAsNeeded does.
    pub(super) fn after_commit(&mut self) -> Result<()> {
        for (coll, delta) in self.record_deltas.drain(..) {
            coll.num_records.fetch_add(delta, Ordering::Relaxed);
        }
        let inserts = std::mem::take(&mut self.capped_inserts);
        for (coll, rid, added) in inserts {
            let capped = coll.capped.as_ref().unwrap();
            if capped.background {
                if let Some(trim) = &self.store.oplog_trim {
                    trim.on_commit(rid, added);
                }
            }
            if capped.added(added) {
                capped::delete_oldest(self, &coll)?;
            }
        }
        Ok(())
    }
}

impl Drop for Ctx {
    /// A session that ends inside an explicit transaction (its client went away) rolled back
    /// with its engine session; its capped ids must not hold a deleter back.
    fn drop(&mut self) {
        self.capped_ids_finished();
    }
}
