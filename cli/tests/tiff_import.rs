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
tifffile.imwrite(os.path.join(d, "rgb.tif"), rng.integers(0, 255, size=(5, 6, 3), dtype=np.uint8), photometric="rgb")
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
    let out = Command::new(&python)
        .args(["-c", MAKE, &t.path("")])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "tifffile: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let raw = |name: &str| std::fs::read(t.path(&format!("{name}.raw"))).unwrap();
    let n5 = t.path("vol.n5");
    let v3 = t.path("vol.zarr");
    let v2 = t.path("v2.zarr");
    let cases: [Case; 6] = [
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
        ("rgb.tif", "grayscale"),
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
