//! Dataset metadata: the `dimensions`, `blockSize`, `dataType` and
//! `compression` members of a dataset's attributes.json, their validation,
//! and the block-grid arithmetic that follows from them.

use serde_json::{Map, Value};

use crate::codec::Compression;
use crate::dtype::DataType;
use crate::error::{Error, Result};
use crate::format::uint_list;

/// The largest number of bytes one block may hold once decoded (the N5
/// format's limit on a chunk, 2^31 bytes). Also bounds every allocation made
/// from a size field in a block header.
pub const MAX_BLOCK_BYTES: u64 = 1 << 31;

/// The largest rank a dataset may have (the block header stores it in 16 bits;
/// no real data comes close to this smaller bound).
pub const MAX_RANK: usize = 64;

/// The metadata of a dataset, as stored in its attributes.json.
#[derive(Clone, Debug, PartialEq)]
pub struct DatasetAttributes {
    /// Extent of the dataset along each dimension, N5 order (dimension 0 fastest).
    pub dimensions: Vec<u64>,
    /// Extent of a block along each dimension.
    pub block_size: Vec<u32>,
    /// Element type.
    pub data_type: DataType,
    /// Block compression.
    pub compression: Compression,
}

/// The members of an N5 dataset's attributes.json that describe the dataset
/// itself rather than being user attributes.
pub const DATASET_KEYS: [&str; 6] = [
    "dimensions",
    "blockSize",
    "dataType",
    "compression",
    "compressionType",
    "codecs",
];

/// Whether an attributes document describes a dataset, by the rule the Java
/// reference uses: `dimensions`, `blockSize`, `dataType` and one of
/// `compression`, `compressionType` or `codecs` are present.
pub fn is_dataset(attributes: &Value) -> bool {
    let Some(map) = attributes.as_object() else {
        return false;
    };
    ["dimensions", "blockSize", "dataType"]
        .iter()
        .all(|k| map.contains_key(*k))
        && ["compression", "compressionType", "codecs"]
            .iter()
            .any(|k| map.contains_key(*k))
}

impl DatasetAttributes {
    /// Metadata for a new dataset, validated as a writer must: on top of
    /// what any readable dataset satisfies, each block extent is at most
    /// 2^31-1 (Java's `int`) and the compression's parameters are ones its
    /// compressor accepts. Every problem is
    /// [`crate::error::ErrorKind::InvalidArgument`].
    pub fn new(
        dimensions: Vec<u64>,
        block_size: Vec<u32>,
        data_type: DataType,
        compression: Compression,
    ) -> Result<Self> {
        let attrs = DatasetAttributes {
            dimensions,
            block_size,
            data_type,
            compression,
        };
        let as_argument = |e: Error| Error::invalid_argument(e.message());
        attrs.validate().map_err(as_argument)?;
        if let Some(d) = attrs.block_size.iter().position(|&b| b > i32::MAX as u32) {
            return Err(Error::invalid_argument(format!(
                "blockSize[{d}] is {}; block extents are at most 2^31-1",
                attrs.block_size[d]
            )));
        }
        attrs.compression.check_parameters().map_err(as_argument)?;
        Ok(attrs)
    }

    /// Read the metadata from a dataset's attributes document. Accepts the
    /// legacy `compressionType` of Java N5 1.x and ignores every other key
    /// (user attributes, tensorstore's `axes`/`units`/`resolution`...).
    pub fn from_json(attributes: &Value) -> Result<Self> {
        let map = attributes
            .as_object()
            .ok_or_else(|| Error::invalid_metadata("attributes are not a JSON object"))?;
        let dimensions = uint_list(map, "dimensions", usize::MAX)?;
        if dimensions.is_empty() {
            return Err(Error::invalid_metadata(
                "an N5 dataset needs at least one dimension",
            ));
        }
        let block_size = uint_list(map, "blockSize", usize::MAX)?
            .into_iter()
            .map(|b| {
                u32::try_from(b).map_err(|_| {
                    Error::invalid_metadata(format!("blockSize {b} is larger than 2^32-1"))
                })
            })
            .collect::<Result<Vec<u32>>>()?;
        let data_type = match map.get("dataType") {
            Some(Value::String(name)) => DataType::from_name(name)?,
            Some(other) => {
                return Err(Error::invalid_metadata(format!(
                    "dataType {other} is not a string"
                )))
            }
            None => return Err(Error::invalid_metadata("'dataType' is missing")),
        };
        let compression = if let Some(c) = map.get("compression") {
            Compression::from_json(c)?
        } else if let Some(c) = map.get("compressionType") {
            let name = c.as_str().ok_or_else(|| {
                Error::invalid_metadata(format!("compressionType {c} is not a string"))
            })?;
            Compression::from_legacy_type(name)?
        } else if map.contains_key("codecs") {
            return Err(Error::new(
                crate::error::ErrorKind::Unsupported,
                "datasets described by 'codecs' (the N5 4.x sharding extension) are not supported",
            ));
        } else {
            return Err(Error::invalid_metadata("'compression' is missing"));
        };
        let attrs = DatasetAttributes {
            dimensions,
            block_size,
            data_type,
            compression,
        };
        attrs.validate()?;
        Ok(attrs)
    }

