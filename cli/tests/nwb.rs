//! The `n5` tool on NWB (hdmf-zarr) containers and the Zarr types they use
//! (nwb.md §5): `ls`/`tree` show every type and mark references, `info`
//! describes types, fill values and a group's links, `cat` prints strings
//! and references as JSON and layout types as raw bytes or `.npy`, and
//! `cp` keeps types and links, and turns the legacy hdmf-zarr v2
//! convention into the current v3 one (checked with the library, and with
//! pynwb + hdmf-zarr when `N5_NWB_PYTHON` or `.venv-nwb` has them). The
//! corpus containers are copied into a temporary directory first.

mod common;

use std::path::Path;
use std::process::Command;

use common::{fails, json, ok, python_with, shared, TempDir};
use n5::{Container, Mode, Options};
use serde_json::{json as j, Value};

/// Copy the directory `from` to `to`, recursively.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

/// The hdmf-zarr corpus containers `names`, copied into `dir`; `None`
/// (skipped with a message) when the corpus is not there.
fn corpus(dir: &TempDir, names: &[&str]) -> Option<()> {
    let c = shared("corpus-hdmf", "hdmf-zarr corpus")?;
    for n in names {
        copy_dir(&c.join(n), &dir.0.join(n));
    }
    Some(())
}

/// A Zarr v3 array document of `shape` (C order, one chunk of `chunk`)
/// for `data_type` with `fill` and the array-to-bytes codec `codec`.
fn doc(shape: &[u64], chunk: &[u64], data_type: Value, fill: Value, codec: &str) -> Value {
    let codec = if codec == "bytes" {
        j!({"name": "bytes", "configuration": {"endian": "little"}})
    } else {
        j!({"name": codec, "configuration": {}})
    };
    j!({"zarr_format": 3, "node_type": "array", "shape": shape, "data_type": data_type,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunk}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": fill, "codecs": [codec, {"name": "zstd", "configuration": {"level": 3}}]})
}

/// A Zarr v3 container at `path` with a dataset of each type the tool
/// must show and copy, written with the library.
fn typed(path: &str) -> Container {
    let options = Options::from_json(r#"{"format": "zarr3"}"#).unwrap();
    let c = Container::open_with(path, Mode::Create, options).unwrap();
    let ne = |v: &[u32]| -> Vec<u8> { v.iter().flat_map(|x| x.to_ne_bytes()).collect() };
    let utf32 = |s: &str, n: usize| {
        let mut v: Vec<u32> = s.chars().map(|c| c as u32).collect();
        v.resize(n, 0);
        ne(&v)
    };
    let write = |name: &str, d: Value, data: Vec<u8>| {
        let ds = c.create_dataset_json(name, &d).unwrap();
        let dims = ds.attributes().dimensions.clone();
        ds.write_region(&vec![0; dims.len()], &dims, &data).unwrap();
    };
    write(
        "t/bool",
        doc(&[3], &[2], j!("bool"), j!(false), "bytes"),
        vec![1, 0, 1],
    );
    let halves: Vec<u8> = [0x3c00u16, 0xc000, 0x7e00]
        .iter()
        .flat_map(|h| h.to_ne_bytes())
        .collect();
    write(
        "t/f16",
        doc(&[3], &[3], j!("float16"), j!(0.0), "bytes"),
        halves,
    );
    let complex: Vec<u8> = [1.5f32, -2.0, 0.25, 4.0]
        .iter()
        .flat_map(|f| f.to_ne_bytes())
        .collect();
    write(
        "t/c64",
        doc(&[2], &[2], j!("complex64"), j!([0.0, 0.0]), "bytes"),
        complex,
    );
    let u = j!({"name": "fixed_length_utf32", "configuration": {"length_bytes": 12}});
    let mut text = utf32("abc", 3);
    text.extend(utf32("é", 3));
    write("t/u3", doc(&[2], &[2], u, j!(""), "bytes"), text);
    let b = j!({"name": "raw_bytes", "configuration": {"length_bytes": 4}});
    write(
        "t/v4",
        doc(&[2], &[2], b, j!("AAAAAA=="), "bytes"),
        b"\x01\x02\x03\x04\x00\x00\x00\x09".to_vec(),
    );
    let dt = j!({"name": "numpy.datetime64", "configuration": {"unit": "ms", "scale_factor": 1}});
    let times: Vec<u8> = [1_700_000_000_000i64, i64::MIN]
        .iter()
        .flat_map(|v| v.to_ne_bytes())
        .collect();
    write("t/dt", doc(&[2], &[2], dt, j!(0), "bytes"), times);
    let st = j!({"name": "struct", "configuration": {"fields": [
        {"name": "idx_start", "data_type": "int32"},
        {"name": "s", "data_type": {"name": "fixed_length_utf32", "configuration": {"length_bytes": 8}}}]}});
    let mut rows = 7i32.to_ne_bytes().to_vec();
    rows.extend(utf32("hi", 2));
    rows.extend((-1i32).to_ne_bytes());
    rows.extend(utf32("", 2));
    write(
        "t/st",
        doc(&[2], &[1], st, j!({"idx_start": 0, "s": ""}), "bytes"),
        rows,
    );
    let s = c
        .create_dataset_json("t/str", &doc(&[3], &[2], j!("string"), j!(""), "vlen-utf8"))
        .unwrap();
    s.write_region_strings(&[0], &[3], &["a", "", "été"])
        .unwrap();
    let o = c
        .create_dataset_json(
            "t/bytes",
            &doc(&[2], &[2], j!("bytes"), j!(""), "vlen-bytes"),
        )
        .unwrap();
    o.write_region_bytes(&[0], &[2], b"\x00\xffxy", &[2, 2])
        .unwrap();
    let z = c
        .create_dataset_json("t/scalar", &doc(&[], &[], j!("float64"), j!(0.0), "bytes"))
        .unwrap();
    z.write_region(&[], &[], &2.5f64.to_ne_bytes()).unwrap();
    c
}

/// Every dataset of `c` below `group` (its path and its elements as
/// JSON), for comparing two containers.
fn contents(c: &Container, group: &str) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for p in c.deep_list(group).unwrap() {
        let full = format!("{group}/{p}");
        if !c.dataset_exists(&full).unwrap() {
            continue;
        }
        let ds = c.open_dataset(&full).unwrap();
        let dims = ds.attributes().dimensions.clone();
        let text = ds.read_region_json(&vec![0; dims.len()], &dims).unwrap();
        out.push((p, serde_json::from_str(&text).unwrap()));
    }
    out
}

#[test]
fn ls_tree_and_info_show_every_type() {
    let dir = TempDir::new("nwb-types");
    let a = dir.path("a.zarr");
    typed(&a);
    let out = ok(&["ls", &format!("{a}/t")]).text();
    for want in [
        "bool ",
        "float16 ",
        "complex64 ",
        "fixed_utf32[3] ",
        "fixed_bytes[4] ",
        "datetime64[ms] ",
        "struct(idx_start int32, s fixed_utf32[2]) ",
        "string ",
        "object ",
    ] {
        assert!(out.contains(want), "{want:?} in {out}");
    }
    let tree = ok(&["tree", &a]).text();
    assert!(tree.contains("datetime64[ms]"), "{tree}");
    let listed = json(&["ls", "--json", &format!("{a}/t")]);
    let st = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["path"] == "st")
        .unwrap();
    assert_eq!(st["dtype"]["name"], "struct");
    assert_eq!(st["dtype"]["size"], 12);
    assert_eq!(st["dtype"]["fields"][1]["type"]["length_bytes"], 8);
    assert!(st.get("reference").is_none());

    let info = json(&["info", "--json", &format!("{a}/t/st")]);
    assert_eq!(info["elementSize"], 12);
    assert_eq!(info["fillValue"], j!({"idx_start": 0, "s": ""}));
    assert_eq!(info["dtype"]["name"], "struct");
    assert_eq!(info["reference"], false);
    let info = json(&["info", "--json", &format!("{a}/t/c64")]);
    assert_eq!(info["fillValue"], j!([0.0, 0.0]));
    let text = ok(&["info", &format!("{a}/t/u3")]).text();
    assert!(text.contains("fixed_utf32[3]"), "{text}");
    assert!(text.contains("element size  12 bytes"), "{text}");
    let stats = ok(&["info", "--stats", &format!("{a}/t/scalar")]).text();
    assert!(stats.contains("max") && stats.contains("2.5"), "{stats}");
    fails(
        &["info", "--stats", &format!("{a}/t/str")],
        2,
        "--stats needs one of the ten numeric types, not string",
    );
    fails(
        &["info", "--stats", &format!("{a}/t/c64")],
        2,
        "not complex64",
    );
}

