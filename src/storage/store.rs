//! The [`Store`] trait, the one synchronous key-value interface the format
//! code talks to, and its small types: byte ranges, versions, write
//! preconditions, listings, capabilities, what an exact read found, the
//! read-modify-write loop every store without a lock of its own shares, and
//! the randomised backoff of retries. Every backend implements [`Store`];
//! this file imports none of them.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use crate::error::{Error, ErrorKind, Result};

/// A byte range of an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ByteRange {
    /// `len` bytes from `offset`, clipped at the object's end.
    Span {
        /// The first byte.
        offset: u64,
        /// How many bytes.
        len: u64,
    },
    /// Everything from `offset` to the end.
    From(u64),
    /// The last `n` bytes (the whole object when it is shorter).
    Suffix(u64),
}

impl ByteRange {
    /// The byte range of an object of `size` bytes this range selects, as
    /// `start..end` (empty when it starts beyond the end).
    pub fn resolve(self, size: u64) -> std::ops::Range<u64> {
        match self {
            ByteRange::Span { offset, len } => {
                let start = offset.min(size);
                start..offset.saturating_add(len).min(size)
            }
            ByteRange::From(offset) => offset.min(size)..size,
            ByteRange::Suffix(n) => size.saturating_sub(n)..size,
        }
    }

    /// The bytes this range selects of `data`, a whole object.
    pub fn slice(self, data: &[u8]) -> &[u8] {
        let span = self.resolve(data.len() as u64);
        &data[span.start as usize..span.end as usize]
    }
}

impl fmt::Display for ByteRange {
    /// The range as in an HTTP `Range` header, after `bytes=`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ByteRange::Span { offset, len } => {
                write!(f, "{offset}-{}", offset.saturating_add(len.max(1)) - 1)
            }
            ByteRange::From(offset) => write!(f, "{offset}-"),
            ByteRange::Suffix(n) => write!(f, "-{n}"),
        }
    }
}

/// What an object's version is to its store (an S3 ETag, a GCS generation,
/// a file's modification time and size): equal versions mean equal content.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Version(pub String);

/// The condition of a conditional write ([`Store::put_if`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Precondition {
    /// Write only when no object exists at the key (create only).
    Absent,
    /// Write only when the object still has this version (if unchanged).
    Matches(Version),
}

/// The children of a directory, one level: names, not keys, sorted, hidden
/// names (starting with `.`) left out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Listing {
    /// Child directories (on object stores: common prefixes).
    pub dirs: Vec<String>,
    /// Child objects or files.
    pub files: Vec<String>,
}

/// What a store can do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capabilities {
    /// Whether it can be written (plain HTTP cannot).
    pub writable: bool,
    /// Whether it can list directories (plain HTTP cannot).
    pub list: bool,
    /// Whether its requests cross a network, so that multi-block work
    /// should keep many requests in flight.
    pub remote: bool,
    /// Whether two reads of a key that come back with the same version
    /// always read the same object (an S3 ETag, a GCS generation, the
    /// memory store's counter). A plain HTTP server's ETag or
    /// Last-Modified is often made from the modification time in whole
    /// seconds, which two versions can share, and so can a file's
    /// modification time, size and inode.
    pub exact_versions: bool,
}

/// What [`Store::get_exact`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Exact {
    /// No object at the key.
    Missing,
    /// The object had exactly the size of the buffers, which now hold it.
    Read,
    /// The object has another size; here it is whole.
    Other(Vec<u8>),
}

/// A synchronous key-value store holding one container: what the format
/// code needs, and no more. Every method may be called from any thread.
///
/// Missing keys are not errors: reads give `None` or `false`. Errors name
/// the key as [`Store::describe`] shows it (a path or a URL without
/// credentials) and never hold a secret. Network backends retry what can be
/// retried within their retry budget before they fail with
/// [`ErrorKind::Network`].
pub trait Store: Send + Sync + fmt::Debug {
    /// The store's location as the user gave it (credentials left out).
    fn location(&self) -> &str;

    /// How `key` is named in messages: its path or URL.
    fn describe(&self, key: &str) -> String;

    /// What the store can do.
    fn capabilities(&self) -> Capabilities;

    /// Read the whole object at `key` into `buf` (replacing its contents,
    /// reusing its memory); `false` when there is none. After `false` or an
    /// error, what `buf` holds is unspecified.
    fn get_into(&self, key: &str, buf: &mut Vec<u8>) -> Result<bool>;

