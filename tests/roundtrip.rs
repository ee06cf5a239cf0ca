//! Round trips through the file system: every data type × every compression
//! × ranks 1 to 5 with edge blocks, whole blocks and unaligned regions,
//! string and object blocks, resizing, block listing, and padded edge blocks
//! as tensorstore and zarr 2 store them.

mod common;

use common::{bytes, compression, Scratch, COMPRESSIONS};
use n5::{Container, DataType, DatasetAttributes, Mode, Options};

/// (dimensions, blockSize) per rank, none a multiple of the block size.
const SHAPES: &[(&[u64], &[u32])] = &[
    (&[100], &[16]),
    (&[19, 23], &[4, 5]),
    (&[9, 8, 7], &[4, 3, 2]),
    (&[7, 6, 5, 4], &[3, 3, 2, 2]),
    (&[5, 4, 3, 4, 3], &[2, 2, 2, 3, 2]),
];

#[test]
fn every_dtype_compression_and_rank() {
    let s = Scratch::new("roundtrip");
    let c = Container::open(s.join("c.n5"), Mode::Create).unwrap();
    let mut n = 0;
    for (ci, comp) in COMPRESSIONS.iter().enumerate() {
        for t in DataType::NUMERIC {
            for (rank, (dims, block)) in SHAPES.iter().enumerate() {
                // Every compression with every type at rank 3; every rank with raw and one codec per type.
                if rank != 2 && ci > 1 && !(ci + t.code() as usize).is_multiple_of(4) {
                    continue;
                }
                let path = format!("c{ci}/{t}/r{}", rank + 1);
                let a = DatasetAttributes::new(
                    dims.to_vec(),
                    block.to_vec(),
                    t.clone(),
                    compression(comp),
                )
                .unwrap();
                let d = c.create_dataset(&path, a).unwrap();
                let total = dims.iter().product::<u64>() as usize * t.size();
                let data = bytes(n, total);
                let zero = vec![0u64; dims.len()];
                d.write_region(&zero, dims, &data).unwrap();
                let r = Container::open(s.join("c.n5"), Mode::Read)
                    .unwrap()
                    .open_dataset(&path)
                    .unwrap();
                let mut out = vec![0u8; total];
                r.read_region(&zero, dims, &mut out).unwrap();
                assert_eq!(out, data, "{path} {comp}");
                // Every stored edge block is truncated to the dataset's extent.
                for pos in r.list_blocks().unwrap() {
                    let b = r.read_block(&pos).unwrap().unwrap();
                    let want: Vec<u32> = r
                        .block_shape(&pos)
                        .unwrap()
                        .iter()
                        .map(|&x| x as u32)
                        .collect();
                    assert_eq!(b.header.size, want, "{path} {pos:?}");
                    // In one dimension a block is a slice of the data: the
                    // block API (its own byte order conversion) agrees with
                    // what the region write stored.
                    if rank == 0 {
                        let start = pos[0] as usize * block[0] as usize * t.size();
                        assert_eq!(b.data, data[start..start + b.data.len()], "{path} {pos:?}");
                    }
                }
                n += 1;
            }
        }
    }
    assert!(n > 200, "{n} datasets");
}

/// Reference: element of an array of `shape` (dim 0 fastest) at `idx`.
fn flat(idx: &[u64], shape: &[u64]) -> usize {
    let mut f = 0u64;
    for d in (0..shape.len()).rev() {
        f = f * shape[d] + idx[d];
    }
    f as usize
}

#[test]
fn unaligned_regions_read_modify_write() {
    for threads in [1, 2, 5] {
        for comp in [r#"{"type":"gzip"}"#, r#"{"type":"raw"}"#] {
            unaligned_regions_with_threads(threads, comp);
        }
    }
}

