//! The I/O side of multi-block work: requests to the store kept in flight
//! ahead of the threads that decode blocks ([`with_fetch`]) and behind the
//! threads that encode them ([`with_upload`]), so that a region read or
//! write waits for the network (or the disk) about `io_concurrency` times
//! less, independently of how many threads decode. Both run their own I/O
//! threads for the duration of one call, and both hold at most a budget of
//! bytes between the two sides, whatever `io_concurrency` is.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use crate::error::{Error, ErrorKind, Result};
use crate::storage::{ByteRange, Store, Version};

/// Bytes fetched and not yet taken, or queued and not yet written, that one
/// call may hold (besides one block in flight per I/O thread).
pub(crate) const IO_BUDGET: usize = 24 << 20;

/// The budget of a fetch from a local store (at least; up to eight
/// expected objects, within [`IO_BUDGET`]): the disk answers in
/// microseconds to a millisecond, so a few objects ahead keep the readers
/// busy, and bytes that the store wrote into a buffer a moment ago are
/// still in the processor's cache when they are decoded or copied, where
/// 24 MiB ahead they come back from memory, in buffers whose pages are
/// new to the process.
const LOCAL_BUDGET: usize = 4 << 20;

/// Writes an upload lets be queued or under way whatever their size: a
/// shard larger than the budget is sent while the next is encoded and
/// queued beside it, rather than one object on the wire at a time.
const UPLOAD_OBJECTS_ANY_SIZE: usize = 2;

/// Buffers one fetch keeps for reuse once their bytes are used, and their
/// memory at most (besides what the budget counts).
const SPARE_BUFFERS: usize = 16;
const SPARE_BYTES: usize = IO_BUDGET / 2;

/// What a fetch found.
#[derive(Debug)]
pub(crate) enum Fetched {
    /// There is no object (or its key was `None`: nothing to fetch).
    Missing,
    /// The object's bytes.
    Bytes(Vec<u8>),
    /// The object was there and the I/O thread that received it used its
    /// bytes up at once ([`Early`]).
    Used,
}

/// What an I/O thread did with an object's bytes it offered to [`Early`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EarlyUse {
    /// Used up: the taker gets [`Fetched::Used`] and the buffer serves the
    /// next fetch.
    Used,
    /// Not for early use: the taker gets the bytes.
    HandOn,
    /// To be used with a decoding buffer (only when offered without one):
    /// the bytes are offered again with one of the fetch's buffers, by
    /// this I/O thread when one is free, else by a thread that holds one,
    /// which uses every object waiting before it gives its buffer back;
    /// this thread goes on fetching meanwhile (unless two objects per
    /// buffer already wait: then it waits with its own).
    NeedsBuffer,
    /// To be used in this many parts, each with a decoding buffer (only
    /// when offered without one): parts `0..n` are offered like
    /// [`EarlyUse::NeedsBuffer`] objects, so that threads holding a buffer
    /// work on one object side by side; it is used up once every part is
    /// (an error of any part goes to the taker).
    Parts(usize),
}

/// An object's bytes offered to [`Early`].
pub(crate) struct Offer<'b> {
    /// The object's index.
    pub(crate) index: usize,
    /// The part offered ([`EarlyUse::Parts`]); 0 when not in parts.
    pub(crate) part: usize,
    /// The bytes received.
    pub(crate) bytes: &'b [u8],
    /// The version a ranged fetch came with.
    pub(crate) version: Option<&'b Version>,
}

/// What an I/O thread may do with an object's bytes as soon as they arrive,
/// while they are still in its cache and before any taker sees them.
///
/// `work` is offered the bytes first without a decoding buffer: it may use
/// them up at once (a copy), hand them on, or ask for a buffer
/// ([`EarlyUse::NeedsBuffer`], [`EarlyUse::Parts`]); an error goes to the
/// taker. At most `buffers` objects or parts are used with a buffer at a
/// time (the threads the caller decodes with). One that finds every
/// buffer in use waits in a queue for the next free one rather than its
/// I/O thread waiting: the threads that hold a buffer work through the
/// queue without a wake-up or a switch between objects, while the other
/// I/O threads keep their requests in flight, and I/O threads with nothing
/// to fetch take a free buffer to help. The queue holds two objects per
/// buffer (parts aside); an I/O thread whose object finds it full waits
/// with it, as data then arrives faster than it is decoded. Bytes waiting
/// count in the fetch's budget.
#[derive(Clone, Copy)]
pub(crate) struct Early<'e> {
    /// The work done with an object's bytes.
    pub(crate) work: EarlyWork<'e>,
    /// Decoding buffers: objects or parts used with one at a time, at most.
    pub(crate) buffers: usize,
}

/// The work of [`Early`]: given an object's bytes and a decoding buffer
/// (`None` at first), what it did with them.
pub(crate) type EarlyWork<'e> =
    &'e (dyn Fn(Offer<'_>, Option<&mut Vec<u8>>) -> Result<EarlyUse> + Sync);

/// An object (or a part of one) received that waits for a decoding buffer
/// ([`Early`]).
struct Waiting {
    index: usize,
    part: usize,
    /// Shared by the parts of one object.
    bytes: Arc<Vec<u8>>,
    version: Option<Version>,
    /// Fetched whole (its buffer is kept for later fetches once used).
    whole: bool,
}

/// The parts of an object in parts ([`EarlyUse::Parts`]) not used yet, and
/// the first error of those used.
struct PartsLeft {
    left: usize,
    error: Option<Error>,
}

#[derive(Default)]
struct FetchState {
    /// The next index to fetch.
    next: usize,
    /// Fetches under way.
    in_flight: usize,
    /// The bytes the fetches under way are expected to bring.
    reserved: usize,
    /// Bytes fetched and not yet taken.
    held: usize,
    /// Results not yet taken, by index.
    ready: HashMap<usize, Result<Fetched>>,
    /// The versions ranged fetches came with, by index, until taken.
    versions: HashMap<usize, Version>,
    /// Buffers given back, for the next fetches, and their capacity.
    spare: Vec<Vec<u8>>,
    spare_bytes: usize,
    /// The indexes takers are waiting for.
    wanted: Vec<usize>,
    /// Requests added while the fetch runs ([`Fetch::push`]), numbered
    /// after those it started with.
    added: Vec<(Option<String>, Option<ByteRange>)>,
    /// More requests may still be added ([`with_growing_fetch`] until
    /// [`Fetch::close`]).
    growing: bool,
    /// Set when the consumers stop early (an error) or are done.
    cancelled: bool,
    /// Decoding buffers not in use ([`Early::buffers`]).
    free_buffers: Vec<Vec<u8>>,
    /// The first requests of the takers of a lazy fetch waiting for their
    /// turn, and whether one has it (see [`Fetch::turn`]).
    turns: std::collections::BTreeSet<usize>,
    reading: bool,
    /// Objects received (or their parts) that wait for a decoding buffer,
    /// oldest first.
    waiting: std::collections::VecDeque<Waiting>,
    /// Objects in parts, by index, until every part is used.
    parts: HashMap<usize, PartsLeft>,
    /// I/O threads with nothing left to fetch that stay to help use what
    /// arrives in parts.
    idle: usize,
    /// Objects received and being offered to [`Early`] (they may come in
    /// parts).
    offering: usize,
}

impl FetchState {
    /// A buffer for the next fetch: for a whole object the spare buffer
    /// given back last (it grows to the object's size); for a range of
    /// `len` bytes a spare one with room for it and at most a quarter more
    /// (the budget counts a range by its length, and a buffer's memory
    /// beyond it would be held uncounted), else a new one.
    fn take_spare(&mut self, range_len: Option<usize>) -> Vec<u8> {
        let buf = match range_len {
            None => match self.spare.pop() {
                Some(buf) => buf,
                None => return Vec::new(),
            },
            Some(len) => {
                let fits = |b: &Vec<u8>| (len..=len + len / 4).contains(&b.capacity());
                match self.spare.iter().rposition(fits) {
                    Some(at) => self.spare.swap_remove(at),
                    None => return Vec::new(),
                }
            }
        };
        self.spare_bytes -= buf.capacity();
        buf
    }

    /// Keeps `buf` for a later fetch (the last [`SPARE_BUFFERS`] given
    /// back, at most [`SPARE_BYTES`] in all); frees it otherwise.
    fn give_back(&mut self, buf: Vec<u8>) {
        let cap = buf.capacity();
        if cap == 0 || self.spare_bytes + cap > SPARE_BYTES {
            return;
        }
        if self.spare.len() >= SPARE_BUFFERS {
            self.spare_bytes -= self.spare.remove(0).capacity();
        }
        self.spare_bytes += cap;
        self.spare.push(buf);
    }
}