#[test]
fn cat_prints_json_lines_raw_and_npy_of_every_type() {
    let dir = TempDir::new("nwb-cat");
    let a = dir.path("a.zarr");
    typed(&a);
    let t = |name: &str| format!("{a}/t/{name}");
    assert_eq!(ok(&["cat", &t("str")]).text(), "\"a\"\n\"\"\n\"été\"\n");
    assert_eq!(
        ok(&["cat", "--json", &t("str")]).text(),
        "[\"a\", \"\", \"été\"]\n"
    );
    assert_eq!(ok(&["cat", &t("bytes")]).text(), "\"AP8=\"\n\"eHk=\"\n");
    assert_eq!(
        ok(&["cat", "-f", "lines", &t("st")]).text(),
        "{\"idx_start\":7,\"s\":\"hi\"}\n{\"idx_start\":-1,\"s\":\"\"}\n"
    );
    assert_eq!(ok(&["cat", "--json", &t("scalar")]).text(), "[2.5]\n");
    assert_eq!(
        ok(&["cat", "--json", &t("f16")]).text(),
        "[1.0, -2.0, \"NaN\"]\n"
    );
    // Raw: the binary layout, little-endian.
    assert_eq!(ok(&["cat", "-f", "raw", &t("bool")]).stdout, [1, 0, 1]);
    let c: Vec<u8> = [1.5f32, -2.0, 0.25, 4.0]
        .iter()
        .flat_map(|f| f.to_le_bytes())
        .collect();
    assert_eq!(ok(&["cat", &t("c64")]).stdout, c);
    let st = ok(&["cat", "-f", "raw", &t("st")]).stdout;
    assert_eq!(st.len(), 24);
    assert_eq!(&st[..4], &7i32.to_le_bytes());
    assert_eq!(&st[4..8], &u32::from('h').to_le_bytes());
    assert_eq!(
        ok(&["cat", "-f", "raw", &t("dt"), "--offset", "1"]).stdout,
        i64::MIN.to_le_bytes()
    );
    // .npy: NumPy's description of each type.
    for (name, descr, shape) in [
        ("bool", "'|b1'", "(3,)"),
        ("f16", "'<f2'", "(3,)"),
        ("c64", "'<c8'", "(2,)"),
        ("u3", "'<U3'", "(2,)"),
        ("v4", "'|V4'", "(2,)"),
        ("dt", "'<M8[ms]'", "(2,)"),
        ("st", "[('idx_start', '<i4'), ('s', '<U2')]", "(2,)"),
        ("scalar", "'<f8'", "()"),
    ] {
        let out = ok(&["cat", "-f", "npy", &t(name)]).stdout;
        let header = String::from_utf8_lossy(&out[10..]).to_string();
        assert!(
            header.starts_with(&format!(
                "{{'descr': {descr}, 'fortran_order': False, 'shape': {shape}, }}"
            )),
            "{name}: {header}"
        );
        let raw = ok(&["cat", "-f", "raw", &t(name)]).stdout;
        assert!(
            out.ends_with(&raw) && out.len() % 64 == raw.len() % 64,
            "{name}"
        );
    }
    fails(&["cat", "-f", "npy", &t("str")], 2, "no fixed size");
    fails(&["cat", "-f", "raw", &t("bytes")], 2, "no fixed size");
}

