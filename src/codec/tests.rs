//! Tests of the [`Compression`] API as a whole: JSON forms of every peer,
//! golden payloads, round trips of every codec and hostile payloads.

use serde_json::json;

use super::Compression;
use crate::error::ErrorKind;

fn parse(v: serde_json::Value) -> Compression {
    Compression::from_json(&v).unwrap_or_else(|e| panic!("{v}: {e}"))
}

fn parse_err(v: serde_json::Value) -> ErrorKind {
    Compression::from_json(&v).unwrap_err().kind()
}

fn blosc(cname: &str, clevel: u32, shuffle: i32, blocksize: u64) -> Compression {
    Compression::Blosc {
        cname: cname.to_string(),
        clevel,
        shuffle,
        blocksize,
    }
}

#[test]
fn json_defaults() {
    assert_eq!(parse(json!({"type": "raw"})), Compression::Raw);
    assert_eq!(
        parse(json!({"type": "gzip"})),
        Compression::Gzip {
            level: 6,
            use_zlib: false
        }
    );
    assert_eq!(
        parse(json!({"type": "bzip2"})),
        Compression::Bzip2 { block_size: 9 }
    );
    assert_eq!(parse(json!({"type": "xz"})), Compression::Xz { preset: 6 });
    assert_eq!(
        parse(json!({"type": "lz4"})),
        Compression::Lz4 { block_size: 65536 }
    );
    assert_eq!(parse(json!({"type": "blosc"})), blosc("blosclz", 6, 0, 0));
    assert_eq!(
        parse(json!({"type": "zstd"})),
        Compression::Zstd { level: 3 }
    );
    // null is as good as absent (Gson).
    assert_eq!(
        parse(json!({"type": "gzip", "level": null, "useZlib": null})),
        Compression::Gzip {
            level: 6,
            use_zlib: false
        }
    );
}

#[test]
fn json_of_every_peer() {
    // Java 3.5.1 (key order as written).
    assert_eq!(
        parse(json!({"type": "gzip", "useZlib": true, "level": 6})),
        Compression::Gzip {
            level: 6,
            use_zlib: true
        }
    );
    assert_eq!(
        parse(
            json!({"type": "blosc", "clevel": 9, "blocksize": 0, "cname": "blosclz", "nthreads": 1, "shuffle": 0})
        ),
        blosc("blosclz", 9, 0, 0)
    );
    // n5-blosc 2.0.0 pre-releases add typesize.
    assert_eq!(
        parse(
            json!({"type": "blosc", "cname": "zstd", "clevel": 3, "shuffle": 2, "blocksize": 0, "nthreads": 1, "typesize": 1})
        ),
        blosc("zstd", 3, 2, 0)
    );
    // tensorstore: gzip level -1, blosc with four keys.
    assert_eq!(
        parse(json!({"type": "gzip", "level": -1, "useZlib": false})),
        Compression::Gzip {
            level: -1,
            use_zlib: false
        }
    );
    assert_eq!(
        parse(
            json!({"blocksize": 256, "clevel": 9, "cname": "lz4hc", "shuffle": 1, "type": "blosc"})
        ),
        blosc("lz4hc", 9, 1, 256)
    );
    // z5: gzip without useZlib, lz4 blockSize is its level, blosc with nthreads.
    assert_eq!(
        parse(json!({"level": 1, "type": "gzip"})),
        Compression::Gzip {
            level: 1,
            use_zlib: false
        }
    );
    assert_eq!(
        parse(json!({"blockSize": 6, "type": "lz4"})),
        Compression::Lz4 { block_size: 6 }
    );
    assert_eq!(
        parse(json!({"blockSize": 5, "type": "bzip2"})),
        Compression::Bzip2 { block_size: 5 }
    );
    // zarr 2: zstd with id/checksum, lz4 with id/acceleration and no blockSize.
    assert_eq!(
        parse(json!({"checksum": false, "id": "zstd", "level": 19, "type": "zstd"})),
        Compression::Zstd { level: 19 }
    );
    assert_eq!(
        parse(json!({"acceleration": 1, "id": "lz4", "type": "lz4"})),
        Compression::Lz4 { block_size: 65536 }
    );
    // rust-n5: gzip without useZlib.
    assert_eq!(
        parse(json!({"type": "gzip", "level": 6})),
        Compression::Gzip {
            level: 6,
            use_zlib: false
        }
    );
    // Negative zstd levels, integral floats.
    assert_eq!(
        parse(json!({"type": "zstd", "level": -7})),
        Compression::Zstd { level: -7 }
    );
    assert_eq!(
        parse(json!({"type": "xz", "preset": 1.0})),
        Compression::Xz { preset: 1 }
    );
}

