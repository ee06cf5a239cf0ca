//! Every subcommand against containers the tests write in temporary
//! directories: import/cat round trips (raw and .npy), verify on corrupted,
//! truncated and mis-sized blocks, cp between compressions and block sizes
//! (and resuming), attributes by path, JSON outputs, errors and exit codes,
//! and `--help` everywhere.

mod common;

use common::{fails, json, le_u16, ok, run, run_in, TempDir};
use n5::{Container, Mode};
use serde_json::json;

/// 37 x 29 x 11 uint16 values with some structure.
fn volume() -> (Vec<u16>, [u64; 3]) {
    let shape = [37u64, 29, 11];
    let n = shape.iter().product::<u64>() as usize;
    let v = (0..n)
        .map(|i| ((i * 7919) % 65521) as u16 / ((i % 5) as u16 + 1))
        .collect();
    (v, shape)
}

/// Import the test volume as raw data into `dest` with extra arguments.
fn import_volume(t: &TempDir, dest: &str, extra: &[&str]) -> Vec<u8> {
    let (v, _) = volume();
    let bytes = le_u16(&v);
    let raw = t.path("volume.raw");
    std::fs::write(&raw, &bytes).unwrap();
    let mut args = vec![
        "import", &raw, dest, "--dtype", "uint16", "--shape", "37,29,11",
    ];
    args.extend_from_slice(extra);
    ok(&args);
    bytes
}

#[test]
fn import_and_cat_round_trip_raw_and_npy() {
    let t = TempDir::new("roundtrip");
    let vol = t.path("vol.n5");
    let bytes = import_volume(&t, &format!("{vol}/raw"), &["-b", "8,8,4", "-c", "gzip"]);
    assert_eq!(ok(&["cat", &format!("{vol}/raw")]).stdout, bytes);
    let info = json(&["info", "--json", &format!("{vol}/raw")]);
    assert_eq!(info["blockSize"], json!([8, 8, 4]));
    assert_eq!(info["compression"]["type"], "gzip");
    assert_eq!(info["blocks"]["stored"], json!(5 * 4 * 3));
    assert_eq!(info["edgeBlocks"], "truncated");

    // .npy out, .npy in, with another compression and the default block size.
    let npy = t.path("v.npy");
    ok(&["cat", &format!("{vol}/raw"), "-o", &npy]);
    ok(&["import", &npy, &format!("{vol}/from_npy"), "-c", "zstd:5"]);
    let info = json(&["info", "--json", &format!("{vol}/from_npy")]);
    assert_eq!(info["dimensions"], json!([37, 29, 11]));
    assert_eq!(info["blockSize"], json!([37, 29, 11]));
    assert_eq!(info["compression"], json!({"type": "zstd", "level": 5}));
    assert_eq!(ok(&["cat", &format!("{vol}/from_npy")]).stdout, bytes);
    let npy2 = t.path("v2.npy");
    ok(&["cat", &format!("{vol}/from_npy"), "-o", &npy2]);
    assert_eq!(std::fs::read(&npy).unwrap(), std::fs::read(&npy2).unwrap());

    // Every numeric type survives raw import and cat.
    for (dtype, size) in [
        ("uint8", 1),
        ("int8", 1),
        ("int16", 2),
        ("uint32", 4),
        ("int32", 4),
        ("float32", 4),
        ("uint64", 8),
        ("int64", 8),
        ("float64", 8),
    ] {
        let data: Vec<u8> = (0..6 * 5 * size).map(|i| (i * 31 % 251) as u8).collect();
        let raw = t.path(&format!("{dtype}.raw"));
        std::fs::write(&raw, &data).unwrap();
        let ds = format!("{vol}/types/{dtype}");
        ok(&[
            "import", &raw, &ds, "--dtype", dtype, "--shape", "6,5", "-b", "4,4", "-c", "raw",
        ]);
        assert_eq!(ok(&["cat", &ds]).stdout, data, "{dtype}");
        let npy = t.path(&format!("{dtype}.npy"));
        ok(&["cat", &ds, "-o", &npy]);
        ok(&["import", &npy, &format!("{ds}_again"), "-c", "lz4"]);
        assert_eq!(
            ok(&["cat", &format!("{ds}_again")]).stdout,
            data,
            "{dtype} via npy"
        );
    }
}