/// Objects fetched in order by I/O threads, taken by index.
pub(crate) struct Fetch<'a> {
    store: &'a dyn Store,
    keys: &'a [Option<String>],
    /// The byte range of each key to fetch (`None`: the whole object);
    /// empty when every object is fetched whole.
    ranges: &'a [Option<ByteRange>],
    early: Option<Early<'a>>,
    /// Bytes a fetch of a whole object (or of a range not given by its
    /// length) is expected to bring at most (a block's nominal size).
    expected: usize,
    /// Where request `i` is, asked by the taking thread when it takes it
    /// ([`with_lazy_fetch`]; `keys` and `ranges` are empty then).
    lazy: Option<&'a Source<'a>>,
    /// Bytes fetched and not yet taken, with those under way, that the
    /// fetch holds at most: [`IO_BUDGET`] from a network store, less from a
    /// local one (see [`LOCAL_BUDGET`]).
    budget: usize,
    state: Mutex<FetchState>,
    /// Signalled when the budget or the work left changes (I/O threads
    /// wait on it).
    changed: Condvar,
    /// Signalled when an object a taker waits for is ready.
    arrived: Condvar,
    /// Signalled when a decoder takes an object from the queue (I/O
    /// threads whose object found the queue full wait on it).
    decoded: Condvar,
    /// Signalled when a turn of a lazy fetch ends (takers wait for theirs
    /// on it).
    turn: Condvar,
}

/// A taker's turn to read from a lazy fetch ([`Fetch::turn`]); it ends
/// when this is dropped, however the reads end.
struct ReadTurn<'f, 'a>(&'f Fetch<'a>);

impl Drop for ReadTurn<'_, '_> {
    fn drop(&mut self) {
        self.0.lock().reading = false;
        self.0.turn.notify_all();
    }
}

