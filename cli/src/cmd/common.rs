//! What several subcommands share: telling groups from datasets (and from
//! broken metadata), a dataset's metadata as JSON, block grid walks, the
//! stored blocks of a dataset split into inside and outside its grid (or,
//! where the store cannot list, the grid positions to probe), block sizes
//! through the store, and how many workers block work gets; for Zarr
//! arrays, their shards (the chunks of an unsharded array): the shard
//! grid, each shard's key, region and blocks, the shards stored, and
//! shard regions read in slabs.

use n5::format::Format;
use n5::{Container, Dataset, DatasetAttributes};
use serde_json::{json, Map, Value};

use crate::error::{At, CliError, CliResult};
use crate::location::Location;
use crate::{work, Global};

/// What a path inside a container holds.
#[derive(Clone, Debug)]
pub enum Node {
    /// A group (or the container root).
    Group,
    /// A dataset with valid metadata.
    Dataset(DatasetAttributes),
    /// A dataset of a kind the N5 API does not open (an HDF5 dataset of
    /// strings, compound elements, ...): the library's reason.
    Unsupported(String),
    /// Something whose attributes.json or dataset metadata cannot be read.
    Broken(String),
}

/// What `path` in `c` holds. A Zarr array's attributes carry the N5
/// compression nearest its codecs (see [`crate::zarr::compression_of`]);
/// an HDF5 dataset's the compression the library reports for its filters.
pub fn node(c: &Container, path: &str) -> Node {
    if c.format() != Format::N5 {
        return match c.dataset_exists(path) {
            Err(e) => Node::Broken(e.message().to_string()),
            Ok(false) => match c.attributes(path) {
                Err(e) => Node::Broken(e.message().to_string()),
                Ok(_) => Node::Group,
            },
            Ok(true) => match c.open_dataset(path).and_then(|d| Ok((d.metadata()?, d))) {
                Err(e) if e.kind() == n5::ErrorKind::Unsupported && c.format() == Format::Hdf5 => {
                    Node::Unsupported(e.message().to_string())
                }
                Err(e) => Node::Broken(e.message().to_string()),
                Ok((doc, d)) => {
                    let mut a = (*d.attributes()).clone();
                    a.compression = crate::zarr::compression_of(c.format(), &doc);
                    Node::Dataset(a)
                }
            },
        };
    }
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
pub use n5::metadata::DATASET_KEYS;

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

/// The number of positions of `grid` (the product of its extents), `None`
/// when it is 2^64 or more.
pub fn grid_count(grid: &[u64]) -> Option<u64> {
    grid.iter().try_fold(1u64, |acc, &g| acc.checked_mul(g))
}

/// Whether no two of `names` are the same.
pub fn distinct(names: &[String]) -> bool {
    let mut sorted: Vec<&String> = names.iter().collect();
    sorted.sort_unstable();
    sorted.windows(2).all(|w| w[0] != w[1])
}

/// A count from [`grid_count`] as text: the number, or "at least 2^64".
pub fn count_text(n: Option<u64>) -> String {
    n.map_or_else(|| "at least 2^64".to_string(), |n| n.to_string())
}

/// A count from [`grid_count`] as JSON: the number, or the string
/// "at least 2^64".
pub fn count_json(n: Option<u64>) -> Value {
    n.map_or_else(|| json!("at least 2^64"), |n| json!(n))
}

/// The positions of a grid one after another, dimension 0 fastest, without
/// holding them all (see [`grid_iter`]).
pub struct GridIter {
    grid: Vec<u64>,
    next: Option<Vec<u64>>,
}

impl Iterator for GridIter {
    type Item = Vec<u64>;

    fn next(&mut self) -> Option<Vec<u64>> {
        let current = self.next.take()?;
        let mut pos = current.clone();
        for d in 0..self.grid.len() {
            pos[d] += 1;
            if pos[d] < self.grid[d] {
                self.next = Some(pos);
                return Some(current);
            }
            pos[d] = 0;
        }
        Some(current)
    }
}

/// Every grid position of `grid`, dimension 0 fastest, one at a time.
pub fn grid_iter(grid: &[u64]) -> GridIter {
    GridIter {
        grid: grid.to_vec(),
        next: (!grid.contains(&0)).then(|| vec![0; grid.len()]),
    }
}

/// Every grid position of `grid`, dimension 0 fastest: for grids known
/// to be small (callers bound the count with [`grid_count`] first).
pub fn grid_positions(grid: &[u64]) -> Vec<Vec<u64>> {
    grid_iter(grid).collect()
}

/// The number of the grid position `pos` in `grid`, dimension 0 fastest:
/// how a copy in parts numbers its units.
pub fn unit_index(pos: &[u64], grid: &[u64]) -> u64 {
    pos.iter().zip(grid).rev().fold(0u64, |index, (p, g)| {
        index.wrapping_mul(*g).wrapping_add(*p)
    })
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
    if grid.is_empty() {
        // A 0-d array: its one chunk, stored or not.
        let stored = ds.block_exists(&[]).at(arg)?;
        return Ok((
            if stored { vec![Vec::new()] } else { Vec::new() },
            Vec::new(),
        ));
    }
    let all = ds.list_blocks().at(arg)?;
    Ok(all.into_iter().partition(|p| in_grid(p, &grid)))
}

/// The blocks of a dataset that block work visits.
pub enum Blocks {
    /// The stored blocks, from a listing: inside the grid and outside it.
    Listed(Positions, Positions),
    /// The store cannot list (plain HTTP(S)): every grid position, each to
    /// be probed (a missing block is not stored).
    Probe(Positions),
}

/// The most grid positions probed one by one on a store that cannot list.
pub const MAX_PROBED: u64 = 1 << 20;

/// Whether the store of `c` can list (plain HTTP(S) cannot).
pub fn can_list(c: &Container) -> bool {
    c.store().capabilities().list
}

/// Whether the groups and datasets of `c` can be listed: the store lists,
/// or a Zarr root's consolidated metadata names them.
pub fn can_list_nodes(c: &Container) -> bool {
    c.can_list_nodes().unwrap_or(false)
}

/// The blocks of `ds` to visit: its stored blocks where the store lists,
/// else every position of its grid (at most [`MAX_PROBED`]).
pub fn blocks_to_visit(ds: &Dataset, arg: &str) -> CliResult<Blocks> {
    if can_list(ds.container()) {
        let (inside, outside) = stored_blocks(ds, arg)?;
        return Ok(Blocks::Listed(inside, outside));
    }
    let grid = ds.attributes().grid_shape();
    let n = grid_count(&grid).unwrap_or(u64::MAX);
    if n > MAX_PROBED {
        return Err(CliError::new(
            arg,
            format!(
                "plain HTTP(S) cannot list the stored blocks, and probing all {n} grid positions \
                 one by one is too many (at most {MAX_PROBED}); read the data through s3://, gs:// \
                 or a local copy"
            ),
        ));
    }
    Ok(Blocks::Probe(grid_positions(&grid)))
}

/// One chunk of a Zarr array's grid (a shard when sharded, else a chunk):
/// its grid position in shards (N5 order) and its key in the container.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Shard {
    /// Grid position in units of the shard shape, N5 order.
    pub pos: Vec<u64>,
    /// The storage key (container-relative).
    pub key: String,
}

