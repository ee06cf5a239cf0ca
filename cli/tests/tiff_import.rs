//! `n5 import` of TIFF stacks written by tifffile (PyPI): multi-page files
//! (deflate, horizontal predictor, BigTIFF, tiles, big-endian) and
//! directories of single pages in natural order, into N5, sharded Zarr v3
//! and Zarr v2, read back by `cat` exactly as numpy holds them; what is
//! not one grayscale stack is refused before anything is written. The
//! TIFF files are made by `N5_PEER_PYTHON` (else `.venv/bin/python`); the
//! test is skipped with a message when neither has tifffile, unless
//! `N5_REQUIRE_PEERS=1`.

mod common;

use std::path::Path;
use std::process::Command;

use common::{fails, json, ok, python_with, TempDir};
use serde_json::json;

/// Writes the test's TIFF files into `dir` with tifffile, and beside each
/// the raw bytes numpy holds (C order, little-endian) as `NAME.raw`.
const MAKE: &str = r#"
import os, sys
import numpy as np
import tifffile
d = sys.argv[1]
rng = np.random.default_rng(7)
v = rng.integers(0, 4000, size=(12, 45, 61), dtype=np.uint16)
v[:, :5, :] = 0
def save(name, a):
    a.astype(a.dtype.newbyteorder("<")).tofile(os.path.join(d, name + ".raw"))
tifffile.imwrite(os.path.join(d, "stack.tif"), v, compression="zlib")
save("stack", v)
tifffile.imwrite(os.path.join(d, "pred.tif"), v, compression="zlib", predictor=True)
be = v.astype(">i2") - 2000
tifffile.imwrite(os.path.join(d, "big.tiff"), be, bigtiff=True, tile=(16, 16))
save("big", be.astype("<i2"))
f = (v.astype(np.float32) / 7).astype(np.float32)
tifffile.imwrite(os.path.join(d, "float.tif"), f)
save("float", f)
os.makedirs(os.path.join(d, "slices"))
u8 = (v % 251).astype(np.uint8)
for i in range(u8.shape[0]):
    tifffile.imwrite(os.path.join(d, "slices", "z%d.tif" % (i + 1)), u8[i])
save("slices", u8)
tifffile.imwrite(os.path.join(d, "one.tif"), v[3])
save("one", v[3])
rgb = rng.integers(0, 255, size=(4, 45, 61, 3), dtype=np.uint8)
tifffile.imwrite(os.path.join(d, "rgb.tif"), rgb, photometric="rgb", compression="zlib")
save("rgb", rgb)
planar = np.ascontiguousarray(rgb.transpose(0, 3, 1, 2))
tifffile.imwrite(os.path.join(d, "planar.tif"), planar, photometric="rgb", planarconfig="separate")
save("planar", planar)
tifffile.imwrite(os.path.join(d, "palette.tif"), (v[:2] % 256).astype(np.uint8), photometric="palette",
    colormap=np.tile(np.arange(256, dtype=np.uint16) * 257, (3, 1)))
with tifffile.TiffWriter(os.path.join(d, "mixed.tif")) as w:
    w.write(v[0])
    w.write(v[1, :10])
with tifffile.TiffWriter(os.path.join(d, "signs.tif")) as w:
    w.write(v[0])
    w.write(v[1].astype(np.int16))
tifffile.imwrite(os.path.join(d, "bits.tif"), v[:3] > 2000)
tifffile.imwrite(os.path.join(d, "white.tif"), v, photometric="miniswhite")
# One page of more than 128 MiB in one strip (the decoder's default limit
# of a strip), mostly zeros.
w = np.zeros((11600, 11600), dtype=np.uint8)
w[11590, 11000:11010] = np.arange(1, 11)
tifffile.imwrite(os.path.join(d, "wide.tif"), w)
"#;

/// Runs the Python `script` with `args`, its standard output if it
/// succeeded.
fn python_ok(python: &Path, script: &str, args: &[&str]) -> Vec<u8> {
    let out = Command::new(python)
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "python: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// An import: input, dataset, extra arguments, the bytes `cat` must give,
/// the data type and shape `info` must show.
type Case<'a> = (&'a str, String, &'a [&'a str], Vec<u8>, &'a str, Vec<u64>);

