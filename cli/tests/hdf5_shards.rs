//! `--hdf5-shards` of `import` and `cp`: the sharded Zarr v3 arrays they
//! make carry the `hdf5_shards` member, and every shard is an HDF5 file
//! (checked with the library's reading of the HDF5 structures, and with
//! h5py when the peers' Python is there); `cp` keeps the member of a source
//! array that has it. Without a sharded Zarr v3 destination, or with a
//! compression HDF5 shards cannot hold (gzip, the import's default), it is
//! a usage error before anything is written.

mod common;

use std::path::Path;
use std::process::Command;

use common::{fails, json, le_u16, ok, python_with, TempDir};
use n5::format::hdf5::inspect_shard;
use serde_json::json;

/// 37 x 29 x 11 (N5 order) uint16 values, a stretch of them zero.
fn values() -> Vec<u16> {
    (0..37 * 29 * 11u32)
        .map(|i| {
            if i < 37 * 29 * 3 {
                0
            } else {
                ((i * 7919) % 65521) as u16
            }
        })
        .collect()
}

/// The raw values in `t`, with the arguments that import them.
fn raw_file(t: &TempDir) -> String {
    let path = t.path("v.raw");
    std::fs::write(&path, le_u16(&values())).unwrap();
    path
}

const RAW: [&str; 6] = ["--dtype", "uint16", "--shape", "37,29,11", "-b", "8,8,4"];

/// Every shard file of the array at `dir` (a local Zarr v3 array): each is
/// an HDF5 file with chunks of `inner` (C order); gives how many.
fn hdf5_shards_in(dir: &Path, inner: &[u64]) -> usize {
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("zarr.json")).unwrap()).unwrap();
    assert_eq!(
        doc["hdf5_shards"],
        json!({"must_understand": false}),
        "{}",
        dir.display()
    );
    let mut n = 0;
    let mut stack = vec![dir.join("c")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let bytes = std::fs::read(&p).unwrap();
            let info = inspect_shard(&bytes).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            assert_eq!(info.chunk, inner, "{}", p.display());
            assert_eq!(info.members, ["data", "zarrindex"], "{}", p.display());
            n += 1;
        }
    }
    n
}

