//! `import` and `clean` on Zarr: `n5 import` writes a raw or .npy file
//! (or standard input) into a new Zarr v3 array, sharded or not, or a
//! Zarr v2 array, chosen by `--format`, the location's prefix or suffix,
//! or the container already there; `cat` and zarr-python 3 read back
//! exactly what went in. What cannot be made is refused before anything is
//! written. `n5 clean` removes the temporaries killed writers left in a
//! Zarr container and nothing else.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use common::{fails, json, le_u16, ok, python_with, run, TempDir};
use serde_json::json;

/// 37 x 29 x 11 (N5 order) uint16 values with some structure, and a
/// stretch of zeros (a chunk equal to the fill value).
fn values() -> Vec<u16> {
    let n = 37 * 29 * 11;
    (0..n)
        .map(|i| {
            if i < 37 * 29 * 4 {
                0
            } else {
                ((i * 7919) % 65521) as u16 / ((i % 5) as u16 + 1)
            }
        })
        .collect()
}

/// A .npy file of `values()` with `descr` (`<u2` or `>u2`) in `t`.
fn npy_file(t: &TempDir, name: &str, descr: &str) -> String {
    let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': (11, 29, 37), }}");
    let mut header = dict.into_bytes();
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(b' ');
    }
    header.push(b'\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
    bytes.extend_from_slice(&header);
    for v in values() {
        bytes.extend_from_slice(&if descr == ">u2" {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        });
    }
    let path = t.path(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// zarr-python 3 opens each of `arrays` (paths of Zarr arrays) and finds
/// `values()` in C order (axes reversed) with the shard and chunk shapes
/// given (C order; `null` for no sharding).
fn zarr_python_reads(python: &Path, arrays: &[(String, serde_json::Value)]) {
    let script = r#"
import json, sys
import numpy as np
import zarr
want = np.fromfile(sys.argv[1], dtype="<u2").reshape(11, 29, 37)
for path, shapes in json.loads(sys.argv[2]):
    a = zarr.open_array(path, mode="r")
    got = a[...]
    assert got.dtype == np.uint16, (path, got.dtype)
    assert np.array_equal(got, want), path
    assert list(a.chunks) == shapes["chunks"], (path, a.chunks)
    shards = a.shards if a.metadata.zarr_format == 3 else None
    assert (list(shards) if shards else None) == shapes["shards"], (path, shards)
print("ok", len(json.loads(sys.argv[2])))
"#;
    let t = TempDir::new("zarr-import-peer");
    let raw = t.path("want.raw");
    std::fs::write(&raw, le_u16(&values())).unwrap();
    let out = Command::new(python)
        .args(["-c", script, &raw, &json!(arrays).to_string()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "zarr-python 3: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn import_writes_zarr_v3_sharded_or_not_and_zarr_v2() {
    let t = TempDir::new("zarr-import");
    let le = npy_file(&t, "v.npy", "<u2");
    let be = npy_file(&t, "be.npy", ">u2");
    let bytes = le_u16(&values());
    let v3 = t.path("vol.zarr");
    let v2 = t.path("v2.zarr");
    let b = ["-b", "8,8,4"];
    // .zarr: Zarr v3, unsharded and sharded (shards of 2 x 2 x 2 chunks,
    // those at the edges cut by the array's end).
    ok(&[
        &["import", &le, &format!("{v3}/plain"), "-c", "zstd"],
        &b[..],
    ]
    .concat());
    ok(&[
        &["import", &be, &format!("{v3}/sharded"), "-c", "gzip"],
        &b[..],
        &["--shard", "16,16,8"],
    ]
    .concat());
    // Zarr v2 by --format and by prefix; blosc and no compression.
    ok(&[
        &["import", &le, &format!("{v2}/a"), "--format", "zarr2"],
        &b[..],
        &["-c", "blosc"],
    ]
    .concat());
    ok(&[
        &["import", &le, &format!("zarr2:{v2}/b"), "-c", "raw"],
        &b[..],
    ]
    .concat());
    // Standard input (raw, with --dtype and --shape), sharded.
    let mut child = Command::new(env!("CARGO_BIN_EXE_n5"))
        .args([
            "import",
            "-",
            &format!("{v3}/stdin"),
            "--dtype",
            "uint16",
            "--shape",
            "37,29,11",
            "-b",
            "8,8,4",
            "--shard",
            "16,16,8",
        ])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&bytes).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    for (c, name) in [
        (&v3, "plain"),
        (&v3, "sharded"),
        (&v3, "stdin"),
        (&v2, "a"),
        (&v2, "b"),
    ] {
        let ds = format!("{c}/{name}");
        assert!(ok(&["cat", &ds]).stdout == bytes, "{ds}");
        let info = json(&["info", "--json", &ds]);
        assert_eq!(
            info["format"],
            if c == &v3 { "zarr3" } else { "zarr2" },
            "{info}"
        );
        assert_eq!(info["blockSize"], json!([8, 8, 4]), "{info}");
    }
    let sharded = json(&["info", "--json", &format!("{v3}/sharded")]);
    assert_eq!(sharded["shardShape"], json!([16, 16, 8]), "{sharded}");
    // Chunks equal to the fill value (the first four planes are zeros)
    // are not stored: the unsharded v3 array has fewer than its 5*4*3.
    let plain = json(&["info", "--json", &format!("{v3}/plain")]);
    assert_eq!(plain["blocks"]["stored"], json!(5 * 4 * 2), "{plain}");
    assert!(json(&["verify", "--json", &v3])["ok"] == true);
    assert!(json(&["verify", "--json", &v2])["ok"] == true);

    if let Some(python) = python_with(
        "N5_ZARR3_PYTHON",
        ".venv-zarr3",
        "zarr, numpy",
        "zarr-python 3 reading the imports",
    ) {
        let unsharded = json!({"chunks": [4, 8, 8], "shards": null});
        let sharded = json!({"chunks": [4, 8, 8], "shards": [8, 16, 16]});
        zarr_python_reads(
            &python,
            &[
                (format!("{v3}/plain"), unsharded.clone()),
                (format!("{v3}/sharded"), sharded.clone()),
                (format!("{v3}/stdin"), sharded),
                (format!("{v2}/a"), unsharded.clone()),
                (format!("{v2}/b"), unsharded),
            ],
        );
    }
}

#[test]
fn what_an_import_cannot_make_is_refused_before_anything_is_written() {
    let t = TempDir::new("zarr-import-refused");
    let le = npy_file(&t, "v.npy", "<u2");
    let nothing = |dir: &str| assert!(!Path::new(dir).exists(), "{dir} was written");
    // --shard is for Zarr v3.
    let n5 = t.path("vol.n5");
    fails(
        &[
            "import",
            &le,
            &format!("{n5}/a"),
            "-b",
            "8,8,4",
            "--shard",
            "16,16,8",
        ],
        2,
        "sharded Zarr v3",
    );
    nothing(&n5);
    // A shard shape that is not a multiple of the block size.
    let v3 = t.path("vol.zarr");
    fails(
        &[
            "import",
            &le,
            &format!("{v3}/a"),
            "-b",
            "8,8,4",
            "--shard",
            "12,16,8",
        ],
        2,
        "not a multiple of the block size",
    );
    nothing(&v3);
    // A compression Zarr v3 has no codec for.
    let r = run(&["import", &le, &format!("{v3}/a"), "-c", "bzip2"]);
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("bzip2"), "{}", r.stderr);
    nothing(&v3);
    // A .npy file longer than its header says.
    let long = t.path("long.npy");
    let mut bytes = std::fs::read(&le).unwrap();
    bytes.extend_from_slice(&[1, 2]);
    std::fs::write(&long, bytes).unwrap();
    fails(&["import", &long, &format!("{v3}/a")], 1, "header's shape");
    nothing(&v3);
    // A format that contradicts the container already there.
    ok(&["import", &le, &format!("{v3}/a")]);
    fails(
        &["import", &le, &format!("{v3}/b"), "--format", "zarr2"],
        1,
        "existing zarr3 container",
    );
    assert!(!Path::new(&format!("{v3}/b")).exists());
    // An N5 container's suffix does not make N5 of an existing Zarr one.
    let odd = t.path("odd.n5");
    ok(&["import", &le, &format!("zarr3:{odd}/a")]);
    assert_eq!(
        json(&["info", "--json", &format!("{odd}/a")])["format"],
        "zarr3"
    );
    ok(&["import", &le, &format!("{odd}/b")]);
    assert_eq!(
        json(&["info", "--json", &format!("{odd}/b")])["format"],
        "zarr3"
    );
}

#[test]
fn clean_removes_the_stale_temporaries_of_a_zarr_container() {
    let t = TempDir::new("zarr-clean");
    let le = npy_file(&t, "v.npy", "<u2");
    let v3 = t.path("vol.zarr");
    let v2 = t.path("v2.zarr");
    ok(&[
        "import",
        &le,
        &format!("{v3}/s"),
        "-b",
        "8,8,4",
        "--shard",
        "16,16,8",
    ]);
    ok(&["import", &le, &format!("zarr2:{v2}/a"), "-b", "8,8,4"]);
    let stale = [
        format!("{v3}/s/c/.n5tmp.0.4242.7"),
        format!("{v3}/.n5tmp.zarr.json.4242.8"),
        format!("{v2}/a/.n5tmp.0.0.0.4242.9"),
    ];
    for f in &stale {
        std::fs::write(f, b"half a shard").unwrap();
    }
    let kept = json(&["clean", "--json", &v3]);
    assert_eq!(kept, json!({"removed": 0, "bytes": 0}));
    assert_eq!(
        json(&["clean", "--json", "--older-than", "0", &v3]),
        json!({"removed": 2, "bytes": 24})
    );
    assert_eq!(
        json(&["clean", "--json", "--older-than", "0", &v2]),
        json!({"removed": 1, "bytes": 12})
    );
    assert!(stale.iter().all(|f| !Path::new(f).exists()));
    let bytes = le_u16(&values());
    assert!(ok(&["cat", &format!("{v3}/s")]).stdout == bytes);
    assert!(ok(&["cat", &format!("{v2}/a")]).stdout == bytes);
    // A Zarr root without a .zarr name is a container too (.zgroup,
    // zarr.json); a directory without either is not.
    let named = t.path("plainname");
    std::fs::rename(&v2, &named).unwrap();
    std::fs::write(format!("{named}/a/.n5tmp.1.0.0.4242.9"), b"x").unwrap();
    assert_eq!(
        json(&["clean", "--json", "--older-than", "0", &named]),
        json!({"removed": 1, "bytes": 1})
    );
    std::fs::remove_file(format!("{named}/.zgroup")).unwrap();
    fails(
        &["clean", "--older-than", "0", &named],
        1,
        "not a container",
    );
    // Cleaning writes nothing: no root marker or version is added to a
    // container named so without one.
    for bare in ["bare.zarr", "bare.n5"] {
        let dir = t.path(bare);
        std::fs::create_dir_all(format!("{dir}/sub")).unwrap();
        std::fs::write(format!("{dir}/sub/.n5tmp.x.1.2"), b"x").unwrap();
        assert_eq!(
            json(&["clean", "--json", "--older-than", "0", &dir]),
            json!({"removed": 1, "bytes": 1})
        );
        let left: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, ["sub"], "{bare}");
    }
}