impl Fetch<'_> {
    fn lock(&self) -> MutexGuard<'_, FetchState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How many requests the fetch has (so far, while it grows).
    fn total(&self, s: &FetchState) -> usize {
        self.keys.len() + s.added.len()
    }

    /// The byte range of request `i` (`i < self.total(s)`; `None`: the
    /// whole object).
    fn range(&self, s: &FetchState, i: usize) -> Option<ByteRange> {
        match i.checked_sub(self.keys.len()) {
            None => self.ranges.get(i).copied().flatten(),
            Some(a) => s.added[a].1,
        }
    }

    /// The key of request `i` (`i < self.total(s)`), borrowed from the
    /// first requests, copied from those added (which the lock guards).
    fn key(&self, s: &FetchState, i: usize) -> Option<Cow<'_, str>> {
        match i.checked_sub(self.keys.len()) {
            None => self.keys[i].as_deref().map(Cow::Borrowed),
            Some(a) => s.added[a].0.clone().map(Cow::Owned),
        }
    }

    /// The bytes a fetch of `range` may bring (a range's length, else
    /// `expected`), at most the whole budget: a fetch that large goes
    /// alone.
    fn size_of(&self, range: Option<ByteRange>) -> usize {
        match range {
            Some(ByteRange::Span { len, .. }) | Some(ByteRange::Suffix(len)) => {
                usize::try_from(len).unwrap_or(self.budget)
            }
            _ => self.expected,
        }
        .min(self.budget)
    }

    /// Whether a fetch of `want` bytes fits the budget: always when nothing
    /// is held or under way, so an object larger than the budget still goes.
    fn fits(&self, s: &FetchState, want: usize) -> bool {
        let pending = s.held + s.reserved + want;
        (s.in_flight == 0 && s.held == 0) || pending <= self.budget
    }

    fn io_loop(&self) {
        let mut s = self.lock();
        loop {
            if s.cancelled {
                return;
            }
            let more = s.next < self.total(&s);
            let (range, want) = match more {
                true => {
                    let range = self.range(&s, s.next);
                    (range, self.size_of(range))
                }
                false => (None, 0),
            };
            if !more || !self.fits(&s, want) {
                // Nothing to fetch now: help use what waits for a buffer.
                if let (Some(early), false) = (self.early, s.waiting.is_empty()) {
                    if let Some(buf) = s.free_buffers.pop() {
                        s = self.use_buffered(s, buf, early.work);
                        continue;
                    }
                }
                if !more && !s.growing {
                    // Done, but for a few threads (as many as could decode
                    // at once) while fetches are under way: an object that
                    // arrives in parts is used by several threads.
                    let helpers = self.early.map_or(0, |e| e.buffers);
                    if s.in_flight + s.offering == 0 || s.idle >= helpers {
                        return;
                    }
                    s.idle += 1;
                    s = self.changed.wait(s).unwrap_or_else(|p| p.into_inner());
                    s.idle -= 1;
                    continue;
                }
                s = self.changed.wait(s).unwrap_or_else(|p| p.into_inner());
                continue;
            }
            let i = s.next;
            let key = self.key(&s, i);
            s.next += 1;
            s.in_flight += 1;
            s.reserved += want;
            // Buffers are shared by the I/O threads rather than kept by
            // each: there are no more of them than objects held or under
            // way at once, which the budget bounds, however many threads
            // have fetched.
            let mut buf = s.take_spare(range.map(|_| want));
            drop(s);
            let got = match key.as_deref() {
                Some(key) => read_into(self.store, key, range, &mut buf),
                None => Ok(None),
            };
            // The bytes received, and the version a ranged fetch came with;
            // the buffer back to the spares when nothing came.
            let mut unused = None;
            let received = match got {
                Ok(Some(version)) => Ok(Some((buf, version))),
                other => {
                    unused = Some(buf);
                    other.map(|_| None)
                }
            };
            // Bytes received count as held from now on, whoever uses them:
            // an object waiting for a decoding buffer is in the budget.
            s = self.lock();
            s.in_flight -= 1;
            s.reserved -= want;
            if let Some(buf) = unused {
                s.give_back(buf);
            }
            let (bytes, version) = match received {
                Err(e) => {
                    self.settle(&mut s, i, Err(e), None);
                    continue;
                }
                Ok(None) => {
                    self.settle(&mut s, i, Ok(Fetched::Missing), None);
                    continue;
                }
                Ok(Some(got)) => got,
            };
            s.held += bytes.len();
            let Some(early) = self.early else {
                self.settle(&mut s, i, Ok(Fetched::Bytes(bytes)), version);
                continue;
            };
            s.offering += 1;
            drop(s);
            self.changed.notify_all();
            let offer = Offer {
                index: i,
                part: 0,
                bytes: &bytes,
                version: version.as_ref(),
            };
            let offered = (early.work)(offer, None);
            s = self.lock();
            s.offering -= 1;
            let got = Waiting {
                index: i,
                part: 0,
                bytes: Arc::new(bytes),
                version,
                whole: range.is_none(),
            };
            match offered {
                Ok(EarlyUse::NeedsBuffer) | Ok(EarlyUse::Parts(0 | 1)) => {
                    // A short queue keeps the decoders going without a
                    // wake-up between objects; when they fall further
                    // behind (data arriving faster than it is decoded),
                    // this thread waits with its object rather than fetch
                    // further ahead, which only costs memory and CPU.
                    let most = 2 * early.buffers.max(1);
                    while s.free_buffers.is_empty() && s.waiting.len() >= most && !s.cancelled {
                        s = self.decoded.wait(s).unwrap_or_else(|p| p.into_inner());
                    }
                    s.waiting.push_back(got)
                }
                Ok(EarlyUse::Parts(n)) => {
                    s.parts.insert(
                        i,
                        PartsLeft {
                            left: n,
                            error: None,
                        },
                    );
                    for part in 1..n {
                        s.waiting.push_back(Waiting {
                            part,
                            bytes: got.bytes.clone(),
                            version: got.version.clone(),
                            ..got
                        });
                    }
                    s.waiting.push_front(got);
                    // Idle I/O threads take the parts that find a buffer.
                    self.changed.notify_all();
                }
                other => {
                    self.used_early(&mut s, got, other);
                    continue;
                }
            }
            // Otherwise a thread that holds a buffer uses it next.
            if let Some(buf) = s.free_buffers.pop() {
                s = self.use_buffered(s, buf, early.work);
            }
        }
    }

    /// Records the outcome of request `i` for its taker, with the version
    /// a ranged fetch came with, and wakes whoever waits for it.
    fn settle(
        &self,
        s: &mut FetchState,
        i: usize,
        result: Result<Fetched>,
        version: Option<Version>,
    ) {
        s.ready.insert(i, result);
        if let Some(v) = version {
            s.versions.insert(i, v);
        }
        // Takers wake for the object they wait for only, I/O threads for
        // the budget this fetch no longer holds.
        if s.wanted.contains(&i) {
            self.arrived.notify_all();
        }
        self.changed.notify_all();
    }

    /// Settles an object (or a part of one) offered to [`Early`] by what
    /// the offer did; an object in parts once its last part is used.
    fn used_early(&self, s: &mut FetchState, got: Waiting, mut used: Result<EarlyUse>) {
        let Waiting {
            index,
            bytes,
            version,
            whole,
            ..
        } = got;
        if let Some(p) = s.parts.get_mut(&index) {
            p.left -= 1;
            if let Err(e) = used {
                p.error.get_or_insert(e);
            }
            if p.left > 0 {
                return;
            }
            used = match s.parts.remove(&index).and_then(|p| p.error) {
                Some(e) => Err(e),
                None => Ok(EarlyUse::Used),
            };
        }
        // The last part's bytes are no longer shared.
        let bytes = Arc::try_unwrap(bytes).unwrap_or_else(|shared| shared.to_vec());
        match used {
            Ok(EarlyUse::Used) | Err(_) => {
                s.held -= bytes.len();
                if whole {
                    s.give_back(bytes);
                }
                // A range used up here is freed on the thread that made
                // it, whose allocator gives its memory to the thread's
                // next range anyway; kept, ranges of every size would hold
                // memory the budget does not count. A range handed to a
                // taker comes back with `recycle`: freed there, it would
                // not serve the I/O threads.
                self.settle(s, index, used.map(|_| Fetched::Used), None)
            }
            Ok(_) => self.settle(s, index, Ok(Fetched::Bytes(bytes)), version),
        }
    }

    /// Uses what waits for a decoding buffer with `buf`, oldest first, and
    /// gives the buffer back once nothing waits (or the fetch is
    /// cancelled: what waits is dropped then).
    fn use_buffered<'s>(
        &'s self,
        mut s: MutexGuard<'s, FetchState>,
        mut buf: Vec<u8>,
        work: EarlyWork,
    ) -> MutexGuard<'s, FetchState> {
        loop {
            if s.cancelled {
                s.waiting.clear();
            }
            let Some(got) = s.waiting.pop_front() else {
                s.free_buffers.push(buf);
                return s;
            };
            self.decoded.notify_one();
            drop(s);
            let offer = Offer {
                index: got.index,
                part: got.part,
                bytes: &got.bytes,
                version: got.version.as_ref(),
            };
            let used = work(offer, Some(&mut buf));
            s = self.lock();
            self.used_early(&mut s, got, used);
        }
    }

    /// The object of index `i`, waiting for it. Each index is taken once.
    pub(crate) fn take(&self, i: usize) -> Result<Fetched> {
        if self.keys.get(i).is_some_and(Option::is_none) {
            // Nothing to fetch: no I/O thread need be asked.
            return Ok(Fetched::Missing);
        }
        if let Some(source) = self.lazy {
            return Ok(self
                .read_lazy(i, source, false)?
                .unwrap_or(Fetched::Missing));
        }
        let mut s = self.lock();
        loop {
            if let Some(result) = s.ready.remove(&i) {
                if let Ok(Fetched::Bytes(data)) = &result {
                    s.held -= data.len();
                    self.changed.notify_all();
                }
                return result;
            }
            if s.cancelled {
                return Err(Error::new(
                    ErrorKind::Internal,
                    "the fetch was cancelled before this block arrived",
                ));
            }
            s.wanted.push(i);
            s = self.arrived.wait(s).unwrap_or_else(|p| p.into_inner());
            if let Some(at) = s.wanted.iter().position(|&w| w == i) {
                s.wanted.swap_remove(at);
            }
        }
    }

    /// Reads request `i` of a lazy fetch with `source` on this thread
    /// (`memory_only`: see [`Source`]; `None` then when it is not all in
    /// memory).
    fn read_lazy(
        &self,
        i: usize,
        source: &Source<'_>,
        memory_only: bool,
    ) -> Result<Option<Fetched>> {
        let mut buf = self.lock().take_spare(None);
        match source(i, &mut buf, memory_only) {
            Ok(Some(true)) => Ok(Some(Fetched::Bytes(buf))),
            other => {
                self.lock().give_back(buf);
                other.map(|found| found.map(|_| Fetched::Missing))
            }
        }
    }

    /// Takes the requests of `run` into `files` (request `run.start + k`
    /// into `files[k]`, recycling the bytes a slot held) and returns true
    /// where this is a lazy fetch ([`with_lazy_fetch`]); otherwise returns
    /// false and takes nothing (the caller takes each with
    /// [`Fetch::take`]). Requests whose bytes are all in memory are read at
    /// once; from the first that is not, the rest are read in the run's
    /// turn (see [`Fetch::turn`]), so that reads from the disk go one run
    /// at a time and those from memory wait for nobody.
    pub(crate) fn take_run(
        &self,
        run: std::ops::Range<usize>,
        files: &mut [Fetched],
    ) -> Result<bool> {
        let Some(source) = self.lazy else {
            return Ok(false);
        };
        // The bytes the slots held are given back first, so that the reads
        // go into the buffers used last, whose memory is the most likely
        // still to be in the processor's cache.
        for file in files.iter_mut().take(run.len()) {
            if let Fetched::Bytes(old) = std::mem::replace(file, Fetched::Missing) {
                self.recycle(old);
            }
        }
        let mut put = |k: usize, got: Fetched| files[k] = got;
        let mut k = 0;
        while k < run.len() {
            match self.read_lazy(run.start + k, source, true)? {
                Some(got) => put(k, got),
                None => break,
            }
            k += 1;
        }
        if k < run.len() {
            let _turn = self.turn(run.start)?;
            for k in k..run.len() {
                let got = self.read_lazy(run.start + k, source, false)?;
                put(k, got.unwrap_or(Fetched::Missing));
            }
        }
        Ok(true)
    }

    /// Waits for the turn of the taker of the run of a lazy fetch that
    /// starts at `first`: one turn at a time, the lowest `first` of those
    /// waiting first; the turn lasts until the guard is dropped. The runs
    /// (units of a region read) then reach the disk as the pieces of one
    /// stream in the order of the requests, which the kernel's read-ahead
    /// follows, rather than as several streams at once, which on one disk
    /// read slower than one (a cold read of an HDF5 region with two threads
    /// took 1.3 times as long as with one). Each taker decodes and copies
    /// what it read while the next reads.
    fn turn(&self, first: usize) -> Result<ReadTurn<'_, '_>> {
        let mut s = self.lock();
        s.turns.insert(first);
        while s.reading || s.turns.first() != Some(&first) {
            if s.cancelled {
                s.turns.remove(&first);
                return Err(Error::new(
                    ErrorKind::Internal,
                    "the fetch was cancelled before these blocks were read",
                ));
            }
            s = self.turn.wait(s).unwrap_or_else(|p| p.into_inner());
        }
        s.turns.remove(&first);
        s.reading = true;
        Ok(ReadTurn(self))
    }

    /// Give a buffer back for later fetches. Its bytes are kept: a store
    /// that reads into it overwrites them rather than zeroing memory again.
    pub(crate) fn recycle(&self, buf: Vec<u8>) {
        self.lock().give_back(buf);
    }

    /// The version the ranged fetch `i` came with (see
    /// [`Store::get_range_versioned`]), once, after [`Fetch::take`] of it.
    pub(crate) fn version(&self, i: usize) -> Option<Version> {
        self.lock().versions.remove(&i)
    }

    /// Adds a request to a fetch that [`with_growing_fetch`] started: the
    /// range `range` (`None`: the whole object) of `key` (`None`: nothing
    /// to fetch, taken as missing). Returns its index for [`Fetch::take`]:
    /// requests are numbered in the order they are added, after the ones
    /// the fetch started with.
    pub(crate) fn push(&self, key: Option<String>, range: Option<ByteRange>) -> usize {
        let mut s = self.lock();
        debug_assert!(s.growing, "a request pushed to a fetch that does not grow");
        s.added.push((key, range));
        let i = self.total(&s) - 1;
        drop(s);
        // One idle I/O thread is enough for one request; a thread woken
        // that the budget holds back waits for the budget's signal.
        self.changed.notify_one();
        i
    }

    /// No more requests will be added: the I/O threads end once every
    /// request is fetched.
    pub(crate) fn close(&self) {
        self.lock().growing = false;
        self.changed.notify_all();
    }

    /// Stop fetching: the I/O threads finish what they are doing and end,
    /// and takers waiting for objects not fetched get an error.
    pub(crate) fn cancel(&self) {
        self.lock().cancelled = true;
        self.changed.notify_all();
        self.arrived.notify_all();
        self.decoded.notify_all();
        self.turn.notify_all();
    }
}