    /// The whole object at `key`, `None` when there is none.
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        let mut buf = Vec::new();
        Ok(self.get_into(key, &mut buf)?.then_some(buf))
    }

    /// The bytes of `range` of the object at `key` (clipped at its end, see
    /// [`ByteRange::resolve`]), `None` when there is none.
    fn get_range(&self, key: &str, range: ByteRange) -> Result<Option<Vec<u8>>> {
        Ok(self
            .get_range_versioned(key, range)?
            .map(|(bytes, _)| bytes))
    }

    /// [`Store::get_range`] with the version of the object the bytes came
    /// from, when the backend tells it with them (`None`: it does not, and
    /// nothing can be compared). Two ranges of one object with the same
    /// version are bytes of the same object; a reader that combines them
    /// (a shard's index and its inner chunks) checks this.
    fn get_range_versioned(
        &self,
        key: &str,
        range: ByteRange,
    ) -> Result<Option<(Vec<u8>, Option<Version>)>> {
        let mut buf = Vec::new();
        Ok(self
            .get_range_into(key, range, &mut buf)?
            .map(|version| (buf, version)))
    }

    /// [`Store::get_range_versioned`] into `buf` (replacing its contents,
    /// reusing its memory): `None` when there is no object, else the
    /// version the bytes came with, if the backend tells it. After `None`
    /// or an error, what `buf` holds is unspecified. Lets a reader that
    /// fetches many ranges reuse a few buffers rather than fault in fresh
    /// memory for each.
    fn get_range_into(
        &self,
        key: &str,
        range: ByteRange,
        buf: &mut Vec<u8>,
    ) -> Result<Option<Option<Version>>>;

    /// Read the object at `key` into `parts`, one after the other, when its
    /// size is exactly their total size; otherwise give it whole. Lets a
    /// reader that knows what size to expect (a raw block) read straight
    /// into its buffers.
    fn get_exact(&self, key: &str, parts: &mut [&mut [u8]]) -> Result<Exact> {
        let Some(bytes) = self.get(key)? else {
            return Ok(Exact::Missing);
        };
        Ok(if fill_parts(&bytes, parts) {
            Exact::Read
        } else {
            Exact::Other(bytes)
        })
    }

    /// The whole object at `key` with its version, `None` when there is none.
    fn get_versioned(&self, key: &str) -> Result<Option<(Vec<u8>, Version)>>;

    /// The size in bytes of the object at `key`, `None` when there is none.
    fn size(&self, key: &str) -> Result<Option<u64>>;

    /// Whether an object exists at `key`.
    fn exists(&self, key: &str) -> Result<bool> {
        Ok(self.size(key)?.is_some())
    }

    /// Replace the object at `key` with the concatenation of `parts`,
    /// atomically: a reader sees the old object or the new one, never a
    /// mix, and a writer killed in the middle leaves the old one.
    fn put(&self, key: &str, parts: &[&[u8]]) -> Result<()>;

    /// The object at `key` of `src` stored at `key_here` in this store as
    /// [`Store::put`] stores it (atomically), or this store's object there
    /// deleted when `src` has none; whether `src` had one. Stores on the
    /// local file system copy file to file in the kernel when `src` keeps
    /// its objects as local files too ([`Store::local_file`]); otherwise the
    /// bytes pass through `buf`.
    fn put_copy(
        &self,
        key_here: &str,
        src: &dyn Store,
        key: &str,
        buf: &mut Vec<u8>,
    ) -> Result<bool> {
        copy_through(self, key_here, src, key, buf)
    }

    /// The file that holds (or would hold) the object at `key`, for stores
    /// that keep their objects as files of the local file system; `None`
    /// for every other store.
    fn local_file(&self, _key: &str) -> Option<PathBuf> {
        None
    }

    /// [`Store::put`] of `data` only if `condition` holds at the moment of
    /// the write; `false` (and nothing written) when it does not.
    fn put_if(&self, key: &str, data: &[u8], condition: &Precondition) -> Result<bool>;

    /// Delete the object at `key`; whether it existed (as far as the store
    /// can tell).
    fn delete(&self, key: &str) -> Result<bool>;

    /// Delete the directory `dir` with everything below it; whether
    /// anything was there.
    fn delete_dir(&self, dir: &str) -> Result<bool>;

    /// The children of the directory `dir`, `None` when it is not one.
    fn list(&self, dir: &str) -> Result<Option<Listing>>;

    /// The keys of every object below `dir`, relative to it, sorted; hidden
    /// names are left out. Object stores answer from a flat listing.
    fn list_keys(&self, dir: &str) -> Result<Vec<String>> {
        let mut out = Vec::new();
        let mut stack = vec![String::new()];
        while let Some(rel) = stack.pop() {
            let Some(listing) = self.list(&crate::path::join(dir, &rel))? else {
                continue;
            };
            out.extend(listing.files.iter().map(|f| crate::path::join(&rel, f)));
            stack.extend(listing.dirs.iter().map(|d| crate::path::join(&rel, d)));
        }
        out.sort();
        Ok(out)
    }

    /// Whether the directory `dir` exists: on a file system, a directory;
    /// on an object store, a directory marker or any object below it (the
    /// root: the bucket or prefix holds something, or is the bucket).
    fn is_dir(&self, dir: &str) -> Result<bool>;

    /// Create the directory `dir` and its parents (on object stores, the
    /// directory marker objects the Java N5 backends write).
    fn create_dir(&self, dir: &str) -> Result<()>;

    /// Read-modify-write the object at `key` atomically with respect to
    /// every other writer that updates it this way, also on other machines:
    /// `f` receives the current content (`None` when there is none) and
    /// returns the new one (`None`: leave it as it is). `f` may run more
    /// than once, when another writer got in between.
    ///
    /// The default is optimistic concurrency: read with the version, write
    /// conditionally, and start over from the read when the condition
    /// fails, with a growing random pause, at most [`UPDATE_ATTEMPTS`]
    /// times.
    fn update(&self, key: &str, f: &mut UpdateFn<'_>) -> Result<()> {
        for attempt in 0..UPDATE_ATTEMPTS {
            let current = self.get_versioned(key)?;
            let Some(next) = f(current.as_ref().map(|(data, _)| &data[..]))? else {
                return Ok(());
            };
            let condition = match current {
                Some((_, version)) => Precondition::Matches(version),
                None => Precondition::Absent,
            };
            if self.put_if(key, &next, &condition)? {
                return Ok(());
            }
            std::thread::sleep(backoff(
                attempt,
                Duration::from_millis(5),
                Duration::from_secs(1),
            ));
        }
        Err(Error::new(
            ErrorKind::Network,
            format!(
                "{}: gave up after {UPDATE_ATTEMPTS} attempts: other writers changed it every time",
                self.describe(key)
            ),
        ))
    }

    /// Delete what writers killed in the middle of a write left behind, if
    /// older than `older_than`: the file system's temporary files. Returns
    /// how many were removed and their size in bytes; stores whose writes
    /// leave nothing behind remove nothing.
    fn remove_stale_temporaries(&self, _older_than: Duration) -> Result<(u64, u64)> {
        Ok((0, 0))
    }
}

