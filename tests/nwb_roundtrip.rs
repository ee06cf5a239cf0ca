//! NWB files written by libn5 and read by pynwb (nwb.md §6, round trips).
//!
//! libn5 copies a container of the hdmf-zarr corpus (`shared/corpus-hdmf`)
//! node by node through the C API into a new container: groups with their
//! attributes (`neurodata_type`, `namespace`, `object_id`, `.specloc`, ...),
//! the cached `specifications`, every array from its own metadata document
//! (`n5_dataset_create_json`) and its elements (`n5_region_read`/`write`,
//! the string and bytes functions), and every link again with
//! `n5_link_create`. It then changes and adds things the current
//! convention has: strings, a TimeSeries whose `timestamps` is a link,
//! reference attributes, a reference dataset written with
//! `n5_region_write_strings`, the rows of a compound with a
//! `fixed_length_utf32` reference field. pynwb with hdmf-zarr 0.14
//! (`NWBZarrIO.read`, through tests/peers/nwb_summary.py) must then read the
//! same objects from the copy as from the original, with exactly those
//! changes: values, linked datasets equal to their targets, references
//! naming the right objects.
//!
//! The legacy convention the same way: libn5 copies the Zarr v2 containers
//! of the corpus (links stored as `zarr_link` by `n5_link_create`, the
//! external ones to a copied sibling) and adds a TimeSeries whose
//! `timestamps` is a link; hdmf-zarr 0.13 (zarr-python 2) reads them as it
//! reads the originals. libn5 never writes legacy pickled references
//! (nwb.md §3): the test copies those arrays' files as they are.
//!
//! The interpreters: `N5_NWB_PYTHON` (pynwb, hdmf-zarr 0.14, zarr-python
//! 3.4; `.venv-nwb` made by `tests/setup.sh nwb`), else
//! `.venv-nwb/bin/python` in the repository, and `N5_NWB_LEGACY_PYTHON`
//! (pynwb, hdmf-zarr 0.13, zarr-python 2.18; `tests/setup.sh nwblegacy`),
//! else `.venv-nwb-legacy/bin/python`. Without one the test that needs it
//! says so and passes, unless `N5_REQUIRE_PEERS=1`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::capi::{Failure, C};
use common::{hdmf_corpus_dir, Scratch};
use n5::ffi::{
    N5_DTYPE_OBJECT, N5_DTYPE_STRING, N5_ERR_ALREADY_EXISTS, N5_ERR_DANGLING_LINK,
    N5_ERR_INVALID_ARGUMENT, N5_ERR_UNSUPPORTED, N5_MODE_CREATE, N5_MODE_READ, N5_MODE_READ_WRITE,
};
use serde_json::{json, Value};

/// The Python of the peers named by `var`, else `default` in the
/// repository; `None` with a message when it is missing, unless
/// `N5_REQUIRE_PEERS=1`.
fn python(var: &str, default: &str, component: &str) -> Option<PathBuf> {
    let python = match std::env::var_os(var).filter(|p| !p.is_empty()) {
        Some(p) => PathBuf::from(p),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join(default),
    };
    if python.is_file() {
        return Some(python);
    }
    assert!(
        std::env::var("N5_REQUIRE_PEERS").as_deref() != Ok("1"),
        "N5_REQUIRE_PEERS=1 but {} is missing; run tests/setup.sh {component}",
        python.display()
    );
    eprintln!(
        "NWB round trip: skipped: {} is missing (set {var}, or run tests/setup.sh {component})",
        python.display()
    );
    None
}

/// What pynwb reads from each of `paths` (tests/peers/nwb_summary.py), by
/// path; a failed read fails the test with its error.
fn summaries(python: &Path, env: &[(&str, &str)], paths: &[&Path]) -> Vec<Value> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/nwb_summary.py");
    let out = Command::new(python)
        .arg(&script)
        .args(paths)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}: {}",
        script.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let all: Value = serde_json::from_slice(&out.stdout).unwrap();
    paths
        .iter()
        .map(|p| {
            let s = all[p.to_str().unwrap()].clone();
            assert!(s.get("error").is_none(), "pynwb reads {}: {s}", p.display());
            s
        })
        .collect()
}