#[test]
fn json_errors() {
    assert_eq!(parse_err(json!({"type": "lzma"})), ErrorKind::Unsupported);
    let err = Compression::from_json(&json!({"type": "lzf"})).unwrap_err();
    assert!(err.message().contains("lzf"), "{err}");
    assert_eq!(parse_err(json!({"level": 6})), ErrorKind::InvalidMetadata);
    assert_eq!(parse_err(json!({"type": 4})), ErrorKind::InvalidMetadata);
    assert_eq!(parse_err(json!("gzip")), ErrorKind::InvalidMetadata);
    for (bad, key) in [
        (json!({"type": "gzip", "level": "6"}), "level"),
        (json!({"type": "gzip", "useZlib": 1}), "useZlib"),
        (json!({"type": "gzip", "level": 1.5}), "level"),
        (json!({"type": "gzip", "level": 3_000_000_000u64}), "level"),
        (json!({"type": "bzip2", "blockSize": -1}), "blockSize"),
        (json!({"type": "xz", "preset": [6]}), "preset"),
        (json!({"type": "lz4", "blockSize": true}), "blockSize"),
        (json!({"type": "blosc", "cname": 5}), "cname"),
        (json!({"type": "blosc", "clevel": -1}), "clevel"),
        (json!({"type": "blosc", "shuffle": "1"}), "shuffle"),
        (json!({"type": "blosc", "blocksize": -5}), "blocksize"),
        (json!({"type": "zstd", "level": {}}), "level"),
    ] {
        let err = Compression::from_json(&bad).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidMetadata, "{bad}");
        assert!(err.message().contains(key), "{bad}: {err}");
    }
}

#[test]
fn json_is_written_complete_and_round_trips() {
    let cases = [
        (Compression::Raw, r#"{"type":"raw"}"#),
        (
            Compression::Gzip {
                level: 6,
                use_zlib: false,
            },
            r#"{"type":"gzip","level":6,"useZlib":false}"#,
        ),
        (
            Compression::Bzip2 { block_size: 9 },
            r#"{"type":"bzip2","blockSize":9}"#,
        ),
        (Compression::Xz { preset: 6 }, r#"{"type":"xz","preset":6}"#),
        (
            Compression::Lz4 { block_size: 65536 },
            r#"{"type":"lz4","blockSize":65536}"#,
        ),
        (
            blosc("lz4", 5, 1, 0),
            r#"{"type":"blosc","cname":"lz4","clevel":5,"shuffle":1,"blocksize":0}"#,
        ),
        (
            Compression::Zstd { level: -3 },
            r#"{"type":"zstd","level":-3}"#,
        ),
    ];
    for (c, text) in cases {
        assert_eq!(serde_json::to_string(&c.to_json()).unwrap(), text);
        assert_eq!(Compression::from_json(&c.to_json()).unwrap(), c);
        assert_eq!(c.to_json()["type"], c.type_name());
    }
}

#[test]
fn legacy_compression_types() {
    assert_eq!(
        Compression::from_legacy_type("raw").unwrap(),
        Compression::Raw
    );
    assert_eq!(
        Compression::from_legacy_type("gzip").unwrap(),
        Compression::Gzip {
            level: 6,
            use_zlib: false
        }
    );
    assert_eq!(
        Compression::from_legacy_type("bzip2").unwrap(),
        Compression::Bzip2 { block_size: 9 }
    );
    assert_eq!(
        Compression::from_legacy_type("LZ4").unwrap(),
        Compression::Lz4 { block_size: 65536 }
    );
    assert_eq!(
        Compression::from_legacy_type("xz").unwrap(),
        Compression::Xz { preset: 6 }
    );
    for bad in ["blosc", "zstd", "", "gzip2"] {
        assert_eq!(
            Compression::from_legacy_type(bad).unwrap_err().kind(),
            ErrorKind::Unsupported
        );
    }
}

/// One of each codec, with typical and edge parameters.
fn all_codecs() -> Vec<Compression> {
    vec![
        Compression::Raw,
        Compression::Gzip {
            level: 6,
            use_zlib: false,
        },
        Compression::Gzip {
            level: -1,
            use_zlib: false,
        },
        Compression::Gzip {
            level: 0,
            use_zlib: true,
        },
        Compression::Gzip {
            level: 9,
            use_zlib: true,
        },
        Compression::Bzip2 { block_size: 1 },
        Compression::Bzip2 { block_size: 9 },
        Compression::Xz { preset: 0 },
        Compression::Xz { preset: 6 },
        Compression::Lz4 { block_size: 64 },
        Compression::Lz4 { block_size: 6 },
        Compression::Lz4 { block_size: 65536 },
        Compression::Lz4 {
            block_size: 1 << 25,
        },
        blosc("blosclz", 6, 0, 0),
        blosc("lz4", 5, 1, 0),
        blosc("lz4hc", 9, 1, 256),
        blosc("snappy", 5, 2, 0),
        blosc("zlib", 5, -1, 0),
        blosc("zstd", 3, 2, 0),
        Compression::Zstd { level: 3 },
        Compression::Zstd { level: -5 },
        Compression::Zstd { level: 19 },
    ]
}

/// Deterministic pseudo-random bytes (xorshift).
fn random(len: usize, mut seed: u64) -> Vec<u8> {
    (0..len)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 32) as u8
        })
        .collect()
}

