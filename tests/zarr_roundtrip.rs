//! Zarr v2 and v3 arrays written through the API read back exactly: every
//! numeric data type with each codec the format has, ranks 1 to 4 with
//! edge chunks, whole and unaligned region writes against a model, block
//! writes and deletions, sharded arrays (index at the start and the end,
//! region writes covering shards whole and in part), fill values other
//! than zero, and the documents each write leaves.

mod common;

use n5::{Container, DataType, DatasetAttributes, Mode, Options};
use serde_json::{json, Value};

const TYPES: [DataType; 10] = [
    DataType::U8,
    DataType::U16,
    DataType::U32,
    DataType::U64,
    DataType::I8,
    DataType::I16,
    DataType::I32,
    DataType::I64,
    DataType::F32,
    DataType::F64,
];

fn create(dir: &common::Scratch, format: &str) -> Container {
    let root = dir.join(&format!("{format}.zarr"));
    let options =
        Options::from_json(&format!(r#"{{"format": "{format}", "threads": 2}}"#)).unwrap();
    Container::open_with(root.to_str().unwrap(), Mode::Create, options).unwrap()
}

/// Reads the whole array.
fn read_all(d: &n5::Dataset) -> Vec<u8> {
    let dims = d.attributes().dimensions.clone();
    let n: u64 = dims.iter().product();
    let mut out = vec![0u8; n as usize * d.data_type().size()];
    d.read_region(&vec![0; dims.len()], &dims, &mut out)
        .unwrap();
    out
}

/// Copy the box `shape` at `offset` of `src` (N5 order, dimension 0 fastest)
/// into the model `dst` of `dims`.
fn place(dst: &mut [u8], dims: &[u64], src: &[u8], offset: &[u64], shape: &[u64], elem: usize) {
    let n: u64 = shape.iter().product();
    for k in 0..n {
        let (mut rem, mut at, mut stride) = (k, 0u64, 1u64);
        for d in 0..dims.len() {
            at += (offset[d] + rem % shape[d]) * stride;
            rem /= shape[d];
            stride *= dims[d];
        }
        let (s, t) = (k as usize * elem, at as usize * elem);
        dst[t..t + elem].copy_from_slice(&src[s..s + elem]);
    }
}

#[test]
fn every_type_codec_and_rank_round_trips() {
    let dir = common::Scratch::new("zarr-roundtrip");
    for format in ["zarr3", "zarr2"] {
        let c = create(&dir, format);
        let mut codecs = vec![
            ("raw", r#"{"type":"raw"}"#),
            ("gzip", r#"{"type":"gzip","level":5}"#),
            ("zstd", r#"{"type":"zstd","level":3}"#),
            (
                "blosc",
                r#"{"type":"blosc","cname":"lz4","clevel":5,"shuffle":1}"#,
            ),
        ];
        if format == "zarr2" {
            codecs.push(("bzip2", r#"{"type":"bzip2","blockSize":9}"#));
            codecs.push(("xz", r#"{"type":"xz","preset":1}"#));
            codecs.push(("lz4", r#"{"type":"lz4","blockSize":65536}"#));
        }
        let shapes: [(&[u64], &[u32]); 4] = [
            (&[37], &[8]),
            (&[13, 9], &[4, 5]),
            (&[7, 6, 5], &[3, 4, 2]),
            (&[5, 3, 4, 3], &[2, 2, 3, 2]),
        ];
        let mut seed = 1u64;
        for t in TYPES {
            for (name, codec) in &codecs {
                for (rank, (dims, block)) in shapes.iter().enumerate() {
                    seed += 1;
                    let path = format!("{}/{name}/r{}", t.name(), rank + 1);
                    let attrs = DatasetAttributes::new(
                        dims.to_vec(),
                        block.to_vec(),
                        t.clone(),
                        common::compression(codec),
                    )
                    .unwrap();
                    let d = c.create_dataset(&path, attrs).unwrap();
                    let n: u64 = dims.iter().product();
                    let data = common::bytes(seed, n as usize * t.size());
                    d.write_region(&vec![0; dims.len()], dims, &data).unwrap();
                    let again = c.open_dataset(&path).unwrap();
                    assert_eq!(read_all(&again), data, "{format} {path}");
                    // A block through the block API (an edge block).
                    let last: Vec<u64> = dims
                        .iter()
                        .zip(block.iter())
                        .map(|(&d, &b)| (d - 1) / b as u64)
                        .collect();
                    let shape = again.block_shape(&last).unwrap();
                    let mut buf = vec![0u8; shape.iter().product::<u64>() as usize * t.size()];
                    assert!(again.read_block_into(&last, &mut buf).unwrap());
                    let origin: Vec<u64> = last
                        .iter()
                        .zip(block.iter())
                        .map(|(&p, &b)| p * b as u64)
                        .collect();
                    let mut region = vec![0u8; buf.len()];
                    again.read_region(&origin, &shape, &mut region).unwrap();
                    assert_eq!(buf, region, "{format} {path} edge block");
                }
            }
        }
        // What was written is the format's own documents.
        let root = dir.join(&format!("{format}.zarr"));
        let meta = if format == "zarr3" {
            "uint16/gzip/r2/zarr.json"
        } else {
            "uint16/gzip/r2/.zarray"
        };
        let doc: Value = serde_json::from_slice(&std::fs::read(root.join(meta)).unwrap()).unwrap();
        if format == "zarr3" {
            assert_eq!(doc["shape"], json!([9, 13]));
            assert_eq!(doc["codecs"][1]["name"], "gzip");
            assert!(root.join("uint16/gzip/r2/c/1/3").is_file());
        } else {
            assert_eq!(doc["chunks"], json!([5, 4]));
            assert_eq!(doc["compressor"]["id"], "gzip");
            assert!(root.join("uint16/gzip/r2/1.3").is_file());
        }
    }
}

#[test]
fn unaligned_region_writes_match_a_model() {
    let dir = common::Scratch::new("zarr-regions");
    for (format, sharding) in [
        ("zarr2", None),
        ("zarr3", None),
        ("zarr3", Some("end")),
        ("zarr3", Some("start")),
    ] {
        let c = create(&dir, format);
        // C order: shape [11, 10, 9]; N5 order [9, 10, 11].
        let doc = match (format, sharding) {
            ("zarr2", _) => json!({
                "shape": [11, 10, 9], "chunks": [4, 3, 5], "dtype": ">i4",
                "compressor": {"id": "zstd", "level": 1}, "fill_value": -3, "order": "F",
                "filters": null, "dimension_separator": "/"
            }),
            (_, None) => json!({
                "shape": [11, 10, 9], "data_type": "int32",
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 3, 5]}},
                "chunk_key_encoding": {"name": "v2", "configuration": {"separator": "."}},
                "fill_value": -3,
                "codecs": [{"name": "transpose", "configuration": {"order": [2, 0, 1]}},
                           {"name": "bytes", "configuration": {"endian": "big"}},
                           {"name": "gzip", "configuration": {"level": 1}}]
            }),
            (_, Some(location)) => json!({
                "shape": [11, 10, 9], "data_type": "int32",
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [8, 6, 5]}},
                "chunk_key_encoding": {"name": "default"},
                "fill_value": -3,
                "codecs": [{"name": "sharding_indexed", "configuration": {
                    "chunk_shape": [4, 3, 5],
                    "codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                               {"name": "zstd", "configuration": {"level": 1, "checksum": true}}],
                    "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                                     {"name": "crc32c"}],
                    "index_location": location}}]
            }),
        };
        let d = c.create_dataset_json("a", &doc).unwrap();
        let dims = [9u64, 10, 11];
        assert_eq!(d.attributes().dimensions, dims);
        assert_eq!(d.attributes().block_size, vec![5, 3, 4]);
        let n: u64 = dims.iter().product();
        let mut model: Vec<u8> = std::iter::repeat_n((-3i32).to_ne_bytes(), n as usize)
            .flatten()
            .collect();
        // Nothing written yet: the fill value everywhere.
        assert_eq!(read_all(&d), model, "{format} {sharding:?}: fill");
        let mut seed = 7u64;
        let mut rand = |m: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % m
        };
        for round in 0..40 {
            let offset: Vec<u64> = dims.iter().map(|&d| rand(d)).collect();
            let shape: Vec<u64> = dims
                .iter()
                .zip(&offset)
                .map(|(&d, &o)| 1 + rand(d - o))
                .collect();
            let k: u64 = shape.iter().product();
            let data = common::bytes(round + 100, k as usize * 4);
            d.write_region(&offset, &shape, &data).unwrap();
            place(&mut model, &dims, &data, &offset, &shape, 4);
            // Now and then a block written or deleted through the block API.
            if round % 7 == 3 {
                let pos = [rand(2), rand(4), rand(3)];
                let bshape = d.block_shape(&pos).unwrap();
                let bn: u64 = bshape.iter().product();
                let block = common::bytes(round + 500, bn as usize * 4);
                d.write_block(&pos, &bshape, &block).unwrap();
                let origin = [pos[0] * 5, pos[1] * 3, pos[2] * 4];
                place(&mut model, &dims, &block, &origin, &bshape, 4);
            }
            if round % 11 == 5 {
                let pos = [rand(2), rand(4), rand(3)];
                d.delete_block(&pos).unwrap();
                let bshape = d.block_shape(&pos).unwrap();
                let bn: u64 = bshape.iter().product();
                let fill: Vec<u8> = std::iter::repeat_n((-3i32).to_ne_bytes(), bn as usize)
                    .flatten()
                    .collect();
                let origin = [pos[0] * 5, pos[1] * 3, pos[2] * 4];
                place(&mut model, &dims, &fill, &origin, &bshape, 4);
                assert!(!d.block_exists(&pos).unwrap() || sharding.is_none());
            }
            let again = c.open_dataset("a").unwrap();
            assert_eq!(
                read_all(&again),
                model,
                "{format} {sharding:?}: round {round}"
            );
        }
        // The stored blocks are listed, and each is stored.
        let listed = d.list_blocks().unwrap();
        assert!(!listed.is_empty());
        for pos in &listed {
            assert!(
                d.block_exists(pos).unwrap(),
                "{format} {sharding:?}: {pos:?}"
            );
        }
        let mut all = 0;
        for x in 0..2 {
            for y in 0..4 {
                for z in 0..3 {
                    all += usize::from(d.block_exists(&[x, y, z]).unwrap());
                }
            }
        }
        assert_eq!(listed.len(), all, "{format} {sharding:?}");
        // Growing keeps the data and shows fill value beyond it; shrinking
        // back gives the same array.
        d.set_dimensions(&[12, 10, 11]).unwrap();
        let again = c.open_dataset("a").unwrap();
        assert_eq!(again.attributes().dimensions, vec![12, 10, 11]);
        let mut old = vec![0u8; model.len()];
        again.read_region(&[0, 0, 0], &dims, &mut old).unwrap();
        assert_eq!(old, model, "{format} {sharding:?}: after growing");
        let mut beyond = vec![0u8; 3 * 10 * 11 * 4];
        again
            .read_region(&[9, 0, 0], &[3, 10, 11], &mut beyond)
            .unwrap();
        assert!(
            beyond.chunks_exact(4).all(|e| e == (-3i32).to_ne_bytes()),
            "{format} {sharding:?}"
        );
        d.set_dimensions(&dims).unwrap();
        assert_eq!(read_all(&d), model);
        // The whole array at once: shards inside it are encoded from the
        // region alone, those at its end with their fill value.
        let whole = common::bytes(900, model.len());
        d.write_region(&[0, 0, 0], &dims, &whole).unwrap();
        assert_eq!(read_all(&d), whole, "{format} {sharding:?}: whole");
        // A region of fill value only: a shard with nothing left is deleted.
        if sharding.is_some() {
            let fill: Vec<u8> = std::iter::repeat_n((-3i32).to_ne_bytes(), n as usize)
                .flatten()
                .collect();
            d.write_region(&[0, 0, 0], &dims, &fill).unwrap();
            let root = dir.join("zarr3.zarr");
            let left: Vec<_> = walk(&root.join("a"))
                .into_iter()
                .filter(|p| !p.ends_with("zarr.json"))
                .collect();
            assert!(left.is_empty(), "{left:?}");
            std::fs::remove_dir_all(root).unwrap();
        } else if format == "zarr3" {
            std::fs::remove_dir_all(dir.join("zarr3.zarr")).unwrap();
        }
    }
}

/// Every file below `dir`.
fn walk(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            out.extend(walk(&e.path()));
        } else {
            out.push(e.path().display().to_string());
        }
    }
    out
}

#[test]
fn what_zarr_has_not_is_unsupported_and_metadata_is_checked() {
    let dir = common::Scratch::new("zarr-refusals");
    let c = create(&dir, "zarr3");
    let attrs = |codec: &str| {
        DatasetAttributes::new(vec![4], vec![2], DataType::U8, common::compression(codec)).unwrap()
    };
    let e = c
        .create_dataset("x", attrs(r#"{"type":"bzip2"}"#))
        .unwrap_err();
    assert_eq!(e.kind(), n5::ErrorKind::Unsupported, "{e}");
    assert!(e.message().contains("bzip2"), "{e}");
    let d = c.create_dataset("a", attrs(r#"{"type":"raw"}"#)).unwrap();
    assert_eq!(
        d.write_varlength_block(&[0], &[2], &[1])
            .unwrap_err()
            .kind(),
        n5::ErrorKind::Unsupported
    );
    assert_eq!(
        c.create_dataset("a", attrs(r#"{"type":"raw"}"#))
            .unwrap_err()
            .kind(),
        n5::ErrorKind::AlreadyExists
    );
    let e = c
        .create_dataset_json(
            "b",
            &json!({"shape": [4], "data_type": "int128",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
            "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
            "codecs": [{"name": "bytes"}]}),
        )
        .unwrap_err();
    assert_eq!(e.kind(), n5::ErrorKind::Unsupported, "{e}");
    assert!(
        !c.exists("b").unwrap(),
        "nothing is written for a refused document"
    );
    // A group keeps its user attributes when it becomes an array.
    c.create_group("g").unwrap();
    c.set_attribute("g", "k", json!(1)).unwrap();
    c.create_dataset("g", attrs(r#"{"type":"gzip"}"#)).unwrap();
    assert_eq!(c.attributes("g").unwrap(), json!({"k": 1}));
    assert!(c.dataset_exists("g").unwrap());
    // The metadata document as written.
    let d = c.open_dataset("g").unwrap();
    assert_eq!(d.metadata().unwrap()["codecs"][1]["name"], "gzip");
    assert_eq!(d.shard_shape(), vec![2]);
}

/// Writers of different blocks of one shard, at once, lose nothing: each
/// change of the shard is atomic with respect to the others (a lock on the
/// disk, conditional writes on S3 and GCS), on every backend.
#[test]
fn writers_of_one_shard_lose_nothing() {
    for place in common::places::places("zarr-shard-writers") {
        let options = place.options_with(r#"{"format": "zarr3", "threads": 1}"#);
        let c = place.open_with(Mode::Create, options).unwrap();
        // One shard of 8 inner chunks of 8 × 4 (C order).
        let doc = json!({
            "shape": [8, 32], "data_type": "uint16",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [8, 32]}},
            "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
            "codecs": [{"name": "sharding_indexed", "configuration": {
                "chunk_shape": [8, 4],
                "codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                           {"name": "gzip", "configuration": {"level": 1}}],
                "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                                 {"name": "crc32c"}]}}]
        });
        let d = c.create_dataset_json("s", &doc).unwrap();
        std::thread::scope(|scope| {
            for k in 0..8u64 {
                let d = d.clone();
                scope.spawn(move || {
                    for round in 1..=5u16 {
                        let v = (k as u16 + 1) * 100 + round;
                        let block: Vec<u8> =
                            std::iter::repeat_n(v.to_ne_bytes(), 32).flatten().collect();
                        d.write_block(&[k, 0], &[4, 8], &block).unwrap();
                    }
                });
            }
        });
        for k in 0..8u64 {
            let mut out = vec![0u8; 64];
            assert!(
                d.read_block_into(&[k, 0], &mut out).unwrap(),
                "{:?} block {k}",
                place.kind
            );
            let want = (k as u16 + 1) * 100 + 5;
            assert!(
                out.chunks_exact(2).all(|e| e == want.to_ne_bytes()),
                "{:?}: block {k} lost its writer's last value",
                place.kind
            );
        }
    }
}

/// A dataset created in `c` at `path` from `attrs`, sharded with shards of
/// `shard` (Zarr v3) when given, with `extra` merged into its document.
fn made(
    c: &Container,
    path: &str,
    attrs: &DatasetAttributes,
    shard: Option<&[u64]>,
    extra: Value,
) -> n5::Dataset {
    let mut doc = Container::dataset_document(c.format(), attrs).unwrap();
    if let Some(s) = shard {
        let block: Vec<u64> = attrs.block_size.iter().map(|&b| b as u64).collect();
        Container::shard_document(&mut doc, &block, s);
    }
    for (k, v) in extra.as_object().unwrap() {
        doc[k] = v.clone();
    }
    c.create_dataset_json(path, &doc).unwrap()
}

/// Stored units (N5 blocks, Zarr v2 chunks, Zarr v3 shards) copied as
/// stored between datasets of one encoding give the same data; names,
/// attributes and chunk key spellings do not change the encoding, a codec
/// does; units outside the grid, read-only containers and missing units
/// are what the contract says.
#[test]
fn stored_units_copy_between_datasets_of_one_encoding() {
    let dir = common::Scratch::new("stored_units");
    for format in ["n5", "zarr2", "zarr3"] {
        let root = dir.join(&format!("units.{format}"));
        let options = Options::from_json(&format!(r#"{{"format": "{format}"}}"#)).unwrap();
        let c = Container::open_with(root.to_str().unwrap(), Mode::Create, options).unwrap();
        let dims = vec![21u64, 17, 9];
        let attrs = DatasetAttributes::new(
            dims.clone(),
            vec![4, 5, 3],
            DataType::U16,
            n5::Compression::from_json(&json!({"type": "zstd", "level": 3})).unwrap(),
        )
        .unwrap();
        let other = DatasetAttributes::new(
            dims.clone(),
            vec![4, 5, 3],
            DataType::U16,
            n5::Compression::from_json(&json!({"type": "gzip", "level": 5})).unwrap(),
        )
        .unwrap();
        let shard: Option<&[u64]> = (format == "zarr3").then_some(&[8, 10, 6]);
        let (renamed, spelled) = match format {
            "zarr3" => (
                json!({"dimension_names": ["z", "y", "x"], "attributes": {"a": 1}}),
                json!({"chunk_key_encoding": {"name": "v2", "configuration": {"separator": "."}}}),
            ),
            "zarr2" => (json!({}), json!({"dimension_separator": "/"})),
            _ => (json!({}), json!({})),
        };
        let src = made(&c, "src", &attrs, shard, json!({}));
        let dst = made(&c, "dst", &attrs, shard, renamed);
        let dst2 = made(&c, "dst2", &attrs, shard, spelled);
        let gz = made(&c, "gz", &other, shard, json!({}));
        assert!(src.same_encoding(&dst), "{format}: names and attributes");
        assert!(src.same_encoding(&dst2), "{format}: chunk key spelling");
        assert!(!src.same_encoding(&gz), "{format}: another codec");
        // Everything but the first unit, from a pattern that compresses.
        let unit = src.shard_shape();
        let n: u64 = dims.iter().product();
        let data: Vec<u8> = (0..n)
            .flat_map(|i| ((i * 7 % 1000) as u16 + 1).to_le_bytes())
            .collect();
        src.write_region(&[0, 0, 0], &dims, &data).unwrap();
        src.write_stored_unit(&[0, 0, 0], None).unwrap();
        // A stale unit at the first position of the copies, deleted by the copy.
        dst.write_region(&[0, 0, 0], &[1, 1, 1], &[9, 9]).unwrap();
        let grid: Vec<u64> = (0..3).map(|d| dims[d].div_ceil(unit[d])).collect();
        let mut buf = Vec::new();
        let mut copied = 0;
        for z in 0..grid[2] {
            for y in 0..grid[1] {
                for x in 0..grid[0] {
                    let pos = [x, y, z];
                    let stored = src.read_stored_unit(&pos, &mut buf).unwrap();
                    assert_eq!(stored, pos != [0, 0, 0], "{format} {pos:?}");
                    for d in [&dst, &dst2] {
                        d.write_stored_unit(&pos, stored.then_some(&buf[..]))
                            .unwrap();
                    }
                    copied += stored as usize;
                }
            }
        }
        assert!(copied > 1);
        let want = read_all(&src);
        assert_ne!(
            &want[..2],
            &data[..2],
            "{format}: the first unit reads as fill"
        );
        assert_eq!(read_all(&dst), want, "{format}: dst");
        assert_eq!(read_all(&dst2), want, "{format}: dst2");
        let mut have = Vec::new();
        assert!(!dst.read_stored_unit(&[0, 0, 0], &mut have).unwrap());
        // Outside the grid, and through a read-only handle.
        let e = src.read_stored_unit(&grid, &mut buf).unwrap_err();
        assert_eq!(e.kind(), n5::ErrorKind::OutOfBounds, "{format}: {e}");
        assert!(e.to_string().contains("src"), "{format}: {e}");
        let ro = Container::open(root.to_str().unwrap(), Mode::Read).unwrap();
        let e = ro
            .open_dataset("dst")
            .unwrap()
            .write_stored_unit(&[1, 0, 0], Some(&buf))
            .unwrap_err();
        assert_eq!(e.kind(), n5::ErrorKind::ReadOnly, "{format}: {e}");
    }
}

/// `Dataset::copy_stored_unit`: file to file between local containers (the
/// kernel copies: the caller's buffer is never used), through the buffer
/// from and into a memory store, missing units deleted, and the errors.
#[test]
fn stored_units_copy_file_to_file_and_through_memory() {
    let dir = common::Scratch::new("stored_unit_copy");
    for format in ["n5", "zarr3"] {
        let open = |name: &str| {
            let root = dir.join(&format!("{name}.{format}"));
            let options = Options::from_json(&format!(r#"{{"format": "{format}"}}"#)).unwrap();
            Container::open_with(root.to_str().unwrap(), Mode::Create, options).unwrap()
        };
        let options = Options::from_json(&format!(r#"{{"format": "{format}"}}"#)).unwrap();
        let mem = Container::open_store(
            std::sync::Arc::new(n5::storage::MemoryStore::new()),
            "mem",
            Mode::Create,
            options,
        )
        .unwrap();
        let (a, b) = (open("a"), open("b"));
        let dims = vec![19u64, 12, 7];
        let attrs = DatasetAttributes::new(
            dims.clone(),
            vec![4, 5, 3],
            DataType::U16,
            n5::Compression::from_json(&json!({"type": "zstd", "level": 3})).unwrap(),
        )
        .unwrap();
        let raw = DatasetAttributes::new(
            dims.clone(),
            vec![4, 5, 3],
            DataType::U16,
            n5::Compression::Raw,
        )
        .unwrap();
        let shard: Option<&[u64]> = (format == "zarr3").then_some(&[8, 10, 6]);
        let src = made(&a, "src", &attrs, shard, json!({}));
        let on_disk = made(&b, "dst", &attrs, shard, json!({}));
        let in_memory = made(&mem, "dst", &attrs, shard, json!({}));
        let from_memory = made(&b, "from_memory", &attrs, shard, json!({}));
        let other = made(&b, "raw", &raw, shard, json!({}));
        let n: u64 = dims.iter().product();
        let data: Vec<u8> = (0..n)
            .flat_map(|i| ((i * 13 % 700) as u16 + 2).to_le_bytes())
            .collect();
        src.write_region(&[0, 0, 0], &dims, &data).unwrap();
        src.write_stored_unit(&[1, 0, 0], None).unwrap();
        // Stale units where the source has none: the copies delete them.
        for d in [&on_disk, &in_memory, &from_memory] {
            d.write_region(&[4, 0, 0], &[1, 1, 1], &[7, 7]).unwrap();
            if format == "zarr3" {
                d.write_region(&[8, 0, 0], &[1, 1, 1], &[7, 7]).unwrap();
            }
        }
        let unit = src.shard_shape();
        let grid: Vec<u64> = (0..3).map(|d| dims[d].div_ceil(unit[d])).collect();
        let (mut buf, mut want, mut have) = (Vec::new(), Vec::new(), Vec::new());
        for z in 0..grid[2] {
            for y in 0..grid[1] {
                for x in 0..grid[0] {
                    let pos = [x, y, z];
                    let stored = src.read_stored_unit(&pos, &mut want).unwrap();
                    assert_eq!(stored, pos != [1, 0, 0], "{format} {pos:?}");
                    let mut untouched = Vec::new();
                    assert_eq!(
                        on_disk
                            .copy_stored_unit(&pos, &src, &mut untouched)
                            .unwrap(),
                        stored
                    );
                    assert!(untouched.is_empty(), "{format}: copied file to file");
                    assert_eq!(
                        in_memory.copy_stored_unit(&pos, &src, &mut buf).unwrap(),
                        stored
                    );
                    assert_eq!(
                        from_memory
                            .copy_stored_unit(&pos, &in_memory, &mut buf)
                            .unwrap(),
                        stored
                    );
                    for d in [&on_disk, &in_memory, &from_memory] {
                        assert_eq!(d.read_stored_unit(&pos, &mut have).unwrap(), stored);
                        if stored {
                            assert_eq!(have, want, "{format} {pos:?}: the stored bytes");
                        }
                    }
                }
            }
        }
        let whole = read_all(&src);
        for d in [&on_disk, &in_memory, &from_memory] {
            assert_eq!(read_all(d), whole, "{format}: {}", d.path());
        }
        let e = other
            .copy_stored_unit(&[0, 0, 0], &src, &mut buf)
            .unwrap_err();
        assert_eq!(e.kind(), n5::ErrorKind::InvalidArgument, "{format}: {e}");
        assert!(
            e.to_string().contains("src") && e.to_string().contains("raw"),
            "{e}"
        );
        let e = on_disk.copy_stored_unit(&grid, &src, &mut buf).unwrap_err();
        assert_eq!(e.kind(), n5::ErrorKind::OutOfBounds, "{format}: {e}");
        let ro = Container::open(
            dir.join(&format!("b.{format}")).to_str().unwrap(),
            Mode::Read,
        )
        .unwrap();
        let e = ro
            .open_dataset("dst")
            .unwrap()
            .copy_stored_unit(&[0, 0, 0], &src, &mut buf)
            .unwrap_err();
        assert_eq!(e.kind(), n5::ErrorKind::ReadOnly, "{format}: {e}");
        // Nothing of the copies' temporaries is left.
        let left: Vec<_> = walk(&dir.join(&format!("b.{format}")))
            .into_iter()
            .filter(|p| p.contains(".n5tmp."))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }
}