fn loc(p: &Path) -> String {
    p.to_str().unwrap().to_string()
}

/// Check that `r` failed with `status` and a message holding `needle`.
#[track_caller]
fn fails<T: std::fmt::Debug>(r: Result<T, Failure>, status: i32, needle: &str) {
    match r {
        Ok(v) => panic!("expected status {status}, got {v:?}"),
        Err((s, m)) => {
            assert_eq!(s, status, "{m}");
            assert!(m.contains(needle), "{m:?} does not mention {needle:?}");
        }
    }
}

/// The attributes of `path` without the link lists (links are made again
/// with `n5_link_create`).
fn attributes_without_links(c: &C, path: &str) -> Value {
    let mut a = c.attributes(path).unwrap();
    let m = a.as_object_mut().unwrap();
    m.remove("_LINKS");
    m.remove("zarr_link");
    a
}

/// Copy the array at `path` of `src` into `dst` with libn5: the format's
/// own metadata document (without its attributes, set apart) and every
/// element; legacy json2 arrays of strings as vlen-utf8 ones. Returns
/// false for a legacy pickled array (or json2 of other values), which
/// libn5 reads but never writes (nwb.md §3), and leaves it to the caller.
fn copy_array(src: &C, dst: &C, path: &str) -> bool {
    let d = src.open_dataset(path).unwrap();
    let dtype = d.dtype_json();
    let mut meta = d.metadata();
    meta.as_object_mut().unwrap().remove("attributes");
    if dtype["object_codec"] == "json2" {
        // hdmf-zarr 0.13's cached specifications: JSON-encoded strings,
        // written again as vlen-utf8 strings (what libn5 writes of `|O`).
        let Some(strings) = d.read_json().unwrap().as_array().and_then(|a| {
            a.iter()
                .map(|v| v.as_str().map(String::from))
                .collect::<Option<Vec<String>>>()
        }) else {
            return false;
        };
        meta["filters"] = json!([{"id": "vlen-utf8"}]);
        dst.create_dataset_json(path, &meta)
            .unwrap()
            .write_strings(&strings)
            .unwrap();
        return true;
    }
    if dtype["object_codec"] == "pickle" {
        return false;
    }
    let n = dst
        .create_dataset_json(path, &meta)
        .unwrap_or_else(|e| panic!("{path}: {e:?}: {meta}"));
    let (code, _) = d.shape();
    if d.element_size() > 0 {
        n.write_all(&d.read_all().unwrap()).unwrap();
    } else if code == N5_DTYPE_STRING {
        n.write_strings(&d.read_strings().unwrap()).unwrap();
    } else if code == N5_DTYPE_OBJECT {
        let (data, lengths) = d.read_bytes().unwrap();
        n.write_bytes(&data, &lengths).unwrap();
    } else {
        panic!("{path}: no way to copy {dtype}");
    }
    true
}