fn compressible(len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| ((i / 7) % 41) as u8 ^ ((i / 4096) as u8))
        .collect()
}

#[test]
fn round_trips_of_every_codec() {
    let mut inputs = vec![];
    for len in [0usize, 1, 2, 3, 63, 64, 65, 1001, 65_537] {
        inputs.push(compressible(len));
        inputs.push(random(len, len as u64 + 1));
    }
    inputs.push(compressible(1 << 20));
    inputs.push(random(1 << 20, 99));
    for c in all_codecs() {
        for data in &inputs {
            for elem_size in [1usize, 8] {
                let mut enc = vec![0xEE; 3];
                c.encode(data, elem_size, &mut enc).unwrap();
                assert_eq!(&enc[..3], &[0xEE; 3], "{c:?} must append");
                let mut back = vec![0x55u8; data.len()];
                c.decode(&enc[3..], &mut back)
                    .unwrap_or_else(|e| panic!("{c:?} length {}: {e}", data.len()));
                assert!(
                    back == *data,
                    "{c:?} length {} elem {elem_size}",
                    data.len()
                );
                if data.len() > 1 {
                    // The prefix only: data beyond out.len() is ignored.
                    let mut half = vec![0u8; data.len() / 2];
                    c.decode(&enc[3..], &mut half)
                        .unwrap_or_else(|e| panic!("{c:?}: {e}"));
                    assert!(half == data[..half.len()], "{c:?} prefix");
                    // One byte too many is an error.
                    let mut more = vec![0u8; data.len() + 1];
                    let err = c.decode(&enc[3..], &mut more).unwrap_err();
                    assert_eq!(err.kind(), ErrorKind::Codec, "{c:?}: {err}");
                }
            }
        }
    }
}

#[test]
fn encode_rejects_parameters_the_compressor_cannot_take() {
    for c in [
        Compression::Gzip {
            level: 10,
            use_zlib: false,
        },
        Compression::Bzip2 { block_size: 0 },
        Compression::Bzip2 { block_size: 10 },
        Compression::Xz { preset: 10 },
        Compression::Zstd { level: 100 },
        blosc("lz5", 5, 0, 0),
        blosc("lz4", 10, 0, 0),
        blosc("lz4", 5, 7, 0),
    ] {
        let mut out = Vec::new();
        assert_eq!(
            c.encode(b"abc", 1, &mut out).unwrap_err().kind(),
            ErrorKind::InvalidMetadata,
            "{c:?}"
        );
    }
}

#[test]
fn truncated_and_garbage_payloads_are_codec_errors() {
    let data = compressible(20_000);
    for c in all_codecs() {
        let mut enc = Vec::new();
        c.encode(&data, 2, &mut enc).unwrap();
        let mut back = vec![0u8; data.len()];
        for cut in [0, 1, enc.len() / 3, enc.len() - 1] {
            if c == Compression::Raw || matches!(c, Compression::Lz4 { .. }) && cut == enc.len() - 1
            {
                // Raw has no framing; an LZ4Block stream may lose its end marker.
                continue;
            }
            let err = c.decode(&enc[..cut], &mut back).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Codec, "{c:?} cut {cut}: {err}");
        }
        let garbage = random(5000, 7);
        let _ = c.decode(&garbage, &mut back); // must not panic
        let err = c.decode(b"N5", &mut back).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Codec, "{c:?}: {err}");
    }
}