/// Run `body` with the objects at `keys` (`None`: nothing to fetch, taken
/// as missing) fetched in order by `concurrency` I/O threads, at most
/// a budget of bytes ahead of what `body` has taken ([`IO_BUDGET`] from a
/// network store, less from a local one; `expected` is the
/// size to assume for an object not fetched yet); with `early`, each I/O
/// thread first offers the bytes it received to it. `body` takes them with
/// [`Fetch::take`]; what it does not take is dropped when it returns.
#[cfg(test)]
pub(crate) fn with_fetch<'a, R>(
    store: &'a dyn Store,
    keys: &'a [Option<String>],
    concurrency: usize,
    expected: usize,
    early: Option<Early<'a>>,
    body: impl FnOnce(&Fetch<'a>) -> Result<R>,
) -> Result<R> {
    with_fetch_ranges(store, keys, &[], concurrency, expected, early, body)
}

/// [`with_fetch`] of byte ranges: `ranges[i]` is the range of `keys[i]` to
/// fetch, `None` the whole object (`ranges` may be shorter than `keys`;
/// the keys beyond it are fetched whole). A range is clipped at the
/// object's end, so its bytes may be fewer than asked for: the taker (or
/// `early`) checks.
pub(crate) fn with_fetch_ranges<'a, R>(
    store: &'a dyn Store,
    keys: &'a [Option<String>],
    ranges: &'a [Option<ByteRange>],
    concurrency: usize,
    expected: usize,
    early: Option<Early<'a>>,
    body: impl FnOnce(&Fetch<'a>) -> Result<R>,
) -> Result<R> {
    let fetch = Fetch::new(store, keys, ranges, expected, early, false);
    // No more threads than requests can be in flight within the budget;
    // none when there is nothing to fetch (no key: the takers then get
    // every object as missing at once).
    let requests = keys.iter().filter(|k| k.is_some()).count();
    let threads = concurrency
        .min(requests)
        .min(fetch.budget / fetch.expected)
        .max(usize::from(requests > 0));
    fetch.run(threads, body)
}

/// Reads `range` of the object at `key` (`None`: all of it) into `buf`:
/// `None` when there is no object, else the version a ranged read came
/// with, if the store tells it.
fn read_into(
    store: &dyn Store,
    key: &str,
    range: Option<ByteRange>,
    buf: &mut Vec<u8>,
) -> Result<Option<Option<Version>>> {
    match range {
        Some(range) => store.get_range_into(key, range, buf),
        None => Ok(store.get_into(key, buf)?.then_some(None)),
    }
}

/// Reads request `i` of a [`with_lazy_fetch`] into the buffer (replacing
/// what it held): `Some(false)` when there is nothing to fetch. With
/// `memory_only` (the third argument) it reads only bytes already in
/// memory (the page cache): `None` when some would have to come from the
/// disk (or it cannot tell), to be read again without the flag in the
/// taker's turn.
pub(crate) type Source<'a> = dyn Fn(usize, &mut Vec<u8>, bool) -> Result<Option<bool>> + Sync + 'a;

/// [`with_fetch_ranges`] without I/O threads whose requests are read as
/// they are taken: [`Fetch::take`] of `i` has `source` read request `i`
/// on the taking thread, into a recycled buffer. For objects whose places
/// cost a lookup each (an HDF5 file's chunk index, read from the disk by
/// the lookups themselves), which the readers then do alongside each
/// other's reads rather than all before the first; and for ranges of one
/// local file taken in order, which the kernel's read-ahead keeps ahead of
/// the readers with no hand-over between threads.
pub(crate) fn with_lazy_fetch<'a, R>(
    store: &'a dyn Store,
    expected: usize,
    source: &'a Source<'a>,
    body: impl FnOnce(&Fetch<'a>) -> Result<R>,
) -> Result<R> {
    let mut fetch = Fetch::new(store, &[], &[], expected, None, false);
    fetch.lazy = Some(source);
    fetch.run(0, body)
}

/// [`with_fetch_ranges`] whose requests `body` adds to while the first
/// ones are fetched ([`Fetch::push`]), for reads that learn what to fetch
/// from what they fetched first (a shard's index); `body` calls
/// [`Fetch::close`] once it has added the last. `concurrency` I/O threads,
/// within the same budget.
pub(crate) fn with_growing_fetch<'a, R>(
    store: &'a dyn Store,
    keys: &'a [Option<String>],
    ranges: &'a [Option<ByteRange>],
    concurrency: usize,
    expected: usize,
    early: Option<Early<'a>>,
    body: impl FnOnce(&Fetch<'a>) -> Result<R>,
) -> Result<R> {
    let fetch = Fetch::new(store, keys, ranges, expected, early, true);
    fetch.run(concurrency.max(1), body)
}

impl<'a> Fetch<'a> {
    fn new(
        store: &'a dyn Store,
        keys: &'a [Option<String>],
        ranges: &'a [Option<ByteRange>],
        expected: usize,
        early: Option<Early<'a>>,
        growing: bool,
    ) -> Fetch<'a> {
        let expected = expected.max(1);
        let budget = if store.capabilities().remote {
            IO_BUDGET
        } else {
            expected.saturating_mul(8).clamp(LOCAL_BUDGET, IO_BUDGET)
        };
        Fetch {
            store,
            keys,
            ranges,
            early,
            expected,
            lazy: None,
            budget,
            state: Mutex::new(FetchState {
                growing,
                free_buffers: match early {
                    Some(e) => vec![Vec::new(); e.buffers.max(1)],
                    None => Vec::new(),
                },
                ..FetchState::default()
            }),
            changed: Condvar::new(),
            arrived: Condvar::new(),
            decoded: Condvar::new(),
            turn: Condvar::new(),
        }
    }

    /// Runs `body` with `threads` I/O threads fetching; stops them when it
    /// returns, or unwinds. A panic of `body`, or of an I/O thread (in the
    /// work of [`Early`]), cancels the fetch, so takers get an error rather
    /// than wait for good, and reaches the caller once every thread is
    /// joined.
    fn run<R>(&self, threads: usize, body: impl FnOnce(&Fetch<'a>) -> Result<R>) -> Result<R> {
        /// Cancels the fetch when dropped (with `always` false, only when
        /// its thread unwinds).
        struct Stop<'f, 'a> {
            fetch: &'f Fetch<'a>,
            always: bool,
        }
        impl Drop for Stop<'_, '_> {
            fn drop(&mut self) {
                if self.always || std::thread::panicking() {
                    self.fetch.cancel();
                }
            }
        }
        std::thread::scope(|scope| {
            for _ in 0..threads {
                scope.spawn(|| {
                    let _stop = Stop {
                        fetch: self,
                        always: false,
                    };
                    self.io_loop()
                });
            }
            let _stop = Stop {
                fetch: self,
                always: true,
            };
            body(self)
        })
    }
}

/// A write or a delete for the upload threads.
enum Op {
    Put(String, Vec<u8>),
    Delete(String),
}

struct UploadState {
    queue: std::collections::VecDeque<Op>,
    /// Bytes queued and being written.
    pending: usize,
    /// Writes queued and being written.
    pending_puts: usize,
    /// The first failure; later work is dropped.
    error: Option<Error>,
    /// No more work will come.
    closed: bool,
    /// Buffers of finished writes, for the next blocks.
    spare: Vec<Vec<u8>>,
}

/// Writes handed to I/O threads, behind the threads that encode.
pub(crate) struct Upload<'a> {
    store: &'a dyn Store,
    state: Mutex<UploadState>,
    /// Signalled once per queued write (one I/O thread wakes for it) and
    /// at the close (all wake to finish).
    work: Condvar,
    /// Signalled when a write ends: the budget it held is free, or it
    /// failed; the encoding threads waiting to queue wake.
    room: Condvar,
}