/// Copy the container at `from` into a new one at `to` of `format` node
/// by node through the C API: groups, arrays, attributes, then every link
/// with `n5_link_create` (targets in other containers must be copied
/// first, beside it). Arrays libn5 does not write (legacy pickled
/// references) are handed to `legacy` with their path. Returns the
/// writable handle.
fn copy_container(from: &Path, to: &Path, format: &str, legacy: &dyn Fn(&str)) -> C {
    let src = C::open(&loc(from), N5_MODE_READ, r#"{"follow_links": false}"#).unwrap();
    let dst = C::open(
        &loc(to),
        N5_MODE_CREATE,
        &json!({ "format": format }).to_string(),
    )
    .unwrap();
    let mut paths = src.list_recursive("").unwrap();
    // Parents before their children.
    paths.sort();
    let mut groups = vec![String::new()];
    for p in &paths {
        if src.dataset_exists(p).unwrap() {
            if !copy_array(&src, &dst, p) {
                legacy(p);
                continue;
            }
        } else {
            dst.create_group(p).unwrap();
            groups.push(p.clone());
        }
        let attrs = attributes_without_links(&src, p);
        if attrs != json!({}) {
            dst.set_attributes(p, &attrs).unwrap();
        }
        if dst.dataset_exists(p).unwrap() {
            // Elements as libn5 reads them (references normalised once the
            // attributes that mark them are there).
            let read = |c: &C| c.open_dataset(p).unwrap().read_json().unwrap();
            assert_eq!(read(&dst), read(&src), "{p}");
        }
    }
    dst.set_attributes("", &attributes_without_links(&src, ""))
        .unwrap();
    let mut links = 0;
    for g in &groups {
        for l in src.links(g).unwrap().as_array().unwrap() {
            let [name, source, path] = ["name", "source", "path"].map(|k| l[k].as_str().unwrap());
            dst.create_link(g, name, source, path)
                .unwrap_or_else(|e| panic!("{g}/{name}: {e:?}"));
            links += 1;
        }
    }
    assert!(paths.len() > 40 && links > 0, "{paths:?}");
    dst
}

/// `strings` as owned strings.
fn owned(strings: &[&str]) -> Vec<String> {
    strings.iter().map(|s| s.to_string()).collect()
}

/// One row of `intervals/trials/timeseries` in its binary layout: int32
/// `idx_start`, int32 `count`, and the path in 512 UTF-32 code units,
/// NUL-padded (native byte order).
fn trial_row(idx_start: i32, count: i32, path: &str) -> Vec<u8> {
    let mut row = Vec::new();
    row.extend_from_slice(&idx_start.to_ne_bytes());
    row.extend_from_slice(&count.to_ne_bytes());
    let mut units: Vec<u32> = path.chars().map(|c| c as u32).collect();
    units.resize(512, 0);
    for u in units {
        row.extend_from_slice(&u.to_ne_bytes());
    }
    row
}

/// The object `key` of a summary, removed from it.
fn take(summary: &mut Value, key: &str) -> Value {
    summary["objects"]
        .as_object_mut()
        .unwrap()
        .remove(key)
        .unwrap_or_else(|| panic!("pynwb read no {key}"))
}

/// Check that two summaries have the same objects, one by one.
#[track_caller]
fn same_objects(got: &Value, want: &Value) {
    let (g, w) = (
        got["objects"].as_object().unwrap(),
        want["objects"].as_object().unwrap(),
    );
    let names = |m: &serde_json::Map<String, Value>| m.keys().cloned().collect::<Vec<_>>();
    assert_eq!(names(g), names(w));
    for (k, v) in w {
        assert_eq!(&g[k], v, "{k}");
    }
    assert_eq!(got["links"], want["links"]);
}

#[test]
fn pynwb_reads_the_current_convention_libn5_writes() {
    let Some(corpus) = hdmf_corpus_dir() else {
        return;
    };
    let Some(python) = python("N5_NWB_PYTHON", ".venv-nwb/bin/python", "nwb") else {
        return;
    };
    let scratch = Scratch::new("nwb-roundtrip");
    let original = corpus.join("nwb-links.nwb.zarr");
    let copy = scratch.join("nwb-links.nwb.zarr");
    let c = copy_container(&original, &copy, "zarr3", &|p| {
        panic!("{p}: the current convention has no legacy arrays")
    });

    // Strings: an array and a 0-d scalar.
    let labels = owned(&["libn5", "ünïcödé ✓", "", "tab\there"]);
    c.open_dataset("scratch/labels")
        .unwrap()
        .write_strings(&labels)
        .unwrap();
    let description = "rewritten by libn5 — été";
    c.open_dataset("session_description")
        .unwrap()
        .write_strings(&owned(&[description]))
        .unwrap();

    // A new TimeSeries whose timestamps are ts_a's, by a link.
    let ts = "acquisition/ts_n5";
    c.create_group(ts).unwrap();
    let ts_id = "5f2b7c1e-1d3a-4e55-9d0c-6b1f0e2a9c41";
    c.set_attributes(
        ts,
        &json!({"comments": "written by libn5", "description": "timestamps linked to ts_a",
                "namespace": "core", "neurodata_type": "TimeSeries", "object_id": ts_id}),
    )
    .unwrap();
    let data = c
        .create_dataset_json(
            &format!("{ts}/data"),
            &json!({"shape": [50], "data_type": "int32",
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [20]}},
                "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
                "fill_value": 0,
                "codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                           {"name": "zstd", "configuration": {"level": 0, "checksum": false}}]}),
        )
        .unwrap();
    let values: Vec<i32> = (0..50).map(|i| i * i - 700).collect();
    data.write_all(
        &values
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect::<Vec<_>>(),
    )
    .unwrap();
    c.set_attributes(
        &format!("{ts}/data"),
        &json!({"_DTYPE": "int32", "conversion": 0.5, "offset": 0.0, "resolution": -1.0,
                "unit": "mV", "_ARRAY_DIMENSIONS": ["num_times"]}),
    )
    .unwrap();
    c.create_link(ts, "timestamps", ".", "acquisition/ts_a/timestamps")
        .unwrap();
    assert_eq!(
        c.resolve(&format!("{ts}/timestamps")).unwrap()["path"],
        "/acquisition/ts_a/timestamps"
    );

    // Reference attributes, written as the current convention has them.
    c.set_attribute(
        "acquisition/ephys/electrodes",
        "table",
        &json!({"_REFERENCE": {"source": ".", "path": "/general/extracellular_ephys/electrodes"}}),
    )
    .unwrap();
    c.set_attribute(
        "intervals/trials/timeseries_index",
        "target",
        &json!({"_REFERENCE": {"source": ".", "path": "/intervals/trials/timeseries"}}),
    )
    .unwrap();
    // Reference datasets: paths written as strings, in a new order.
    let order = c
        .open_dataset("acquisition/images/order_of_images")
        .unwrap();
    order
        .write_strings(&owned(&[
            "/acquisition/images/img1",
            "/acquisition/images/img2",
            "/acquisition/images/img0",
        ]))
        .unwrap();
    c.set_attribute(
        "acquisition/images/order_of_images",
        "_DTYPE",
        &json!("object_reference"),
    )
    .unwrap();
    let shanks = "/general/extracellular_ephys/shank";
    c.open_dataset("general/extracellular_ephys/electrodes/group")
        .unwrap()
        .write_strings(&owned(&[
            &format!("{shanks}1"),
            &format!("{shanks}1"),
            &format!("{shanks}0"),
            &format!("{shanks}0"),
        ]))
        .unwrap();
    // The compound: a row now names the new TimeSeries.
    let trials = c.open_dataset("intervals/trials/timeseries").unwrap();
    let rows = [
        trial_row(0, 8, "/acquisition/ts_a"),
        trial_row(5, 10, "/acquisition/ts_n5"),
        trial_row(20, 8, "/acquisition/ts_b"),
    ]
    .concat();
    trials.write_all(&rows).unwrap();
    c.set_attribute(
        "intervals/trials/timeseries",
        "_REFERENCE_FIELDS",
        &json!(["timeseries"]),
    )
    .unwrap();
    assert_eq!(
        trials.read_json().unwrap()[1]["timeseries"],
        json!({"source": ".", "path": "/acquisition/ts_n5"})
    );
    drop((order, trials, data, c));

    let [mut want, mut got] = summaries(&python, &[], &[&original, &copy])
        .try_into()
        .unwrap();

    // The new TimeSeries: its own data, ts_a's timestamps through the link.
    let n5 = take(&mut got, "/ts_n5");
    assert_eq!(n5["type"], "TimeSeries");
    assert_eq!(n5["object_id"], ts_id);
    assert_eq!(n5["fields"]["data"], json!(values));
    assert_eq!(n5["fields"]["unit"], "mV");
    assert_eq!(n5["fields"]["conversion"], 0.5);
    assert_eq!(n5["fields"]["timestamps"], json!({"object": "/ts_a"}));
    assert_eq!(n5["fields"]["comments"], "written by libn5");
    let l = got["links"]
        .as_object_mut()
        .unwrap()
        .remove("/ts_n5")
        .unwrap();
    assert_eq!(l["timestamps_from"], "/ts_a");
    assert_eq!(l["timestamps"], want["links"]["/ts_a"]["timestamps"]);
    assert_eq!(l["data"], json!(values));
    // The other changes, made to the original's summary.
    let o = &mut want["objects"];
    o["/"]["fields"]["acquisition"]["ts_n5"] = json!({"object": "/ts_n5"});
    // ts_a knows the TimeSeries linking to its timestamps.
    o["/ts_a"]["fields"]["timestamp_link"] = json!([{"object": "/ts_b"}, {"object": "/ts_n5"}]);
    o["/"]["fields"]["session_description"] = json!(description);
    o["/labels"]["fields"]["data"] = json!(labels);
    o["/images/order_of_images"]["fields"]["data"] = json!([
        {"object": "/images/img1"}, {"object": "/images/img2"}, {"object": "/images/img0"}
    ]);
    o["/electrodes/group"]["fields"]["data"] = json!([
        {"object": "/shank1"}, {"object": "/shank1"}, {"object": "/shank0"}, {"object": "/shank0"}
    ]);
    o["/trials/timeseries"]["fields"]["data"] = json!([
        [0, 8, {"object": "/ts_a"}], [5, 10, {"object": "/ts_n5"}], [20, 8, {"object": "/ts_b"}]
    ]);
    same_objects(&got, &want);
    // What stays: the links of the original, read through.
    assert_eq!(got["links"]["/ts_b"]["timestamps_from"], "/ts_a");
    assert_eq!(got["links"]["/ts_c"]["data_from"], "/ts_a");
    assert_eq!(
        got["objects"]["/behavior/BehavioralTimeSeries"]["fields"]["time_series"]["ts_a"],
        json!({"object": "/ts_a"})
    );
}

#[test]
fn link_creation_refuses_what_nwb_md_refuses() {
    let Some(corpus) = hdmf_corpus_dir() else {
        return;
    };
    let scratch = Scratch::new("nwb-link-errors");
    let dir = std::fs::canonicalize(scratch.path()).unwrap();
    for name in ["nwb-external.nwb.zarr", "nwb-external-target.nwb.zarr"] {
        common::copy_dir(&corpus.join(name), &dir.join(name));
    }
    let root = dir.join("nwb-external.nwb.zarr");
    let c = C::open(&loc(&root), N5_MODE_READ_WRITE, "{}").unwrap();
    let before = c.attributes("acquisition/local").unwrap();
    let target = format!("{}/nwb-external-target.nwb.zarr", loc(&dir));
    // Absolute sources: a path, a network path, a scheme.
    for source in [
        target.as_str(),
        "//host/x.nwb.zarr",
        "file:///x.nwb.zarr",
        "s3://bucket/x.nwb.zarr",
    ] {
        fails(
            c.create_link("acquisition/local", "x", source, "/acquisition/raw"),
            N5_ERR_UNSUPPORTED,
            source,
        );
    }
    // `..` above the file-system root: refused, never clamped.
    let up = "../".repeat(root.components().count() + 2) + "x.nwb.zarr";
    fails(
        c.create_link("acquisition/local", "x", &up, "/acquisition/raw"),
        N5_ERR_INVALID_ARGUMENT,
        "root",
    );
    // A name that is a dataset of the group; one with a trailing `/`.
    fails(
        c.create_link("acquisition/local", "data", ".", "/acquisition"),
        N5_ERR_ALREADY_EXISTS,
        "data",
    );
    fails(
        c.create_link("acquisition/local", "a/", ".", "/acquisition"),
        N5_ERR_INVALID_ARGUMENT,
        "link name",
    );
    // A target path in a container that is there, at nothing.
    fails(
        c.create_link(
            "acquisition/local",
            "x",
            "../nwb-external-target.nwb.zarr",
            "/acquisition/nothing",
        ),
        N5_ERR_DANGLING_LINK,
        "/acquisition/nothing",
    );
    assert_eq!(c.attributes("acquisition/local").unwrap(), before);
    // A link made in a group reached through a link of this container is
    // held by the target group.
    c.create_link("acquisition", "alias", ".", "/acquisition/local")
        .unwrap();
    c.create_link("acquisition/alias", "again", ".", "/acquisition/derived")
        .unwrap();
    let links = c.attribute("acquisition/local", "_LINKS").unwrap();
    assert_eq!(
        links.as_array().unwrap().last().unwrap(),
        &json!({"source": ".", "path": "/acquisition/derived", "name": "again"})
    );
    // Reopened, every link resolves.
    let r = C::open(&loc(&root), N5_MODE_READ, "{}").unwrap();
    assert_eq!(
        r.resolve("acquisition/alias/again/data").unwrap()["path"],
        "/acquisition/raw/data"
    );
}

/// Add to the container `c` (Zarr v2, hdmf-zarr 0.13's convention) the
/// TimeSeries `acquisition/ts_n5` of int32 data whose `timestamps` is a
/// link to `timestamps` (in `source`); returns its data.
fn add_legacy_timeseries(c: &C, source: &str, timestamps: &str, len: usize) -> Vec<i32> {
    let ts = "acquisition/ts_n5";
    c.create_group(ts).unwrap();
    c.set_attributes(
        ts,
        &json!({"comments": "written by libn5", "description": "timestamps linked",
                "namespace": "core", "neurodata_type": "TimeSeries",
                "object_id": "9b0e4c55-3f7d-4a8e-b2d1-7c6a5e4f3d21"}),
    )
    .unwrap();
    let data = c
        .create_dataset_json(
            &format!("{ts}/data"),
            &json!({"zarr_format": 2, "shape": [len], "chunks": [16], "dtype": "<i4",
                "compressor": {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1,
                               "blocksize": 0},
                "fill_value": 0, "filters": null, "order": "C"}),
        )
        .unwrap();
    let values: Vec<i32> = (0..len as i32).map(|i| 3 * i - 40).collect();
    data.write_all(
        &values
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect::<Vec<_>>(),
    )
    .unwrap();
    c.set_attributes(
        &format!("{ts}/data"),
        &json!({"_ARRAY_DIMENSIONS": ["num_times"], "conversion": 1.0, "offset": 0.0,
                "resolution": -1.0, "unit": "a.u.", "zarr_dtype": "int32"}),
    )
    .unwrap();
    c.create_link(ts, "timestamps", source, timestamps).unwrap();
    let stored = c.attribute(ts, "zarr_link").unwrap();
    assert_eq!(stored[0]["name"], "timestamps", "{stored}");
    values
}

#[test]
fn hdmf_zarr_0_13_reads_the_legacy_files_with_links_libn5_writes() {
    let Some(corpus) = hdmf_corpus_dir() else {
        return;
    };
    let Some(python) = python(
        "N5_NWB_LEGACY_PYTHON",
        ".venv-nwb-legacy/bin/python",
        "nwblegacy",
    ) else {
        return;
    };
    let scratch = Scratch::new("nwb-legacy-roundtrip");
    let dir = std::fs::canonicalize(scratch.path()).unwrap();
    let no_legacy = |p: &str| panic!("{p}: no legacy references here");
    // The target first: n5_link_create resolves every link it makes.
    let target = dir.join("nwb-external-target-v2.nwb.zarr");
    copy_container(
        &corpus.join("nwb-external-target-v2.nwb.zarr"),
        &target,
        "zarr2",
        &no_legacy,
    );
    let external = dir.join("nwb-external-v2.nwb.zarr");
    let c = copy_container(
        &corpus.join("nwb-external-v2.nwb.zarr"),
        &external,
        "zarr2",
        &no_legacy,
    );
    // Linked across containers; the entry names the sibling.
    let ext_values = add_legacy_timeseries(
        &c,
        "../nwb-external-target-v2.nwb.zarr",
        "/acquisition/raw_shifted/timestamps",
        40,
    );
    assert_eq!(
        c.attribute("acquisition/ts_n5", "zarr_link").unwrap(),
        json!([{"name": "timestamps", "path": "/acquisition/raw/timestamps",
                "source": "../nwb-external-target-v2.nwb.zarr"}])
    );
    drop(c);
    let links = dir.join("nwb-links-v2.nwb.zarr");
    let from = corpus.join("nwb-links-v2.nwb.zarr");
    let pickled = std::cell::RefCell::new(Vec::new());
    let c = copy_container(&from, &links, "zarr2", &|p| {
        // Pickled references: the stored files, as they are.
        common::copy_dir(&from.join(p), &links.join(p));
        pickled.borrow_mut().push(p.to_string());
    });
    assert_eq!(
        pickled.into_inner(),
        [
            "acquisition/images/order_of_images",
            "general/extracellular_ephys/electrodes/group",
            "intervals/trials/timeseries"
        ]
    );
    let values = add_legacy_timeseries(&c, ".", "/acquisition/ts_a/timestamps", 50);
    drop(c);

    // hdmf-zarr 0.13 decodes pickles only when allowed; these are the
    // corpus's own.
    let env = [("NUMCODECS_ALLOW_UNSAFE_PICKLE_DECODE", "1")];
    let originals = ["nwb-external-v2.nwb.zarr", "nwb-links-v2.nwb.zarr"].map(|n| corpus.join(n));
    let [mut want_ext, mut want_links, mut got_ext, mut got_links] = summaries(
        &python,
        &env,
        &[&originals[0], &originals[1], &external, &links],
    )
    .try_into()
    .unwrap();
    for (got, want, values, ts_target) in [
        (
            &mut got_ext,
            &mut want_ext,
            ext_values,
            "/analysis/external_series/raw",
        ),
        (&mut got_links, &mut want_links, values, "/ts_a"),
    ] {
        let n5 = take(got, "/ts_n5");
        assert_eq!(n5["type"], "TimeSeries");
        assert_eq!(n5["fields"]["data"], json!(values));
        assert_eq!(n5["fields"]["timestamps"], json!({"object": ts_target}));
        let l = got["links"]
            .as_object_mut()
            .unwrap()
            .remove("/ts_n5")
            .unwrap();
        assert_eq!(l["timestamps_from"], ts_target);
        assert_eq!(l["timestamps"], want["links"][ts_target]["timestamps"]);
        let o = &mut want["objects"];
        o["/"]["fields"]["acquisition"]["ts_n5"] = json!({"object": "/ts_n5"});
        let mut linking = o[ts_target]["fields"]["timestamp_link"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        linking.push(json!({"object": "/ts_n5"}));
        linking.sort_by_key(|v| v["object"].as_str().unwrap().to_string());
        o[ts_target]["fields"]["timestamp_link"] = json!(linking);
        same_objects(got, want);
    }
    // The corpus's own links, read through by hdmf-zarr 0.13.
    assert_eq!(got_links["links"]["/ts_b"]["timestamps_from"], "/ts_a");
    assert_eq!(got_links["links"]["/ts_c"]["data_from"], "/ts_a");
    assert_eq!(
        got_ext["links"]["/derived"]["data_from"],
        "/analysis/external_series/raw"
    );
}