    /// The four dataset members as Java writes them, ready to merge into the
    /// dataset's attributes.json (compression complete with its defaults).
    pub fn to_json(&self) -> Map<String, Value> {
        let mut map = Map::new();
        map.insert("dimensions".into(), Value::from(self.dimensions.clone()));
        map.insert("blockSize".into(), Value::from(self.block_size.clone()));
        map.insert("dataType".into(), Value::from(self.data_type.name()));
        map.insert("compression".into(), self.compression.to_json());
        map
    }

    fn validate(&self) -> Result<()> {
        let n = self.dimensions.len();
        if n > MAX_RANK {
            return Err(Error::invalid_metadata(format!(
                "rank {n} is above the supported maximum of {MAX_RANK}"
            )));
        }
        if self.block_size.len() != n {
            return Err(Error::invalid_metadata(format!(
                "blockSize has {} entries but dimensions has {n}",
                self.block_size.len()
            )));
        }
        if let Some(d) = self.block_size.iter().position(|&b| b == 0) {
            return Err(Error::invalid_metadata(format!(
                "blockSize[{d}] is 0; every block extent must be at least 1"
            )));
        }
        let bytes = self
            .block_size
            .iter()
            .try_fold(self.data_type.size() as u64, |acc, &b| {
                acc.checked_mul(b as u64)
            });
        match bytes {
            Some(b) if b <= MAX_BLOCK_BYTES => {}
            _ => {
                return Err(Error::invalid_metadata(format!(
                    "blockSize {:?} of {} makes blocks larger than 2^31 bytes",
                    self.block_size, self.data_type
                )))
            }
        }
        if self.dimensions.iter().any(|&d| d > i64::MAX as u64) {
            return Err(Error::invalid_metadata("a dimension is larger than 2^63-1"));
        }
        Ok(())
    }

    /// The rank (number of dimensions).
    pub fn ndim(&self) -> usize {
        self.dimensions.len()
    }

    /// Number of blocks along each dimension (`ceil(dimension / blockSize)`).
    pub fn grid_shape(&self) -> Vec<u64> {
        self.dimensions
            .iter()
            .zip(&self.block_size)
            .map(|(&d, &b)| d.div_ceil(b as u64))
            .collect()
    }

    /// Elements in a full block.
    pub fn block_num_elements(&self) -> usize {
        self.block_size.iter().map(|&b| b as usize).product()
    }

