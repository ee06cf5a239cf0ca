//! Files that are both an HDF5 file and a Zarr v3 shard (the HDF5 User
//! Group 2025 talk "Using a HDF5 file as Zarr v3 Shard": the HDF5 chunks
//! first, the shard index at the end of the file) read like any shard.
//!
//! `tests/peers/make_hdf5_shard.py` writes them with h5py (a chunked,
//! unfiltered dataset allocated early whose chunks are the inner chunks;
//! the index, with or without CRC32C, as the last dataset of the file,
//! checked to end at the end of the file), checks them with h5py and
//! tensorstore, and puts each as the one shard of an array of a Zarr v3
//! hierarchy: rank 2 and 3, a shape that is a multiple of the chunk and
//! shapes with edge chunks, little- and big-endian chunks, an inner chunk
//! never written (an empty index entry, read as the fill value). This test
//! owns the checks with libn5: the Rust API (metadata, the whole array by
//! checksum, every block, regions crossing inner chunks) and the C API (the
//! whole array, the missing block).
//!
//! Needs the peers' Python (`N5_PEER_PYTHON`, set by `./tests/run.sh`, with
//! h5py and tensorstore from tests/peers/requirements.txt); without it the
//! test says so and passes.

mod common;

use std::ffi::CString;
use std::path::Path;
use std::process::Command;

use n5::{Container, DataType, Mode, Options};
use serde_json::Value;

/// The box `shape` at `offset` (N5 order) of the array `array` whose N5
/// dimensions are `dims` (C-order bytes of the reversed shape).
fn cut(array: &[u8], dims: &[u64], offset: &[u64], shape: &[u64], elem: usize) -> Vec<u8> {
    let n = dims.len();
    let rows: u64 = shape[1..].iter().product();
    let mut out = Vec::with_capacity(shape.iter().product::<u64>() as usize * elem);
    for r in 0..rows {
        let mut rest = r;
        let mut src = offset[0];
        let mut stride = dims[0];
        for d in 1..n {
            let p = rest % shape[d];
            rest /= shape[d];
            src += (offset[d] + p) * stride;
            stride *= dims[d];
        }
        let s = src as usize * elem;
        out.extend_from_slice(&array[s..s + shape[0] as usize * elem]);
    }
    out
}

/// Native-order bytes of a read, as the little-endian bytes the script wrote.
fn to_le(mut bytes: Vec<u8>, elem: usize) -> Vec<u8> {
    if cfg!(target_endian = "big") {
        n5::block::swap_to_from_be(&mut bytes, elem);
    }
    bytes
}

/// The fill value of `data_type` as little-endian bytes.
fn fill_bytes(fill: &Value, data_type: DataType) -> Vec<u8> {
    match data_type {
        DataType::U16 => (fill.as_u64().unwrap() as u16).to_le_bytes().to_vec(),
        DataType::I32 => (fill.as_i64().unwrap() as i32).to_le_bytes().to_vec(),
        DataType::F64 => fill.as_f64().unwrap().to_le_bytes().to_vec(),
        t => panic!("no fill value bytes for {t:?} in this test"),
    }
}

fn reversed(v: &Value) -> Vec<u64> {
    let mut v = common::u64s(v);
    v.reverse();
    v
}

fn c_error() -> String {
    // SAFETY: n5_last_error_message returns a NUL-terminated string owned by
    // the library, valid until the thread's next call.
    unsafe { std::ffi::CStr::from_ptr(n5::ffi::status::n5_last_error_message()) }
        .to_string_lossy()
        .into_owned()
}