#[test]
fn import_reads_fortran_order_and_big_endian_npy() {
    let t = TempDir::new("npy");
    let vol = t.path("n.n5");
    // A Fortran-order big-endian int16 array of shape (3, 2): its N5 shape is [3, 2].
    let dict = "{'descr': '>i2', 'fortran_order': True, 'shape': (3, 2), }";
    let mut header = dict.to_string();
    while !(10 + header.len() + 1).is_multiple_of(64) {
        header.push(' ');
    }
    header.push('\n');
    let mut file = b"\x93NUMPY\x01\x00".to_vec();
    file.extend_from_slice(&(header.len() as u16).to_le_bytes());
    file.extend_from_slice(header.as_bytes());
    let values: [i16; 6] = [1, -2, 300, -400, 5000, -6000];
    for v in values {
        file.extend_from_slice(&v.to_be_bytes());
    }
    let path = t.path("f.npy");
    std::fs::write(&path, &file).unwrap();
    ok(&["import", &path, &format!("{vol}/f")]);
    let info = json(&["info", "--json", &format!("{vol}/f")]);
    assert_eq!(info["dimensions"], json!([3, 2]));
    assert_eq!(info["dataType"], "int16");
    let out = ok(&["cat", &format!("{vol}/f")]).stdout;
    let expected: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    assert_eq!(out, expected);
    // A file that is not .npy, and a raw file of the wrong size.
    std::fs::write(t.path("bad.npy"), b"hello").unwrap();
    fails(
        &["import", &t.path("bad.npy"), &format!("{vol}/bad")],
        1,
        "bad.npy",
    );
    std::fs::write(t.path("short.raw"), [0u8; 10]).unwrap();
    fails(
        &[
            "import",
            &t.path("short.raw"),
            &format!("{vol}/s"),
            "--dtype",
            "u16",
            "--shape",
            "3,3",
        ],
        1,
        "short.raw",
    );
    fails(
        &["import", &t.path("short.raw"), &format!("{vol}/s")],
        2,
        "--dtype",
    );
    fails(
        &["import", &path, &format!("{vol}/x"), "-c", "snappy"],
        2,
        "--compression",
    );
    // Importing over an existing dataset is refused.
    fails(&["import", &path, &format!("{vol}/f")], 1, "already exists");
}

