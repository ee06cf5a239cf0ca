//! An in-memory cache in front of any [`Store`]: whole objects (and the
//! fact that a key holds none) kept by key, least recently used first out,
//! within a byte budget, for viewers that come back to the same blocks.
//! Which keys are cached is the caller's choice (a container caches blocks,
//! not its metadata, so other writers' attribute changes stay visible).
//! Writes and deletes through the cache update or drop its entries; what
//! other processes write is seen once an entry is evicted.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::store::{
    fill_parts, ByteRange, Capabilities, Exact, Listing, Precondition, Store, UpdateFn, Version,
};
use crate::error::Result;
use crate::lru::Lru;

/// Which keys a [`CachedStore`] keeps.
pub type Cacheable = fn(&str) -> bool;

/// A missing object costs this much of the budget (the key and the entry).
const MISSING_COST: u64 = 64;

/// A cached object (`None`: the key holds none).
type Value = Option<Arc<Vec<u8>>>;

fn cost(key: &str, value: &Value) -> u64 {
    key.len() as u64
        + value
            .as_ref()
            .map_or(MISSING_COST, |v| v.len() as u64 + MISSING_COST)
}

/// Keep `value` at `key` in `lru` within `budget`.
fn keep(lru: &mut Lru<Value>, key: &str, value: Value, budget: u64) {
    let c = cost(key, &value);
    if c > budget / 4 {
        lru.remove(key);
        return; // one object may not take over the cache
    }
    lru.insert(key, value, c, budget);
}

/// A store with a cache of whole objects in front.
#[derive(Debug)]
pub struct CachedStore {
    inner: Arc<dyn Store>,
    budget: u64,
    cacheable: Cacheable,
    lru: Mutex<Lru<Value>>,
}

impl CachedStore {
    /// `inner` behind a cache of at most `budget` bytes, keeping the keys
    /// `cacheable` accepts.
    pub fn new(inner: Arc<dyn Store>, budget: u64, cacheable: Cacheable) -> Self {
        CachedStore {
            inner,
            budget,
            cacheable,
            lru: Mutex::new(Lru::default()),
        }
    }

    fn lru(&self) -> std::sync::MutexGuard<'_, Lru<Value>> {
        self.lru.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The cached object at `key`, fetched on a miss.
    fn fetch(&self, key: &str) -> Result<Option<Arc<Vec<u8>>>> {
        if let Some(hit) = self.lru().get(key) {
            return Ok(hit);
        }
        let value = self.inner.get(key)?.map(Arc::new);
        keep(&mut self.lru(), key, value.clone(), self.budget);
        Ok(value)
    }

    /// The bytes cached and the number of entries.
    pub fn usage(&self) -> (u64, usize) {
        let lru = self.lru();
        (lru.bytes(), lru.len())
    }
}

impl Store for CachedStore {
    fn location(&self) -> &str {
        self.inner.location()
    }

