//! zarr-python 3 and libn5 on every Zarr data type beyond the ten numeric
//! ones (nwb.md §1): bool, float16, complex64/128, fixed-length UTF-32
//! strings, fixed bytes, structs, datetime64/timedelta64, variable-length
//! strings and bytes, and 0-d arrays, in
//! Zarr v2 and v3, with random shapes, chunks, shards and fill values (the
//! seed is printed; `N5_ZARR_PEERS_SEED` repeats a run).
//!
//! `tests/peers/zarr_types.py write` makes the arrays with zarr-python and a
//! manifest of every element as `n5_region_read_json` must give it; libn5
//! reads each array whole as JSON and compares. libn5 then writes a copy of
//! every array (same metadata document, the elements read as bytes and
//! written back as bytes) and zarr-python compares the copy with its own
//! (`compare`), element for element and in fill value.
//!
//! The interpreter: `N5_NWB_PYTHON` (zarr-python 3.4 with hdmf-zarr and
//! pynwb; `.venv-nwb` made by `tests/setup.sh nwb`), else
//! `.venv-nwb/bin/python` in the repository. Without it the test says so
//! and passes, unless `N5_REQUIRE_PEERS=1`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use n5::{Container, Mode, Options};
use serde_json::Value;

fn nwb_python() -> Option<PathBuf> {
    let python = match std::env::var_os("N5_NWB_PYTHON").filter(|p| !p.is_empty()) {
        Some(p) => PathBuf::from(p),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv-nwb/bin/python"),
    };
    if python.is_file() {
        return Some(python);
    }
    assert!(
        std::env::var_os("N5_REQUIRE_PEERS").is_none_or(|v| v != "1"),
        "N5_REQUIRE_PEERS=1 but {} is missing; run tests/setup.sh nwb",
        python.display()
    );
    eprintln!(
        "zarr types: skipped: {} is missing; run tests/setup.sh nwb",
        python.display()
    );
    None
}

fn seed() -> u64 {
    let seed = std::env::var("N5_ZARR_PEERS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                % 1_000_000_007
        });
    eprintln!("zarr types: seed {seed} (N5_ZARR_PEERS_SEED={seed} repeats this run)");
    seed
}

fn run(python: &Path, args: &[&str]) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/zarr_types.py");
    let out = Command::new(python)
        .arg(&script)
        .args(args)
        .env("PYTHONWARNINGS", "ignore")
        .output()
        .expect("run zarr_types.py");
    assert!(
        out.status.success(),
        "zarr_types.py {args:?}:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Equal JSON elements: integers, strings and booleans exactly, floats to
/// within `tol` (relative; absolute near zero): the shortest decimal that
/// reads back to a float16 or float32 is not the float64 zarr-python
/// writes (the exact text of floats is the unit tests').
fn close(a: &Value, b: &Value, tol: f64) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            if let (Some(x), Some(y)) = (x.as_i64(), y.as_i64()) {
                return x == y;
            }
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            x == y || (x - y).abs() <= tol * y.abs().max(1e-4)
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| close(a, b, tol))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((ka, va), (kb, vb))| ka == kb && close(va, vb, tol))
        }
        _ => a == b,
    }
}

/// The IEEE binary16 bits of `f` (the few values the test writes, exact).
fn half_bits(f: f64) -> u16 {
    if f.is_nan() {
        return 0x7e00;
    }
    let sign = if f < 0.0 { 0x8000 } else { 0 };
    let a = f.abs();
    if a == 0.0 {
        return sign;
    }
    let e = a.log2().floor() as i32;
    let m = ((a / 2f64.powi(e) - 1.0) * 1024.0).round() as u16;
    sign | (((e + 15) as u16) << 10) | m
}