    /// Check that `grid_pos` has the dataset's rank and lies inside the grid.
    pub fn check_grid_pos(&self, grid_pos: &[u64]) -> Result<()> {
        self.check_rank(grid_pos.len(), "grid position")?;
        for (d, (&p, g)) in grid_pos.iter().zip(self.grid_shape()).enumerate() {
            if p >= g {
                return Err(Error::new(
                    crate::error::ErrorKind::OutOfBounds,
                    format!(
                        "grid position {grid_pos:?} is outside the block grid {:?} in dimension {d}",
                        self.grid_shape()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Check that an argument of `len` entries matches the rank.
    pub fn check_rank(&self, len: usize, what: &str) -> Result<()> {
        if len != self.ndim() {
            return Err(Error::new(
                crate::error::ErrorKind::ShapeMismatch,
                format!(
                    "{what} has {len} dimensions but the dataset has {}",
                    self.ndim()
                ),
            ));
        }
        Ok(())
    }

    /// The nominal shape of the block at `grid_pos`: `blockSize`, clipped at
    /// the end of the dataset. The position must be inside the grid.
    pub fn block_shape(&self, grid_pos: &[u64]) -> Result<Vec<u64>> {
        self.check_grid_pos(grid_pos)?;
        Ok(grid_pos
            .iter()
            .zip(&self.dimensions)
            .zip(&self.block_size)
            .map(|((&p, &d), &b)| (d - p * b as u64).min(b as u64))
            .collect())
    }

    /// The key of the block at `grid_pos` relative to the dataset:
    /// its coordinates joined by `/`.
    pub fn block_key(grid_pos: &[u64]) -> String {
        let mut key = String::with_capacity(grid_pos.len() * 3);
        for (i, p) in grid_pos.iter().enumerate() {
            if i > 0 {
                key.push('/');
            }
            key.push_str(&p.to_string());
        }
        key
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use serde_json::json;

    #[test]
    fn parses_java_and_legacy() {
        let a = DatasetAttributes::from_json(&json!({
            "dimensions": [7, 5], "blockSize": [5, 4], "dataType": "uint8",
            "compression": {"type": "raw"}, "user": 1
        }))
        .unwrap();
        assert_eq!(a.grid_shape(), vec![2, 2]);
        assert_eq!(a.block_shape(&[1, 1]).unwrap(), vec![2, 1]);
        let legacy = DatasetAttributes::from_json(&json!({
            "dataType":"uint8","compressionType":"raw","blockSize":[5,4],"dimensions":[7,5]
        }))
        .unwrap();
        assert_eq!(legacy.compression, Compression::Raw);
        assert!(is_dataset(
            &json!({"dataType":"uint8","compressionType":"raw","blockSize":[5,4],"dimensions":[7,5]})
        ));
        assert!(!is_dataset(
            &json!({"dataType":"uint8","blockSize":[5,4],"dimensions":[7,5]})
        ));
        assert!(!is_dataset(&json!([1])));
    }

    #[test]
    fn rejects_bad_metadata() {
        let base = json!({"dimensions": [7, 5], "blockSize": [5, 4], "dataType": "uint8", "compression": {"type": "raw"}});
        let cases = [
            ("dimensions", json!([7])),
            ("dimensions", json!([-1, 5])),
            ("dimensions", json!("x")),
            ("blockSize", json!([0, 4])),
            ("blockSize", json!([1u64 << 33, 4])),
            ("blockSize", json!([65536, 65536])),
            ("dataType", json!("bool")),
            ("dataType", json!(3)),
        ];
        for (key, value) in cases {
            let mut doc = base.clone();
            doc[key] = value.clone();
            let e = DatasetAttributes::from_json(&doc).unwrap_err();
            assert_eq!(
                e.kind(),
                crate::error::ErrorKind::InvalidMetadata,
                "{key}={value}: {e}"
            );
        }
        let mut doc = base.clone();
        doc.as_object_mut().unwrap().remove("compression");
        assert!(DatasetAttributes::from_json(&doc).is_err());
        doc["codecs"] = json!([]);
        assert_eq!(
            DatasetAttributes::from_json(&doc).unwrap_err().kind(),
            crate::error::ErrorKind::Unsupported
        );
    }

    #[test]
    fn grid_arithmetic() {
        let a = DatasetAttributes::new(
            vec![9, 10, 0],
            vec![10, 4, 3],
            DataType::U16,
            Compression::Raw,
        )
        .unwrap();
        assert_eq!(a.grid_shape(), vec![1, 3, 0]);
        assert_eq!(DatasetAttributes::block_key(&[0, 12, 3]), "0/12/3");
        let b = DatasetAttributes::new(vec![9, 10], vec![10, 4], DataType::U16, Compression::Raw)
            .unwrap();
        assert_eq!(b.block_shape(&[0, 2]).unwrap(), vec![9, 2]);
        assert_eq!(
            b.block_shape(&[0, 3]).unwrap_err().kind(),
            crate::error::ErrorKind::OutOfBounds
        );
        assert_eq!(
            b.block_shape(&[0]).unwrap_err().kind(),
            crate::error::ErrorKind::ShapeMismatch
        );
    }

    #[test]
    fn new_datasets_are_checked_as_arguments() {
        let raw = Compression::Raw;
        let kind = |dims: Vec<u64>, blocks: Vec<u32>, c: Compression| {
            DatasetAttributes::new(dims, blocks, DataType::U8, c)
                .unwrap_err()
                .kind()
        };
        assert_eq!(
            kind(vec![4], vec![0], raw.clone()),
            ErrorKind::InvalidArgument
        );
        // Rank 0 is a Zarr array's (the N5 tree refuses it when creating).
        assert!(DatasetAttributes::new(vec![], vec![], DataType::U8, raw.clone()).is_ok());
        assert_eq!(
            kind(vec![4], vec![1 << 31], raw.clone()),
            ErrorKind::InvalidArgument
        );
        assert_eq!(
            kind(vec![4], vec![4], Compression::Xz { preset: 42 }),
            ErrorKind::InvalidArgument
        );
        assert!(DatasetAttributes::new(vec![4], vec![(1 << 31) - 1], DataType::U8, raw).is_ok());
        // Stored metadata with the same problem is invalid metadata.
        let doc = serde_json::json!({"dimensions": [4], "blockSize": [0],
            "dataType": "uint8", "compression": {"type": "raw"}});
        assert_eq!(
            DatasetAttributes::from_json(&doc).unwrap_err().kind(),
            ErrorKind::InvalidMetadata
        );
    }
}
