//! MMAPv1's reader-writer locks, emulated on the mmap stand-in.
//!
//! MongoDB 2.2 to 2.6 took one lock per database, 3.0 one per collection under an intent lock on
//! its database (the 3.0 release notes: collection-level locking for MMAPv1); readers share it,
//! a writer holds it alone. LMDB itself lets readers run beside its one writer, so without this
//! the stand-in would never show the waits the posts' P99s came from. A waiting writer goes
//! before readers that come after it: the 2.2 to 2.6 locks were "writer greedy" (the FAQ on
//! concurrency of those releases), and 3.0's lock manager queued requests in order.
//!
//! A held lock is an owned value (`Held`), so an explicit transaction can keep it across calls.
use std::sync::{Arc, Condvar, Mutex};

/// Which lock each call takes on the mmap stand-in; the other engines take none.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Locking {
    None,
    Collection,
    Database,
}

impl Locking {
    pub fn name(self) -> &'static str {
        match self {
            Locking::None => "none",
            Locking::Collection => "collection",
            Locking::Database => "database",
        }
    }
}

#[derive(Default)]
struct State {
    readers: usize,
    writer: bool,
    writers_waiting: usize,
}

/// Waiters sleep on the condition variable of what they wait for, so that a release wakes only
/// whom it lets in: one writer, or every reader. Waking every waiter at every release (one
/// condition variable for all) cost an LMDB load about a quarter of its CPU per document, in
/// threads scheduled only to go back to sleep.
#[derive(Default)]
pub struct Latch {
    state: Mutex<State>,
    readers_may_go: Condvar,
    writer_may_go: Condvar,
}

/// A lock held until dropped.
pub struct Held {
    latch: Arc<Latch>,
    write: bool,
}

impl Latch {
    pub fn new() -> Arc<Latch> {
        Arc::new(Latch::default())
    }

    pub fn read(self: &Arc<Self>) -> Held {
        let mut state = self.state.lock().unwrap();
        while state.writer || state.writers_waiting > 0 {
            state = self.readers_may_go.wait(state).unwrap();
        }
        state.readers += 1;
        Held { latch: self.clone(), write: false }
    }

    pub fn write(self: &Arc<Self>) -> Held {
        let mut state = self.state.lock().unwrap();
        state.writers_waiting += 1;
        while state.writer || state.readers > 0 {
            state = self.writer_may_go.wait(state).unwrap();
        }
        state.writers_waiting -= 1;
        state.writer = true;
        Held { latch: self.clone(), write: true }
    }

    pub fn take(self: &Arc<Self>, write: bool) -> Held {
        if write { self.write() } else { self.read() }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut state = self.latch.state.lock().unwrap();
        // Who can go on now. After a writer: the next writer if one waits (readers wait for
        // waiting writers), else every reader. After a reader: a waiting writer, once the last
        // reader has gone.
        let wake_writer = if self.write {
            state.writer = false;
            state.writers_waiting > 0
        } else {
            state.readers -= 1;
            state.readers == 0 && state.writers_waiting > 0
        };
        let wake_readers = self.write && !wake_writer;
        drop(state);
        if wake_writer {
            self.latch.writer_may_go.notify_one();
        } else if wake_readers {
            self.latch.readers_may_go.notify_all();
        }
    }
}

/// The locks one call takes, in a fixed order (database, collection, then the oplog a write
/// appends to) so two calls never wait on each other in a cycle.
pub fn acquire(locking: Locking, db: &Arc<Latch>, coll: &Arc<Latch>, oplog: Option<&Arc<Latch>>, write: bool) -> Vec<Held> {
    match locking {
        Locking::None => Vec::new(),
        Locking::Database => vec![db.take(write)],
        Locking::Collection => {
            // The intent lock on the database: shared by every collection-level operation.
            let mut held = vec![db.read(), coll.take(write)];
            if let Some(oplog) = oplog.filter(|o| write && !Arc::ptr_eq(o, coll)) {
                held.push(oplog.write()); // 3.0 wrote local.oplog.rs under its own lock
            }
            held
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    /// True when `take` gets its locks within 200 ms while `held` is held.
    fn gets_through(held: Vec<Held>, take: impl FnOnce() -> Vec<Held> + Send + 'static) -> bool {
        let (tx, rx) = mpsc::channel();
        let waiter = std::thread::spawn(move || {
            let _got = take();
            tx.send(()).unwrap();
        });
        let through = rx.recv_timeout(Duration::from_millis(200)).is_ok();
        drop(held);
        rx.recv_timeout(Duration::from_secs(5)).ok(); // released: the waiter gets it now
        waiter.join().unwrap();
        through
    }

    fn scene(locking: Locking, writer_on_a: bool, reader_on_b: bool) -> bool {
        let (db, a, b) = (Latch::new(), Latch::new(), Latch::new());
        let held = acquire(locking, &db, &a, None, writer_on_a);
        let target = if reader_on_b { b } else { a };
        gets_through(held, move || acquire(locking, &db, &target, None, false))
    }

    #[test]
    fn a_writer_blocks_readers_of_its_database_under_database() {
        assert!(!scene(Locking::Database, true, false));
        assert!(!scene(Locking::Database, true, true));
        assert!(scene(Locking::Database, false, true)); // readers share it
    }

    #[test]
    fn a_writer_blocks_only_its_own_collection_under_collection() {
        assert!(!scene(Locking::Collection, true, false));
        assert!(scene(Locking::Collection, true, true));
        assert!(scene(Locking::Collection, false, false));
    }

    #[test]
    fn nothing_waits_under_none() {
        assert!(scene(Locking::None, true, false));
        assert!(scene(Locking::None, true, true));
    }

    #[test]
    fn a_waiting_writer_goes_before_new_readers() {
        let latch = Latch::new();
        let reader = latch.read();
        let l2 = latch.clone();
        let writer = std::thread::spawn(move || drop(l2.write()));
        while latch.state.lock().unwrap().writers_waiting == 0 {
            std::thread::yield_now();
        }
        let l3 = latch.clone();
        assert!(!gets_through(vec![reader], move || vec![l3.read()]));
        writer.join().unwrap();
    }

    #[test]
    fn writes_under_collection_also_lock_the_oplog() {
        let (db, a, b, oplog) = (Latch::new(), Latch::new(), Latch::new(), Latch::new());
        let held = acquire(Locking::Collection, &db, &a, Some(&oplog), true);
        assert!(!gets_through(held, move || acquire(Locking::Collection, &db, &b, Some(&oplog), true)));
    }
}
