//! A map from keys to values within a budget of bytes, the least recently
//! used (or, read with [`Lru::peek`], the oldest kept) going first: the
//! bookkeeping of the store's object cache (`storage::cache`) and of the
//! shard indexes an open array keeps (`format::zarr3::index_cache`).

use std::collections::{BTreeMap, HashMap};

/// Values by key, each with what it counts against the budget.
#[derive(Debug)]
pub(crate) struct Lru<V> {
    /// Key to value, last use and cost.
    entries: HashMap<String, (V, u64, u64)>,
    /// Last use to key, oldest first.
    order: BTreeMap<u64, String>,
    bytes: u64,
    tick: u64,
}

impl<V> Default for Lru<V> {
    fn default() -> Self {
        Lru {
            entries: HashMap::new(),
            order: BTreeMap::new(),
            bytes: 0,
            tick: 0,
        }
    }
}

impl<V: Clone> Lru<V> {
    /// The value at `key`, now the most recently used.
    pub(crate) fn get(&mut self, key: &str) -> Option<V> {
        self.tick += 1;
        let tick = self.tick;
        let (value, used, _) = self.entries.get_mut(key)?;
        self.order.remove(used);
        *used = tick;
        self.order.insert(tick, key.to_string());
        Some(value.clone())
    }

    /// The value at `key`, its place in the order unchanged.
    pub(crate) fn peek(&self, key: &str) -> Option<&V> {
        self.entries.get(key).map(|(value, _, _)| value)
    }

    /// Drop the value at `key`, if any.
    pub(crate) fn remove(&mut self, key: &str) {
        if let Some((_, used, cost)) = self.entries.remove(key) {
            self.order.remove(&used);
            self.bytes -= cost;
        }
    }

    /// Keep `value` at `key` in place of any value before, counting
    /// `cost`; the least recently used others go while more than `budget`
    /// is counted.
    pub(crate) fn insert(&mut self, key: &str, value: V, cost: u64, budget: u64) {
        self.remove(key);
        self.tick += 1;
        self.bytes += cost;
        self.entries
            .insert(key.to_string(), (value, self.tick, cost));
        self.order.insert(self.tick, key.to_string());
        while self.bytes > budget {
            let Some((_, oldest)) = self.order.pop_first() else {
                break;
            };
            if let Some((_, _, cost)) = self.entries.remove(&oldest) {
                self.bytes -= cost;
            }
        }
    }

    /// The bytes counted.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The number of values.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The keys, in no order.
    pub(crate) fn keys(&self) -> impl Iterator<Item = &String> {
        self.entries.keys()
    }
}
