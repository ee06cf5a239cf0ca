//! A [`Store`] in memory: a sorted map from keys to objects, with the
//! semantics of an object store (directories exist where objects lie below
//! them or where a directory was created; versions are generations). For
//! unit tests and scratch containers; everything is lost when the last
//! handle goes.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, RwLock};

use super::store::{ByteRange, Capabilities, Listing, Precondition, Store, Version};
use crate::error::Result;

#[derive(Debug, Default)]
struct Objects {
    /// Key to (content, generation).
    objects: BTreeMap<String, (Arc<Vec<u8>>, u64)>,
    /// Directories created explicitly (like the markers of object stores).
    dirs: BTreeSet<String>,
    generation: u64,
}

/// A store that keeps its objects in memory.
#[derive(Debug, Default)]
pub struct MemoryStore {
    objects: RwLock<Objects>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        MemoryStore::default()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Objects> {
        self.objects.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Objects> {
        self.objects.write().unwrap_or_else(|p| p.into_inner())
    }
}

/// `dir` as a key prefix: `""` or `"dir/"`.
fn prefix(dir: &str) -> String {
    if dir.is_empty() {
        String::new()
    } else {
        format!("{dir}/")
    }
}

impl Objects {
    fn insert(&mut self, key: &str, data: Vec<u8>) {
        self.generation += 1;
        self.objects
            .insert(key.to_string(), (Arc::new(data), self.generation));
    }

    fn version(&self, key: &str) -> Option<Version> {
        self.objects
            .get(key)
            .map(|(_, generation)| Version(generation.to_string()))
    }
}

impl Store for MemoryStore {
    fn location(&self) -> &str {
        "memory"
    }

    fn describe(&self, key: &str) -> String {
        format!("memory:/{key}")
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            writable: true,
            list: true,
            remote: false,
            exact_versions: true,
        }
    }

    fn get_into(&self, key: &str, buf: &mut Vec<u8>) -> Result<bool> {
        let objects = self.read();
        let Some((data, _)) = objects.objects.get(key) else {
            return Ok(false);
        };
        buf.clear();
        buf.extend_from_slice(data);
        Ok(true)
    }

    fn get_range_into(
        &self,
        key: &str,
        range: ByteRange,
        buf: &mut Vec<u8>,
    ) -> Result<Option<Option<Version>>> {
        let objects = self.read();
        Ok(objects.objects.get(key).map(|(data, generation)| {
            buf.clear();
            buf.extend_from_slice(range.slice(data));
            Some(Version(generation.to_string()))
        }))
    }

    fn get_versioned(&self, key: &str) -> Result<Option<(Vec<u8>, Version)>> {
        let objects = self.read();
        Ok(objects
            .objects
            .get(key)
            .map(|(data, generation)| (data.to_vec(), Version(generation.to_string()))))
    }

    fn size(&self, key: &str) -> Result<Option<u64>> {
        Ok(self.read().objects.get(key).map(|(d, _)| d.len() as u64))
    }

    fn put(&self, key: &str, parts: &[&[u8]]) -> Result<()> {
        let data = parts.concat();
        self.write().insert(key, data);
        Ok(())
    }

    fn put_if(&self, key: &str, data: &[u8], condition: &Precondition) -> Result<bool> {
        let mut objects = self.write();
        let holds = match condition {
            Precondition::Absent => !objects.objects.contains_key(key),
            Precondition::Matches(version) => objects.version(key).as_ref() == Some(version),
        };
        if holds {
            objects.insert(key, data.to_vec());
        }
        Ok(holds)
    }

    fn delete(&self, key: &str) -> Result<bool> {
        Ok(self.write().objects.remove(key).is_some())
    }

    fn delete_dir(&self, dir: &str) -> Result<bool> {
        let p = prefix(dir);
        let mut objects = self.write();
        let before = objects.objects.len() + objects.dirs.len();
        objects.objects.retain(|k, _| !k.starts_with(&p));
        objects.dirs.retain(|d| d != dir && !d.starts_with(&p));
        Ok(objects.objects.len() + objects.dirs.len() < before)
    }

    fn list(&self, dir: &str) -> Result<Option<Listing>> {
        if !self.is_dir(dir)? {
            return Ok(None);
        }
        let p = prefix(dir);
        let objects = self.read();
        let mut dirs = BTreeSet::new();
        let mut files = Vec::new();
        let below = objects
            .objects
            .keys()
            .chain(objects.dirs.iter())
            .filter_map(|k| k.strip_prefix(p.as_str()))
            .filter(|rest| !rest.is_empty());
        let explicit: BTreeSet<&str> = objects.dirs.iter().map(String::as_str).collect();
        for rest in below {
            match rest.split_once('/') {
                Some((child, _)) => {
                    dirs.insert(child.to_string());
                }
                None if explicit.contains(format!("{p}{rest}").as_str()) => {
                    dirs.insert(rest.to_string());
                }
                None => files.push(rest.to_string()),
            }
        }
        files.retain(|f| !f.starts_with('.'));
        files.sort();
        files.dedup();
        Ok(Some(Listing {
            dirs: dirs.into_iter().filter(|d| !d.starts_with('.')).collect(),
            files,
        }))
    }

    fn is_dir(&self, dir: &str) -> Result<bool> {
        if dir.is_empty() {
            return Ok(true);
        }
        let p = prefix(dir);
        let objects = self.read();
        Ok(objects.dirs.contains(dir)
            || objects
                .objects
                .range(p.clone()..)
                .next()
                .is_some_and(|(k, _)| k.starts_with(&p)))
    }

    fn create_dir(&self, dir: &str) -> Result<()> {
        let mut objects = self.write();
        let mut at = String::new();
        for component in dir.split('/').filter(|c| !c.is_empty()) {
            at = crate::path::join(&at, component);
            objects.dirs.insert(at.clone());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn behaves_like_an_object_store() {
        let s = MemoryStore::new();
        assert!(s.is_dir("").unwrap());
        assert!(!s.is_dir("a").unwrap());
        s.put("a/b/c", &[b"xyz"]).unwrap();
        assert!(s.is_dir("a").unwrap() && s.is_dir("a/b").unwrap());
        assert!(!s.is_dir("a/b/c").unwrap());
        s.create_dir("a/empty/deeper").unwrap();
        s.put("a/f", &[b"1"]).unwrap();
        let l = s.list("a").unwrap().unwrap();
        assert_eq!(l.dirs, ["b", "empty"]);
        assert_eq!(l.files, ["f"]);
        assert_eq!(s.list_keys("a").unwrap(), ["b/c", "f"]);
        assert_eq!(
            s.get_range("a/b/c", ByteRange::Suffix(2)).unwrap().unwrap(),
            b"yz"
        );
        assert!(!s.put_if("a/f", b"2", &Precondition::Absent).unwrap());
        let (_, v) = s.get_versioned("a/f").unwrap().unwrap();
        assert!(s
            .put_if("a/f", b"2", &Precondition::Matches(v.clone()))
            .unwrap());
        assert!(!s.put_if("a/f", b"3", &Precondition::Matches(v)).unwrap());
        s.update("a/f", &mut |old| Ok(Some([old.unwrap(), b"+"].concat())))
            .unwrap();
        assert_eq!(s.get("a/f").unwrap().unwrap(), b"2+");
        assert!(s.delete_dir("a/b").unwrap());
        assert!(!s.is_dir("a/b").unwrap());
        assert_eq!(s.list("a/b").unwrap(), None);
        assert!(s.delete("a/f").unwrap() && !s.delete("a/f").unwrap());
    }
}