/// The shard file as bytes: an HDF5 file (its signature at offset 0) whose
/// last bytes are the shard index the script reported.
fn check_file_layout(a: &Value) {
    let shard = std::fs::read(a["shard"].as_str().unwrap()).unwrap();
    let name = a["name"].as_str().unwrap();
    assert_eq!(
        &shard[..8],
        b"\x89HDF\r\n\x1a\n",
        "{name}: not an HDF5 file"
    );
    let (offset, nbytes) = (
        a["index_offset"].as_u64().unwrap() as usize,
        a["index_nbytes"].as_u64().unwrap() as usize,
    );
    assert_eq!(
        shard.len(),
        offset + nbytes,
        "{name}: the index is not at the end"
    );
    let chunks: u64 = common::u64s(&a["shard_shape"])
        .iter()
        .zip(common::u64s(&a["chunk_shape"]))
        .map(|(s, c)| s / c)
        .product();
    let crc = a["index_crc32c"].as_bool().unwrap();
    assert_eq!(nbytes as u64, 16 * chunks + if crc { 4 } else { 0 });
    let index = &shard[offset..];
    if crc {
        let body = &index[..nbytes - 4];
        let stored = u32::from_le_bytes(index[nbytes - 4..].try_into().unwrap());
        assert_eq!(crc32c::crc32c(body), stored, "{name}: index CRC32C");
    }
    // Every entry is empty or a range of the HDF5 chunks before the index.
    for e in index[..16 * chunks as usize].chunks_exact(16) {
        let off = u64::from_le_bytes(e[..8].try_into().unwrap());
        let len = u64::from_le_bytes(e[8..].try_into().unwrap());
        assert!(
            (off, len) == (u64::MAX, u64::MAX) || off + len <= offset as u64,
            "{name}: entry ({off}, {len}) beyond the chunks"
        );
    }
}

/// Through the Rust API: metadata, the whole array, every block, regions.
fn check_rust_api(container: &Container, a: &Value) {
    let name = a["name"].as_str().unwrap();
    let expected = std::fs::read(a["bin"].as_str().unwrap()).unwrap();
    let d = container
        .open_dataset(name)
        .unwrap_or_else(|e| panic!("open_dataset({name}): {e}"));
    let attrs = d.attributes();
    let data_type = DataType::from_name(a["data_type"].as_str().unwrap()).unwrap();
    let elem = data_type.size();
    let dims = reversed(&a["shape"]);
    let block: Vec<u64> = reversed(&a["chunk_shape"]);
    assert_eq!(attrs.data_type, data_type, "{name}");
    assert_eq!(attrs.dimensions, dims, "{name}: dimensions");
    assert_eq!(
        attrs
            .block_size
            .iter()
            .map(|&b| b as u64)
            .collect::<Vec<_>>(),
        block,
        "{name}: block size (the HDF5 chunk shape, reversed)"
    );
    assert_eq!(d.shard_shape(), reversed(&a["shard_shape"]), "{name}");

    // The whole array, by checksum and byte for byte.
    let total: u64 = dims.iter().product();
    let mut whole = vec![0u8; total as usize * elem];
    d.read_region(&vec![0; dims.len()], &dims, &mut whole)
        .unwrap_or_else(|e| panic!("{name}: read_region of the whole array: {e}"));
    let whole = to_le(whole, elem);
    assert_eq!(
        common::sha256(&whole),
        a["sha256"].as_str().unwrap(),
        "{name}: the whole array's sha256"
    );
    assert!(whole == expected, "{name}: the whole array's bytes");

    // Every block (inner chunk), the empty ones found missing with the
    // fill value.
    let empty: Vec<Vec<u64>> = a["empty_chunks"]
        .as_array()
        .unwrap()
        .iter()
        .map(reversed)
        .collect();
    let fill = fill_bytes(&a["fill_value"], data_type);
    let grid: Vec<u64> = dims
        .iter()
        .zip(&block)
        .map(|(d, b)| d.div_ceil(*b))
        .collect();
    let count: u64 = grid.iter().product();
    for i in 0..count {
        let mut rest = i;
        let pos: Vec<u64> = grid
            .iter()
            .map(|g| {
                let p = rest % g;
                rest /= g;
                p
            })
            .collect();
        let shape = d.block_shape(&pos).unwrap();
        let offset: Vec<u64> = pos.iter().zip(&block).map(|(p, b)| p * b).collect();
        let n: u64 = shape.iter().product();
        let mut buf = vec![0u8; n as usize * elem];
        let found = d
            .read_block_into(&pos, &mut buf)
            .unwrap_or_else(|e| panic!("{name}: read_block_into({pos:?}): {e}"));
        let buf = to_le(buf, elem);
        let want = cut(&expected, &dims, &offset, &shape, elem);
        if empty.contains(&pos) {
            assert!(!found, "{name}: block {pos:?} has an empty index entry");
            assert!(
                !d.block_exists(&pos).unwrap(),
                "{name}: block {pos:?} exists"
            );
            assert!(
                want.chunks_exact(elem).all(|e| e == fill),
                "{name}: the model's missing block is not fill"
            );
            assert!(
                buf.chunks_exact(elem).all(|e| e == fill),
                "{name}: missing block {pos:?} does not read as the fill value"
            );
        } else {
            assert!(found, "{name}: block {pos:?} not found");
            assert!(buf == want, "{name}: block {pos:?} differs");
        }
    }

    // Regions that cross inner chunks, the array's edge and the empty chunk.
    let regions: Vec<(Vec<u64>, Vec<u64>)> = vec![
        (
            dims.iter().map(|d| d / 3).collect(),
            dims.iter().map(|d| d - d / 3 - d / 5).collect(),
        ),
        (
            block.iter().map(|b| b - 1).collect(),
            block
                .iter()
                .zip(&dims)
                .map(|(b, d)| (b + 2).min(d - b + 1))
                .collect(),
        ),
        (dims.iter().map(|d| d - 1).collect(), vec![1; dims.len()]),
        (
            dims.iter().map(|d| d / 2).collect(),
            dims.iter().map(|d| d - d / 2).collect(),
        ),
    ];
    for (offset, shape) in regions {
        let n: u64 = shape.iter().product();
        let mut buf = vec![0u8; n as usize * elem];
        d.read_region(&offset, &shape, &mut buf)
            .unwrap_or_else(|e| panic!("{name}: read_region({offset:?}, {shape:?}): {e}"));
        assert!(
            to_le(buf, elem) == cut(&expected, &dims, &offset, &shape, elem),
            "{name}: region {offset:?} {shape:?} differs"
        );
    }
}