#[test]
fn tiff_stacks_import_into_every_format() {
    let Some(python) = python_with("N5_PEER_PYTHON", ".venv", "tifffile, numpy", "TIFF import")
    else {
        return;
    };
    let t = TempDir::new("tiff-import");
    python_ok(&python, MAKE, &[&t.path("")]);
    let raw = |name: &str| std::fs::read(t.path(&format!("{name}.raw"))).unwrap();
    let n5 = t.path("vol.n5");
    let v3 = t.path("vol.zarr");
    let v2 = t.path("v2.zarr");
    let cases: [Case; 8] = [
        (
            "stack.tif",
            format!("{n5}/stack"),
            &["-b", "16,16,4"],
            raw("stack"),
            "uint16",
            vec![61, 45, 12],
        ),
        (
            "pred.tif",
            format!("{v3}/pred"),
            &["-b", "16,16,4", "--shard", "32,32,8"],
            raw("stack"),
            "uint16",
            vec![61, 45, 12],
        ),
        (
            "big.tiff",
            format!("{v3}/big"),
            &["-b", "16,16,2", "--shard", "64,48,4", "-c", "zstd"],
            raw("big"),
            "int16",
            vec![61, 45, 12],
        ),
        (
            "float.tif",
            format!("zarr2:{v2}/float"),
            &["-c", "blosc"],
            raw("float"),
            "float32",
            vec![61, 45, 12],
        ),
        (
            "slices",
            format!("{v3}/slices"),
            &["-b", "32,32,4"],
            raw("slices"),
            "uint8",
            vec![61, 45, 12],
        ),
        (
            "one.tif",
            format!("{n5}/one"),
            &[],
            raw("one"),
            "uint16",
            vec![61, 45],
        ),
        // Interleaved samples are the fastest dimension, planar ones
        // follow width and height.
        (
            "rgb.tif",
            format!("{v3}/rgb"),
            &["-b", "3,32,32,2", "--shard", "3,64,64,4"],
            raw("rgb"),
            "uint8",
            vec![3, 61, 45, 4],
        ),
        (
            "planar.tif",
            format!("{n5}/planar"),
            &[],
            raw("planar"),
            "uint8",
            vec![61, 45, 3, 4],
        ),
    ];
    for (input, ds, extra, want, dtype, shape) in &cases {
        let path = t.path(input);
        ok(&[&["import", path.as_str(), ds.as_str()], *extra].concat());
        assert!(ok(&["cat", ds]).stdout == *want, "{input} -> {ds}");
        let info = json(&["info", "--json", ds]);
        assert_eq!(info["dataType"], *dtype, "{info}");
        assert_eq!(info["dimensions"], json!(shape), "{info}");
    }
    // --dtype and --shape, when given, must say what the stack holds.
    let stack = t.path("stack.tif");
    ok(&[
        "import",
        &stack,
        &format!("{n5}/checked"),
        "--dtype",
        "u2",
        "--shape",
        "61,45,12",
    ]);
    fails(
        &["import", &stack, &format!("{n5}/x"), "--dtype", "uint8"],
        2,
        "holds uint16",
    );
    fails(
        &["import", &stack, &format!("{n5}/x"), "--shape", "61,45,11"],
        2,
        "[61, 45, 12]",
    );
    // Not one grayscale stack, or not TIFF at all: refused, nothing written.
    let fresh = t.path("fresh.zarr");
    std::fs::write(t.path("junk.tif"), b"not a tiff").unwrap();
    let bytes = std::fs::read(&stack).unwrap();
    std::fs::write(t.path("cut.tif"), &bytes[..bytes.len() / 2]).unwrap();
    std::fs::create_dir(t.path("empty")).unwrap();
    for (input, needle) in [
        ("palette.tif", "Palette"),
        ("mixed.tif", "page 1: is 61x10 of 16-bit unsigned"),
        ("signs.tif", "page 1: is 61x45 of 16-bit signed samples"),
        ("bits.tif", "1-bit samples"),
        ("white.tif", "MinIsWhite"),
        ("junk.tif", "not a TIFF file"),
        ("empty", "no .tif or .tiff files"),
    ] {
        fails(
            &["import", &t.path(input), &format!("{fresh}/a")],
            1,
            needle,
        );
        assert!(!Path::new(&fresh).exists(), "{input}: {fresh} was written");
    }
    // A directory is no raw input.
    fails(
        &[
            "import",
            "--raw",
            &t.path("slices"),
            &format!("{fresh}/a"),
            "--dtype",
            "u1",
            "--shape",
            "4",
        ],
        2,
        "is a directory",
    );
    assert!(!Path::new(&fresh).exists());
    // A page of 134.6 MB in one strip.
    let wide = format!("{fresh}/wide");
    ok(&["import", &t.path("wide.tif"), &wide, "-b", "512,512"]);
    let corner = ok(&["cat", &wide, "--offset", "10995,11590", "--shape", "20,1"]).stdout;
    let mut want = vec![0u8; 20];
    want[5..15].copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    assert_eq!(corner, want);
    std::fs::remove_dir_all(&fresh).unwrap();
    // A file cut short fails at the page it cannot read, naming it.
    fails(
        &["import", &t.path("cut.tif"), &format!("{fresh}/a")],
        1,
        "page ",
    );
    assert!(!Path::new(&fresh).exists(), "cut.tif: {fresh} was written");
}