/// The grid of `ds` in units of its shard shape (N5 order): the shard grid
/// of a sharded Zarr array, else its block grid.
pub fn shard_grid(ds: &Dataset) -> Vec<u64> {
    let attrs = ds.attributes();
    attrs
        .dimensions
        .iter()
        .zip(ds.shard_shape())
        .map(|(&d, s)| d.div_ceil(s.max(1)))
        .collect()
}

/// The shard at shard-grid position `pos` of `ds`.
pub fn shard_at(ds: &Dataset, pos: &[u64]) -> Shard {
    let attrs = ds.attributes();
    let first: Vec<u64> = pos
        .iter()
        .zip(ds.shard_shape())
        .zip(&attrs.block_size)
        .map(|((&p, s), &b)| p * s / b as u64)
        .collect();
    Shard {
        pos: pos.to_vec(),
        key: ds.block_key(&first),
    }
}

/// The block grid positions of the blocks (inner chunks) of `shard` that
/// lie inside the grid of `ds`.
pub fn blocks_of(ds: &Dataset, shard: &Shard) -> Positions {
    let attrs = ds.attributes();
    let grid = attrs.grid_shape();
    let per: Vec<u64> = ds
        .shard_shape()
        .iter()
        .zip(&attrs.block_size)
        .map(|(&s, &b)| s / b as u64)
        .collect();
    grid_positions(&per)
        .into_iter()
        .map(|i| {
            i.iter()
                .zip(&shard.pos)
                .zip(&per)
                .map(|((&i, &p), &n)| p * n + i)
                .collect::<Vec<u64>>()
        })
        .filter(|p| in_grid(p, &grid))
        .collect()
}

/// The region (offset and shape, N5 order) of the shard at shard-grid
/// position `pos` of `ds`, clipped at the array's end.
pub fn shard_region(ds: &Dataset, pos: &[u64]) -> (Vec<u64>, Vec<u64>) {
    let attrs = ds.attributes();
    let unit = ds.shard_shape();
    let offset: Vec<u64> = pos.iter().zip(&unit).map(|(&p, &u)| p * u).collect();
    let shape: Vec<u64> = offset
        .iter()
        .zip(&unit)
        .zip(&attrs.dimensions)
        .map(|((&o, &u), &d)| u.min(d.saturating_sub(o)))
        .collect();
    (offset, shape)
}