fn unaligned_regions_with_threads(threads: usize, comp: &str) {
    let s = Scratch::new(&format!("regions-{threads}-{}", comp.len()));
    let options = Options {
        threads,
        ..Options::default()
    };
    let c = Container::open_with(s.join("c.n5"), Mode::Create, options).unwrap();
    let dims = [23u64, 17, 9];
    let a = DatasetAttributes::new(
        dims.to_vec(),
        vec![5, 4, 3],
        DataType::U16,
        compression(comp),
    )
    .unwrap();
    let d = c.create_dataset("r", a).unwrap();
    let total = dims.iter().product::<u64>() as usize;
    let mut model = vec![0u16; total];
    let regions: &[([u64; 3], [u64; 3])] = &[
        ([0, 0, 0], [23, 17, 9]),
        ([1, 2, 3], [7, 5, 4]),
        ([20, 15, 8], [3, 2, 1]),
        ([4, 0, 2], [1, 17, 1]),
        ([0, 3, 0], [23, 1, 9]),
    ];
    for (i, (off, shape)) in regions.iter().enumerate() {
        let count = shape.iter().product::<u64>() as usize;
        let vals: Vec<u16> = (0..count)
            .map(|k| {
                (k as u16)
                    .wrapping_mul(31)
                    .wrapping_add(i as u16 * 1000 + 1)
            })
            .collect();
        let buf: Vec<u8> = vals.iter().flat_map(|v| v.to_ne_bytes()).collect();
        d.write_region(off, shape, &buf).unwrap();
        for z in 0..shape[2] {
            for y in 0..shape[1] {
                for x in 0..shape[0] {
                    let g = [off[0] + x, off[1] + y, off[2] + z];
                    model[flat(&g, &dims)] = vals[flat(&[x, y, z], shape)];
                }
            }
        }
        // Check the whole array and a few sub-regions against the model.
        let mut out = vec![0u8; total * 2];
        d.read_region(&[0, 0, 0], &dims, &mut out).unwrap();
        let got: Vec<u16> = out
            .chunks_exact(2)
            .map(|c| u16::from_ne_bytes([c[0], c[1]]))
            .collect();
        assert_eq!(got, model, "after region {i}");
        let (ro, rs) = ([3u64, 1, 2], [11u64, 9, 5]);
        let mut sub = vec![0u8; rs.iter().product::<u64>() as usize * 2];
        d.read_region(&ro, &rs, &mut sub).unwrap();
        for z in 0..rs[2] {
            for y in 0..rs[1] {
                for x in 0..rs[0] {
                    let k = flat(&[x, y, z], &rs);
                    let v = u16::from_ne_bytes([sub[2 * k], sub[2 * k + 1]]);
                    assert_eq!(v, model[flat(&[ro[0] + x, ro[1] + y, ro[2] + z], &dims)]);
                }
            }
        }
    }
}