impl Upload<'_> {
    fn lock(&self) -> MutexGuard<'_, UploadState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn push(&self, op: Op, len: usize) -> Result<()> {
        let mut s = self.lock();
        while s.error.is_none()
            && s.pending_puts >= UPLOAD_OBJECTS_ANY_SIZE
            && s.pending + len > IO_BUDGET
        {
            s = self.room.wait(s).unwrap_or_else(|p| p.into_inner());
        }
        if let Some(e) = &s.error {
            return Err(e.clone());
        }
        s.pending += len;
        s.pending_puts += usize::from(matches!(op, Op::Put(..)));
        s.queue.push_back(op);
        // One write, one I/O thread: waking them all for each would cost
        // every idle one a context switch per block.
        self.work.notify_one();
        Ok(())
    }

    /// Queue the write of `data` to `key` (an atomic [`Store::put`]);
    /// waits while the queue holds its budget and at least
    /// [`UPLOAD_OBJECTS_ANY_SIZE`] writes. Fails with the first error
    /// of an earlier write.
    pub(crate) fn put(&self, key: String, data: Vec<u8>) -> Result<()> {
        let len = data.len();
        self.push(Op::Put(key, data), len)
    }

    /// Queue the deletion of `key`.
    pub(crate) fn delete(&self, key: String) -> Result<()> {
        self.push(Op::Delete(key), 0)
    }

    /// A buffer for the next block, from a finished write when there is one.
    pub(crate) fn buffer(&self) -> Vec<u8> {
        self.lock().spare.pop().unwrap_or_default()
    }

    fn io_loop(&self) {
        let mut s = self.lock();
        loop {
            let Some(op) = s.queue.pop_front() else {
                if s.closed {
                    return;
                }
                s = self.work.wait(s).unwrap_or_else(|p| p.into_inner());
                continue;
            };
            drop(s);
            let (result, len, buf) = match op {
                Op::Put(key, data) => (self.store.put(&key, &[&data]), data.len(), Some(data)),
                Op::Delete(key) => (self.store.delete(&key).map(|_| ()), 0, None),
            };
            s = self.lock();
            s.pending -= len;
            s.pending_puts -= usize::from(buf.is_some());
            if let Err(e) = result {
                if s.error.is_none() {
                    s.error = Some(e);
                }
                s.queue.clear();
            }
            if let Some(mut buf) = buf {
                if s.spare.len() < 16 {
                    buf.clear();
                    s.spare.push(buf);
                }
            }
            self.room.notify_all();
        }
    }
}