#[test]
fn zarr_python_and_libn5_agree_on_every_data_type() {
    let Some(python) = nwb_python() else {
        return;
    };
    let seed = seed();
    let dir = std::env::temp_dir().join(format!("n5-zarr-types-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (theirs, ours) = (dir.join("theirs"), dir.join("ours"));
    std::fs::create_dir_all(&theirs).unwrap();
    run(
        &python,
        &["write", theirs.to_str().unwrap(), &seed.to_string()],
    );
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(theirs.join("manifest.json")).unwrap()).unwrap();
    let mut checked = 0;
    for entry in manifest["arrays"].as_array().unwrap() {
        let path = entry["path"].as_str().unwrap();
        let (root, name) = path.split_once('/').unwrap();
        let c = Container::open(theirs.join(root), Mode::Read).unwrap();
        let d = c
            .open_dataset(name)
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        let attrs = d.attributes();
        let zeros = vec![0u64; attrs.ndim()];
        let text = d
            .read_region_json(&zeros, &attrs.dimensions)
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        let got: Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}: {text}"));
        let dtype = entry["dtype"].to_string();
        let tol = if dtype.contains("f2") || dtype.contains("float16") {
            1e-3
        } else {
            1e-6
        };
        assert!(
            close(&got, &entry["values"], tol),
            "{path} ({}): libn5 reads\n{got}\nzarr-python wrote\n{}",
            entry["dtype"],
            entry["values"]
        );
        // The copy: the same document, the elements as bytes.
        let format = &root[..2];
        let options =
            Options::from_json(&format!(r#"{{"format": "zarr{}"}}"#, &format[1..])).unwrap();
        let out =
            Container::open_with(ours.join(root).to_str().unwrap(), Mode::Create, options).unwrap();
        let copy = out
            .create_dataset_json(name, &d.metadata().unwrap())
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        if d.element_size() == 0 {
            // Strings and bytes of variable length.
            let (data, lengths) = d.read_region_bytes(&zeros, &attrs.dimensions).unwrap();
            copy.write_region_bytes(&zeros, &attrs.dimensions, &data, &lengths)
                .unwrap_or_else(|e| panic!("{path}: {e}"));
            if d.data_type() == n5::DataType::String {
                let strings = d.read_region_strings(&zeros, &attrs.dimensions).unwrap();
                let back = copy.read_region_strings(&zeros, &attrs.dimensions).unwrap();
                assert_eq!(strings, back, "{path}");
            }
        } else {
            let n: u64 = attrs.dimensions.iter().product();
            let mut bytes = vec![0u8; n as usize * d.element_size()];
            d.read_region(&zeros, &attrs.dimensions, &mut bytes)
                .unwrap();
            copy.write_region(&zeros, &attrs.dimensions, &bytes)
                .unwrap_or_else(|e| panic!("{path}: {e}"));
        }
        checked += 1;
    }
    assert!(checked >= 90, "only {checked} arrays");
    run(
        &python,
        &["compare", theirs.to_str().unwrap(), ours.to_str().unwrap()],
    );
    // Arrays n5_dataset_create makes (the types that need no parameter),
    // read by zarr-python.
    let mut created = Vec::new();
    for format in [2, 3] {
        let options = Options::from_json(&format!(r#"{{"format": "zarr{format}"}}"#)).unwrap();
        let root = format!("created_v{format}.zarr");
        let c = Container::open_with(ours.join(&root).to_str().unwrap(), Mode::Create, options)
            .unwrap();
        for (t, values) in [
            (
                n5::DataType::Bool,
                serde_json::json!([true, false, true, true, false]),
            ),
            (
                n5::DataType::F16,
                serde_json::json!([0.5, -2.0, 65504.0, "NaN", 0.0]),
            ),
            (
                n5::DataType::C64,
                serde_json::json!([
                    [1.5, -2.0],
                    [0.0, 0.0],
                    [3.0, "Infinity"],
                    [0.25, 1.0],
                    [-1.0, 2.0]
                ]),
            ),
            (
                n5::DataType::C128,
                serde_json::json!([
                    [1e300, -2.0],
                    [0.0, 0.0],
                    [3.0, 4.0],
                    [0.1, 1.0],
                    [-1.0, 2.0]
                ]),
            ),
        ] {
            let attrs =
                n5::DatasetAttributes::new(vec![5], vec![2], t.clone(), n5::Compression::Raw)
                    .unwrap();
            let d = c.create_dataset(t.name(), attrs).unwrap();
            let mut bytes = Vec::new();
            for v in values.as_array().unwrap() {
                let parts: Vec<&Value> = match v {
                    Value::Array(p) => p.iter().collect(),
                    one => vec![one],
                };
                for p in parts {
                    let f = match p {
                        Value::String(s) if s == "NaN" => f64::NAN,
                        Value::String(_) => f64::INFINITY,
                        Value::Bool(b) => f64::from(u8::from(*b)),
                        n => n.as_f64().unwrap(),
                    };
                    match t {
                        n5::DataType::Bool => bytes.push(f as u8),
                        n5::DataType::F16 => bytes.extend(half_bits(f).to_ne_bytes()),
                        n5::DataType::C64 => bytes.extend((f as f32).to_ne_bytes()),
                        _ => bytes.extend(f.to_ne_bytes()),
                    }
                }
            }
            d.write_region(&[0], &[5], &bytes).unwrap();
            created.push(serde_json::json!({"path": format!("{root}/{}", t.name()), "type": t.name(), "values": values}));
        }
        for (t, strings) in [
            (n5::DataType::String, vec!["a", "été", "", "x\"y", "😀"]),
            (
                n5::DataType::Object,
                vec!["YQ==", "", "AP8=", "YmM=", "eA=="],
            ),
        ] {
            let attrs =
                n5::DatasetAttributes::new(vec![5], vec![2], t.clone(), n5::Compression::Raw)
                    .unwrap();
            let d = c.create_dataset(t.name(), attrs).unwrap();
            if t == n5::DataType::String {
                d.write_region_strings(&[0], &[5], &strings).unwrap();
            } else {
                use base64::Engine;
                let mut data = Vec::new();
                let mut lengths = Vec::new();
                for s in &strings {
                    let b = base64::engine::general_purpose::STANDARD.decode(s).unwrap();
                    lengths.push(b.len() as u64);
                    data.extend(b);
                }
                d.write_region_bytes(&[0], &[5], &data, &lengths).unwrap();
            }
            created.push(serde_json::json!({"path": format!("{root}/{}", t.name()), "type": t.name(), "values": strings}));
        }
    }
    std::fs::write(
        ours.join("created.json"),
        serde_json::json!({"arrays": created}).to_string(),
    )
    .unwrap();
    run(&python, &["check", ours.to_str().unwrap()]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// nwb.md §3: attribute documents with Python's bare `NaN`, `Infinity` and
/// `-Infinity` (zarr-python writes non-finite float attributes so) are read
/// through the C API, returned as stored, accepted by the setters, and kept
/// through an attribute merge; zarr-python reads the result back.
#[test]
fn non_finite_attributes_keep_python_tokens() {
    use common::capi::{ok, text, C};
    use n5::ffi::container::{n5_attribute_get, n5_attribute_set, n5_attributes_get};
    use std::ffi::CString;

    let Some(python) = nwb_python() else { return };
    let dir = std::env::temp_dir().join(format!("n5-nonfinite-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let script = r#"
import math, sys, zarr
root = sys.argv[2]
if sys.argv[1] == "write":
    for f in (2, 3):
        g = zarr.open_group(f"{root}/v{f}.zarr", mode="w", zarr_format=f)
        g.attrs["x"] = float("nan")
        g.attrs["l"] = [1.5, math.inf, -math.inf]
        g.attrs["s"] = "NaN"
        a = g.create_array("a", shape=(4,), dtype="f4")
        a.attrs["y"] = -math.inf
else:
    for f in (2, 3):
        g = zarr.open_group(f"{root}/v{f}.zarr", mode="r")
        at = dict(g.attrs)
        assert math.isnan(at["x"]), at
        assert at["l"] == [1.5, math.inf, -math.inf], at
        assert at["s"] == "NaN", at
        assert math.isnan(at["set_by_libn5"]) and at["merged"] == 1, at
        assert at["list_by_libn5"] == [math.inf, "Infinity"], at
        assert dict(g["a"].attrs) == {"y": -math.inf, "z": math.inf}, dict(g["a"].attrs)
    print("ok")
"#;
    let py = |mode: &str| {
        let out = Command::new(&python)
            .args(["-c", script, mode, dir.to_str().unwrap()])
            .env("PYTHONWARNINGS", "ignore")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{mode}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    };
    py("write");
    let cs = |s: &str| CString::new(s).unwrap();
    for f in [2, 3] {
        let c = C::open(&format!("{}/v{f}.zarr", dir.display()), 1, "{}").unwrap();
        let p = cs("");
        let doc = text(|b, n, l| n5_attributes_get(c.0, p.as_ptr(), b, n, l)).unwrap();
        assert_eq!(
            doc, r#"{"x":NaN,"l":[1.5,Infinity,-Infinity],"s":"NaN"}"#,
            "v{f}"
        );
        let k = cs("l[2]");
        let one = text(|b, n, l| n5_attribute_get(c.0, p.as_ptr(), k.as_ptr(), b, n, l)).unwrap();
        assert_eq!(one, "-Infinity");
        for (key, value) in [
            ("set_by_libn5", "NaN"),
            ("merged", "1"),
            ("list_by_libn5", r#"[Infinity, "Infinity"]"#),
        ] {
            let (k, v) = (cs(key), cs(value));
            ok(n5_attribute_set(c.0, p.as_ptr(), k.as_ptr(), v.as_ptr())).unwrap();
        }
        let (a, z, inf) = (cs("a"), cs("z"), cs("Infinity"));
        ok(n5_attribute_set(c.0, a.as_ptr(), z.as_ptr(), inf.as_ptr())).unwrap();
        let doc = text(|b, n, l| n5_attributes_get(c.0, a.as_ptr(), b, n, l)).unwrap();
        assert_eq!(doc, r#"{"y":-Infinity,"z":Infinity}"#, "v{f}");
        // Malformed text around the tokens is still refused.
        let (k, v) = (cs("bad"), cs("[NaN,]"));
        let status = n5_attribute_set(c.0, p.as_ptr(), k.as_ptr(), v.as_ptr());
        assert_eq!(status, n5::ffi::N5_ERR_JSON);
    }
    py("check");
    std::fs::remove_dir_all(&dir).unwrap();
}
