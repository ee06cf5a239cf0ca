//! Directories over a flat namespace: the [`Page`]s of a prefix listing, as
//! an object protocol (S3, GCS) parses them from its answers, and how the
//! bucket layer turns them into [`Listing`]s and key lists. Object
//! names are `/`-separated; a directory is a prefix ending in `/`, whether a
//! marker object (`a/b/`, as the Java N5 backends write) names it or only
//! the objects below it do. Hidden names (starting with `.`) and empty
//! components are never children or keys. A listing holds at most
//! [`MAX_LISTED`] entries, so a hostile or endless listing ends as an error.

use std::collections::BTreeSet;

use crate::error::{Error, ErrorKind, Result};
use crate::storage::store::Listing;

/// The most entries one listing collects (10 million).
pub const MAX_LISTED: usize = 10_000_000;

/// One page of a prefix listing, as a protocol parses it from an answer.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Page {
    /// The object names, decoded.
    pub names: Vec<String>,
    /// The common prefixes of a `/`-delimited listing, decoded.
    pub prefixes: Vec<String>,
    /// The token of the next page, `None` on the last.
    pub next: Option<String>,
}

/// The child name `entry` (an object name, or a common prefix when
/// `is_prefix`) gives below `prefix` in a delimited listing: one non-empty,
/// visible component.
pub fn child<'a>(entry: &'a str, prefix: &str, is_prefix: bool) -> Option<&'a str> {
    let rest = entry.strip_prefix(prefix)?;
    let rest = if is_prefix {
        rest.strip_suffix('/')?
    } else {
        rest
    };
    (!rest.is_empty() && !rest.contains('/') && !rest.starts_with('.')).then_some(rest)
}

/// Collects one level below `prefix` from the pages of a delimited
/// listing.
pub struct Level<'a> {
    prefix: &'a str,
    what: &'a str,
    any: bool,
    seen: usize,
    dirs: BTreeSet<String>,
    files: Vec<String>,
}

impl<'a> Level<'a> {
    /// A collector for the directory `prefix` (ending in `/`, or `""` for
    /// the bucket's root), named `what` in messages.
    pub fn new(prefix: &'a str, what: &'a str) -> Self {
        Level {
            prefix,
            what,
            any: false,
            seen: 0,
            dirs: BTreeSet::new(),
            files: Vec::new(),
        }
    }

    /// Add a page's object names and common prefixes.
    pub fn add(&mut self, names: &[String], prefixes: &[String]) -> Result<()> {
        self.any |= !names.is_empty() || !prefixes.is_empty();
        self.seen += names.len() + prefixes.len();
        if self.seen > MAX_LISTED {
            return Err(Error::new(
                ErrorKind::Io,
                format!("{}: more than {MAX_LISTED} entries", self.what),
            ));
        }
        // The marker object (the prefix itself) names no child.
        let prefix = self.prefix;
        self.files.extend(
            names
                .iter()
                .filter_map(|n| child(n, prefix, false))
                .map(str::to_string),
        );
        self.dirs.extend(
            prefixes
                .iter()
                .filter_map(|p| child(p, prefix, true))
                .map(str::to_string),
        );
        Ok(())
    }

    /// The listing: `None` when nothing lies below a prefix other than the
    /// bucket's root (which exists when the listing answered).
    pub fn finish(mut self) -> Option<Listing> {
        if !self.any && !self.prefix.is_empty() {
            return None;
        }
        self.files.sort();
        self.files.dedup();
        Some(Listing {
            dirs: self.dirs.into_iter().collect(),
            files: self.files,
        })
    }
}

/// Collects every key below `prefix`, relative to it, from the pages of a
/// flat (undelimited) listing.
pub struct Keys<'a> {
    prefix: &'a str,
    what: &'a str,
    seen: usize,
    keys: Vec<String>,
}

impl<'a> Keys<'a> {
    /// A collector for the keys below `prefix`, named `what` in messages.
    pub fn new(prefix: &'a str, what: &'a str) -> Self {
        Keys {
            prefix,
            what,
            seen: 0,
            keys: Vec::new(),
        }
    }

    /// Add a page's object names.
    pub fn add(&mut self, names: &[String]) -> Result<()> {
        self.seen += names.len();
        if self.seen > MAX_LISTED {
            return Err(Error::new(
                ErrorKind::Io,
                format!("{}: more than {MAX_LISTED} objects", self.what),
            ));
        }
        let prefix = self.prefix;
        self.keys.extend(names.iter().filter_map(|n| {
            let rest = n.strip_prefix(prefix)?;
            // Markers end with '/'; hidden and empty components are never
            // keys.
            let visible = rest
                .split('/')
                .all(|c| !c.is_empty() && !c.starts_with('.'));
            visible.then(|| rest.to_string())
        }));
        Ok(())
    }

    /// The keys, sorted, each once.
    pub fn finish(mut self) -> Vec<String> {
        self.keys.sort();
        self.keys.dedup();
        self.keys
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn levels_and_keys_from_pages() {
        let mut level = Level::new("c/", "c");
        level
            .add(
                &strings(&["c/", "c/attributes.json", "c/.hidden"]),
                &strings(&["c/g/", "c/.h/"]),
            )
            .unwrap();
        level
            .add(&strings(&["c/attributes.json"]), &strings(&["c/a/"]))
            .unwrap();
        let l = level.finish().unwrap();
        assert_eq!(l.dirs, ["a", "g"]);
        assert_eq!(l.files, ["attributes.json"]);
        assert_eq!(Level::new("x/", "x").finish(), None);
        assert_eq!(Level::new("", "root").finish(), Some(Listing::default()));

        let mut keys = Keys::new("c/", "c");
        keys.add(&strings(&[
            "c/",
            "c/g/",
            "c/g/0/1",
            "c/.tmp/x",
            "c/a//b",
            "c/attributes.json",
        ]))
        .unwrap();
        keys.add(&strings(&["c/g/0/1"])).unwrap();
        assert_eq!(keys.finish(), ["attributes.json", "g/0/1"]);
        assert_eq!(child("c/x", "c/", false), Some("x"));
        assert_eq!(child("c/x/", "c/", true), Some("x"));
        assert_eq!(child("c/x/y", "c/", false), None);
    }

    #[test]
    fn children_of_a_delimited_listing() {
        assert_eq!(child("x/a", "x/", false), Some("a"));
        assert_eq!(child("x/", "x/", false), None, "the marker itself");
        assert_eq!(child("x/.hidden", "x/", false), None);
        assert_eq!(child("x/g/", "x/", true), Some("g"));
        assert_eq!(child("x//", "x/", true), None);
        assert_eq!(child("x/.n5tmp/", "x/", true), None);
        assert_eq!(child("y/a", "x/", false), None);
        assert_eq!(child("a", "", false), Some("a"));
    }
}
