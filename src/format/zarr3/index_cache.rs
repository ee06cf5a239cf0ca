//! The shard indexes an open array has read over a network, each kept with
//! the version of the shard it came from, so that the next read of an
//! inner chunk of that shard is one range request instead of two. A kept
//! index is only a guess at where the bytes are: the range read with it
//! must come back with the same version, or the shard has been replaced
//! and is read again (see `ZarrArray::read_block` and the sharded region
//! reads). Bounded by [`MAX_ENTRIES`] index entries in all; the oldest
//! indexes go first.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::{Arc, Mutex};

use super::shard::Entry;
use crate::storage::Version;

/// Index entries kept per open array at most (24 bytes each: 6 MiB), as
/// many as 4096 shards of 64 inner chunks or 8 of 32768.
pub(crate) const MAX_ENTRIES: usize = 1 << 18;

/// A shard's index as read, and the version of the shard it came from.
#[derive(Clone, Debug)]
pub(crate) struct Known {
    /// The shard's version when the index was read.
    pub version: Version,
    /// The decoded entries, by inner chunk number.
    pub entries: Arc<[Option<Entry>]>,
}

/// The indexes kept for one open array, by shard key.
#[derive(Default)]
pub(crate) struct IndexCache {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// By key: when it was kept (a sequence number) and the index.
    map: HashMap<String, (u64, Known)>,
    /// Keys in the order they were kept, with that sequence number; a key
    /// kept again or forgotten leaves a stale pair that is skipped.
    order: VecDeque<(u64, String)>,
    /// Entries in `map`.
    entries: usize,
    next: u64,
}

impl fmt::Debug for IndexCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = self.lock();
        f.debug_struct("IndexCache")
            .field("shards", &inner.map.len())
            .field("entries", &inner.entries)
            .finish()
    }
}

impl IndexCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The index kept for the shard at `key`, if any.
    pub(crate) fn get(&self, key: &str) -> Option<Known> {
        self.lock().map.get(key).map(|(_, known)| known.clone())
    }

    /// Keep `entries`, the index of the shard at `key` read from its
    /// `version`, in place of any kept before; the oldest others go while
    /// more than [`MAX_ENTRIES`] are kept (an index larger than that is not
    /// kept).
    pub(crate) fn put(&self, key: &str, version: Version, entries: Arc<[Option<Entry>]>) {
        let mut inner = self.lock();
        inner.remove(key);
        if entries.len() > MAX_ENTRIES {
            return;
        }
        while inner.entries + entries.len() > MAX_ENTRIES {
            let Some((seq, oldest)) = inner.order.pop_front() else {
                break;
            };
            if inner.map.get(&oldest).is_some_and(|(s, _)| *s == seq) {
                inner.remove(&oldest);
            }
        }
        let seq = inner.next;
        inner.next += 1;
        inner.entries += entries.len();
        inner.order.push_back((seq, key.to_string()));
        inner
            .map
            .insert(key.to_string(), (seq, Known { version, entries }));
        // Stale pairs never outnumber the kept ones by much.
        if inner.order.len() > 2 * inner.map.len() + 64 {
            let Inner { map, order, .. } = &mut *inner;
            order.retain(|(s, k)| map.get(k).is_some_and(|(kept, _)| kept == s));
        }
    }

    /// Forget the index of the shard at `key` (replaced, deleted or
    /// written by this process).
    pub(crate) fn forget(&self, key: &str) {
        self.lock().remove(key);
    }
}

impl Inner {
    fn remove(&mut self, key: &str) {
        if let Some((_, known)) = self.map.remove(key) {
            self.entries -= known.entries.len();
        }
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

    #[test]
    fn keeps_replaces_and_forgets() {
        let cache = IndexCache::default();
        assert!(cache.get("a").is_none());
        cache.put("a", v("1"), index(4));
        let known = cache.get("a").unwrap();
        assert_eq!((known.version, known.entries.len()), (v("1"), 4));
        cache.put("a", v("2"), index(8));
        let known = cache.get("a").unwrap();
        assert_eq!((known.version, known.entries.len()), (v("2"), 8));
        assert_eq!(cache.lock().entries, 8);
        cache.forget("a");
        assert!(cache.get("a").is_none());
        assert_eq!(cache.lock().entries, 0);
    }

    #[test]
    fn the_oldest_go_first_and_the_bound_holds() {
        let cache = IndexCache::default();
        let per = MAX_ENTRIES / 4;
        for k in 0..4 {
            cache.put(&format!("s{k}"), v("1"), index(per));
        }
        assert_eq!(cache.lock().entries, MAX_ENTRIES);
        // Kept again: now the newest.
        cache.put("s0", v("2"), index(per));
        cache.put("s4", v("1"), index(per));
        assert!(cache.get("s1").is_none(), "the oldest went");
        for k in [0, 2, 3, 4] {
            assert!(cache.get(&format!("s{k}")).is_some(), "s{k}");
        }
        // Room for two: s2 and s3 go; s0 (kept again) and s4 stay.
        cache.put("s5", v("1"), index(2 * per));
        assert!(cache.get("s2").is_none() && cache.get("s3").is_none());
        for k in [0, 4, 5] {
            assert!(cache.get(&format!("s{k}")).is_some(), "s{k}");
        }
        assert_eq!(cache.lock().entries, MAX_ENTRIES);
        // Larger than the bound: not kept, nothing else lost.
        let before = cache.lock().entries;
        cache.put("huge", v("1"), index(MAX_ENTRIES + 1));
        assert!(cache.get("huge").is_none());
        assert_eq!(cache.lock().entries, before);
    }

    #[test]
    fn stale_order_pairs_stay_few() {
        let cache = IndexCache::default();
        for round in 0..10_000 {
            cache.put("a", v(&round.to_string()), index(2));
            if round % 3 == 0 {
                cache.forget("a");
            }
        }
        let inner = cache.lock();
        assert!(inner.order.len() <= 2 * inner.map.len() + 65);
    }
}