/// Through the C API, as a C program would: the whole array by checksum,
/// and `n5_block_read` of a block with an empty index entry.
fn check_c_api(root: &str, arrays: &[Value]) {
    use n5::ffi::{
        block::n5_block_read, container::*, dataset::*, region::n5_region_read,
        status::n5_dtype_size, N5_MODE_READ, N5_OK,
    };
    let loc = CString::new(root).unwrap();
    let opts = CString::new("{}").unwrap();
    // Every pointer passed points at a live NUL-terminated string or at a
    // buffer of the length given with it; each handle is freed once.
    let c = n5_container_open(loc.as_ptr(), N5_MODE_READ, opts.as_ptr());
    assert!(!c.is_null(), "n5_container_open({root}): {}", c_error());
    for a in arrays {
        let name = a["name"].as_str().unwrap();
        let cname = CString::new(name).unwrap();
        let ds = n5_dataset_open(c, cname.as_ptr());
        assert!(!ds.is_null(), "n5_dataset_open({name}): {}", c_error());
        let (mut ndim, mut dtype) = (0usize, 0);
        assert_eq!(n5_dataset_ndim(ds, &mut ndim), N5_OK);
        assert_eq!(n5_dataset_dtype(ds, &mut dtype), N5_OK);
        let mut dims = vec![0u64; ndim];
        assert_eq!(n5_dataset_dimensions(ds, ndim, dims.as_mut_ptr()), N5_OK);
        assert_eq!(dims, reversed(&a["shape"]), "{name}: n5_dataset_dimensions");
        let mut shard = vec![0u64; ndim];
        assert_eq!(n5_dataset_shard_shape(ds, ndim, shard.as_mut_ptr()), N5_OK);
        assert_eq!(
            shard,
            reversed(&a["shard_shape"]),
            "{name}: n5_dataset_shard_shape"
        );
        let elem = n5_dtype_size(dtype);
        let len = dims.iter().product::<u64>() as usize * elem;
        let mut buf = vec![0u8; len];
        let offset = vec![0u64; ndim];
        let status = n5_region_read(
            ds,
            ndim,
            offset.as_ptr(),
            dims.as_ptr(),
            dtype,
            buf.as_mut_ptr().cast(),
            len,
        );
        assert_eq!(status, N5_OK, "{name}: n5_region_read: {}", c_error());
        assert_eq!(
            common::sha256(&to_le(buf, elem)),
            a["sha256"].as_str().unwrap(),
            "{name}: the whole array through the C API"
        );
        let data_type = DataType::from_name(a["data_type"].as_str().unwrap()).unwrap();
        let fill = fill_bytes(&a["fill_value"], data_type);
        for pos in a["empty_chunks"].as_array().unwrap().iter().map(reversed) {
            let block = reversed(&a["chunk_shape"]);
            let n: u64 = block
                .iter()
                .zip(&pos)
                .zip(&dims)
                .map(|((b, p), d)| (*b).min(d - p * b))
                .product();
            let mut buf = vec![0xa5u8; n as usize * elem];
            let mut shape = vec![0u64; ndim];
            let mut found = -1;
            let status = n5_block_read(
                ds,
                ndim,
                pos.as_ptr(),
                dtype,
                buf.as_mut_ptr().cast(),
                buf.len(),
                shape.as_mut_ptr(),
                &mut found,
            );
            assert_eq!(
                status,
                N5_OK,
                "{name}: n5_block_read({pos:?}): {}",
                c_error()
            );
            assert_eq!(found, 0, "{name}: block {pos:?} has an empty index entry");
            assert!(
                to_le(buf, elem).chunks_exact(elem).all(|e| e == fill),
                "{name}: missing block {pos:?} through the C API is not the fill value"
            );
        }
        n5_dataset_free(ds);
    }
    n5_container_free(c);
}