/// Read the region at `offset` of `shape` of `ds` in slabs along the last
/// dimension, whole blocks thick and at most about 64 MiB each (one slab
/// when one layer of blocks is larger), handing each slab's elements and
/// its byte offset in the whole region to `f`, which says whether to go on.
pub fn read_slabs(
    ds: &Dataset,
    offset: &[u64],
    shape: &[u64],
    mut f: impl FnMut(usize, &[u8]) -> bool,
) -> n5::Result<()> {
    let attrs = ds.attributes();
    if shape.is_empty() {
        // A 0-d array: its one element.
        let mut buf = vec![0u8; attrs.data_type.size()];
        ds.read_region(offset, shape, &mut buf)?;
        f(0, &buf);
        return Ok(());
    }
    let last = shape.len() - 1;
    let plane = (shape[..last].iter().product::<u64>() as usize * attrs.data_type.size()).max(1);
    let step = attrs.block_size[last] as u64;
    let thickness = (((64usize << 20) / plane) as u64 / step * step).max(step);
    let mut buf = Vec::new();
    let mut z = 0;
    while z < shape[last] {
        let t = thickness.min(shape[last] - z);
        let mut o = offset.to_vec();
        o[last] += z;
        let mut s = shape.to_vec();
        s[last] = t;
        buf.resize(t as usize * plane, 0);
        ds.read_region(&o, &s, &mut buf)?;
        if !f(z as usize * plane, &buf) {
            break;
        }
        z += t;
    }
    Ok(())
}

/// Read the region of `shard` of `ds` with [`read_slabs`], handing each
/// slab to `f`; the number of elements of the region.
pub fn read_shard_slabs(ds: &Dataset, shard: &Shard, mut f: impl FnMut(&[u8])) -> n5::Result<u64> {
    let (offset, shape) = shard_region(ds, &shard.pos);
    read_slabs(ds, &offset, &shape, |_, slab| {
        f(slab);
        true
    })?;
    Ok(shape.iter().product())
}

/// The stored shards (chunks of an unsharded array) of the Zarr array
/// `ds` inside its grid, from a listing of its keys; where the store
/// cannot list, every shard of the grid (at most [`MAX_PROBED`]), to be
/// probed.
pub fn stored_shards(ds: &Dataset, arg: &str) -> CliResult<Vec<Shard>> {
    let grid = shard_grid(ds);
    let n = grid_count(&grid).unwrap_or(u64::MAX);
    let sharded = ds
        .shard_shape()
        .iter()
        .zip(&ds.attributes().block_size)
        .any(|(&s, &b)| s != b as u64);
    if can_list(ds.container()) && !sharded {
        // One chunk per block: the listing of blocks names them.
        let (inside, _) = stored_blocks(ds, arg)?;
        return Ok(inside.iter().map(|p| shard_at(ds, p)).collect());
    }
    if can_list(ds.container()) {
        // Each listed key that is the key of a shard of the grid, read
        // back from its numbers (the last ones, C order), so that only the
        // stored shards are visited however large the grid.
        let prefix = if ds.path().is_empty() {
            String::new()
        } else {
            format!("{}/", ds.path())
        };
        let rank = grid.len();
        let mut found: Vec<Shard> = ds
            .container()
            .store()
            .list_keys(ds.path())
            .at(arg)?
            .into_iter()
            .filter_map(|k| {
                let numbers: Vec<&str> = k.split(['/', '.']).collect();
                let tail = numbers.get(numbers.len().checked_sub(rank)?..)?;
                let pos: Vec<u64> = tail
                    .iter()
                    .rev()
                    .map(|n| n.parse::<u64>().ok())
                    .collect::<Option<_>>()?;
                let shard = in_grid(&pos, &grid).then(|| shard_at(ds, &pos))?;
                (shard.key == format!("{prefix}{k}")).then_some(shard)
            })
            .collect();
        // In grid order, dimension 0 fastest.
        found.sort_by_key(|s| s.pos.iter().rev().copied().collect::<Vec<u64>>());
        found.dedup();
        return Ok(found);
    }
    if n > MAX_PROBED {
        return Err(CliError::new(
            arg,
            format!(
                "plain HTTP(S) cannot list the stored chunks, and probing all {n} of them \
                 one by one is too many (at most {MAX_PROBED}); read the data through s3://, \
                 gs:// or a local copy"
            ),
        ));
    }
    Ok(grid_positions(&grid)
        .into_iter()
        .map(|p| shard_at(ds, &p))
        .collect())
}

/// The stored size in bytes of the block at `pos` of `ds`, `None` when it
/// is not stored.
pub fn stored_size(ds: &Dataset, pos: &[u64]) -> n5::Result<Option<u64>> {
    ds.container().store().size(&ds.block_key(pos))
}

/// Worker threads for block work on `c`: `--threads` (0: one per core),
/// and on a remote store at least its `io_concurrency` requests in flight.
pub fn workers(g: &Global, c: &Container) -> usize {
    let threads = work::threads(g.threads);
    if c.store().capabilities().remote {
        threads.max(c.options().storage.io_concurrency_for(true))
    } else {
        threads
    }
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
        assert_eq!(grid_positions(&[]), vec![Vec::<u64>::new()]);
        assert_eq!(grid_iter(&[3, 2]).count(), 6);
        assert_eq!(grid_count(&[1 << 40, 1 << 40]), None);
        assert_eq!(count_text(grid_count(&[1 << 40, 1 << 40])), "at least 2^64");
        assert_eq!(grid_count(&[1 << 31, 3]), Some(3 << 31));
        assert!(in_grid(&[1, 2], &[2, 3]));
        assert!(!in_grid(&[2, 0], &[2, 3]));
    }
}