/// Writes described stacks into `dir` with tifffile: an ImageJ hyperstack,
/// OME-TIFFs in two dimension orders, an OME series and an ImageJ header
/// counting more images than the file has pages; beside each the bytes
/// numpy holds (C order, little-endian) as `NAME.raw`.
const MAKE_DESCRIBED: &str = r#"
import os, sys
import numpy as np
import tifffile
d = sys.argv[1]
rng = np.random.default_rng(11)
v = rng.integers(0, 4000, size=(2, 4, 3, 45, 61), dtype=np.uint16)
def save(name, a):
    a.astype(a.dtype.newbyteorder("<")).tofile(os.path.join(d, name + ".raw"))
tifffile.imwrite(os.path.join(d, "ij.tif"), v, imagej=True,
    resolution=(1 / 0.25, 1 / 0.5),
    metadata={"axes": "TZCYX", "spacing": 2.0, "unit": "micron", "finterval": 1.5})
save("ij", v)
o = v.reshape(2, 3, 4, 45, 61)
tifffile.imwrite(os.path.join(d, "tczyx.ome.tif"), o, ome=True, compression="zlib",
    metadata={"axes": "TCZYX", "PhysicalSizeX": 0.2, "PhysicalSizeXUnit": "nm",
              "PhysicalSizeY": 0.3, "PhysicalSizeYUnit": "nm", "PhysicalSizeZ": 40.0,
              "PhysicalSizeZUnit": "nm", "TimeIncrement": 3.0})
save("tczyx", o)
z = v[0].astype(np.float32)
tifffile.imwrite(os.path.join(d, "zcyx.ome.tif"), z, ome=True, metadata={"axes": "ZCYX"})
save("zcyx", z)
with tifffile.TiffWriter(os.path.join(d, "series.ome.tif"), ome=True) as w:
    w.write(v[0, 0])
    w.write(v[1, 0, :2])
save("series", np.concatenate([v[0, 0], v[1, 0, :2]]))
rgb = rng.integers(0, 255, size=(4, 45, 61, 3), dtype=np.uint8)
tifffile.imwrite(os.path.join(d, "rgb.ome.tif"), rgb, photometric="rgb", ome=True,
    metadata={"axes": "ZYXS", "PhysicalSizeX": 0.5, "PhysicalSizeY": 0.5})
save("rgb", rgb)
tifffile.imwrite(os.path.join(d, "zstack.tif"), v[0, :, 0], imagej=True,
    resolution=(4, 4), metadata={"axes": "ZYX", "spacing": 1.5, "unit": "um"})
tifffile.imwrite(os.path.join(d, "qq.tif"),
    np.arange(2 * 5 * 45 * 61, dtype=np.uint16).reshape(2, 5, 45, 61), metadata={"axes": "QQYX"})
tifffile.imwrite(os.path.join(d, "ijcut.tif"), v[0, 0, 0],
    description="ImageJ=1.54f\nimages=7\nslices=7", metadata=None)
"#;

