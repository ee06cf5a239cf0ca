//! The format layer: what the bytes of a container mean. N5 (`n5`), Zarr
//! v2 (`zarr2`), Zarr v3 with sharding (`zarr3`) and HDF5 (`hdf5`) each say
//! where a node's metadata and user attributes are, what an array's
//! metadata holds, which key a chunk has and how chunk bytes become
//! elements (an HDF5 file is a container whose hierarchy, attributes and
//! data libhdf5 reads and writes). The API (`container`, `dataset`,
//! `region`) works through this layer's interfaces and never with a
//! format's keys or bytes: the hierarchy of a container (`tree`) and the
//! one array interface (`array`), which N5 (`n5::array`), both Zarr
//! formats (`zarr`) and HDF5 (`hdf5::array`) implement. This layer works
//! through the storage layer (`storage`) and never knows which backend
//! holds the bytes (HDF5 files are local paths).
//!
//! hdmf-zarr links and object references (`links`), which NWB files in
//! Zarr keep in group attributes, are read and resolved here too, and
//! zarr-python's consolidated metadata (`consolidated`) is kept up to date.
//!
//! This file owns the choice of the format of a container in a store: the
//! location's prefix, else the markers its root holds, else a probe one
//! level down, else the name's suffix, else N5; and the options of the
//! formats ([`FormatOptions`]). Which locations are HDF5 files is
//! `hdf5::open`'s; opening a container of any format is `open`'s.

pub(crate) mod array;
pub(crate) mod consolidated;
pub(crate) mod elements;
pub(crate) mod fill;
pub mod hdf5;
pub(crate) mod links;
pub mod n5;
pub mod nearest;
pub(crate) mod node;
pub(crate) mod open;
pub(crate) mod tree;
pub(crate) mod zarr;
pub(crate) mod zarr2;
pub(crate) mod zarr3;

use crate::error::{Error, Result};
use crate::storage::location::FormatHint;
use crate::storage::Store;

/// A container format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// N5: attributes.json per node, blocks with a big-endian header.
    N5,
    /// Zarr v2: .zgroup, .zarray and .zattrs per node.
    Zarr2,
    /// Zarr v3: zarr.json per node, codec chains, sharding.
    Zarr3,
    /// HDF5: one local file, read and written through libhdf5.
    Hdf5,
}

/// The files that mark a node of each format.
const N5_MARKER: &str = "attributes.json";
const ZARR3_MARKER: &str = "zarr.json";
const ZARR2_MARKERS: [&str; 3] = [".zgroup", ".zarray", ".zattrs"];

impl Format {
    /// The name `n5_container_format` gives: `n5`, `zarr2`, `zarr3` or
    /// `hdf5`.
    pub const fn name(self) -> &'static str {
        match self {
            Format::N5 => "n5",
            Format::Zarr2 => "zarr2",
            Format::Zarr3 => "zarr3",
            Format::Hdf5 => "hdf5",
        }
    }

    /// The format called `name` (`n5`, `zarr2`, `zarr3`, `hdf5`) in
    /// `{"format": ...}` of the options.
    pub fn from_name(name: &str) -> Result<Format> {
        match name {
            "n5" => Ok(Format::N5),
            "zarr2" => Ok(Format::Zarr2),
            "zarr3" | "zarr" => Ok(Format::Zarr3),
            "hdf5" => Ok(Format::Hdf5),
            other => Err(Error::invalid_argument(format!(
                "format '{other}' is not one of n5, zarr2, zarr3, hdf5"
            ))),
        }
    }

    /// The fill value `element` (one element of `t` in native byte order;
    /// for `string` and `object` the string's UTF-8 or the bytes) as the
    /// `fill_value` of a new array document of this format
    /// (`Container::dataset_document`, which writes zero), in
    /// the form zarr-python writes (nwb.md §1): Zarr v2 structs as base64
    /// of the little-endian record, Zarr v3 structs as objects of field
    /// values. N5 and HDF5 documents have no fill value: `null`.
    pub fn fill_value_json(self, t: &crate::dtype::DataType, element: &[u8]) -> serde_json::Value {
        let flavor = match self {
            Format::Zarr2 => fill::Flavor::V2,
            Format::Zarr3 => fill::Flavor::V3,
            Format::N5 | Format::Hdf5 => return serde_json::Value::Null,
        };
        if t.has_layout() && element.len() != t.size() {
            return serde_json::json!(0);
        }
        // New documents store little-endian elements.
        let swap = cfg!(target_endian = "big").then_some(t);
        fill::to_json(element, t, flavor, swap)
    }

    /// The format a container name's suffix suggests (`.zarr` → Zarr v3,
    /// `.n5` → N5, `.h5` or `.hdf5` in any case → HDF5).
    pub(crate) fn from_suffix(name: &str) -> Option<Format> {
        let name = name.trim_end_matches('/');
        if name.ends_with(".zarr") {
            Some(Format::Zarr3)
        } else if name.ends_with(".n5") {
            Some(Format::N5)
        } else if hdf5::has_hdf5_suffix(name) {
            Some(Format::Hdf5)
        } else {
            None
        }
    }
}

