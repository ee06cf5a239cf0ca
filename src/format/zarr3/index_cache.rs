//! The shard indexes an open array has read over a network, each kept with
//! the version of the shard it came from, so that the next read of an
//! inner chunk of that shard is one range request instead of two; and the
//! rule by which a range is trusted with an index ([`replaced`]). A kept
//! index is only a guess at where the bytes are: the range read with it
//! must come back with the same version, or the shard has been replaced
//! and is read again (see `ZarrArray::read_chunk` and the sharded region
//! reads). Kept only on stores whose versions name one object
//! ([`Capabilities::exact_versions`]); bounded by [`MAX_BYTES`] per open
//! array, the oldest indexes going first.

use std::fmt;
use std::sync::{Arc, Mutex};

use super::shard::Entry;
use crate::lru::Lru;
use crate::storage::{Capabilities, Version};

/// Bytes of kept indexes per open array at most, counting each index's
/// entries, key, version and bookkeeping: about 340,000 entries of shards
/// of 64 inner chunks, or 8 shards of 32,768.
pub(crate) const MAX_BYTES: usize = 8 << 20;

/// Bookkeeping bytes counted per kept index besides its entries, key and
/// version (map and queue slots, the `Arc`'s counts).
const PER_INDEX: usize = 128;

/// Whether reads from a store with `caps` keep indexes: over a network,
/// where a request saved is a round trip, and only where a version names
/// one object.
pub(crate) fn applies(caps: Capabilities) -> bool {
    caps.remote && caps.exact_versions
}

/// The index an inner chunk's offsets came from.
#[derive(Clone, Debug)]
pub(crate) enum IndexFrom {
    /// Read by this read, with the shard's version if the store told it.
    Read(Option<Version>),
    /// Kept from an earlier read, with the shard's version then.
    Kept(Version),
}

/// Whether a shard's range, which came with `version`, came from another
/// version of it than the index `from`: replaced in between (or gone). An
/// index read by the same read is trusted when either version is unknown;
/// a kept one only with the same version.
pub(crate) fn replaced(from: &IndexFrom, version: Option<&Version>) -> bool {
    match from {
        IndexFrom::Read(index) => matches!((index, version), (Some(a), Some(b)) if a != b),
        IndexFrom::Kept(index) => version != Some(index),
    }
}

/// A shard's index as read, and the version of the shard it came from.
#[derive(Clone, Debug)]
pub(crate) struct Known {
    /// The shard's version when the index was read.
    pub version: Version,
    /// The decoded entries, by inner chunk number.
    pub entries: Arc<[Option<Entry>]>,
}

/// The indexes kept for one open array, by shard key, the oldest kept
/// going first.
#[derive(Default)]
pub(crate) struct IndexCache {
    inner: Mutex<Lru<Known>>,
}

impl fmt::Debug for IndexCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = self.lock();
        f.debug_struct("IndexCache")
            .field("shards", &inner.len())
            .field("bytes", &inner.bytes())
            .finish()
    }
}