/// Copy the object `bytes` into `parts`, one after the other, when its size
/// is exactly their total size; whether it was ([`Store::get_exact`]).
/// [`Store::put_copy`] through `buf`: the object read whole, then put.
pub(crate) fn copy_through<S: Store + ?Sized>(
    dst: &S,
    key_here: &str,
    src: &dyn Store,
    key: &str,
    buf: &mut Vec<u8>,
) -> Result<bool> {
    if src.get_into(key, buf)? {
        dst.put(key_here, &[buf])?;
        Ok(true)
    } else {
        dst.delete(key_here)?;
        Ok(false)
    }
}

pub(crate) fn fill_parts(bytes: &[u8], parts: &mut [&mut [u8]]) -> bool {
    if bytes.len() != parts.iter().map(|p| p.len()).sum::<usize>() {
        return false;
    }
    let mut at = 0;
    for part in parts.iter_mut() {
        part.copy_from_slice(&bytes[at..at + part.len()]);
        at += part.len();
    }
    true
}

/// The change [`Store::update`] makes: the current content in (`None`: no
/// object), the new content out (`None`: leave it as it is).
pub type UpdateFn<'a> = dyn FnMut(Option<&[u8]>) -> Result<Option<Vec<u8>>> + 'a;

/// How often [`Store::update`] starts over before it gives up.
pub const UPDATE_ATTEMPTS: u32 = 64;

/// A pause before attempt `attempt + 1`: "full jitter" exponential backoff,
/// a random duration up to `base * 2^attempt`, at most `cap`.
pub fn backoff(attempt: u32, base: Duration, cap: Duration) -> Duration {
    let ceiling = base
        .checked_mul(1u32 << attempt.min(20))
        .unwrap_or(cap)
        .min(cap);
    ceiling.mul_f64(random_fraction())
}

/// A random number in `[0, 1)`, from the standard library's per-process
/// random hasher keys and a counter: enough to spread retries, not for
/// cryptography.
pub(crate) fn random_fraction() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_resolve_like_http() {
        let r = |range: ByteRange| range.resolve(100);
        assert_eq!(r(ByteRange::Span { offset: 10, len: 5 }), 10..15);
        assert_eq!(r(ByteRange::Span { offset: 98, len: 5 }), 98..100);
        assert_eq!(
            r(ByteRange::Span {
                offset: 200,
                len: 5
            }),
            100..100
        );
        assert_eq!(r(ByteRange::From(40)), 40..100);
        assert_eq!(r(ByteRange::Suffix(10)), 90..100);
        assert_eq!(r(ByteRange::Suffix(1000)), 0..100);
        assert_eq!(ByteRange::Suffix(2).slice(b"abcde"), b"de");
        assert_eq!(ByteRange::From(9).slice(b"abcde"), b"");
        assert_eq!(ByteRange::Span { offset: 10, len: 5 }.to_string(), "10-14");
        assert_eq!(ByteRange::From(7).to_string(), "7-");
        assert_eq!(ByteRange::Suffix(8).to_string(), "-8");
    }

    #[test]
    fn backoff_stays_under_its_ceiling() {
        for attempt in 0..40 {
            let d = backoff(attempt, Duration::from_millis(100), Duration::from_secs(5));
            assert!(d <= Duration::from_millis(100) * (1 << attempt.min(6)));
            assert!(d <= Duration::from_secs(5));
        }
        let spread: std::collections::HashSet<u128> = (0..20)
            .map(|_| backoff(10, Duration::from_millis(1), Duration::from_secs(1)).as_nanos())
            .collect();
        assert!(spread.len() > 10, "backoff must be random");
    }
}
