//! What several subcommands share: telling groups from datasets (and from
//! broken metadata), a dataset's metadata as JSON, block grid walks, and
//! the stored blocks of a dataset split into inside and outside its grid.

use n5::{Container, Dataset, DatasetAttributes};
use serde_json::{json, Map, Value};

use crate::error::{At, CliResult};
use crate::location::Location;

/// What a path inside a container holds.
#[derive(Clone, Debug)]
pub enum Node {
    /// A group (or the container root).
    Group,
    /// A dataset with valid metadata.
    Dataset(DatasetAttributes),
    /// Something whose attributes.json or dataset metadata cannot be read.
    Broken(String),
}

/// What `path` in `c` holds.
pub fn node(c: &Container, path: &str) -> Node {
    match c.attributes(path) {
        Err(e) => Node::Broken(e.message().to_string()),
        Ok(doc) if n5::metadata::is_dataset(&doc) => match DatasetAttributes::from_json(&doc) {
            Ok(a) => Node::Dataset(a),
            Err(e) => Node::Broken(e.message().to_string()),
        },
        Ok(_) => Node::Group,
    }
}

/// The N5 keys of a dataset's metadata, which are not user attributes.
pub const DATASET_KEYS: [&str; 6] = [
    "dimensions",
    "blockSize",
    "dataType",
    "compression",
    "compressionType",
    "codecs",
];

/// The metadata of a dataset as JSON members, as the --json outputs show them.
pub fn dataset_json(a: &DatasetAttributes) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("dataType".into(), json!(a.data_type.name()));
    m.insert("dimensions".into(), json!(a.dimensions));
    m.insert("blockSize".into(), json!(a.block_size));
    m.insert("compression".into(), a.compression.to_json());
    m
}

/// Open the dataset at `loc`.
pub fn open_dataset(c: &Container, loc: &Location) -> CliResult<Dataset> {
    c.open_dataset(&loc.inner).at(&loc.arg)
}

/// Every grid position of `grid`, dimension 0 fastest.
pub fn grid_positions(grid: &[u64]) -> Vec<Vec<u64>> {
    let total: u64 = grid.iter().product();
    let mut out = Vec::with_capacity(total.min(1 << 24) as usize);
    if total == 0 {
        return out;
    }
    let mut pos = vec![0u64; grid.len()];
    loop {
        out.push(pos.clone());
        let mut d = 0;
        loop {
            if d == grid.len() {
                return out;
            }
            pos[d] += 1;
            if pos[d] < grid[d] {
                break;
            }
            pos[d] = 0;
            d += 1;
        }
    }
}

/// Whether `pos` lies inside `grid`.
pub fn in_grid(pos: &[u64], grid: &[u64]) -> bool {
    pos.len() == grid.len() && pos.iter().zip(grid).all(|(p, g)| p < g)
}

/// Grid positions of blocks.
pub type Positions = Vec<Vec<u64>>;

/// The stored blocks of `ds`: those inside its grid and those outside it
/// (left by a shrinking resize).
pub fn stored_blocks(ds: &Dataset, arg: &str) -> CliResult<(Positions, Positions)> {
    let grid = ds.attributes().grid_shape();
    let all = ds.list_blocks().at(arg)?;
    Ok(all.into_iter().partition(|p| in_grid(p, &grid)))
}

/// The file size of the block at `pos`, 0 when it cannot be read.
pub fn block_file_size(loc: &Location, ds: &Dataset, pos: &[u64]) -> u64 {
    std::fs::metadata(loc.file(&ds.block_key(pos)))
        .map(|m| m.len())
        .unwrap_or(0)
}

/// The user attributes of a dataset's document (everything but the N5 keys).
pub fn user_attributes(doc: &Value) -> Map<String, Value> {
    doc.as_object()
        .map(|m| {
            m.iter()
                .filter(|(k, _)| !DATASET_KEYS.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_walk() {
        assert_eq!(
            grid_positions(&[2, 2]),
            vec![vec![0, 0], vec![1, 0], vec![0, 1], vec![1, 1]]
        );
        assert!(grid_positions(&[3, 0]).is_empty());
        assert!(in_grid(&[1, 2], &[2, 3]));
        assert!(!in_grid(&[2, 0], &[2, 3]));
    }
}