/// A region larger than the read-ahead window and the huge-page threshold
/// (16 MiB of output), over raw and compressed blocks, some missing.
#[test]
fn large_regions_read_back_exactly() {
    let s = Scratch::new("large");
    for (threads, json) in [(1, r#"{"type":"raw"}"#), (3, r#"{"type":"lz4"}"#)] {
        let options = Options {
            threads,
            ..Options::default()
        };
        let c =
            Container::open_with(s.join(&format!("c{threads}.n5")), Mode::Create, options).unwrap();
        let dims = [300u64, 200, 75];
        let a = DatasetAttributes::new(
            dims.to_vec(),
            vec![64, 32, 16],
            DataType::U32,
            compression(json),
        )
        .unwrap();
        let d = c.create_dataset("big", a).unwrap();
        // Leave the first slab of blocks unwritten: it reads as zeros.
        let (woff, wshape) = ([0u64, 0, 16], [300u64, 200, 59]);
        let value = |x: u64, y: u64, z: u64| (x + 1000 * y + 1_000_000 * z) as u32;
        let mut data = Vec::with_capacity(wshape.iter().product::<u64>() as usize * 4);
        for z in 0..wshape[2] {
            for y in 0..wshape[1] {
                for x in 0..wshape[0] {
                    data.extend_from_slice(&value(x, y, z + woff[2]).to_ne_bytes());
                }
            }
        }
        d.write_region(&woff, &wshape, &data).unwrap();
        let (ro, rs) = ([3u64, 1, 2], [297u64, 199, 73]);
        let mut out = vec![0xAAu8; rs.iter().product::<u64>() as usize * 4];
        assert!(out.len() > 16 << 20);
        d.read_region(&ro, &rs, &mut out).unwrap();
        let mut k = 0;
        for z in ro[2]..ro[2] + rs[2] {
            for y in ro[1]..ro[1] + rs[1] {
                for x in ro[0]..ro[0] + rs[0] {
                    let want = if z < 16 { 0 } else { value(x, y, z) };
                    let got = u32::from_ne_bytes(out[k..k + 4].try_into().unwrap());
                    assert_eq!(got, want, "at ({x}, {y}, {z}) with {json}");
                    k += 4;
                }
            }
        }
    }
}

#[test]
fn sparse_reads_zero_and_empty_regions_are_fine() {
    let s = Scratch::new("sparse");
    let c = Container::open(s.join("c.n5"), Mode::Create).unwrap();
    let a = DatasetAttributes::new(
        vec![40, 30],
        vec![8, 8],
        DataType::F64,
        compression(r#"{"type":"zstd"}"#),
    )
    .unwrap();
    let d = c.create_dataset("s", a).unwrap();
    assert!(d.list_blocks().unwrap().is_empty());
    let mut out = vec![1u8; 40 * 30 * 8];
    d.read_region(&[0, 0], &[40, 30], &mut out).unwrap();
    assert!(out.iter().all(|&b| b == 0));
    let block: Vec<u8> = (0..64)
        .flat_map(|i| (i as f64 + 0.5).to_ne_bytes())
        .collect();
    d.write_block(&[2, 3], &[8, 8], &block).unwrap();
    d.write_block(&[4, 0], &[8, 8], &block).unwrap();
    assert_eq!(d.list_blocks().unwrap(), vec![vec![2, 3], vec![4, 0]]);
    d.read_region(&[0, 0], &[0, 30], &mut []).unwrap();
    // Stray files in the dataset directory are not blocks.
    std::fs::write(s.join("c.n5/s/2/notablock"), b"x").unwrap();
    std::fs::write(s.join("c.n5/s/2/.n5tmp.3.1.2"), b"x").unwrap();
    std::fs::write(s.join("c.n5/s/2/03"), b"x").unwrap();
    assert_eq!(d.list_blocks().unwrap(), vec![vec![2, 3], vec![4, 0]]);
}

#[test]
fn padded_edge_blocks_are_clipped_and_small_blocks_zero_extended() {
    let s = Scratch::new("padded");
    let c = Container::open(s.join("c.n5"), Mode::Create).unwrap();
    let a = DatasetAttributes::new(
        vec![5, 4],
        vec![3, 2],
        DataType::U8,
        compression(r#"{"type":"raw"}"#),
    )
    .unwrap();
    let d = c.create_dataset("p", a).unwrap();
    // A padded end block, as tensorstore writes it: full 3x2 for a nominal 2x2.
    let full: Vec<u8> = (1..=6).collect();
    d.write_block(&[1, 1], &[3, 2], &full).unwrap();
    let mut out = vec![0u8; 4];
    d.read_block_into(&[1, 1], &mut out).unwrap();
    assert_eq!(out, vec![1, 2, 4, 5]);
    // A block smaller than nominal (written before the dataset grew).
    d.write_block(&[0, 0], &[2, 1], &[7, 8]).unwrap();
    let mut out = vec![9u8; 6];
    d.read_block_into(&[0, 0], &mut out).unwrap();
    assert_eq!(out, vec![7, 8, 0, 0, 0, 0]);
}

#[test]
fn resize_keeps_blocks() {
    let s = Scratch::new("resize");
    let c = Container::open(s.join("c.n5"), Mode::Create).unwrap();
    let a = DatasetAttributes::new(
        vec![10, 10],
        vec![4, 4],
        DataType::I32,
        compression(r#"{"type":"gzip"}"#),
    )
    .unwrap();
    let d = c.create_dataset("g", a).unwrap();
    c.set_attributes("g", serde_json::json!({"user": 1}).as_object().unwrap())
        .unwrap();
    let data = bytes(5, 100 * 4);
    d.write_region(&[0, 0], &[10, 10], &data).unwrap();
    d.set_dimensions(&[20, 12]).unwrap();
    assert_eq!(d.attributes().dimensions, vec![20, 12]);
    let reopened = c.open_dataset("g").unwrap();
    assert_eq!(reopened.attributes().dimensions, vec![20, 12]);
    assert_eq!(
        c.get_attribute("g", "user").unwrap(),
        Some(serde_json::json!(1))
    );
    let mut out = vec![0u8; 100 * 4];
    reopened.read_region(&[0, 0], &[10, 10], &mut out).unwrap();
    assert_eq!(out, data);
    let mut tail = vec![1u8; 10 * 12 * 4];
    reopened
        .read_region(&[10, 0], &[10, 12], &mut tail)
        .unwrap();
    assert!(tail.iter().all(|&b| b == 0));
    // Shrink, then grow back: the blocks are still there.
    d.set_dimensions(&[3, 3]).unwrap();
    d.set_dimensions(&[10, 10]).unwrap();
    reopened.set_dimensions(&[10, 10]).unwrap();
    let mut again = vec![0u8; 100 * 4];
    c.open_dataset("g")
        .unwrap()
        .read_region(&[0, 0], &[10, 10], &mut again)
        .unwrap();
    assert_eq!(again, data);
    assert_eq!(
        d.set_dimensions(&[1]).unwrap_err().kind(),
        n5::ErrorKind::ShapeMismatch
    );
}

#[test]
fn no_temporary_files_are_left_behind() {
    let s = Scratch::new("no-temps");
    let c = Container::open(s.join("c.n5"), Mode::Create).unwrap();
    let a = DatasetAttributes::new(
        vec![16, 16],
        vec![4, 4],
        DataType::U8,
        compression(r#"{"type":"raw"}"#),
    )
    .unwrap();
    let d = c.create_dataset("d", a).unwrap();
    d.write_region(&[0, 0], &[16, 16], &bytes(1, 256)).unwrap();
    c.set_attribute("d", "a/b[2]", serde_json::json!(1))
        .unwrap();
    let mut stack = vec![s.join("c.n5")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            assert!(
                !e.file_name().to_string_lossy().starts_with('.'),
                "{:?}",
                e.path()
            );
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            }
        }
    }
}

#[test]
fn empty_blocks_are_skipped_when_asked() {
    let s = Scratch::new("empty-blocks");
    let options = Options {
        write_empty_blocks: false,
        ..Options::default()
    };
    let c = Container::open_with(s.join("c.n5"), Mode::Create, options).unwrap();
    let a = DatasetAttributes::new(
        vec![8, 8],
        vec![4, 4],
        DataType::U8,
        compression(r#"{"type":"raw"}"#),
    )
    .unwrap();
    let d = c.create_dataset("d", a).unwrap();
    let mut data = vec![0u8; 64];
    data[0] = 1; // only block (0, 0) holds data
    d.write_region(&[0, 0], &[8, 8], &data).unwrap();
    assert_eq!(d.list_blocks().unwrap(), vec![vec![0, 0]]);
    // Zeroing the one block deletes it; reads still give zeros.
    d.write_region(&[0, 0], &[1, 1], &[0]).unwrap();
    assert!(d.list_blocks().unwrap().is_empty());
    let mut out = vec![7u8; 64];
    d.read_region(&[0, 0], &[8, 8], &mut out).unwrap();
    assert!(out.iter().all(|&b| b == 0));
    // The default stores every block, as Java does.
    let c2 = Container::open(s.join("c.n5"), Mode::ReadWrite).unwrap();
    let d2 = c2.open_dataset("d").unwrap();
    d2.write_region(&[0, 0], &[8, 8], &[0u8; 64]).unwrap();
    assert_eq!(d2.list_blocks().unwrap().len(), 4);
}

#[test]
fn concurrent_region_calls_on_shared_handles() {
    let s = Scratch::new("concurrent-regions");
    let options = Options {
        threads: 3,
        ..Options::default()
    };
    let c = Container::open_with(s.join("c.n5"), Mode::Create, options).unwrap();
    let dims = [40u64, 30, 8];
    let a = DatasetAttributes::new(
        dims.to_vec(),
        vec![7, 6, 3],
        DataType::U32,
        compression(r#"{"type":"zstd"}"#),
    )
    .unwrap();
    let d = c.create_dataset("d", a).unwrap();
    // Each caller writes its own z slices (whole blocks in z do not
    // overlap: slices 0-2, 3-5 and 6-7 are separate block rows).
    let slabs = [(0u64, 3u64), (3, 3), (6, 2)];
    std::thread::scope(|scope| {
        for (k, &(z0, nz)) in slabs.iter().enumerate() {
            let d = d.clone();
            scope.spawn(move || {
                let shape = [dims[0], dims[1], nz];
                let n = shape.iter().product::<u64>() as usize;
                let vals: Vec<u8> = (0..n)
                    .flat_map(|i| ((i as u32) * 7 + k as u32).to_ne_bytes())
                    .collect();
                d.write_region(&[0, 0, z0], &shape, &vals).unwrap();
                let mut back = vec![0u8; vals.len()];
                d.read_region(&[0, 0, z0], &shape, &mut back).unwrap();
                assert_eq!(back, vals);
            });
        }
    });
}