#[test]
fn verify_reports_corrupt_truncated_and_mis_sized_blocks() {
    let t = TempDir::new("verify");
    let vol = t.path("v.n5");
    import_volume(&t, &format!("{vol}/gz"), &["-b", "8,8,4", "-c", "gzip"]);
    import_volume(&t, &format!("{vol}/raw"), &["-b", "8,8,4", "-c", "raw"]);
    let clean = json(&["verify", "--json", &vol]);
    assert_eq!(clean["ok"], true);
    assert_eq!(clean["blocks"], json!(2 * 60));

    // Flip the payload of one gzip block, cut another in half, cut a raw one.
    let corrupt = format!("{vol}/gz/1/2/0");
    let mut b = std::fs::read(&corrupt).unwrap();
    for x in &mut b[20..] {
        *x ^= 0x5a;
    }
    std::fs::write(&corrupt, &b).unwrap();
    let truncated = format!("{vol}/gz/3/0/1");
    let b = std::fs::read(&truncated).unwrap();
    std::fs::write(&truncated, &b[..b.len() / 2]).unwrap();
    let raw_cut = format!("{vol}/raw/0/0/0");
    let b = std::fs::read(&raw_cut).unwrap();
    std::fs::write(&raw_cut, &b[..b.len() - 3]).unwrap();
    // An interior block written smaller than its extent.
    let c = Container::open(&vol, Mode::ReadWrite).unwrap();
    let ds = c.open_dataset("raw").unwrap();
    ds.write_block(&[1, 1, 1], &[2, 2, 2], &[0u8; 16]).unwrap();
    let mis_sized = format!("{vol}/raw/1/1/1");

    let r = run(&["verify", "--json", &vol]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    assert_eq!(v["ok"], false);
    let bad = v["bad"].as_array().unwrap();
    let kind_of = |p: &str| {
        bad.iter()
            .find(|b| b["path"] == p)
            .unwrap_or_else(|| panic!("{p} not reported: {v}"))["kind"]
            .clone()
    };
    assert_eq!(kind_of(&corrupt), "corrupt");
    assert_eq!(kind_of(&truncated), "truncated");
    assert_eq!(kind_of(&raw_cut), "truncated");
    assert_eq!(kind_of(&mis_sized), "mis-sized");
    assert_eq!(bad.len(), 4, "{v}");
    let b = bad.iter().find(|b| b["path"] == corrupt).unwrap();
    assert_eq!(b["dataset"], "gz");
    assert_eq!(b["grid"], json!([1, 2, 0]));

    // The text report names each bad block file; exit code 3.
    let r = run(&["verify", &vol]);
    assert_eq!(r.code, 3);
    let text = r.text();
    for p in [&corrupt, &truncated, &raw_cut, &mis_sized] {
        assert!(text.contains(p.as_str()), "{p} missing in {text}");
    }
    assert!(text.lines().last().unwrap().ends_with("4 bad"), "{text}");
    // Verifying only the intact dataset... is not intact either; a fresh one is.
    import_volume(&t, &format!("{vol}/fresh"), &["-c", "xz"]);
    ok(&["verify", &format!("{vol}/fresh")]);
    // Broken metadata is reported as well.
    std::fs::write(format!("{vol}/fresh/attributes.json"), b"{not json").unwrap();
    let r = run(&["verify", "--json", &format!("{vol}/fresh")]);
    assert_eq!(r.code, 3);
    let v: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    assert_eq!(v["bad"][0]["kind"], "metadata");
}

#[test]
fn cp_between_compressions_round_trips_and_resumes() {
    let t = TempDir::new("cp");
    let a = t.path("a.n5");
    let b = t.path("b.n5");
    let bytes = import_volume(&t, &format!("{a}/img/s0"), &["-b", "8,8,4", "-c", "gzip"]);
    ok(&["attrs", "set", &format!("{a}/img"), "scales[1]", "[2,2,1]"]);
    ok(&[
        "attrs",
        "set",
        &format!("{a}/img/s0"),
        "resolution",
        "[4,4,40]",
    ]);

    // gzip -> zstd -> raw -> bzip2, comparing the data each time.
    let mut from = format!("{a}/img");
    for (i, comp) in [
        "zstd",
        "raw",
        "{\"type\":\"bzip2\",\"blockSize\":1}",
        "blosc",
    ]
    .iter()
    .enumerate()
    {
        let to = format!("{b}/step{i}");
        let r = ok(&["cp", "--threads", "2", "-c", comp, &from, &to]);
        assert!(r.text().contains("60 blocks written"), "{}", r.text());
        assert_eq!(ok(&["cat", &format!("{to}/s0")]).stdout, bytes, "{comp}");
        let info = json(&["info", "--json", &format!("{to}/s0")]);
        assert_eq!(info["attributes"], json!({"resolution": [4, 4, 40]}));
        assert_eq!(
            json(&["attrs", "get", "--json", &to, "scales[1]"]),
            json!([2, 2, 1])
        );
        // A second copy skips every block.
        let again = ok(&["cp", "-c", comp, &from, &to]).text();
        assert!(
            again.contains("0 blocks written, 60 already identical"),
            "{again}"
        );
        from = to;
    }
    // Resuming: a missing and a damaged block are written again, nothing else.
    let to = format!("{b}/step0");
    std::fs::remove_file(format!("{to}/s0/0/0/0")).unwrap();
    std::fs::write(format!("{to}/s0/1/1/1"), b"garbage").unwrap();
    let r = ok(&["cp", "-c", "zstd", &format!("{a}/img"), &to]).text();
    assert!(r.contains("2 blocks written, 58 already identical"), "{r}");
    assert_eq!(ok(&["cat", &format!("{to}/s0")]).stdout, bytes);
    // Other options than the existing copy's are refused.
    fails(
        &["cp", "-c", "raw", &format!("{a}/img"), &to],
        1,
        "other metadata",
    );
    // A copy into itself is refused.
    fails(&["cp", &a, &format!("{a}/inside")], 2, "itself");
}

#[test]
fn cp_rechunks_exactly() {
    let t = TempDir::new("rechunk");
    let a = t.path("a.n5");
    let bytes = import_volume(&t, &format!("{a}/v"), &["-b", "8,8,4", "-c", "gzip"]);
    for (block, blocks) in [("5,7,3", 8 * 5 * 4), ("64,64,64", 1), ("1,29,11", 37)] {
        let to = format!("{a}/r_{}", block.replace(',', "_"));
        let r = ok(&["cp", "-b", block, "-c", "lz4", &format!("{a}/v"), &to]).text();
        let written = if blocks == 1 {
            "1 block written".to_string()
        } else {
            format!("{blocks} blocks written")
        };
        assert!(r.contains(&written), "{block}: {r}");
        let info = json(&["info", "--json", &to]);
        let want: Vec<u64> = block.split(',').map(|x| x.parse().unwrap()).collect();
        assert_eq!(info["blockSize"], json!(want));
        assert_eq!(ok(&["cat", &to]).stdout, bytes, "{block}");
        let again = ok(&["cp", "-b", block, "-c", "lz4", &format!("{a}/v"), &to]).text();
        assert!(again.contains("0 blocks written"), "{again}");
    }
    fails(
        &["cp", "-b", "4,4", &format!("{a}/v"), &format!("{a}/bad")],
        2,
        "--block-size",
    );
}

#[test]
fn padded_edge_blocks_are_recognised() {
    let t = TempDir::new("padded");
    let vol = t.path("p.n5");
    let c = Container::open(&vol, Mode::Create).unwrap();
    let attrs = n5::DatasetAttributes::new(
        vec![5, 3],
        vec![4, 4],
        n5::DataType::U8,
        n5::Compression::Raw,
    )
    .unwrap();
    let ds = c.create_dataset("d", attrs).unwrap();
    // Both blocks stored at the full blockSize, as tensorstore and zarr do.
    ds.write_block(&[0, 0], &[4, 4], &[1u8; 16]).unwrap();
    ds.write_block(&[1, 0], &[4, 4], &[2u8; 16]).unwrap();
    let info = json(&["info", "--json", &format!("{vol}/d")]);
    assert_eq!(info["edgeBlocks"], "padded");
    assert_eq!(
        info["edgeBlockCounts"],
        json!({"truncated": 0, "padded": 2, "other": 0})
    );
    ok(&["verify", &vol]);
    assert_eq!(
        ok(&["cat", &format!("{vol}/d")]).stdout,
        [1, 1, 1, 1, 2, 1, 1, 1, 1, 2, 1, 1, 1, 1, 2]
    );
    // cp writes truncated edge blocks with the same data.
    ok(&["cp", &format!("{vol}/d"), &format!("{vol}/t")]);
    assert_eq!(
        json(&["info", "--json", &format!("{vol}/t")])["edgeBlocks"],
        "truncated"
    );
    assert_eq!(
        ok(&["cat", &format!("{vol}/t")]).stdout,
        ok(&["cat", &format!("{vol}/d")]).stdout
    );
}

#[test]
fn attrs_set_get_rm_by_attribute_path() {
    let t = TempDir::new("attrs");
    let vol = t.path("a.n5");
    import_volume(&t, &format!("{vol}/g/ds"), &[]);
    let g = format!("{vol}/g");
    ok(&["attrs", "set", &g, "a/b[2]", "{\"k\": 1}"]);
    assert_eq!(
        json(&["attrs", "get", "--json", &g, "a"]),
        json!({"b": [null, null, {"k": 1}]})
    );
    assert_eq!(json(&["attrs", "get", "--json", &g, "a/b[2]/k"]), json!(1));
    ok(&["attrs", "set", &g, "a/b[0]", "\"first\""]);
    assert_eq!(ok(&["attrs", "get", &g, "a/b[0]"]).text(), "first\n");
    ok(&["attrs", "set", "--string", &g, "note", "plain text"]);
    assert_eq!(
        json(&["attrs", "get", "--json", &g, "note"]),
        json!("plain text")
    );
    ok(&["attrs", "rm", &g, "a/b[0]"]);
    assert_eq!(
        json(&["attrs", "get", "--json", &g, "a/b"]),
        json!([null, {"k": 1}])
    );
    fails(&["attrs", "rm", &g, "a/b[7]"], 1, &g);
    ok(&["attrs", "rm", "--force", &g, "a/b[7]"]);
    fails(&["attrs", "set", &g, "x", "not json"], 2, "not json");
    fails(&["attrs", "get", &format!("{vol}/nope"), "x"], 1, "nope");
    // Dataset attributes live beside the metadata, which stays intact.
    let ds = format!("{vol}/g/ds");
    ok(&["attrs", "set", &ds, "unit", "\"nm\""]);
    let doc = json(&["attrs", "get", "--json", &ds]);
    assert_eq!(doc["unit"], "nm");
    assert_eq!(doc["dataType"], "uint16");
    ok(&["verify", &ds]);
}

#[test]
fn ls_tree_and_json_outputs() {
    let t = TempDir::new("ls");
    let vol = t.path("l.n5");
    import_volume(
        &t,
        &format!("{vol}/raw/s0"),
        &["-c", "raw", "-b", "16,16,16"],
    );
    Container::open(&vol, Mode::ReadWrite)
        .unwrap()
        .create_group("labels")
        .unwrap();
    assert_eq!(
        json(&["ls", "--json", &vol]),
        json!([{"path": "labels", "type": "group"}, {"path": "raw", "type": "group"}])
    );
    assert_eq!(
        json(&["ls", "-r", "--json", &vol]),
        json!([
            {"path": "labels", "type": "group"},
            {"path": "raw", "type": "group"},
            {"path": "raw/s0", "type": "dataset", "dataType": "uint16",
             "dimensions": [37, 29, 11], "blockSize": [16, 16, 16], "compression": {"type": "raw"},
             "dtype": {"name": "uint16", "size": 2, "byte_order": "big", "stored": "uint16"}}
        ])
    );
    let text = ok(&["ls", "-r", &vol]).text();
    assert!(
        text.contains("raw/s0") && text.contains("uint16") && text.contains("[37, 29, 11]"),
        "{text}"
    );
    let tree = ok(&["tree", &vol]).text();
    assert_eq!(tree.lines().count(), 4, "{tree}");
    assert!(tree.contains("└── s0"), "{tree}");
    let tj = json(&["tree", "--json", &vol]);
    assert_eq!(tj["children"][1]["children"][0]["path"], "raw/s0");
    // ls of a dataset lists the dataset; relative paths work from its directory.
    assert_eq!(
        json(&["ls", "--json", &format!("{vol}/raw/s0")])[0]["type"],
        "dataset"
    );
    let r = run_in(&["ls", "-r", "l.n5"], Some(&t.0));
    assert_eq!(r.code, 0);
    assert!(r.text().contains("raw/s0"));
    // A container without .n5 in its name is found by its version.
    let plain = t.path("plain");
    std::fs::rename(&vol, &plain).unwrap();
    let info = json(&["info", "--json", &format!("{plain}/raw/s0")]);
    assert_eq!(info["path"], "raw/s0");
}

#[test]
fn errors_are_one_line_with_the_path_and_documented_codes() {
    let t = TempDir::new("errors");
    let missing = t.path("missing.n5");
    fails(&["ls", &missing], 1, &missing);
    fails(&["tree", &missing], 1, &missing);
    fails(&["info", &format!("{missing}/ds")], 1, &missing);
    fails(&["verify", &missing], 1, &missing);
    fails(&["cat", &format!("{missing}/ds")], 1, &missing);
    fails(&["cp", &missing, &t.path("x.n5")], 1, &missing);
    let vol = t.path("e.n5");
    import_volume(&t, &format!("{vol}/d"), &[]);
    fails(&["info", &vol], 1, "not a dataset");
    fails(&["ls", &format!("{vol}/nothing")], 1, "nothing");
    fails(
        &["cat", &format!("{vol}/d"), "--shape", "1,2"],
        2,
        "--shape",
    );
    fails(
        &["cat", &format!("{vol}/d"), "--offset", "a,b,c"],
        2,
        "--offset",
    );
    fails(&["ls", "--no-such-option", &vol], 2, "--no-such-option");
    fails(&["frobnicate"], 2, "frobnicate");
    // A corrupt metadata file is an error naming the dataset, not a panic.
    std::fs::write(format!("{vol}/d/attributes.json"), b"[1,").unwrap();
    let r = fails(&["info", &format!("{vol}/d")], 1, "e.n5/d");
    assert!(!r.stderr.contains("panicked"));
    // No arguments: usage on stderr, exit code 2.
    assert_eq!(run(&[]).code, 2);
}

#[test]
fn every_subcommand_has_help_with_an_example() {
    for sub in [
        vec!["ls"],
        vec!["tree"],
        vec!["info"],
        vec!["attrs", "get"],
        vec!["attrs", "set"],
        vec!["attrs", "rm"],
        vec!["cat"],
        vec!["import"],
        vec!["cp"],
        vec!["verify"],
    ] {
        let mut args = sub.clone();
        args.push("--help");
        let r = ok(&args);
        let text = r.text();
        assert!(text.contains("Example"), "{sub:?}: {text}");
        assert!(text.contains("Usage: n5 "), "{sub:?}: {text}");
    }
    let top = ok(&["--help"]).text();
    assert!(top.contains("Exit codes"), "{top}");
    assert!(ok(&["--version"]).text().starts_with("n5 "));
}

#[test]
fn clean_removes_stale_temporaries_only() {
    let t = TempDir::new("clean");
    let vol = t.path("c.n5");
    let bytes = import_volume(&t, &format!("{vol}/img"), &["-b", "16,16,4", "-c", "zstd"]);
    // What killed writers leave: temporaries beside a block and attributes.
    let stale = [
        format!("{vol}/img/0/0/.n5tmp.0.4242.7"),
        format!("{vol}/img/.n5tmp.attributes.json.4242.8"),
    ];
    for f in &stale {
        std::fs::write(f, b"half a block").unwrap();
    }
    // Younger than the default hour: kept.
    let kept = json(&["clean", "--json", &vol]);
    assert_eq!(kept, json!({"removed": 0, "bytes": 0}));
    assert!(stale.iter().all(|f| std::path::Path::new(f).exists()));
    let out = ok(&["clean", "--older-than", "0", &vol]).text();
    assert!(
        out.contains("removed 2 stale temporary files (24 B)"),
        "{out}"
    );
    assert!(stale.iter().all(|f| !std::path::Path::new(f).exists()));
    // The data is untouched; nothing is left to clean.
    assert!(json(&["verify", "--json", &vol])["ok"] == true);
    let back = run(&["cat", &format!("{vol}/img")]);
    assert_eq!(back.stdout, bytes);
    let again = json(&["clean", "--json", "--older-than", "0", &vol]);
    assert_eq!(again["removed"], 0);
    // A directory that is not a container is refused and left as it was.
    let plain = t.path("plain");
    std::fs::create_dir_all(format!("{plain}/sub")).unwrap();
    let temp = format!("{plain}/sub/.n5tmp.x.1.2");
    std::fs::write(&temp, b"x").unwrap();
    fails(
        &["clean", "--older-than", "0", &plain],
        1,
        "not a container",
    );
    assert!(std::path::Path::new(&temp).exists());
    assert!(!std::path::Path::new(&format!("{plain}/attributes.json")).exists());
}