#[test]
fn corpus_references_links_and_types_in_ls_info_cat() {
    let dir = TempDir::new("nwb-corpus-show");
    let names = ["nwb-links.nwb.zarr", "nwb-links-v2.nwb.zarr"];
    if corpus(&dir, &names).is_none() {
        return;
    }
    for n in names {
        let c = dir.path(n);
        let out = ok(&["ls", "-r", &c]).text();
        let order = out
            .lines()
            .find(|l| l.starts_with("acquisition/images/order_of_images "))
            .unwrap();
        assert!(order.contains(" references "), "{order}");
        assert!(out.contains("intervals/trials/correct"), "{out}");
        let trials = json(&["ls", "--json", &format!("{c}/intervals/trials")]);
        let ts = trials
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["path"] == "timeseries")
            .unwrap();
        assert_eq!(ts["reference"], true, "{n}");
        assert_eq!(ts["dtype"]["reference_fields"], j!(["timeseries"]), "{n}");
        let refs = ok(&["cat", &format!("{c}/acquisition/images/order_of_images")]).text();
        let paths: Vec<Value> = refs
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap()["path"].clone())
            .collect();
        assert_eq!(
            paths,
            [
                "/acquisition/images/img2",
                "/acquisition/images/img0",
                "/acquisition/images/img1"
            ],
            "{n}"
        );
        let all = json(&["cat", "--json", &format!("{c}/intervals/trials/timeseries")]);
        assert_eq!(all[1]["timeseries"]["path"], "/acquisition/ts_b", "{n}");
        let info = json(&["info", "--json", &format!("{c}/acquisition/ts_b")]);
        assert_eq!(info["links"][0]["name"], "timestamps");
        assert_eq!(
            info["links"][0]["target"]["path"],
            "/acquisition/ts_a/timestamps"
        );
        let text = ok(&["info", &format!("{c}/acquisition/ts_b")]).text();
        assert!(
            text.contains("timestamps  -> /acquisition/ts_a/timestamps  (dataset /acquisition/ts_a/timestamps)"),
            "{text}"
        );
        let text = ok(&["info", &format!("{c}/intervals/trials/timeseries")]).text();
        assert!(
            text.contains("the fields timeseries are object references"),
            "{text}"
        );
    }
}