#[test]
fn import_and_cp_write_hdf5_shards() {
    let t = TempDir::new("hdf5-shards-cli");
    let raw = raw_file(&t);
    let v = t.path("v.zarr");
    let bytes = le_u16(&values());
    for c in ["zstd", "raw", "blosc"] {
        ok(&[
            &[
                "import",
                &raw,
                &format!("{v}/{c}"),
                "-c",
                c,
                "--shard",
                "16,16,8",
            ],
            &RAW[..],
            &["--hdf5-shards"],
        ]
        .concat());
        let ds = format!("{v}/{c}");
        assert!(ok(&["cat", &ds]).stdout == bytes, "{ds}");
        // Every one of the 3 x 2 x 2 shards holds data.
        let n = hdf5_shards_in(&Path::new(&v).join(c), &[4, 8, 8]);
        assert_eq!(n, 3 * 2 * 2, "{ds}");
    }
    // cp from N5 with --shard and --hdf5-shards.
    let n5 = t.path("v.n5");
    ok(&[&["import", &raw, &format!("{n5}/raw")], &RAW[..]].concat());
    ok(&[
        "cp",
        &format!("{n5}/raw"),
        &format!("{v}/copied"),
        "--shard",
        "16,16,8",
        "-c",
        "zstd:5",
        "--hdf5-shards",
    ]);
    assert!(ok(&["cat", &format!("{v}/copied")]).stdout == bytes);
    hdf5_shards_in(&Path::new(&v).join("copied"), &[4, 8, 8]);
    // cp of an array with the member keeps it (and its shards), into a
    // new container, without being asked.
    let w = t.path("w.zarr");
    ok(&["cp", &format!("{v}/zstd"), &format!("{w}/kept")]);
    let info = json(&["info", "--json", &format!("{w}/kept")]);
    assert_eq!(info["shardShape"], json!([16, 16, 8]), "{info}");
    hdf5_shards_in(&Path::new(&w).join("kept"), &[4, 8, 8]);
    assert!(ok(&["cat", &format!("{w}/kept")]).stdout == bytes);
    // ... and into N5 there is no such thing.
    ok(&["cp", &format!("{v}/zstd"), &format!("{n5}/back")]);
    assert!(ok(&["cat", &format!("{n5}/back")]).stdout == bytes);

    if let Some(python) = python_with(
        "N5_PEER_PYTHON",
        ".venv",
        "h5py, hdf5plugin",
        "h5py opening the shards",
    ) {
        // The shard at C-order [1, 0, 0] (planes 8..11, rows 0..16, columns
        // 0..16) of the zstd import, as h5py reads it.
        let script = r#"
import sys
import h5py, hdf5plugin
import numpy as np
want = np.fromfile(sys.argv[2], dtype="<u2").reshape(11, 29, 37)
for path in sys.argv[3:]:
    with h5py.File(path, "r") as f:
        d = f["data"]
        assert d.shape == (3, 16, 16) and d.maxshape == (8, 16, 16), (path, d.shape, d.maxshape)
        assert np.array_equal(d[...], want[8:11, 0:16, 0:16]), path
print(sys.argv[1])
"#;
        let shard = |a: &str| format!("{v}/{a}/c/1/0/0");
        let out = Command::new(&python)
            .args(["-c", script, "ok", &t.path("v.raw")])
            .args(["zstd", "raw", "blosc", "copied"].map(shard))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "h5py: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn hdf5_shards_that_cannot_be_made_are_usage_errors_before_anything_is_written() {
    let t = TempDir::new("hdf5-shards-cli-refused");
    let raw = raw_file(&t);
    let v = t.path("v.zarr");
    let shard = ["--shard", "16,16,8", "--hdf5-shards"];
    // gzip, explicit or the import's default: the reason, and zstd proposed.
    for c in [&["-c", "gzip"][..], &[]] {
        let r = fails(
            &[
                &["import", &raw, &format!("{v}/a")],
                &RAW[..],
                c,
                &shard[..],
            ]
            .concat(),
            2,
            "RFC 1952",
        );
        assert!(r.stderr.contains("use zstd"), "{}", r.stderr);
    }
    // Not sharded, or not Zarr v3.
    fails(
        &[
            &[
                "import",
                &raw,
                &format!("{v}/a"),
                "-c",
                "zstd",
                "--hdf5-shards",
            ],
            &RAW[..],
        ]
        .concat(),
        2,
        "--hdf5-shards",
    );
    let n5 = t.path("v.n5");
    fails(
        &[
            &[
                "import",
                &raw,
                &format!("{n5}/a"),
                "-c",
                "zstd",
                "--hdf5-shards",
            ],
            &RAW[..],
        ]
        .concat(),
        2,
        "--hdf5-shards",
    );
    assert!(!Path::new(&v).exists() && !Path::new(&n5).exists());

    // cp: the same refusals, and a kept member with a compression it
    // cannot hold.
    ok(&[
        &["import", &raw, &format!("{n5}/raw"), "-c", "raw"],
        &RAW[..],
    ]
    .concat());
    let w = t.path("w.zarr");
    fails(
        &[
            "cp",
            &format!("{n5}/raw"),
            &format!("{w}/a"),
            "--hdf5-shards",
        ],
        2,
        "unsharded",
    );
    fails(
        &[
            "cp",
            &format!("{n5}/raw"),
            &format!("{n5}/b"),
            "--hdf5-shards",
        ],
        2,
        "is n5",
    );
    let r = fails(
        &[
            &["cp", &format!("{n5}/raw"), &format!("{w}/a"), "-c", "gzip"][..],
            &shard[..],
        ]
        .concat(),
        2,
        "RFC 1952",
    );
    assert!(r.stderr.contains("use zstd"), "{}", r.stderr);
    assert!(!Path::new(&w).exists());
    ok(&[
        &["import", &raw, &format!("{v}/h"), "-c", "zstd"],
        &RAW[..],
        &shard[..],
    ]
    .concat());
    fails(
        &["cp", &format!("{v}/h"), &format!("{w}/b"), "-c", "gzip"],
        2,
        "RFC 1952",
    );
    assert!(!Path::new(&w).exists());
}

#[test]
fn the_help_names_the_option() {
    for cmd in ["import", "cp"] {
        let help = ok(&[cmd, "--help"]).text();
        assert!(
            help.contains("--hdf5-shards") && help.contains("HDF5 file"),
            "{cmd}: {help}"
        );
    }
}