/// The options of the formats that have any: the keys of `options_json`
/// named after a format.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct FormatOptions {
    /// `"hdf5"`: how HDF5 files are opened.
    pub hdf5: hdf5::Hdf5Options,
}

impl FormatOptions {
    /// The keys [`FormatOptions::parse_key`] takes, for messages.
    pub(crate) const KEYS: &'static str = "hdf5";

    /// Parse the option `key` with value `v` if it is one of the formats'
    /// keys; returns whether it was.
    pub(crate) fn parse_key(&mut self, key: &str, v: &serde_json::Value) -> Result<bool> {
        match key {
            "hdf5" => self.hdf5 = hdf5::Hdf5Options::from_json(v)?,
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// The format whose marker files `keys` (names in one directory) hold, if
/// any: zarr.json before the Zarr v2 files before attributes.json.
fn from_markers<'a>(keys: impl IntoIterator<Item = &'a str> + Clone) -> Option<Format> {
    let has = |k: &str| keys.clone().into_iter().any(|x| x == k);
    if has(ZARR3_MARKER) {
        Some(Format::Zarr3)
    } else if ZARR2_MARKERS.iter().any(|m| has(m)) {
        Some(Format::Zarr2)
    } else if has(N5_MARKER) {
        Some(Format::N5)
    } else {
        None
    }
}

/// The format whose marker the root of `store` holds, asked by name (which
/// works on every backend): zarr.json, then the Zarr v2 files, then
/// attributes.json.
pub(crate) fn root_marker(store: &dyn Store) -> Result<Option<Format>> {
    for marker in [
        ZARR3_MARKER,
        ZARR2_MARKERS[0],
        ZARR2_MARKERS[1],
        ZARR2_MARKERS[2],
        N5_MARKER,
    ] {
        if store.exists(marker)? {
            return Ok(from_markers([marker]));
        }
    }
    Ok(None)
}

/// The format of an existing container: the prefix `hint` if given, else
/// what its root holds (asked by name, which works on every backend), else
/// what the first child with a marker holds where `store` can list, else
/// the suffix of `name`, else N5. `zarr:` picks v3 when the root has
/// zarr.json and v2 otherwise.
pub(crate) fn detect(store: &dyn Store, hint: Option<FormatHint>, name: &str) -> Result<Format> {
    match hint {
        Some(FormatHint::N5) => return Ok(Format::N5),
        Some(FormatHint::Zarr2) => return Ok(Format::Zarr2),
        Some(FormatHint::Zarr3) => return Ok(Format::Zarr3),
        Some(FormatHint::Hdf5) => return Ok(Format::Hdf5),
        Some(FormatHint::Zarr) => {
            return Ok(if store.exists(ZARR3_MARKER)? {
                Format::Zarr3
            } else {
                Format::Zarr2
            })
        }
        None => {}
    }
    if let Some(f) = root_marker(store)? {
        return Ok(f);
    }
    if store.capabilities().list {
        if let Some(listing) = store.list("")? {
            // Children in name order, so that the choice does not depend on
            // the order a backend lists in; at most 16 are looked into.
            // Listings leave out dot files, so the Zarr v2 markers are
            // asked for by name.
            let mut dirs = listing.dirs;
            dirs.sort();
            for dir in dirs.iter().take(16) {
                let Some(child) = store.list(dir)? else {
                    continue;
                };
                let mut found = from_markers(child.files.iter().map(String::as_str));
                if found != Some(Format::Zarr3) {
                    for marker in ZARR2_MARKERS {
                        if store.exists(&format!("{dir}/{marker}"))? {
                            found = Some(Format::Zarr2);
                            break;
                        }
                    }
                }
                if let Some(f) = found {
                    return Ok(f);
                }
            }
        }
    }
    // A directory's name never makes it an HDF5 file.
    Ok(Format::from_suffix(name)
        .filter(|&f| f != Format::Hdf5)
        .unwrap_or(Format::N5))
}

/// The format of a container being created: the prefix, else `format` of
/// the options, else the suffix of `name`, else N5. `zarr:` creates v3.
pub(crate) fn for_new(hint: Option<FormatHint>, option: Option<Format>, name: &str) -> Format {
    match hint {
        Some(FormatHint::N5) => Format::N5,
        Some(FormatHint::Zarr2) => Format::Zarr2,
        Some(FormatHint::Zarr3 | FormatHint::Zarr) => Format::Zarr3,
        Some(FormatHint::Hdf5) => Format::Hdf5,
        None => option
            .or_else(|| Format::from_suffix(name))
            .unwrap_or(Format::N5),
    }
}

/// The list of non-negative integers `key` of a metadata document (a shape,
/// a chunk shape), with at most `max_len` entries.
pub(crate) fn uint_list(
    map: &serde_json::Map<String, serde_json::Value>,
    key: &str,
    max_len: usize,
) -> Result<Vec<u64>> {
    let items = map
        .get(key)
        .ok_or_else(|| Error::invalid_metadata(format!("'{key}' is missing")))?
        .as_array()
        .ok_or_else(|| Error::invalid_metadata(format!("'{key}' is not an array")))?;
    if items.len() > max_len {
        return Err(Error::invalid_metadata(format!(
            "'{key}' has {} entries, more than any array's rank",
            items.len()
        )));
    }
    items
        .iter()
        .map(|v| {
            v.as_u64().ok_or_else(|| {
                Error::invalid_metadata(format!("'{key}' holds {v}, not a non-negative integer"))
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DataType;
    use crate::storage::MemoryStore;
    use serde_json::json;

    #[test]
    fn fill_values_in_each_format() {
        let t = DataType::Struct(std::sync::Arc::new(
            crate::dtype::StructType::new(vec![
                ("a".into(), DataType::I32),
                ("s".into(), DataType::FixedUtf32 { chars: 1 }),
            ])
            .unwrap(),
        ));
        let e = [7i32.to_ne_bytes(), ('x' as u32).to_ne_bytes()].concat();
        assert_eq!(
            Format::Zarr3.fill_value_json(&t, &e),
            json!({"a": 7, "s": "x"})
        );
        assert_eq!(Format::Zarr2.fill_value_json(&t, &e), json!("BwAAAHgAAAA="));
        assert_eq!(
            Format::Zarr3.fill_value_json(&DataType::String, b"hi"),
            json!("hi")
        );
        assert_eq!(
            Format::Zarr2.fill_value_json(&DataType::Bool, &[0]),
            json!(false)
        );
        assert_eq!(Format::N5.fill_value_json(&DataType::U8, &[0]), json!(null));
    }

    fn store(keys: &[&str]) -> MemoryStore {
        let s = MemoryStore::new();
        for k in keys {
            s.put(k, &[b"{}"]).unwrap();
        }
        s
    }

    #[test]
    fn markers_then_children_then_suffix_then_n5() {
        let cases: [(&[&str], &str, Format); 8] = [
            (&["zarr.json", "attributes.json"], "a.n5", Format::Zarr3),
            (&[".zgroup"], "a.n5", Format::Zarr2),
            (&[".zattrs"], "x", Format::Zarr2),
            (&["attributes.json"], "a.zarr", Format::N5),
            // tensorstore writes no root marker: the child decides.
            (&["b/.zarray", "a/x/zarr.json"], "v", Format::Zarr2),
            (&["a/0/0"], "v.zarr", Format::Zarr3),
            (&[], "v.n5", Format::N5),
            (&[], "v", Format::N5),
        ];
        for (keys, name, want) in cases {
            assert_eq!(
                detect(&store(keys), None, name).unwrap(),
                want,
                "{keys:?} {name}"
            );
        }
    }

    #[test]
    fn prefixes_decide_and_zarr_means_whichever_is_there() {
        let s = store(&["zarr.json"]);
        assert_eq!(
            detect(&s, Some(FormatHint::N5), "x.zarr").unwrap(),
            Format::N5
        );
        assert_eq!(
            detect(&s, Some(FormatHint::Zarr), "x").unwrap(),
            Format::Zarr3
        );
        let s = store(&[".zgroup"]);
        assert_eq!(
            detect(&s, Some(FormatHint::Zarr), "x").unwrap(),
            Format::Zarr2
        );
        assert_eq!(for_new(Some(FormatHint::Zarr), None, "x.n5"), Format::Zarr3);
        assert_eq!(for_new(None, Some(Format::Zarr2), "x.zarr"), Format::Zarr2);
        assert_eq!(for_new(None, None, "x.zarr"), Format::Zarr3);
        assert_eq!(for_new(None, None, "x"), Format::N5);
        assert_eq!(Format::from_name("hdf5").unwrap(), Format::Hdf5);
        assert!(Format::from_name("h5").is_err());
        assert_eq!(for_new(None, None, "x.H5"), Format::Hdf5);
        assert_eq!(for_new(None, None, "x.hdf5"), Format::Hdf5);
        assert_eq!(for_new(None, Some(Format::N5), "x.h5"), Format::N5);
    }
}
