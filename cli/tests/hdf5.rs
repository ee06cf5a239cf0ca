//! HDF5 files through the `n5` tool: `ls`, `tree`, `info`, `cat`,
//! `verify` and `attrs` on files h5py writes (tests/peers/hdf5_backend.py
//! `make`: the n5-hdf5 layout, BigDataViewer, third-party layouts), found
//! by their suffix and, copied to another name, by their signature behind
//! `hdf5:`; `cp` from HDF5 to sharded Zarr v3, N5 and back to HDF5, and
//! `import` into HDF5 (`--format hdf5`), each result equal to h5py's data
//! and read back by h5py; what HDF5 files cannot hold (`-c zstd`,
//! `--shard`) refused before anything is written.
//!
//! Needs the peers' Python (`N5_PEER_PYTHON`, with h5py); without it the
//! tests say so and pass, unless `N5_REQUIRE_PEERS=1`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{fails, json, ok, python_with, TempDir};
use serde_json::Value;

/// The peers' Python with h5py, or `None` (the test is skipped).
fn python() -> Option<PathBuf> {
    python_with("N5_PEER_PYTHON", ".venv", "h5py, numpy", "the HDF5 tests")
}

/// Writes the script's files into `dir`; the manifest.
fn make_files(python: &Path, dir: &str) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/peers/hdf5_backend.py");
    let out = Command::new(python)
        .arg(&script)
        .arg("make")
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{} make: {}",
        script.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The manifest's entry of dataset `path` of the file named `file`.
fn dataset<'a>(manifest: &'a Value, file: &str, path: &str) -> &'a Value {
    let f = manifest["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"].as_str().unwrap().ends_with(file))
        .unwrap();
    f["datasets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["path"] == path)
        .unwrap_or_else(|| panic!("{file}{path} is not in the manifest"))
}

/// What h5py reads of dataset `d` (C order, little-endian).
fn h5py_bytes(d: &Value) -> Vec<u8> {
    std::fs::read(d["bin"].as_str().unwrap()).unwrap()
}