    fn describe(&self, key: &str) -> String {
        self.inner.describe(key)
    }

    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }

    fn get_into(&self, key: &str, buf: &mut Vec<u8>) -> Result<bool> {
        if !(self.cacheable)(key) {
            return self.inner.get_into(key, buf);
        }
        match self.fetch(key)? {
            Some(data) => {
                buf.clear();
                buf.extend_from_slice(&data);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn get_range_into(
        &self,
        key: &str,
        range: ByteRange,
        buf: &mut Vec<u8>,
    ) -> Result<Option<Option<Version>>> {
        if (self.cacheable)(key) {
            if let Some(hit) = self.lru().get(key) {
                // The cache keeps no versions.
                return Ok(hit.map(|data| {
                    buf.clear();
                    buf.extend_from_slice(range.slice(&data));
                    None
                }));
            }
        }
        self.inner.get_range_into(key, range, buf)
    }

    fn get_exact(&self, key: &str, parts: &mut [&mut [u8]]) -> Result<Exact> {
        if !(self.cacheable)(key) {
            return self.inner.get_exact(key, parts);
        }
        let Some(data) = self.fetch(key)? else {
            return Ok(Exact::Missing);
        };
        Ok(if fill_parts(&data, parts) {
            Exact::Read
        } else {
            Exact::Other(data.to_vec())
        })
    }

    fn get_versioned(&self, key: &str) -> Result<Option<(Vec<u8>, Version)>> {
        self.inner.get_versioned(key)
    }

    fn size(&self, key: &str) -> Result<Option<u64>> {
        if (self.cacheable)(key) {
            if let Some(hit) = self.lru().get(key) {
                return Ok(hit.map(|d| d.len() as u64));
            }
        }
        self.inner.size(key)
    }

    fn put(&self, key: &str, parts: &[&[u8]]) -> Result<()> {
        self.lru().remove(key);
        self.inner.put(key, parts)
    }

    fn put_if(&self, key: &str, data: &[u8], condition: &Precondition) -> Result<bool> {
        self.lru().remove(key);
        self.inner.put_if(key, data, condition)
    }

    fn delete(&self, key: &str) -> Result<bool> {
        self.lru().remove(key);
        self.inner.delete(key)
    }

    fn delete_dir(&self, dir: &str) -> Result<bool> {
        {
            let mut lru = self.lru();
            let prefix = format!("{dir}/");
            let doomed: Vec<String> = lru
                .keys()
                .filter(|k| dir.is_empty() || k.starts_with(&prefix))
                .cloned()
                .collect();
            for k in doomed {
                lru.remove(&k);
            }
        }
        self.inner.delete_dir(dir)
    }

    fn list(&self, dir: &str) -> Result<Option<Listing>> {
        self.inner.list(dir)
    }

    fn list_keys(&self, dir: &str) -> Result<Vec<String>> {
        self.inner.list_keys(dir)
    }

    fn is_dir(&self, dir: &str) -> Result<bool> {
        self.inner.is_dir(dir)
    }

    fn create_dir(&self, dir: &str) -> Result<()> {
        self.inner.create_dir(dir)
    }

    fn update(&self, key: &str, f: &mut UpdateFn<'_>) -> Result<()> {
        self.lru().remove(key);
        self.inner.update(key, f)
    }

    fn remove_stale_temporaries(&self, older_than: Duration) -> Result<(u64, u64)> {
        self.inner.remove_stale_temporaries(older_than)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::memory::MemoryStore;

    #[test]
    fn hits_evictions_and_invalidation() {
        let inner = Arc::new(MemoryStore::new());
        let cached = CachedStore::new(inner.clone(), 4096, |k| k.starts_with("b/"));
        for i in 0..8 {
            inner.put(&format!("b/{i}"), &[&[i as u8; 500]]).unwrap();
        }
        inner.put("meta", &[b"1"]).unwrap();
        assert_eq!(cached.get("b/0").unwrap().unwrap(), [0u8; 500]);
        // A change behind the cache's back is not seen while cached...
        inner.put("b/0", &[b"changed"]).unwrap();
        assert_eq!(cached.get("b/0").unwrap().unwrap(), [0u8; 500]);
        // ...but keys the cache does not keep always are.
        assert_eq!(cached.get("meta").unwrap().unwrap(), b"1");
        inner.put("meta", &[b"2"]).unwrap();
        assert_eq!(cached.get("meta").unwrap().unwrap(), b"2");
        // Writes through the cache are seen at once.
        cached.put("b/0", &[b"mine"]).unwrap();
        assert_eq!(cached.get("b/0").unwrap().unwrap(), b"mine");
        // Missing objects are remembered, and forgotten on a write.
        assert_eq!(cached.get("b/missing").unwrap(), None);
        cached.put("b/missing", &[b"now"]).unwrap();
        assert_eq!(cached.get("b/missing").unwrap().unwrap(), b"now");
        // The budget holds.
        for i in 0..8 {
            cached.get(&format!("b/{i}")).unwrap();
        }
        assert!(cached.usage().0 <= 4096, "{:?}", cached.usage());
        cached.delete_dir("b").unwrap();
        assert_eq!(cached.usage(), (0, 0));
    }
}