#[test]
fn bombs_decode_no_further_than_needed() {
    // 1 GiB of zeros as 1024 concatenated 1 MiB members/frames/streams (a few
    // hundred KiB of payload): decoding 4 KiB of it must stop there, quickly
    // and without allocating the gigabyte.
    let zeros = vec![0u8; 1 << 20];
    let mut payloads = Vec::new();
    for c in [
        Compression::Gzip {
            level: 9,
            use_zlib: false,
        },
        Compression::Bzip2 { block_size: 9 },
        Compression::Xz { preset: 6 },
        Compression::Zstd { level: 3 },
        Compression::Lz4 {
            block_size: 1 << 25,
        },
    ] {
        let mut one = Vec::new();
        c.encode(&zeros, 1, &mut one).unwrap();
        if let Compression::Lz4 { .. } = c {
            one.truncate(one.len() - 21); // pieces run on without end marker
        }
        payloads.push((c, one.repeat(1024)));
    }
    // A zstd frame whose header claims 1 GiB of content in a single segment:
    // the decoder would need a 1 GiB window and must refuse.
    let mut single = ::zstd::bulk::compress(&zeros[..200_000], 1).unwrap();
    let fhd = single[4];
    assert_eq!(
        (fhd >> 6, fhd & 0x20),
        (2, 0x20),
        "4-byte content size, single segment"
    );
    single[5..9].copy_from_slice(&(1u32 << 30).to_le_bytes());
    payloads.push((Compression::Zstd { level: 3 }, single));
    for (c, payload) in payloads {
        let start = std::time::Instant::now();
        let mut out = vec![1u8; 4096];
        match c.decode(&payload, &mut out) {
            Ok(()) => assert!(out.iter().all(|&b| b == 0), "{c:?}"),
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::Codec, "{c:?}: {e}");
                assert!(matches!(c, Compression::Zstd { .. }), "{c:?}: {e}");
            }
        }
        assert!(
            start.elapsed().as_secs() < 5,
            "{c:?} took {:?}",
            start.elapsed()
        );
    }
}

#[test]
fn decoding_into_nothing_needs_nothing() {
    for c in all_codecs() {
        c.decode(&[], &mut []).unwrap();
        c.decode(b"garbage", &mut []).unwrap();
    }
}

#[test]
fn user_compression_is_checked_strictly() {
    let ok = |v: serde_json::Value| Compression::from_user_json(&v).unwrap();
    let err = |v: serde_json::Value| Compression::from_user_json(&v).unwrap_err();
    assert_eq!(
        ok(json!({"type": "gzip", "level": -1})),
        Compression::Gzip {
            level: -1,
            use_zlib: false
        }
    );
    // Keys other writers add are accepted, as when copying Java's blosc object.
    ok(json!({"type": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "nthreads": 1}));
    let e = err(json!({"type": "gzip", "lvl": 1}));
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(
        e.message().contains("'lvl'") && e.message().contains("level, useZlib"),
        "{e}"
    );
    assert!(err(json!({"type": "raw", "level": 1}))
        .message()
        .contains("it has none"));
    for bad in [
        json!({"type": "gzip", "level": 99}),
        json!({"type": "zstd", "level": 100}),
        json!({"type": "blosc", "cname": "nope"}),
        json!({"type": "blosc", "clevel": 10}),
        json!({"type": "blosc", "shuffle": 3}),
        json!({"type": "xz", "preset": 42}),
        json!({"type": "bzip2", "blockSize": 0}),
        json!({"type": "gzip", "level": "6"}),
    ] {
        assert_eq!(err(bad.clone()).kind(), ErrorKind::InvalidArgument, "{bad}");
    }
    assert_eq!(
        err(json!({"type": "snappy"})).kind(),
        ErrorKind::Unsupported
    );
    // Reading stays lenient: a peer's out-of-range level still parses.
    assert!(Compression::from_json(&json!({"type": "gzip", "level": 99})).is_ok());
}