/// Checks with h5py that each dataset `path` of the HDF5 file `file` holds
/// the little-endian bytes of `bin` as elements of numpy type `dtype`
/// (and so the shape `shape`, C order), that its file has no `n5`
/// attribute, and that its layout is chunked.
fn h5py_holds(python: &Path, file: &str, checks: &[(&str, &str, &[u64], &str)]) {
    let list: Vec<Value> = checks
        .iter()
        .map(|(p, t, s, b)| serde_json::json!([p, t, s, b]))
        .collect();
    let script = r#"
import json, sys
import h5py, numpy as np
errors = []
with h5py.File(sys.argv[1], "r") as f:
    if "n5" in f.attrs:
        errors.append("the root has an n5 attribute")
    for path, dtype, shape, bin_path in json.loads(sys.argv[2]):
        d = f[path]
        want = np.fromfile(bin_path, dtype=np.dtype(dtype).newbyteorder("<")).reshape(shape)
        if list(d.shape) != shape:
            errors.append("%s: shape %s" % (path, d.shape))
        elif d.chunks is None:
            errors.append("%s: not chunked" % path)
        elif not np.array_equal(d[...], want):
            errors.append("%s: data differ" % path)
if errors:
    print("\n".join(errors))
    sys.exit(1)
"#;
    let out = Command::new(python)
        .args(["-c", script, file, &Value::Array(list).to_string()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "h5py reads {file} otherwise:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The C-order shape of a manifest dataset.
fn shape(d: &Value) -> Vec<u64> {
    d["shape"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect()
}

#[test]
fn reading_commands_on_hdf5_files() {
    let Some(python) = python() else { return };
    let t = TempDir::new("hdf5-read");
    let manifest = make_files(&python, &t.path("files"));
    let bdv = t.path("files/bdv.h5");
    let thirdparty = t.path("files/thirdparty.h5");

    let listed = json(&["ls", "--json", &bdv]);
    let names: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["__DATA_TYPES__", "s00", "t00000"]);
    let all = json(&["ls", "-r", "--json", &thirdparty]);
    let entry = |p: &str| {
        all.as_array()
            .unwrap()
            .iter()
            .find(|e| e["path"] == p)
            .unwrap_or_else(|| panic!("{p} not listed: {all}"))
            .clone()
    };
    assert_eq!(entry("zstd")["type"], "dataset");
    assert_eq!(entry("zstd")["dimensions"], serde_json::json!([40, 30]));
    assert_eq!(entry("strings_vlen")["type"], "unsupported");
    assert!(entry("compound")["error"]
        .as_str()
        .unwrap()
        .contains("compound"));
    let tree = ok(&["tree", &bdv]).text();
    assert!(tree.contains("cells") && tree.contains("int16"), "{tree}");

    let cells = dataset(&manifest, "bdv.h5", "/t00000/s00/0/cells");
    let info = json(&["info", "--json", &format!("{bdv}/t00000/s00/0/cells")]);
    assert_eq!(info["format"], "hdf5");
    assert_eq!(info["dimensions"], serde_json::json!([21, 40, 33]));
    assert_eq!(info["shape"], cells["shape"]);
    assert_eq!(info["chunkShape"], cells["chunks"]);
    assert_eq!(info["layout"], "chunked");
    assert_eq!(
        info["blocks"]["stored"].as_u64().unwrap() as usize,
        cells["chunk_list"].as_array().unwrap().len()
    );
    // The bytes the chunks take, as h5py lists them, and what they hold.
    let chunk_bytes: u64 = cells["chunk_list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["size"].as_u64().unwrap())
        .sum();
    assert_eq!(info["bytesStored"].as_u64(), Some(chunk_bytes));
    let chunk_elems: u64 = cells["chunks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_u64().unwrap())
        .product();
    assert_eq!(
        info["bytesUncompressed"].as_u64(),
        Some(info["blocks"]["stored"].as_u64().unwrap() * chunk_elems * 2)
    );
    let text = ok(&["info", &format!("{bdv}/t00000/s00/0/cells")]).text();
    assert!(text.contains("deflate(6)"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("stored") && l.contains("uncompressed, ratio")),
        "{text}"
    );
    // Statistics with the fill value where no chunk is allocated.
    let fill = dataset(&manifest, "thirdparty.h5", "/fill");
    let values: Vec<f32> = h5py_bytes(fill)
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    let stats = json(&["info", "--json", "--stats", &format!("{thirdparty}/fill")]);
    let min = values.iter().copied().fold(f32::INFINITY, f32::min);
    let max = values.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    assert_eq!(stats["stats"]["min"].as_f64().unwrap(), min as f64);
    assert_eq!(stats["stats"]["max"].as_f64().unwrap(), max as f64);
    assert_eq!(stats["fillValue"], serde_json::json!(7.5));
    let group = json(&["info", "--json", &format!("{bdv}/t00000/s00")]);
    assert_eq!(group["nodeType"], "group");
    assert_eq!(group["children"]["groups"], 2);

    // cat: h5py's bytes, whole and a region; found by the signature behind
    // hdf5: under another name too.
    let whole = ok(&["cat", &format!("{bdv}/t00000/s00/0/cells")]).stdout;
    assert_eq!(whole, h5py_bytes(cells));
    let renamed = t.path("renamed.bin");
    std::fs::copy(&bdv, &renamed).unwrap();
    let again = ok(&["cat", &format!("hdf5:{renamed}/t00000/s00/0/cells")]).stdout;
    assert_eq!(again, whole);
    let part = ok(&[
        "cat",
        &format!("{renamed}/t00000/s00/0/cells"),
        "--offset",
        "3,5,7",
        "--shape",
        "10,20,4",
    ])
    .stdout;
    let mut want = Vec::new();
    for z in 7..11u64 {
        for y in 5..25u64 {
            let at = ((z * 40 + y) * 21 + 3) as usize * 2;
            want.extend_from_slice(&whole[at..at + 20]);
        }
    }
    assert_eq!(part, want);
    let zstd = dataset(&manifest, "thirdparty.h5", "/zstd");
    assert_eq!(
        ok(&["cat", &format!("{thirdparty}/zstd")]).stdout,
        h5py_bytes(zstd),
        "zstd chunks decoded without the plugin"
    );

    // attrs: N5_JSON_ROOT overlaid by native attributes.
    let shadow = json(&["attrs", "get", &t.path("files/n5_layout.h5/shadow")]);
    assert_eq!(shadow["a"], serde_json::json!({"b": 1}));
    assert_eq!(shadow["names"], serde_json::json!(["x", "y"]));

    // verify: every chunk decodes; datasets the N5 API does not open are
    // left alone.
    let report = json(&["verify", "--json", &thirdparty]);
    assert_eq!(report["ok"], true, "{report}");
    assert!(report["blocks"].as_u64().unwrap() > 20, "{report}");
    // A damaged chunk is reported, naming the file.
    let first = &dataset(&manifest, "thirdparty.h5", "/fletcher")["chunk_list"][0];
    let mut bytes = std::fs::read(&thirdparty).unwrap();
    bytes[(first["addr"].as_u64().unwrap() + 3) as usize] ^= 0x40;
    let damaged = t.path("damaged.h5");
    std::fs::write(&damaged, bytes).unwrap();
    let r = common::run(&["verify", &format!("{damaged}/fletcher")]);
    assert_eq!(r.code, 3, "{} {}", r.stderr, r.text());
    assert!(
        r.text().contains("damaged.h5") && r.text().contains("fletcher32"),
        "{}",
        r.text()
    );
}

#[test]
fn copies_between_hdf5_zarr_and_n5_keep_the_data() {
    let Some(python) = python() else { return };
    let t = TempDir::new("hdf5-cp");
    let manifest = make_files(&python, &t.path("files"));
    let bdv = t.path("files/bdv.h5");
    let level0 = dataset(&manifest, "bdv.h5", "/t00000/s00/0/cells");
    let level1 = dataset(&manifest, "bdv.h5", "/t00000/s00/1/cells");

    // HDF5 -> sharded Zarr v3 (zstd) -> HDF5 (gzip, as the zstd source
    // cannot go there) -> N5 -> HDF5 through --format and a prefix.
    let zarr = t.path("vol.zarr");
    ok(&[
        "cp",
        &format!("{bdv}/t00000"),
        &zarr,
        "--shard",
        "32,32,32",
        "-b",
        "16,16,16",
        "-c",
        "zstd",
    ]);
    let zinfo = json(&["info", "--json", &format!("{zarr}/s00/0/cells")]);
    assert_eq!(zinfo["sharded"], true);
    assert_eq!(
        ok(&["cat", &format!("{zarr}/s00/0/cells")]).stdout,
        h5py_bytes(level0)
    );
    let out = t.path("out.h5");
    ok(&["cp", &zarr, &out]);
    let oinfo = json(&["info", "--json", &format!("{out}/s00/0/cells")]);
    assert_eq!(oinfo["compression"]["type"], "gzip", "{oinfo}");
    let n5 = t.path("out.n5");
    ok(&["cp", &out, &n5]);
    assert_eq!(
        ok(&["cat", &format!("{n5}/s00/1/cells")]).stdout,
        h5py_bytes(level1)
    );
    let back = t.path("back.data");
    ok(&[
        "cp",
        &n5,
        &format!("h5:{back}"),
        "--format",
        "hdf5",
        "-c",
        "raw",
    ]);
    // A second copy finds everything there and writes nothing.
    let again = ok(&[
        "cp",
        &n5,
        &format!("h5:{back}"),
        "--format",
        "hdf5",
        "-c",
        "raw",
    ])
    .text();
    assert!(again.contains(" 0 chunks written"), "{again}");
    for file in [&out, &back] {
        h5py_holds(
            &python,
            file,
            &[
                (
                    "s00/0/cells",
                    "i2",
                    &shape(level0),
                    level0["bin"].as_str().unwrap(),
                ),
                (
                    "s00/1/cells",
                    "i2",
                    &shape(level1),
                    level1["bin"].as_str().unwrap(),
                ),
            ],
        );
    }
    let plain = json(&["info", "--json", &format!("{back}/s00/0/cells")]);
    assert_eq!(plain["format"], "hdf5");
    assert_eq!(plain["compression"]["type"], "raw");

    // The ten types, big-endian ones among them, through Zarr v2 and back.
    let raw = t.path("raw.zarr");
    ok(&[
        "cp",
        &t.path("files/n5_layout.h5/links/hard_to_raw"),
        &raw,
        "--format",
        "zarr2",
    ]);
    let ten = t.path("ten.h5");
    ok(&["cp", &raw, &ten]);
    let mut checks = Vec::new();
    for name in [
        "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64", "float32",
        "float64",
    ] {
        let d = dataset(
            &manifest,
            "n5_layout.h5",
            &format!("/links/hard_to_raw/{name}"),
        );
        assert_eq!(
            ok(&["cat", &format!("{ten}/{name}")]).stdout,
            h5py_bytes(d),
            "{name}"
        );
        checks.push((
            name,
            d["dtype"].as_str().unwrap()[1..].to_string(),
            shape(d),
            d["bin"].as_str().unwrap().to_string(),
        ));
    }
    let checks: Vec<(&str, &str, &[u64], &str)> = checks
        .iter()
        .map(|(n, t, s, b)| (*n, t.as_str(), s.as_slice(), b.as_str()))
        .collect();
    h5py_holds(&python, &ten, &checks);

    // What HDF5 files cannot hold, refused before anything is written.
    let refused = t.path("refused.h5");
    fails(&["cp", &zarr, &refused, "-c", "zstd"], 2, "zstd");
    fails(
        &["cp", &zarr, &refused, "--shard", "32,32,32"],
        2,
        "--shard",
    );
    fails(&["cp", &zarr, &refused, "--format", "hdf6"], 2, "hdf5");
    assert!(!Path::new(&refused).exists());
}

#[test]
fn imports_into_hdf5_files() {
    let Some(python) = python() else { return };
    let t = TempDir::new("hdf5-import");
    let values: Vec<u16> = (0..37 * 29 * 11u32)
        .map(|i| (i * 7919 % 65521) as u16)
        .collect();
    let raw = t.path("v.raw");
    std::fs::write(&raw, common::le_u16(&values)).unwrap();
    let args = ["--dtype", "uint16", "--shape", "37,29,11", "-b", "8,8,4"];
    let by_name = t.path("imported.h5");
    let mut a = vec!["import", &raw, "x"];
    a.extend(args);
    let dest = format!("{by_name}/vol/raw");
    a[2] = &dest;
    ok(&a);
    let info = json(&["info", "--json", &dest]);
    assert_eq!(info["format"], "hdf5");
    assert_eq!(info["chunkShape"], serde_json::json!([4, 8, 8]));
    let by_option = t.path("imported.bin");
    let dest2 = format!("h5:{by_option}/raw");
    let mut b = vec!["import", &raw, &dest2, "--format", "hdf5", "-c", "raw"];
    b.extend(args);
    ok(&b);
    for file in [&by_name, &by_option] {
        let path = if file == &by_name { "vol/raw" } else { "raw" };
        h5py_holds(&python, file, &[(path, "u2", &[11, 29, 37], &raw)]);
    }
    let mut c = vec!["import", &raw, "x", "-c", "zstd"];
    let dest3 = t.path("zstd.h5/raw");
    c[2] = &dest3;
    c.extend(args);
    fails(&c, 2, "zstd");
}