/// Run `body` with an [`Upload`] whose writes `concurrency` I/O threads
/// carry out while `body` goes on; returns when every write is done, with
/// `body`'s error or else the first write's.
pub(crate) fn with_upload<R>(
    store: &dyn Store,
    concurrency: usize,
    body: impl FnOnce(&Upload) -> Result<R>,
) -> Result<R> {
    let upload = Upload {
        store,
        state: Mutex::new(UploadState {
            queue: Default::default(),
            pending: 0,
            pending_puts: 0,
            error: None,
            closed: false,
            spare: Vec::new(),
        }),
        work: Condvar::new(),
        room: Condvar::new(),
    };
    /// Closes the upload when dropped: what is queued is written, unless
    /// the body failed (`failed` still set: it returned an error or
    /// unwinds), when it is dropped.
    struct Close<'u, 'a> {
        upload: &'u Upload<'a>,
        failed: bool,
    }
    impl Drop for Close<'_, '_> {
        fn drop(&mut self) {
            {
                let mut s = self.upload.lock();
                s.closed = true;
                if self.failed {
                    s.queue.clear();
                }
            }
            self.upload.work.notify_all();
        }
    }
    /// Fails the upload when its I/O thread unwinds: writers waiting for
    /// room get an error instead of waiting for good.
    struct Fail<'u, 'a>(&'u Upload<'a>);
    impl Drop for Fail<'_, '_> {
        fn drop(&mut self) {
            if std::thread::panicking() {
                {
                    let mut s = self.0.lock();
                    s.error.get_or_insert_with(|| {
                        Error::new(ErrorKind::Internal, "an upload thread panicked")
                    });
                    s.queue.clear();
                }
                self.0.room.notify_all();
                self.0.work.notify_all();
            }
        }
    }
    std::thread::scope(|scope| {
        for _ in 0..concurrency.max(1) {
            scope.spawn(|| {
                let _fail = Fail(&upload);
                upload.io_loop()
            });
        }
        let mut close = Close {
            upload: &upload,
            failed: true,
        };
        let result = body(&upload);
        close.failed = result.is_err();
        result
    })
    .and_then(|r| match upload.lock().error.take() {
        Some(e) => Err(e),
        None => Ok(r),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::MemoryStore;

    /// What a taker gets for each of the first `n` objects, in words.
    fn outcomes(f: &Fetch, n: usize) -> Vec<String> {
        (0..n)
            .map(|i| match f.take(i) {
                Ok(Fetched::Used) => "used".to_string(),
                Ok(Fetched::Bytes(b)) => format!("bytes {}", b[0]),
                Ok(Fetched::Missing) => "missing".to_string(),
                Err(e) => e.message().to_string(),
            })
            .collect()
    }

    #[test]
    fn fetches_every_key_in_any_taking_order() {
        let store = MemoryStore::new();
        for i in 0..50 {
            if i % 7 != 3 {
                store
                    .put(&format!("k/{i}"), &[&vec![i as u8; 1000 + i]])
                    .unwrap();
            }
        }
        let keys: Vec<Option<String>> = (0..50)
            .map(|i| (i % 11 != 5).then(|| format!("k/{i}")))
            .collect();
        let got = with_fetch(&store, &keys, 4, 1000, None, |f| {
            let mut got = Vec::new();
            for i in (0..50).rev() {
                match f.take(i)? {
                    Fetched::Bytes(v) => {
                        got.push((i, Some((v.len(), v[0]))));
                        f.recycle(v);
                    }
                    Fetched::Missing => got.push((i, None)),
                    Fetched::Used => panic!("nothing is used early here"),
                }
            }
            Ok(got)
        })
        .unwrap();
        for (i, v) in got {
            let expect = (i % 7 != 3 && i % 11 != 5).then_some((1000 + i, i as u8));
            assert_eq!(v, expect, "key {i}");
        }
    }

    #[test]
    fn early_use_on_the_io_threads() {
        let store = MemoryStore::new();
        for i in 0..40u8 {
            store.put(&format!("k/{i}"), &[&[i; 100]]).unwrap();
        }
        let keys: Vec<Option<String>> = (0..41).map(|i| Some(format!("k/{i}"))).collect();
        let seen = Mutex::new(Vec::new());
        // Even objects are used up early, 13 fails, odd ones go on.
        let work = |o: Offer, buf: Option<&mut Vec<u8>>| {
            let (i, bytes) = (o.index, o.bytes);
            assert_eq!(bytes, [i as u8; 100]);
            assert!(buf.is_none(), "no object asks for a buffer");
            if i == 13 {
                return Err(Error::invalid_argument("thirteen"));
            }
            if i.is_multiple_of(2) {
                seen.lock().unwrap().push(i);
                return Ok(EarlyUse::Used);
            }
            Ok(EarlyUse::HandOn)
        };
        let early = Early {
            work: &work,
            buffers: 1,
        };
        let taken =
            with_fetch(&store, &keys, 3, 100, Some(early), |f| Ok(outcomes(f, 41))).unwrap();
        for (i, t) in taken.iter().enumerate() {
            let expect = match i {
                13 => "thirteen".to_string(),
                40 => "missing".to_string(),
                i if i % 2 == 0 => "used".to_string(),
                i => format!("bytes {i}"),
            };
            assert_eq!(*t, expect, "object {i}");
        }
        let mut seen = seen.into_inner().unwrap();
        seen.sort();
        assert_eq!(seen, (0..40).step_by(2).collect::<Vec<_>>());
    }

    #[test]
    fn objects_waiting_for_a_decoding_buffer_are_used_by_the_thread_holding_one() {
        let store = MemoryStore::new();
        for i in 0..60u8 {
            store.put(&format!("w/{i}"), &[&[i; 1000]]).unwrap();
        }
        let keys: Vec<Option<String>> = (0..60).map(|i| Some(format!("w/{i}"))).collect();
        // (uses with a buffer under way, most at once, offers made while
        // one was under way, uses that found the buffer kept from before)
        let stats = Mutex::new((0usize, 0usize, 0usize, 0usize));
        let used = Mutex::new(Vec::new());
        let work = |o: Offer, buf: Option<&mut Vec<u8>>| {
            let (i, bytes) = (o.index, o.bytes);
            let Some(buf) = buf else {
                let mut st = stats.lock().unwrap();
                st.2 += usize::from(st.0 > 0);
                return Ok(EarlyUse::NeedsBuffer);
            };
            {
                let mut st = stats.lock().unwrap();
                st.0 += 1;
                st.1 = st.1.max(st.0);
                st.3 += usize::from(buf.capacity() >= 1000);
            }
            buf.clear();
            buf.extend_from_slice(bytes);
            std::thread::sleep(std::time::Duration::from_millis(2));
            stats.lock().unwrap().0 -= 1;
            if i == 17 {
                return Err(Error::invalid_argument("seventeen"));
            }
            used.lock().unwrap().push(i);
            Ok(EarlyUse::Used)
        };
        let early = Early {
            work: &work,
            buffers: 2,
        };
        let taken =
            with_fetch(&store, &keys, 8, 1000, Some(early), |f| Ok(outcomes(f, 60))).unwrap();
        for (i, t) in taken.iter().enumerate() {
            assert_eq!(t, if i == 17 { "seventeen" } else { "used" }, "object {i}");
        }
        let mut used = used.into_inner().unwrap();
        used.sort();
        assert_eq!(used, (0..60).filter(|&i| i != 17).collect::<Vec<_>>());
        let (_, most, fetched_meanwhile, kept) = stats.into_inner().unwrap();
        assert!(most <= 2, "{most} objects used with a buffer at once");
        assert!(
            fetched_meanwhile > 0,
            "I/O threads fetched on while objects were decoded"
        );
        assert!(
            kept >= 58 - 2,
            "decoding buffers are kept between uses ({kept})"
        );
    }

    #[test]
    fn objects_in_parts_are_used_side_by_side_and_once_every_part_is() {
        // Object i comes in i % 5 parts (as one object below 2); the last
        // one's parts are slow, and idle I/O threads help with them.
        let store = MemoryStore::new();
        for i in 0..31u8 {
            store.put(&format!("p/{i}"), &[&[i; 500]]).unwrap();
        }
        let keys: Vec<Option<String>> = (0..31).map(|i| Some(format!("p/{i}"))).collect();
        let seen = Mutex::new(Vec::new());
        // (uses with a buffer under way, most at once)
        let busy = Mutex::new((0usize, 0usize));
        let work = |o: Offer, buf: Option<&mut Vec<u8>>| {
            assert_eq!(o.bytes, [o.index as u8; 500]);
            let n = o.index % 5;
            let Some(buf) = buf else {
                return Ok(EarlyUse::Parts(n));
            };
            assert!(o.part < n.max(1), "part {} of object {}", o.part, o.index);
            {
                let mut b = busy.lock().unwrap();
                b.0 += 1;
                b.1 = b.1.max(b.0);
            }
            buf.resize(10, 0);
            let ms = if o.index == 29 { 30 } else { 1 };
            std::thread::sleep(std::time::Duration::from_millis(ms));
            busy.lock().unwrap().0 -= 1;
            seen.lock().unwrap().push((o.index, o.part));
            if (o.index, o.part) == (13, 2) {
                return Err(Error::invalid_argument("part 2 of 13"));
            }
            Ok(EarlyUse::Used)
        };
        let early = Early {
            work: &work,
            buffers: 3,
        };
        let taken =
            with_fetch(&store, &keys, 4, 500, Some(early), |f| Ok(outcomes(f, 31))).unwrap();
        for (i, t) in taken.iter().enumerate() {
            let want = if i == 13 { "part 2 of 13" } else { "used" };
            assert_eq!(t, want, "object {i}");
        }
        let mut seen = seen.into_inner().unwrap();
        seen.sort();
        let want: Vec<(usize, usize)> = (0..31)
            .flat_map(|i| (0..(i % 5).max(1)).map(move |p| (i, p)))
            .collect();
        assert_eq!(seen, want, "every part used once");
        let (_, most) = busy.into_inner().unwrap();
        // Object 29's four slow parts are used side by side by the threads
        // that have nothing left to fetch, three at once at most.
        assert!(
            (2..=3).contains(&most),
            "{most} parts used at once with 3 buffers"
        );
    }

    #[test]
    fn ranged_fetches_are_offered_early_with_their_version() {
        let store = MemoryStore::new();
        for i in 0..20u8 {
            store.put(&format!("r/{i}"), &[&[i; 64]]).unwrap();
        }
        let keys: Vec<Option<String>> = (0..21).map(|i| Some(format!("r/{i}"))).collect();
        let ranges = vec![Some(ByteRange::Span { offset: 8, len: 16 }); 21];
        let versions: Vec<Version> = (0..20)
            .map(|i| {
                store
                    .get_range_versioned(&format!("r/{i}"), ByteRange::Suffix(1))
                    .unwrap()
                    .unwrap()
                    .1
                    .expect("the memory store versions its objects")
            })
            .collect();
        // Objects divisible by three are used up early (with a decoding
        // buffer when also even), the rest handed on.
        let work = |o: Offer, buf: Option<&mut Vec<u8>>| {
            let (i, bytes, version) = (o.index, o.bytes, o.version);
            assert_eq!(bytes, [i as u8; 16], "the range of object {i}");
            assert_eq!(version, Some(&versions[i]), "object {i}");
            Ok(match (i % 3, i % 2, buf) {
                (0, 0, None) => EarlyUse::NeedsBuffer,
                (0, _, _) => EarlyUse::Used,
                _ => EarlyUse::HandOn,
            })
        };
        let early = Early {
            work: &work,
            buffers: 2,
        };
        let taken = with_fetch_ranges(&store, &keys, &ranges, 4, 16, Some(early), |f| {
            (0..21)
                .map(|i| {
                    Ok(match f.take(i)? {
                        Fetched::Used => None,
                        Fetched::Bytes(b) => Some((b, f.version(i))),
                        Fetched::Missing => Some((Vec::new(), None)),
                    })
                })
                .collect::<Result<Vec<_>>>()
        })
        .unwrap();
        for (i, t) in taken.into_iter().enumerate() {
            match i {
                20 => assert_eq!(t, Some((Vec::new(), None)), "no object 20"),
                i if i % 3 == 0 => assert_eq!(t, None, "object {i} used early"),
                i => assert_eq!(t, Some((vec![i as u8; 16], Some(versions[i].clone())))),
            }
        }
    }

    /// Runs taken by two threads at once: what is in memory is read at
    /// once by either, what is not is read one run at a time, each run's
    /// requests together and in order, never interleaved with another's.
    #[test]
    fn lazy_runs_read_from_the_disk_one_run_at_a_time() {
        let store = MemoryStore::new();
        for in_memory in [false, true] {
            let log = Mutex::new(Vec::new());
            let source = |i: usize, buf: &mut Vec<u8>, memory_only: bool| -> Result<Option<bool>> {
                if memory_only && !in_memory {
                    return Ok(None);
                }
                log.lock().unwrap().push((i, memory_only));
                // Long enough for the other thread to try to cut in.
                std::thread::sleep(std::time::Duration::from_millis(2));
                buf.clear();
                buf.push(i as u8);
                Ok(Some(i % 5 != 3))
            };
            let runs = 8;
            with_lazy_fetch(&store, 1, &source, |f| {
                let next = std::sync::atomic::AtomicUsize::new(0);
                std::thread::scope(|s| {
                    for _ in 0..2 {
                        s.spawn(|| {
                            let mut files: Vec<Fetched> =
                                (0..4).map(|_| Fetched::Missing).collect();
                            loop {
                                let r = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                                if r >= runs {
                                    break;
                                }
                                assert!(f.take_run(4 * r..4 * r + 4, &mut files).unwrap());
                                for (k, file) in files.iter().enumerate() {
                                    let i = 4 * r + k;
                                    match file {
                                        Fetched::Bytes(b) => assert_eq!(b, &[i as u8]),
                                        Fetched::Missing => assert_eq!(i % 5, 3),
                                        Fetched::Used => panic!("request {i} used"),
                                    }
                                }
                            }
                        });
                    }
                });
                Ok(())
            })
            .unwrap();
            let log = log.into_inner().unwrap();
            assert_eq!(log.len(), 4 * runs);
            assert!(log.iter().all(|&(_, m)| m == in_memory));
            if !in_memory {
                // From the disk: every run's four requests in a row.
                for run in log.chunks(4) {
                    let first = run[0].0;
                    assert_eq!(first % 4, 0, "{log:?}");
                    assert!(
                        run.iter().enumerate().all(|(k, &(i, _))| i == first + k),
                        "{log:?}"
                    );
                }
            }
        }
    }

    /// A taker waiting for its turn gives up when the fetch is cancelled;
    /// a fetch that is not lazy takes no runs.
    #[test]
    fn waiting_for_a_turn_ends_when_the_fetch_is_cancelled() {
        let store = MemoryStore::new();
        let (entered, release) = (std::sync::Barrier::new(2), std::sync::Barrier::new(2));
        let source = |i: usize, buf: &mut Vec<u8>, memory_only: bool| -> Result<Option<bool>> {
            if memory_only {
                return Ok(None);
            }
            if i == 0 {
                entered.wait();
                release.wait();
            }
            buf.clear();
            Ok(Some(true))
        };
        with_lazy_fetch(&store, 1, &source, |f| {
            std::thread::scope(|s| {
                let holder = s.spawn(|| {
                    let mut files = vec![Fetched::Missing];
                    f.take_run(0..1, &mut files)
                });
                entered.wait();
                let waiter = s.spawn(|| {
                    let mut files = vec![Fetched::Missing];
                    f.take_run(1..2, &mut files)
                });
                // The waiter cannot have its turn while the holder reads.
                std::thread::sleep(std::time::Duration::from_millis(20));
                let finished_early = waiter.is_finished();
                f.cancel();
                let waited = waiter.join().unwrap();
                release.wait();
                let held = holder.join().unwrap();
                assert!(!finished_early, "a second turn began during the first");
                assert_eq!(waited.unwrap_err().kind(), ErrorKind::Internal);
                assert!(held.unwrap());
            });
            Ok(())
        })
        .unwrap();
        let keys = [Some("k".to_string())];
        with_fetch_ranges(&store, &keys, &[None], 1, 1, None, |f| {
            let mut files = vec![Fetched::Missing];
            assert!(!f.take_run(0..1, &mut files)?);
            Ok(())
        })
        .unwrap();
    }

    #[test]
    fn lazy_fetches_ask_where_each_request_is_as_it_is_taken() {
        let store = MemoryStore::new();
        store
            .put("file", &[&(0..200u8).collect::<Vec<u8>>()])
            .unwrap();
        let asked = Mutex::new(Vec::new());
        let source = |i: usize, buf: &mut Vec<u8>, _memory_only: bool| -> Result<Option<bool>> {
            asked.lock().unwrap().push(i);
            let (key, range) = match i {
                3 => return Ok(Some(false)),
                7 => ("gone", None),
                _ => (
                    "file",
                    Some(ByteRange::Span {
                        offset: 10 * i as u64,
                        len: 10,
                    }),
                ),
            };
            Ok(Some(read_into(&store, key, range, buf)?.is_some()))
        };
        with_lazy_fetch(&store, 10, &source, |f| {
            assert!(asked.lock().unwrap().is_empty(), "asked before taken");
            for i in [5, 0, 3, 7, 1] {
                match (i, f.take(i)?) {
                    (3 | 7, Fetched::Missing) => {}
                    (_, Fetched::Bytes(b)) => {
                        let want: Vec<u8> = (10 * i as u8..10 * i as u8 + 10).collect();
                        assert_eq!(b, want, "request {i}");
                        f.recycle(b);
                    }
                    (i, other) => panic!("request {i}: {other:?}"),
                }
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(asked.into_inner().unwrap(), vec![5, 0, 3, 7, 1]);
    }

    #[test]
    fn ranges_held_by_io_threads_stay_within_the_budget() {
        // Ranges of 7 MiB, though the caller expects 1 byte per fetch: the
        // budget counts each range by its length while it is fetched, and
        // by what arrived until it is used (here slowly, with the one
        // decoding buffer, while the rest wait for it). A network store's
        // budget holds several such ranges; a local store's (4 MiB) one at
        // a time.
        let len = 7 << 20;
        for remote in [true, false] {
            let store = Watched {
                remote,
                ..Watched::default()
            };
            for i in 0..12 {
                store
                    .inner
                    .put(&format!("b/{i}"), &[&vec![i as u8; len + 10]])
                    .unwrap();
            }
            let keys: Vec<Option<String>> = (0..12).map(|i| Some(format!("b/{i}"))).collect();
            let ranges = vec![
                Some(ByteRange::Span {
                    offset: 10,
                    len: len as u64
                });
                12
            ];
            let holding = Mutex::new((0usize, 0usize));
            let work = |o: Offer, buf: Option<&mut Vec<u8>>| {
                let (i, bytes) = (o.index, o.bytes);
                assert_eq!(bytes.len(), len);
                assert!(bytes.iter().all(|&b| b == i as u8));
                if buf.is_none() {
                    let mut h = holding.lock().unwrap();
                    h.0 += bytes.len();
                    h.1 = h.1.max(h.0);
                    return Ok(EarlyUse::NeedsBuffer);
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
                holding.lock().unwrap().0 -= bytes.len();
                Ok(EarlyUse::Used)
            };
            let early = Early {
                work: &work,
                buffers: 1,
            };
            with_fetch_ranges(&store, &keys, &ranges, 16, 1, Some(early), |f| {
                for i in 0..12 {
                    assert!(matches!(f.take(i)?, Fetched::Used), "object {i}");
                }
                Ok(())
            })
            .unwrap();
            let most = holding.into_inner().unwrap().1;
            if remote {
                assert!(most <= IO_BUDGET, "{most} bytes held at once");
                assert!(most >= 2 * len, "ranges are still fetched side by side");
            } else {
                assert_eq!(most, len, "a local store's budget holds one range");
            }
        }
    }

    /// A memory store that counts the ranged reads it is given a buffer
    /// that already has room for the range, and the most writes under way
    /// at once (each write pausing for `put_pause` first).
    #[derive(Debug, Default)]
    struct Watched {
        inner: MemoryStore,
        ranged: std::sync::atomic::AtomicUsize,
        with_room: std::sync::atomic::AtomicUsize,
        put_pause: std::time::Duration,
        putting: std::sync::atomic::AtomicUsize,
        most_putting: std::sync::atomic::AtomicUsize,
        /// Whether it says it is a network store.
        remote: bool,
    }

    impl Store for Watched {
        fn location(&self) -> &str {
            self.inner.location()
        }
        fn describe(&self, key: &str) -> String {
            self.inner.describe(key)
        }
        fn capabilities(&self) -> crate::storage::Capabilities {
            crate::storage::Capabilities {
                remote: self.remote,
                ..self.inner.capabilities()
            }
        }
        fn get_into(&self, key: &str, buf: &mut Vec<u8>) -> Result<bool> {
            self.inner.get_into(key, buf)
        }
        fn get_range_into(
            &self,
            key: &str,
            range: ByteRange,
            buf: &mut Vec<u8>,
        ) -> Result<Option<Option<Version>>> {
            use std::sync::atomic::Ordering::Relaxed;
            self.ranged.fetch_add(1, Relaxed);
            if let ByteRange::Span { len, .. } = range {
                if buf.capacity() as u64 >= len {
                    self.with_room.fetch_add(1, Relaxed);
                }
            }
            self.inner.get_range_into(key, range, buf)
        }
        fn get_versioned(&self, key: &str) -> Result<Option<(Vec<u8>, Version)>> {
            self.inner.get_versioned(key)
        }
        fn size(&self, key: &str) -> Result<Option<u64>> {
            self.inner.size(key)
        }
        fn put(&self, key: &str, parts: &[&[u8]]) -> Result<()> {
            use std::sync::atomic::Ordering::SeqCst;
            let now = self.putting.fetch_add(1, SeqCst) + 1;
            self.most_putting.fetch_max(now, SeqCst);
            std::thread::sleep(self.put_pause);
            let put = self.inner.put(key, parts);
            self.putting.fetch_sub(1, SeqCst);
            put
        }
        fn put_if(
            &self,
            key: &str,
            data: &[u8],
            condition: &crate::storage::Precondition,
        ) -> Result<bool> {
            self.inner.put_if(key, data, condition)
        }
        fn delete(&self, key: &str) -> Result<bool> {
            self.inner.delete(key)
        }
        fn delete_dir(&self, dir: &str) -> Result<bool> {
            self.inner.delete_dir(dir)
        }
        fn list(&self, dir: &str) -> Result<Option<crate::storage::Listing>> {
            self.inner.list(dir)
        }
        fn is_dir(&self, dir: &str) -> Result<bool> {
            self.inner.is_dir(dir)
        }
        fn create_dir(&self, dir: &str) -> Result<()> {
            self.inner.create_dir(dir)
        }
    }

    #[test]
    fn a_body_that_panics_stops_the_io_threads_and_the_panic_reaches_the_caller() {
        let store = MemoryStore::new();
        for i in 0..8 {
            store.put(&format!("k{i}"), &[b"bytes"]).unwrap();
        }
        let keys: Vec<Option<String>> = (0..8).map(|i| Some(format!("k{i}"))).collect();
        let fetched = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            with_fetch(&store, &keys, 4, 5, None, |fetch| -> Result<()> {
                fetch.take(0)?;
                panic!("a decoding thread's bug")
            })
        }));
        assert!(fetched.is_err(), "the panic is the caller's");
        let uploaded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            with_upload(&store, 4, |upload| -> Result<()> {
                upload.put("queued".into(), b"x".to_vec())?;
                panic!("an encoding thread's bug")
            })
        }));
        assert!(uploaded.is_err(), "the panic is the caller's");
        // A panic in the work an I/O thread does with what it received.
        let work = |offer: Offer, _: Option<&mut Vec<u8>>| -> Result<EarlyUse> {
            if offer.index == 3 {
                panic!("a bug in the early work");
            }
            Ok(EarlyUse::HandOn)
        };
        let early = Early {
            work: &work,
            buffers: 1,
        };
        let fetched = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            with_fetch(&store, &keys, 2, 5, Some(early), |fetch| -> Result<()> {
                for i in 0..keys.len() {
                    fetch.take(i)?;
                }
                Ok(())
            })
        }));
        assert!(fetched.is_err(), "the panic is the caller's");
    }

    #[test]
    fn ranges_given_back_serve_later_ranges() {
        // 20 ranges of 9 MiB (of one object), two at a time within the
        // budget, each taken and given back: the buffers go round rather
        // than each range faulting in fresh memory. (An I/O thread may
        // start a fetch between a take and its give-back, so a few more
        // than two are made; on a machine busy with other work, where the
        // I/O threads often run ahead of the taker, 12 of 20 have been seen.
        // Without the give-back every one would be.)
        use std::sync::atomic::Ordering::Relaxed;
        let store = Watched::default();
        let (n, len) = (20, 9 << 20);
        let data: Vec<u8> = (0..len + 5).map(|i| (i % 251) as u8).collect();
        store.put("s", &[&data]).unwrap();
        let keys = vec![Some("s".to_string()); n];
        let range = ByteRange::Span {
            offset: 5,
            len: len as u64,
        };
        let ranges = vec![Some(range); n];
        with_fetch_ranges(&store, &keys, &ranges, 4, len, None, |f| {
            for i in 0..n {
                match f.take(i)? {
                    Fetched::Bytes(b) => {
                        assert!(b[..] == data[5..], "range {i}");
                        f.recycle(b);
                    }
                    _ => panic!("range {i} is there"),
                }
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(store.ranged.load(Relaxed), n);
        let fresh = n - store.with_room.load(Relaxed);
        assert!(
            fresh <= 3 * n / 4,
            "{fresh} of {n} ranged reads got a new buffer"
        );
    }

    #[test]
    fn objects_larger_than_the_budget_are_written_two_at_a_time() {
        // Four objects each larger than the whole budget, queued as fast as
        // they come, with 4 I/O threads: two are under way at once, never
        // more (the memory they hold), never fewer (one on the wire at a
        // time would leave the threads idle).
        use std::sync::atomic::Ordering::SeqCst;
        let store = Watched {
            put_pause: std::time::Duration::from_millis(50),
            ..Default::default()
        };
        let len = IO_BUDGET + 1;
        with_upload(&store, 4, |upload| {
            for i in 0..4u8 {
                upload.put(format!("big/{i}"), vec![i; len])?;
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(store.most_putting.load(SeqCst), UPLOAD_OBJECTS_ANY_SIZE);
        for i in 0..4u8 {
            let got = store.get(&format!("big/{i}")).unwrap().unwrap();
            assert!(got.len() == len && got.iter().all(|&b| b == i), "big/{i}");
        }
        // Small objects go many at a time within the budget.
        let store = Watched {
            put_pause: std::time::Duration::from_millis(50),
            ..Default::default()
        };
        with_upload(&store, 4, |upload| {
            for i in 0..8u8 {
                upload.put(format!("small/{i}"), vec![i; 1 << 10])?;
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(store.most_putting.load(SeqCst), 4);
    }

    #[test]
    fn spare_buffers_fit_their_range_and_their_bounds() {
        let mut s = FetchState::default();
        let mib = 1 << 20;
        s.give_back(Vec::with_capacity(2 * mib));
        s.give_back(Vec::with_capacity(mib));
        assert_eq!(s.spare_bytes, 3 * mib);
        // A range gets a buffer with room for it and at most a quarter
        // more; a whole object the last one given back.
        assert_eq!(s.take_spare(Some(3 * mib)).capacity(), 0);
        assert_eq!(s.take_spare(Some(mib / 2)).capacity(), 0);
        assert_eq!(s.take_spare(Some(mib * 7 / 4)).capacity(), 2 * mib);
        assert_eq!(s.spare_bytes, mib);
        assert_eq!(s.take_spare(None).capacity(), mib);
        assert_eq!((s.spare.len(), s.spare_bytes), (0, 0));
        // No more than SPARE_BYTES and SPARE_BUFFERS are kept.
        s.give_back(Vec::with_capacity(SPARE_BYTES - mib));
        s.give_back(Vec::with_capacity(2 * mib));
        s.give_back(Vec::with_capacity(mib));
        assert_eq!(s.spare_bytes, SPARE_BYTES);
        s.take_spare(None);
        s.take_spare(None);
        assert_eq!(s.spare_bytes, 0);
        for _ in 0..SPARE_BUFFERS + 3 {
            s.give_back(Vec::with_capacity(1000));
        }
        assert_eq!(s.spare.len(), SPARE_BUFFERS);
        assert_eq!(
            s.spare_bytes,
            s.spare.iter().map(Vec::capacity).sum::<usize>()
        );
    }

    #[test]
    fn fetch_stops_when_the_body_fails() {
        let store = MemoryStore::new();
        let keys: Vec<Option<String>> = (0..10_000).map(|i| Some(format!("k/{i}"))).collect();
        let r: Result<()> = with_fetch(&store, &keys, 8, 1 << 20, None, |f| {
            f.take(0)?;
            Err(Error::invalid_argument("stop"))
        });
        assert_eq!(r.unwrap_err().message(), "stop");
    }

    #[test]
    fn a_growing_fetch_fetches_what_is_added_while_it_runs() {
        // Each object names the next; the body learns what to fetch next
        // from what it took, as a sharded read learns ranges from indexes.
        let store = MemoryStore::new();
        for i in 0..40u8 {
            store.put(&format!("g/{i}"), &[&[i + 1, i, i, i]]).unwrap();
        }
        let first = vec![Some("g/0".to_string()), None];
        let ranges = vec![None, None];
        let work = |o: Offer, buf: Option<&mut Vec<u8>>| {
            let (i, bytes) = (o.index, o.bytes);
            // Used up with a decoding buffer when the object's number is odd.
            Ok(match (i >= 2 && bytes[1] % 2 == 1, buf) {
                (false, _) => EarlyUse::HandOn,
                (true, None) => EarlyUse::NeedsBuffer,
                (true, Some(_)) => EarlyUse::Used,
            })
        };
        let early = Early {
            work: &work,
            buffers: 1,
        };
        let got = with_growing_fetch(&store, &first, &ranges, 4, 4, Some(early), |f| {
            assert!(matches!(f.take(1)?, Fetched::Missing));
            let mut next = 0;
            let mut got = Vec::new();
            for j in 0..40 {
                let i = if j == 0 { 0 } else { next };
                match f.take(i)? {
                    Fetched::Bytes(b) => {
                        assert_eq!(b[1] as usize, j, "object {j}");
                        got.push(b[1]);
                        f.recycle(b);
                    }
                    Fetched::Used => got.push(j as u8),
                    Fetched::Missing => panic!("object {j} is there"),
                }
                if j + 1 < 40 {
                    // A suffix of 3 bytes: the object's number three times.
                    let range = Some(ByteRange::Suffix(3));
                    let k = f.push(
                        Some(format!("g/{}", j + 1)),
                        if j % 2 == 0 { None } else { range },
                    );
                    assert_eq!(k, j + 2, "requests are numbered in order");
                    next = k;
                }
            }
            f.close();
            Ok(got)
        })
        .unwrap();
        assert_eq!(got, (0..40).collect::<Vec<u8>>());
    }

    #[test]
    fn a_growing_fetch_ends_when_its_body_does() {
        // Not closed, nothing added: the I/O threads stop with the body.
        let store = MemoryStore::new();
        let keys = vec![None; 3];
        let r = with_growing_fetch(&store, &keys, &[], 8, 1, None, |f| {
            f.take(2).map(|got| matches!(got, Fetched::Missing))
        });
        assert!(r.unwrap());
        // An error of the body stops requests still waiting for budget.
        for i in 0..100 {
            store
                .put(&format!("b/{i}"), &[&vec![0u8; 1 << 20]])
                .unwrap();
        }
        let r: Result<()> = with_growing_fetch(&store, &[], &[], 2, 1 << 20, None, |f| {
            for i in 0..100 {
                f.push(Some(format!("b/{i}")), None);
            }
            f.take(0)?;
            Err(Error::invalid_argument("stop"))
        });
        assert_eq!(r.unwrap_err().message(), "stop");
    }

    #[test]
    fn uploads_everything_and_reports_the_first_error() {
        let store = MemoryStore::new();
        with_upload(&store, 4, |u| {
            for i in 0..100 {
                let mut b = u.buffer();
                b.extend_from_slice(&[i as u8; 300]);
                u.put(format!("u/{i}"), b)?;
            }
            u.delete("u/7".into())
        })
        .unwrap();
        assert_eq!(store.list_keys("u").unwrap().len(), 99);
        assert_eq!(store.get("u/42").unwrap().unwrap(), [42u8; 300]);
        // A read-only store fails every write: the error comes back.
        let ro = crate::storage::FsStore::new("/proc/n5-cannot-write-here");
        let e = with_upload(&ro, 2, |u| {
            for i in 0..10 {
                u.put(format!("x/{i}"), vec![0; 10])?;
            }
            Ok(())
        })
        .unwrap_err();
        assert!(e.message().contains("n5-cannot-write-here"), "{e}");
    }
}