#[test]
fn hdf5_files_that_are_zarr_v3_shards_read_like_any_shard() {
    let Some(python) = std::env::var_os("N5_PEER_PYTHON").filter(|p| !p.is_empty()) else {
        eprintln!(
            "zarr hdf5: skipped: N5_PEER_PYTHON is not set; run ./tests/run.sh to make HDF5 \
             shards with h5py"
        );
        return;
    };
    let dir = common::Scratch::new("zarr-hdf5");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/make_hdf5_shard.py");
    let out = Command::new(&python)
        .arg(&script)
        .arg(dir.path())
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run {} {}: {e}",
                python.to_string_lossy(),
                script.display()
            )
        });
    assert!(
        out.status.success(),
        "{} could not make or check the HDF5 shards ({}; h5py and tensorstore come from \
         tests/peers/requirements.txt):\n{}{}",
        script.display(),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "the script's report: {e}: {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    eprintln!(
        "zarr hdf5: h5py {} (HDF5 {})",
        report["h5py"].as_str().unwrap(),
        report["hdf5"].as_str().unwrap()
    );
    let root = report["root"].as_str().unwrap();
    let arrays = report["arrays"].as_array().unwrap();
    assert!(!arrays.is_empty());

    let container = Container::open_with(root, Mode::Read, Options::from_json("{}").unwrap())
        .unwrap_or_else(|e| panic!("open {root}: {e}"));
    for a in arrays {
        let name = a["name"].as_str().unwrap();
        check_file_layout(a);
        assert_eq!(
            a["tensorstore_sha256"], a["sha256"],
            "{name}: tensorstore reads another array from the HDF5 shard"
        );
        check_rust_api(&container, a);
    }
    check_c_api(root, arrays);
    for a in arrays {
        eprintln!(
            "zarr hdf5: {}: {} {:?} in chunks {:?}, index {} bytes at the end of a {}-byte \
             HDF5 file{}: libn5 (Rust and C API) and tensorstore read it",
            a["name"].as_str().unwrap(),
            a["data_type"].as_str().unwrap(),
            common::u64s(&a["shape"]),
            common::u64s(&a["chunk_shape"]),
            a["index_nbytes"],
            a["file_size"],
            if a["index_crc32c"].as_bool().unwrap() {
                " with CRC32C"
            } else {
                ""
            }
        );
    }
}