/// Reads the N5 dataset and the Zarr v3 array the test imported with
/// tensorstore: their labels and units, and their data against the raw
/// bytes (N5 order is numpy's reversed).
const CHECK_DESCRIBED: &str = r#"
import json, sys
import numpy as np
import tensorstore as ts
n5, v3, raw, shape = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
want = np.fromfile(raw, dtype="<u2").reshape(shape[::-1])
a = ts.open({"driver": "n5", "kvstore": {"driver": "file", "path": n5}}).result()
z = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": v3}}).result()
assert np.array_equal(a.read().result().T, want), "n5 data"
assert np.array_equal(z.read().result(), want), "zarr3 data"
unit = lambda u: None if u is None else [u.multiplier, u.base_unit]
print(json.dumps({
    "n5": list(a.domain.labels),
    "zarr3": list(z.domain.labels),
    "units": [unit(u) for u in a.dimension_units],
    "zarr3 units": [unit(u) for u in z.dimension_units],
}))
"#;

#[test]
fn described_tiffs_import_with_their_axes_and_pixel_sizes() {
    let Some(python) = python_with(
        "N5_PEER_PYTHON",
        ".venv",
        "tifffile, numpy, tensorstore",
        "described TIFF import",
    ) else {
        return;
    };
    let t = TempDir::new("tiff-described");
    python_ok(&python, MAKE_DESCRIBED, &[&t.path("")]);
    let raw = |name: &str| std::fs::read(t.path(&format!("{name}.raw"))).unwrap();
    let n5 = t.path("vol.n5");
    let v3 = t.path("vol.zarr");
    let v2 = t.path("v2.zarr");
    let attr = |ds: &str, key: &str| json(&["attrs", "get", ds, key]);
    // ImageJ: pages are channel, slice, frame; pixel sizes from the
    // resolution tags in the description's unit.
    let ij = format!("{n5}/ij");
    ok(&["import", &t.path("ij.tif"), &ij, "-c", "zstd"]);
    assert!(ok(&["cat", &ij]).stdout == raw("ij"));
    assert_eq!(
        json(&["info", "--json", &ij])["dimensions"],
        json!([61, 45, 3, 4, 2])
    );
    assert_eq!(attr(&ij, "axes"), json!(["x", "y", "c", "z", "t"]));
    assert_eq!(attr(&ij, "resolution"), json!([0.25, 0.5, 1.0, 2.0, 1.5]));
    assert_eq!(attr(&ij, "units"), json!(["um", "um", "", "um", "s"]));
    // In Zarr, C order and micrometres as nanometres, which neuroglancer
    // reads in Zarr.
    let ij3 = format!("{v3}/ij");
    ok(&["import", &t.path("ij.tif"), &ij3]);
    assert_eq!(
        attr(&ij3, "dimension_units"),
        json!(["1.5 s", "2000 nm", null, "500 nm", "250 nm"])
    );
    // Not only x, y and z: no pixelResolution, which readers take for them.
    fails(&["attrs", "get", &ij, "pixelResolution"], 1, "");
    // OME-TIFF in the order TCZYX (DimensionOrder XYZCT), zlib pages,
    // into N5, sharded Zarr v3 and Zarr v2; tensorstore reads the labels
    // and units of the N5 dataset and the Zarr v3 dimension names.
    let (ome, ome3, ome2) = (
        format!("{n5}/ome"),
        format!("{v3}/ome"),
        format!("zarr2:{v2}/ome"),
    );
    let input = t.path("tczyx.ome.tif");
    ok(&["import", &input, &ome]);
    ok(&[
        "import",
        &input,
        &ome3,
        "-b",
        "32,32,2,2,1",
        "--shard",
        "64,64,4,4,2",
    ]);
    ok(&["import", &input, &ome2]);
    for ds in [&ome, &ome3, &ome2] {
        assert!(ok(&["cat", ds]).stdout == raw("tczyx"), "{ds}");
    }
    assert_eq!(attr(&ome, "axes"), json!(["x", "y", "z", "c", "t"]));
    assert_eq!(attr(&ome, "units"), json!(["nm", "nm", "nm", "", "s"]));
    // Zarr: C order, as its shape.
    for ds in [&ome3, &ome2] {
        assert_eq!(
            attr(ds, "dimension_units"),
            json!(["3 s", null, "40 nm", "0.3 nm", "0.2 nm"]),
            "{ds}"
        );
        fails(&["attrs", "get", ds, "axes"], 1, "");
    }
    assert_eq!(
        attr(&ome2, "_ARRAY_DIMENSIONS"),
        json!(["t", "c", "z", "y", "x"])
    );
    let out = python_ok(
        &python,
        CHECK_DESCRIBED,
        &[&ome, &ome3, &t.path("tczyx.raw"), "[61, 45, 4, 3, 2]"],
    );
    let seen: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(
        seen,
        json!({
            "n5": ["x", "y", "z", "c", "t"],
            "zarr3": ["t", "c", "z", "y", "x"],
            "units": [[0.2, "nm"], [0.3, "nm"], [40.0, "nm"], [1.0, ""], [3.0, "s"]],
            "zarr3 units": [[3.0, "s"], null, [40.0, "nm"], [0.3, "nm"], [0.2, "nm"]],
        })
    );
    // DimensionOrder XYCZT: channels fastest among the pages; no physical
    // sizes, so names only.
    let zc = format!("{n5}/zc");
    ok(&["import", &t.path("zcyx.ome.tif"), &zc]);
    assert!(ok(&["cat", &zc]).stdout == raw("zcyx"));
    assert_eq!(
        json(&["info", "--json", &zc])["dimensions"],
        json!([61, 45, 3, 4])
    );
    assert_eq!(attr(&zc, "axes"), json!(["x", "y", "c", "z"]));
    fails(&["attrs", "get", &zc, "resolution"], 1, "");
    // RGB pages in an OME-TIFF: SizeC counts the samples, which are the
    // fastest axis.
    let rgb = format!("{n5}/rgb");
    ok(&["import", &t.path("rgb.ome.tif"), &rgb]);
    assert!(ok(&["cat", &rgb]).stdout == raw("rgb"));
    assert_eq!(
        json(&["info", "--json", &rgb])["dimensions"],
        json!([3, 61, 45, 4])
    );
    assert_eq!(attr(&rgb, "axes"), json!(["c", "x", "y", "z"]));
    assert_eq!(attr(&rgb, "resolution"), json!([1.0, 0.5, 0.5, 1.0]));
    // A z stack sized in one unit: pixelResolution too.
    let zs = format!("{n5}/zstack");
    ok(&["import", &t.path("zstack.tif"), &zs]);
    assert_eq!(
        attr(&zs, "pixelResolution"),
        json!({"dimensions": [0.25, 0.25, 1.5], "unit": "um"})
    );
    // tifffile's unnamed dimensions (QQYX) give the shape but no names,
    // which would repeat.
    let qq = format!("{v3}/qq");
    ok(&["import", &t.path("qq.tif"), &qq]);
    assert_eq!(
        json(&["info", "--json", &qq])["dimensions"],
        json!([61, 45, 5, 2])
    );
    let meta = json(&["info", "--json", &qq]);
    assert!(!meta.to_string().contains("\"q\""), "{meta}");
    // --flat: the pages as they come, no attributes.
    let flat = format!("{n5}/flat");
    ok(&["import", "--flat", &t.path("ij.tif"), &flat]);
    assert_eq!(
        json(&["info", "--json", &flat])["dimensions"],
        json!([61, 45, 24])
    );
    assert!(ok(&["cat", &flat]).stdout == raw("ij"));
    fails(&["attrs", "get", &flat, "axes"], 1, "");
    // An OME series is read as one stack of its pages, saying so.
    let series = format!("{n5}/series");
    let run = ok(&["import", &t.path("series.ome.tif"), &series]);
    assert!(run.stderr.contains("2 images (a series)"), "{}", run.stderr);
    assert_eq!(
        json(&["info", "--json", &series])["dimensions"],
        json!([61, 45, 5])
    );
    assert!(ok(&["cat", &series]).stdout == raw("series"));
    // ImageJ's contiguous large stacks (more images than pages) are
    // refused before anything is written.
    let fresh = t.path("fresh.n5");
    fails(
        &["import", &t.path("ijcut.tif"), &format!("{fresh}/a")],
        1,
        "counts 7 images but the file has 1 page",
    );
    assert!(!Path::new(&fresh).exists());
}