/// The normalised references of the dataset `path` of `c`, without ids.
fn refs(c: &Container, path: &str) -> Vec<Value> {
    let ds = c.open_dataset(path).unwrap();
    let dims = ds.attributes().dimensions.clone();
    let v: Value =
        serde_json::from_str(&ds.read_region_json(&vec![0; dims.len()], &dims).unwrap()).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| j!({"source": r["source"], "path": r["path"]}))
        .collect()
}

#[test]
fn cp_converts_the_legacy_convention_to_v3() {
    let dir = TempDir::new("nwb-cp-legacy");
    if corpus(&dir, &["nwb-links-v2.nwb.zarr", "nwb-links.nwb.zarr"]).is_none() {
        return;
    }
    let src = dir.path("nwb-links-v2.nwb.zarr");
    let out = dir.path("converted.nwb.zarr");
    ok(&["cp", &src, &out]);
    let old = Container::open(&src, Mode::Read).unwrap();
    let new = Container::open(&out, Mode::Read).unwrap();
    let current = Container::open(dir.path("nwb-links.nwb.zarr"), Mode::Read).unwrap();
    assert_eq!(new.format(), n5::format::Format::Zarr3);
    // Links: listed in _LINKS, resolving to the copy's own nodes.
    let links = new.links("acquisition/ts_b").unwrap();
    assert_eq!(links.len(), 1);
    assert_eq!(links[0].link.source, ".");
    let target = links[0].target.as_ref().unwrap();
    assert_eq!(target.path, "/acquisition/ts_a/timestamps");
    assert_eq!(target.location, new.location());
    let attrs = new.attributes("acquisition/ts_b").unwrap();
    assert!(
        attrs.get("zarr_link").is_none() && attrs["_LINKS"].is_array(),
        "{attrs}"
    );
    for (group, name, to) in [
        (
            "general/extracellular_ephys/shank0",
            "device",
            "/general/devices/array",
        ),
        (
            "processing/behavior/BehavioralTimeSeries",
            "ts_a",
            "/acquisition/ts_a",
        ),
        (
            "stimulus/presentation/shown_images",
            "indexed_images",
            "/acquisition/images",
        ),
    ] {
        let t = new.resolve_link(&format!("{group}/{name}")).unwrap();
        assert_eq!((t.path.as_str(), t.hops), (to, 1), "{group}/{name}");
    }
    // Reference attributes and datasets in the current form.
    let e = new.attributes("acquisition/ephys/electrodes").unwrap();
    assert_eq!(
        e["table"],
        j!({"_REFERENCE": {"source": ".", "path": "/general/extracellular_ephys/electrodes"}})
    );
    assert_eq!(e["_DTYPE"], "int64");
    assert!(e.get("zarr_dtype").is_none());
    for p in [
        "acquisition/images/order_of_images",
        "general/extracellular_ephys/electrodes/group",
    ] {
        let ds = new.open_dataset(p).unwrap();
        assert_eq!(ds.data_type(), n5::DataType::String, "{p}");
        assert_eq!(new.attributes(p).unwrap()["_DTYPE"], "object_reference");
        assert_eq!(refs(&new, p), refs(&old, p), "{p}");
        assert_eq!(refs(&new, p), refs(&current, p), "{p}");
    }
    // The compound: a struct with a 512-character reference field.
    let ts = new.open_dataset("intervals/trials/timeseries").unwrap();
    assert_eq!(
        ts.data_type().to_string(),
        "struct(idx_start int32, count int32, timeseries fixed_utf32[512])"
    );
    assert_eq!(
        new.attributes("intervals/trials/timeseries").unwrap()["_REFERENCE_FIELDS"],
        j!(["timeseries"])
    );
    let rows = |c: &Container| -> Value {
        let ds = c.open_dataset("intervals/trials/timeseries").unwrap();
        let v: Value = serde_json::from_str(&ds.read_region_json(&[0], &[3]).unwrap()).unwrap();
        v.as_array()
            .unwrap()
            .iter()
            .map(|r| j!([r["idx_start"], r["count"], r["timeseries"]["path"]]))
            .collect()
    };
    assert_eq!(rows(&new), rows(&current));
    // Strings equal, scalars 0-d, numbers equal.
    let strings = |c: &Container, p: &str| {
        let ds = c.open_dataset(p).unwrap();
        let dims = ds.attributes().dimensions.clone();
        ds.read_region_strings(&vec![0; dims.len()], &dims).unwrap()
    };
    assert_eq!(
        strings(&new, "scratch/labels"),
        ["alpha", "beta", "gamma", "été"]
    );
    assert_eq!(
        strings(&new, "general/institution"),
        strings(&current, "general/institution")
    );
    assert_eq!(
        new.open_dataset("general/institution")
            .unwrap()
            .attributes()
            .ndim(),
        0
    );
    assert_eq!(
        new.attributes("general/institution").unwrap()["_DTYPE"],
        "str"
    );
    assert_eq!(
        strings(&new, "session_start_time"),
        strings(&current, "session_start_time")
    );
    let st = new.open_dataset("acquisition/ephys/starting_time").unwrap();
    assert_eq!(st.attributes().ndim(), 0);
    assert_eq!(
        new.attributes("acquisition/ephys/starting_time").unwrap()["_DTYPE"],
        "float64"
    );
    let numbers = |c: &Container| -> Vec<(String, Value)> {
        contents(c, "acquisition/ts_a")
            .into_iter()
            .chain(contents(c, "scratch"))
            .collect()
    };
    assert_eq!(numbers(&new), numbers(&old));
    // No numcodecs.* codec and no legacy key anywhere.
    for p in new.deep_list("").unwrap() {
        if new.dataset_exists(&p).unwrap() {
            let doc = new.open_dataset(&p).unwrap().metadata().unwrap();
            assert!(!doc.to_string().contains("numcodecs."), "{p}: {doc}");
        }
        if !p.contains("->") {
            if let Ok(a) = new.attributes(&p) {
                assert!(
                    a.get("zarr_dtype").is_none() && a.get("zarr_link").is_none(),
                    "{p}"
                );
            }
        }
    }

    // pynwb + hdmf-zarr 0.14 read the converted file.
    let Some(python) = python_with(
        "N5_NWB_PYTHON",
        ".venv-nwb",
        "pynwb, hdmf_zarr",
        "reading the converted file with NWBZarrIO",
    ) else {
        return;
    };
    let script = r#"
import sys, warnings
warnings.simplefilter("ignore")
import numpy as np
from hdmf_zarr.nwb import NWBZarrIO
with NWBZarrIO(sys.argv[1], mode="r") as io:
    f = io.read()
    a = f.acquisition["ts_a"]
    assert np.array_equal(f.acquisition["ts_b"].timestamps[:], a.timestamps[:])
    assert np.array_equal(f.acquisition["ts_c"].data[:], a.data[:])
    assert [i.name for i in f.acquisition["images"].order_of_images[:]] == ["img2", "img0", "img1"]
    assert [g.name for g in f.electrodes["group"][:]] == ["shank0", "shank1", "shank0", "shank1"]
    rows = f.trials["timeseries"].target.data[:]
    assert [(int(r[0]), r[2].name) for r in rows] == [(0, "ts_a"), (10, "ts_b"), (20, "ts_a")], rows
    assert f.processing["behavior"]["BehavioralTimeSeries"]["ts_a"] is a
    assert str(f.session_start_time).startswith("20")
    print("read ok")
"#;
    let run = Command::new(python)
        .args(["-c", script, &out])
        .output()
        .unwrap();
    assert!(
        run.status.success() && String::from_utf8_lossy(&run.stdout).contains("read ok"),
        "NWBZarrIO could not read the converted file: {}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
}

#[test]
fn cp_keeps_links_inside_outside_and_external() {
    let dir = TempDir::new("nwb-cp-links");
    let names = [
        "nwb-links.nwb.zarr",
        "nwb-external.nwb.zarr",
        "nwb-external-target.nwb.zarr",
    ];
    if corpus(&dir, &names).is_none() {
        return;
    }
    let src = dir.path("nwb-links.nwb.zarr");
    // A subtree: the link inside it points at the copy, the one leading
    // out of it keeps its node in the source container.
    let out = dir.path("sub.zarr");
    ok(&["cp", &format!("{src}/acquisition"), &format!("{out}/acq")]);
    let c = Container::open(&out, Mode::Read).unwrap();
    let l = &c.links("acq/ts_b").unwrap()[0];
    assert_eq!(
        (l.link.source.as_str(), l.link.path.as_str()),
        (".", "/acq/ts_a/timestamps")
    );
    let ts = ok(&["cat", "--json", &format!("{out}/acq/ts_b/timestamps")]).text();
    assert_eq!(
        ts,
        ok(&[
            "cat",
            "--json",
            &format!("{src}/acquisition/ts_a/timestamps")
        ])
        .text()
    );
    let out2 = dir.path("deep/ts_b.zarr");
    ok(&["cp", &format!("{src}/acquisition/ts_b"), &out2]);
    let c2 = Container::open(&out2, Mode::Read).unwrap();
    let l = &c2.links("").unwrap()[0];
    assert_eq!(l.link.source, "../../nwb-links.nwb.zarr");
    assert_eq!(l.link.path, "/acquisition/ts_a/timestamps");
    assert!(l.target.is_ok(), "{:?}", l.target);
    // Again: the same links are there, nothing to change.
    let again = ok(&["cp", &format!("{src}/acquisition/ts_b"), &out2]).text();
    assert!(again.contains("0 chunks written"), "{again}");

    // External links: unchanged beside the source, rewritten elsewhere.
    let ext = dir.path("nwb-external.nwb.zarr");
    let beside = dir.path("beside.nwb.zarr");
    ok(&["cp", &ext, &beside]);
    let deeper = dir.path("x/y.nwb.zarr");
    ok(&["cp", &ext, &deeper]);
    for (path, source) in [
        (&beside, "../nwb-external-target.nwb.zarr"),
        (&deeper, "../../nwb-external-target.nwb.zarr"),
    ] {
        let c = Container::open(path, Mode::Read).unwrap();
        let links = c.links("acquisition/derived").unwrap();
        assert_eq!(links.len(), 2);
        for l in &links {
            assert_eq!(l.link.source, source);
            assert!(l
                .target
                .as_ref()
                .unwrap()
                .location
                .ends_with("nwb-external-target.nwb.zarr"));
        }
        let t = c
            .resolve_link("processing/analysis/external_series/raw")
            .unwrap();
        assert_eq!(t.path, "/acquisition/raw");
    }

    // Every type keeps its value through Zarr v2 and back.
    let typed_src = dir.path("typed.zarr");
    let a = typed(&typed_src);
    let v2 = dir.path("typed2.zarr");
    let v3 = dir.path("typed3.zarr");
    ok(&["cp", "--format", "zarr2", &typed_src, &v2]);
    ok(&["cp", &v2, &v3]);
    let c2 = Container::open(&v2, Mode::Read).unwrap();
    assert_eq!(c2.format(), n5::format::Format::Zarr2);
    let c3 = Container::open(&v3, Mode::Read).unwrap();
    assert_eq!(c3.format(), n5::format::Format::Zarr3);
    let want = contents(&a, "t");
    assert_eq!(want.len(), 10);
    assert_eq!(contents(&c2, "t"), want);
    assert_eq!(contents(&c3, "t"), want);
    for (p, _) in &want {
        let p = format!("t/{p}");
        assert_eq!(
            c3.open_dataset(&p).unwrap().data_type(),
            a.open_dataset(&p).unwrap().data_type(),
            "{p}"
        );
        assert_eq!(
            c3.open_dataset(&p).unwrap().fill_value(),
            a.open_dataset(&p).unwrap().fill_value(),
            "{p}"
        );
    }

    // Into Zarr v2 the links become zarr_link.
    let links2 = dir.path("links2.zarr");
    ok(&[
        "cp",
        "--format",
        "zarr2",
        &format!("{src}/acquisition/ts_b"),
        &format!("{links2}/b"),
    ]);
    let c = Container::open(&links2, Mode::Read).unwrap();
    let attrs = c.attributes("b").unwrap();
    assert!(
        attrs["zarr_link"].is_array() && attrs.get("_LINKS").is_none(),
        "{attrs}"
    );
    assert!(c.links("b").unwrap()[0].target.is_ok());
}

#[test]
fn cp_refuses_before_writing() {
    let dir = TempDir::new("nwb-cp-refused");
    if corpus(&dir, &["nwb-links.nwb.zarr"]).is_none() {
        return;
    }
    let src = dir.path("nwb-links.nwb.zarr");
    // Into N5: the first link or type N5 cannot hold is named.
    let n5 = dir.path("out.n5");
    fails(
        &["cp", &format!("{src}/acquisition/ts_b"), &n5],
        1,
        "timestamps: is a link, and n5 containers have no links",
    );
    assert!(!Path::new(&n5).exists());
    fails(
        &["cp", &format!("{src}/intervals"), &n5],
        1,
        "correct: bool datasets cannot go into n5",
    );
    assert!(!Path::new(&n5).exists());
    // References are not written into Zarr v2.
    let v2 = dir.path("out2.zarr");
    fails(
        &[
            "cp",
            "--format",
            "zarr2",
            &format!("{src}/acquisition/images"),
            &v2,
        ],
        1,
        "order_of_images: holds object references",
    );
    assert!(!Path::new(&v2).exists());
    // A link into a container no relative reference reaches from the
    // destination: refused before anything is written.
    let typed_src = dir.path("typed.zarr");
    typed(&typed_src);
    let c = Container::open(&src, Mode::ReadWrite).unwrap();
    let key = "_LINKS";
    let mut links = c.attributes("acquisition/ts_b").unwrap()[key].clone();
    links
        .as_array_mut()
        .unwrap()
        .push(j!({"name": "gone", "source": "../missing.zarr", "path": "/x"}));
    c.set_attribute("acquisition/ts_b", key, links).unwrap();
    let out = dir.path("out3.zarr");
    fails(
        &["cp", &format!("{src}/acquisition/ts_b"), &out],
        1,
        "gone: is a link that leads nowhere",
    );
    assert!(!Path::new(&out).exists());
}