impl IndexCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, Lru<Known>> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The index kept for the shard at `key`, if any, when it lists every
    /// inner chunk of `numbers` as stored (one it lists as missing may have
    /// been written since: that needs the index read again).
    pub(crate) fn listing(
        &self,
        key: &str,
        mut numbers: impl Iterator<Item = usize>,
    ) -> Option<Known> {
        let inner = self.lock();
        let known = inner.peek(key)?;
        numbers
            .all(|n| known.entries.get(n).is_some_and(|e| e.is_some()))
            .then(|| known.clone())
    }

    /// Keep `entries`, the index of the shard at `key` as read with
    /// `version`, in place of any kept before (nothing without a version);
    /// the oldest others go while more than [`MAX_BYTES`] are counted (an
    /// index larger than that is not kept).
    pub(crate) fn keep(
        &self,
        key: &str,
        version: Option<&Version>,
        entries: &Arc<[Option<Entry>]>,
    ) {
        let Some(version) = version else {
            return;
        };
        let cost = entries.len() * std::mem::size_of::<Option<Entry>>()
            + 2 * key.len()
            + version.0.len()
            + PER_INDEX;
        let mut inner = self.lock();
        if cost > MAX_BYTES {
            inner.remove(key);
            return;
        }
        let known = Known {
            version: version.clone(),
            entries: Arc::clone(entries),
        };
        inner.insert(key, known, cost as u64, MAX_BYTES as u64);
    }

    /// Forget the index of the shard at `key` (found replaced or gone, or
    /// written by this process).
    pub(crate) fn forget(&self, key: &str) {
        self.lock().remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(n: usize) -> Arc<[Option<Entry>]> {
        (0..n as u64)
            .map(|i| {
                Some(Entry {
                    offset: i * 10,
                    nbytes: 10,
                })
            })
            .collect()
    }

    fn v(s: &str) -> Version {
        Version(s.to_string())
    }

    /// Entries whose counted bytes are `MAX_BYTES / parts` with key
    /// `s0`-like (two bytes) and version `1`.
    fn share(parts: usize) -> usize {
        (MAX_BYTES / parts - PER_INDEX - 2 * 2 - 1) / std::mem::size_of::<Option<Entry>>()
    }

    #[test]
    fn keeps_replaces_and_forgets() {
        let cache = IndexCache::default();
        assert!(cache.listing("a", 0..4).is_none());
        cache.keep("a", None, &index(4));
        assert!(cache.listing("a", 0..4).is_none(), "no version: not kept");
        cache.keep("a", Some(&v("1")), &index(4));
        let known = cache.listing("a", 0..4).unwrap();
        assert_eq!((known.version, known.entries.len()), (v("1"), 4));
        cache.keep("a", Some(&v("2")), &index(8));
        let known = cache.listing("a", [7].into_iter()).unwrap();
        assert_eq!((known.version, known.entries.len()), (v("2"), 8));
        assert!(cache.listing("a", [8].into_iter()).is_none(), "beyond");
        cache.forget("a");
        assert!(cache.listing("a", 0..1).is_none());
        assert_eq!(cache.lock().bytes(), 0);
    }

    #[test]
    fn an_index_listing_a_chunk_missing_is_not_given_for_it() {
        let cache = IndexCache::default();
        let mut entries: Vec<Option<Entry>> = index(4).to_vec();
        entries[2] = None;
        cache.keep("a", Some(&v("1")), &entries.into());
        assert!(cache.listing("a", [0, 1, 3].into_iter()).is_some());
        assert!(cache.listing("a", [1, 2].into_iter()).is_none());
    }

    #[test]
    fn the_oldest_go_first_and_the_bound_holds() {
        let cache = IndexCache::default();
        let per = share(4);
        for k in 0..4 {
            cache.keep(&format!("s{k}"), Some(&v("1")), &index(per));
        }
        assert!(cache.lock().bytes() <= MAX_BYTES as u64);
        // Kept again: now the newest.
        cache.keep("s0", Some(&v("2")), &index(per));
        cache.keep("s4", Some(&v("1")), &index(per));
        assert!(cache.listing("s1", 0..1).is_none(), "the oldest went");
        for k in [0, 2, 3, 4] {
            assert!(cache.listing(&format!("s{k}"), 0..1).is_some(), "s{k}");
        }
        // Room for two: s2 and s3 go; s0 (kept again) and s4 stay.
        cache.keep("s5", Some(&v("1")), &index(2 * per));
        assert!(cache.listing("s2", 0..1).is_none() && cache.listing("s3", 0..1).is_none());
        for k in [0, 4, 5] {
            assert!(cache.listing(&format!("s{k}"), 0..1).is_some(), "s{k}");
        }
        assert!(cache.lock().bytes() <= MAX_BYTES as u64);
        // Larger than the bound: not kept, nothing else lost.
        let before = cache.lock().bytes();
        cache.keep("huge", Some(&v("1")), &index(MAX_BYTES / 16));
        assert!(cache.listing("huge", 0..1).is_none());
        assert_eq!(cache.lock().bytes(), before);
    }

    #[test]
    fn kept_and_forgotten_again_and_again_the_count_stays_right() {
        let cache = IndexCache::default();
        for round in 0..10_000 {
            cache.keep("a", Some(&v(&round.to_string())), &index(2));
            if round % 3 == 0 {
                cache.forget("a");
            }
        }
        let inner = cache.lock();
        assert!(inner.len() <= 1);
        assert_eq!(inner.bytes() == 0, inner.len() == 0);
    }

    #[test]
    fn only_remote_stores_with_exact_versions_keep_indexes() {
        let caps = |remote, exact_versions| Capabilities {
            writable: true,
            list: true,
            remote,
            exact_versions,
        };
        assert!(applies(caps(true, true)));
        assert!(!applies(caps(true, false)), "plain HTTP");
        assert!(!applies(caps(false, true)) && !applies(caps(false, false)));
    }

    #[test]
    fn kept_indexes_need_the_same_version_read_ones_a_different_one() {
        let (a, b) = (v("a"), v("b"));
        assert!(!replaced(&IndexFrom::Read(Some(a.clone())), Some(&a)));
        assert!(replaced(&IndexFrom::Read(Some(a.clone())), Some(&b)));
        assert!(!replaced(&IndexFrom::Read(None), Some(&b)));
        assert!(!replaced(&IndexFrom::Read(Some(a.clone())), None));
        assert!(!replaced(&IndexFrom::Kept(a.clone()), Some(&a)));
        assert!(replaced(&IndexFrom::Kept(a.clone()), Some(&b)));
        assert!(replaced(&IndexFrom::Kept(a), None));
    }
}
