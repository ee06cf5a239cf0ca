//! hdmf-zarr links and object references (NWB files stored as Zarr) through
//! the C API, on disk, against the hdmf-zarr corpus (`shared/corpus-hdmf`,
//! written by hdmf-zarr 0.14 in Zarr v3 and 0.13 in Zarr v2) and its
//! manifest, which hdmf-zarr's own `resolve_ref` checked:
//!
//! * every link is listed by `n5_links_list` and resolved by
//!   `n5_link_resolve` to the (location, path, kind) the manifest names,
//!   external ones in the sibling container; `n5_list` has the link names
//!   sorted with the nodes, `n5_list_recursive` does not descend into
//!   links; datasets open through links (their bytes are the target's);
//! * `"follow_links": false`; dangling links (a container copied without
//!   its target, a wrong path), the 0.10.0 parent-relative form, absolute
//!   and escaping sources; cycles and chains of 40 and 41 links;
//! * `n5_link_create` (both conventions, the final target stored, every
//!   error), `n5_remove` of a link, writes through links, consolidated
//!   metadata kept up to date;
//! * `n5_reference_resolve` of every attribute reference and reference
//!   element of the manifest, in every accepted form, and its errors.

mod common;

use std::path::{Path, PathBuf};

use common::capi::{Failure, C};
use common::{copy_dir, hdmf_corpus_dir, sha256, Scratch};
use n5::ffi::{
    N5_ERR_ALREADY_EXISTS, N5_ERR_DANGLING_LINK, N5_ERR_INVALID_ARGUMENT, N5_ERR_JSON,
    N5_ERR_LINK_CYCLE, N5_ERR_NOT_FOUND, N5_ERR_READ_ONLY, N5_ERR_UNSUPPORTED, N5_MODE_CREATE,
    N5_MODE_READ, N5_MODE_READ_WRITE,
};
use serde_json::{json, Value};

fn manifest(corpus: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(corpus.join("manifest.json")).unwrap()).unwrap()
}

fn loc(p: &Path) -> String {
    p.to_str().unwrap().to_string()
}

/// The manifest's kind (`array`/`group`) as the C API names it.
fn kind(manifest_kind: &Value) -> &'static str {
    match manifest_kind.as_str().unwrap() {
        "array" => "dataset",
        _ => "group",
    }
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

/// `path` of a manifest entry without its leading `/`.
fn rel(path: &str) -> &str {
    path.trim_start_matches('/')
}

#[test]
fn every_link_of_the_corpus_lists_and_resolves_as_the_manifest_says() {
    let Some(corpus) = hdmf_corpus_dir() else {
        return;
    };
    let m = manifest(&corpus);
    let mut checked = 0;
    for (name, cm) in m["containers"].as_object().unwrap() {
        let root = loc(&corpus.join(name));
        let c = C::open(&root, N5_MODE_READ, "{}").unwrap();
        assert_eq!(c.root(), root);
        let links = cm["links"].as_array().unwrap();
        let mut groups: Vec<&str> = links.iter().map(|l| l["group"].as_str().unwrap()).collect();
        groups.dedup();
        for group in groups {
            let listed = c.links(group).unwrap();
            let want: Vec<&Value> = links.iter().filter(|l| l["group"] == group).collect();
            let listed = listed.as_array().unwrap();
            assert_eq!(listed.len(), want.len(), "{name}{group}: {listed:?}");
            for (got, l) in listed.iter().zip(&want) {
                let resolved = &l["resolved"];
                let target = json!({
                    "location": loc(&corpus.join(resolved["container"].as_str().unwrap())),
                    "path": resolved["path"],
                    "kind": kind(&resolved["kind"]),
                });
                let entry = json!({"name": l["name"], "source": l["source"], "path": l["path"],
                                   "target": target});
                assert_eq!(got, &entry, "{name}{group}");
                // The same through n5_link_resolve, and exists answers for
                // the target.
                let path = format!("{group}/{}", l["name"].as_str().unwrap());
                let r = c.resolve(&path).unwrap();
                assert_eq!(r["location"], target["location"], "{name}{path}");
                assert_eq!(r["path"], target["path"], "{name}{path}");
                assert_eq!(r["kind"], target["kind"], "{name}{path}");
                assert!(r["hops"].as_u64().unwrap() >= 1, "{r}");
                assert!(c.exists(&path).unwrap(), "{name}{path}");
                assert_eq!(
                    c.dataset_exists(&path).unwrap(),
                    target["kind"] == "dataset",
                    "{name}{path}"
                );
                checked += 1;
            }
        }
        // A plain node resolves to itself, with no hops; groups without
        // links and datasets list none.
        let r = c.resolve("/acquisition").unwrap();
        assert_eq!(
            r,
            json!({"location": root, "path": "/acquisition", "kind": "group", "hops": 0})
        );
        assert_eq!(c.resolve("").unwrap()["path"], "/");
        assert_eq!(c.links("/").unwrap(), json!([]));
        let array = cm["arrays"][0]["path"].as_str().unwrap();
        assert_eq!(c.links(array).unwrap(), json!([]));
        fails(
            c.resolve("acquisition/nope"),
            N5_ERR_NOT_FOUND,
            "acquisition/nope",
        );
        fails(c.links("nope"), N5_ERR_NOT_FOUND, "nope");
    }
    assert_eq!(checked, 22, "every link of the six containers");
}

/// Through links that lead into the external container's groups too.
#[test]
fn paths_through_group_links_resolve_in_every_segment() {
    let Some(corpus) = hdmf_corpus_dir() else {
        return;
    };
    for (linking, target) in [
        ("nwb-external.nwb.zarr", "nwb-external-target.nwb.zarr"),
        (
            "nwb-external-v2.nwb.zarr",
            "nwb-external-target-v2.nwb.zarr",
        ),
    ] {
        let c = C::open(&loc(&corpus.join(linking)), N5_MODE_READ, "{}").unwrap();
        let r = c
            .resolve("processing/analysis/external_series/raw/timestamps")
            .unwrap();
        assert_eq!(
            r,
            json!({"location": loc(&corpus.join(target)), "path": "/acquisition/raw/timestamps",
                   "kind": "dataset", "hops": 1})
        );
        // Listing a group reached through an external link lists the
        // target group's members (and its links).
        let t = C::open(&loc(&corpus.join(target)), N5_MODE_READ, "{}").unwrap();
        assert_eq!(
            c.list("processing/analysis/external_series/raw").unwrap(),
            t.list("acquisition/raw").unwrap()
        );
        assert_eq!(
            c.attributes("processing/analysis/external_series/raw")
                .unwrap(),
            t.attributes("acquisition/raw").unwrap()
        );
        fails(
            c.resolve("processing/analysis/external_series/raw/nope"),
            N5_ERR_NOT_FOUND,
            "nope",
        );
    }
    let c = C::open(&loc(&corpus.join("nwb-links.nwb.zarr")), N5_MODE_READ, "{}").unwrap();
    let r = c
        .resolve("processing/behavior/BehavioralTimeSeries/ts_a/timestamps")
        .unwrap();
    assert_eq!(r["path"], "/acquisition/ts_a/timestamps");
    assert_eq!(r["hops"], 1);
    let r = c
        .resolve("stimulus/presentation/shown_images/indexed_images/img1")
        .unwrap();
    assert_eq!(r["path"], "/acquisition/images/img1");
}

/// The names of the members of `group` by the manifest: its groups, its
/// arrays and its links, sorted.
fn members(cm: &Value, group: &str) -> Vec<String> {
    let prefix = if group == "/" {
        "/".to_string()
    } else {
        format!("{group}/")
    };
    let mut out: Vec<String> = cm["groups"]
        .as_array()
        .unwrap()
        .iter()
        .chain(cm["arrays"].as_array().unwrap())
        .filter_map(|n| {
            let rest = n["path"].as_str().unwrap().strip_prefix(&prefix)?;
            (!rest.is_empty() && !rest.contains('/')).then(|| rest.to_string())
        })
        .collect();
    for l in cm["links"].as_array().unwrap() {
        if l["group"] == group {
            out.push(l["name"].as_str().unwrap().to_string());
        }
    }
    out.sort();
    out
}

#[test]
fn listings_have_the_link_names_and_deep_listings_stop_at_links() {
    let Some(corpus) = hdmf_corpus_dir() else {
        return;
    };
    let m = manifest(&corpus);
    for (name, cm) in m["containers"].as_object().unwrap() {
        let root = loc(&corpus.join(name));
        let c = C::open(&root, N5_MODE_READ, "{}").unwrap();
        for g in cm["groups"].as_array().unwrap() {
            let group = g["path"].as_str().unwrap();
            assert_eq!(c.list(group).unwrap(), members(cm, group), "{name}{group}");
        }
        // The deep listing has every node and every link once, and nothing
        // below a link.
        let deep = c.list_recursive("").unwrap();
        let mut want: Vec<String> = cm["groups"]
            .as_array()
            .unwrap()
            .iter()
            .chain(cm["arrays"].as_array().unwrap())
            .map(|n| rel(n["path"].as_str().unwrap()).to_string())
            .filter(|p| !p.is_empty())
            .collect();
        for l in cm["links"].as_array().unwrap() {
            want.push(format!(
                "{}/{}",
                rel(l["group"].as_str().unwrap()),
                l["name"].as_str().unwrap()
            ));
        }
        let mut sorted = deep.clone();
        sorted.sort();
        want.sort();
        assert_eq!(sorted, want, "{name}");
        // Depth first in sorted order, as before.
        if let Some(i) = deep
            .iter()
            .position(|p| p == "processing/analysis/external_series/raw")
        {
            assert!(!deep[i + 1].starts_with("processing/analysis/external_series/raw/"));
        }
    }
}

#[test]
fn datasets_open_through_links_and_read_their_targets_bytes() {
    let Some(corpus) = hdmf_corpus_dir() else {
        return;
    };
    let m = manifest(&corpus);
    let mut read = 0;
    for (name, cm) in m["containers"].as_object().unwrap() {
        let c = C::open(&loc(&corpus.join(name)), N5_MODE_READ, "{}").unwrap();
        for l in cm["links"].as_array().unwrap() {
            let resolved = &l["resolved"];
            if resolved["kind"] != "array" || resolved["array_kind"] != "numeric" {
                continue;
            }
            let path = format!(
                "{}/{}",
                l["group"].as_str().unwrap(),
                l["name"].as_str().unwrap()
            );
            let d = c.open_dataset(&path).unwrap();
            assert_eq!(d.path(), rel(resolved["path"].as_str().unwrap()));
            let bytes = d.read_all().unwrap();
            assert_eq!(
                sha256(&bytes),
                resolved["sha256"].as_str().unwrap(),
                "{name}{path}"
            );
            // The target opened directly, in its own container.
            let target = C::open(
                &loc(&corpus.join(resolved["container"].as_str().unwrap())),
                N5_MODE_READ,
                "{}",
            )
            .unwrap();
            let direct = target
                .open_dataset(resolved["path"].as_str().unwrap())
                .unwrap();
            assert_eq!(direct.read_all().unwrap(), bytes, "{name}{path}");
            read += 1;
        }
    }
    assert_eq!(read, 12, "the numeric datasets links lead to");
    // A dataset opened through an external link keeps its container alive
    // after the linking container's handle is freed.
    let c = C::open(
        &loc(&corpus.join("nwb-external.nwb.zarr")),
        N5_MODE_READ,
        "{}",
    )
    .unwrap();
    let d = c
        .open_dataset("processing/analysis/external_series/raw/data")
        .unwrap();
    drop(c);
    let bytes = d.read_all().unwrap();
    assert_eq!(d.path(), "acquisition/raw/data");
    assert_eq!(bytes.len(), 40 * 3 * 4);
}

#[test]
fn follow_links_false_neither_lists_nor_finds_links() {
    let Some(corpus) = hdmf_corpus_dir() else {
        return;
    };
    let root = loc(&corpus.join("nwb-links.nwb.zarr"));
    let c = C::open(&root, N5_MODE_READ, r#"{"follow_links": false}"#).unwrap();
    assert_eq!(c.list("acquisition/ts_b").unwrap(), ["data"]);
    assert!(!c.exists("acquisition/ts_b/timestamps").unwrap());
    assert!(!c.dataset_exists("acquisition/ts_b/timestamps").unwrap());
    fails(
        c.open_dataset("acquisition/ts_b/timestamps"),
        N5_ERR_NOT_FOUND,
        "timestamps",
    );
    fails(
        c.attributes("processing/behavior/BehavioralTimeSeries/ts_a"),
        N5_ERR_NOT_FOUND,
        "ts_a",
    );
    let deep = c.list_recursive("processing").unwrap();
    assert!(!deep.iter().any(|p| p.ends_with("/ts_a")), "{deep:?}");
    // The link functions work either way.
    assert_eq!(
        c.links("acquisition/ts_b")
            .unwrap()
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        c.resolve("acquisition/ts_b/timestamps").unwrap()["path"],
        "/acquisition/ts_a/timestamps"
    );
    let followed = C::open(&root, N5_MODE_READ, r#"{"follow_links": true}"#).unwrap();
    assert_eq!(
        followed.list("acquisition/ts_b").unwrap(),
        ["data", "timestamps"]
    );
    fails(
        C::open(&root, N5_MODE_READ, r#"{"follow_links": "yes"}"#),
        N5_ERR_INVALID_ARGUMENT,
        "follow_links",
    );
}

/// Copies of corpus containers in a scratch directory.
fn scratch_copy(corpus: &Path, names: &[&str], tag: &str) -> (Scratch, Vec<PathBuf>) {
    let scratch = Scratch::new(tag);
    let dir = std::fs::canonicalize(scratch.path()).unwrap();
    let paths = names
        .iter()
        .map(|n| {
            let to = dir.join(n);
            copy_dir(&corpus.join(n), &to);
            to
        })
        .collect();
    (scratch, paths)
}

/// Replace the links of `group` in the container at `root` (its format's
/// key) with `links`, as another writer would.
fn write_links(root: &Path, group: &str, links: Value) {
    let c = C::open(&loc(root), N5_MODE_READ_WRITE, r#"{"follow_links": false}"#).unwrap();
    let attrs = c.attributes(group).unwrap();
    let key = if attrs.get("zarr_link").is_some() || root.join(".zgroup").exists() {
        "zarr_link"
    } else {
        "_LINKS"
    };
    c.set_attributes(group, &json!({ key: links })).unwrap();
}

#[test]
fn dangling_links_are_named_and_exist_as_nothing() {
    let Some(corpus) = hdmf_corpus_dir() else {
        return;
    };
    for (linking, target) in [
        ("nwb-external.nwb.zarr", "nwb-external-target.nwb.zarr"),
        (
            "nwb-external-v2.nwb.zarr",
            "nwb-external-target-v2.nwb.zarr",
        ),
    ] {
        // The linking container without its sibling.
        let (_s, paths) = scratch_copy(&corpus, &[linking], "dangling");
        let c = C::open(&loc(&paths[0]), N5_MODE_READ, "{}").unwrap();
        let listed = c.links("acquisition/derived").unwrap();
        for entry in listed.as_array().unwrap() {
            assert_eq!(entry["target"], Value::Null, "{entry}");
            assert_eq!(entry["status"], "N5_ERR_DANGLING_LINK", "{entry}");
            let e = entry["error"].as_str().unwrap();
            assert!(
                e.contains("container is missing") && e.contains(target),
                "{e}"
            );
        }
        let path = "acquisition/derived/data";
        assert!(!c.exists(path).unwrap());
        assert!(!c.dataset_exists(path).unwrap());
        assert!(!c
            .exists("processing/analysis/external_series/raw/data")
            .unwrap());
        fails(
            c.open_dataset(path),
            N5_ERR_DANGLING_LINK,
            "/acquisition/derived/data",
        );
        fails(
            c.resolve(path),
            N5_ERR_DANGLING_LINK,
            "container is missing",
        );
        fails(
            c.attributes("processing/analysis/external_series/raw"),
            N5_ERR_DANGLING_LINK,
            "external_series/raw",
        );
        fails(
            c.list("processing/analysis/external_series/raw"),
            N5_ERR_DANGLING_LINK,
            target,
        );
        // A dangling link is still a member of its group.
        assert_eq!(
            c.list("acquisition/derived").unwrap(),
            ["data", "timestamps"]
        );
        drop(c);

        // Both containers, a link path edited to name nothing.
        let (_s, paths) = scratch_copy(&corpus, &[linking, target], "wrong-path");
        let source = format!("../{target}");
        write_links(
            &paths[0],
            "acquisition/local",
            json!([{"name": "timestamps", "source": source, "path": "/acquisition/nope"}]),
        );
        let c = C::open(&loc(&paths[0]), N5_MODE_READ, "{}").unwrap();
        let entry = &c.links("acquisition/local").unwrap()[0];
        assert_eq!(entry["status"], "N5_ERR_DANGLING_LINK");
        assert!(
            entry["error"]
                .as_str()
                .unwrap()
                .contains("no object at path '/acquisition/nope'"),
            "{entry}"
        );
        assert!(!c.exists("acquisition/local/timestamps").unwrap());
        fails(
            c.open_dataset("acquisition/local/timestamps"),
            N5_ERR_DANGLING_LINK,
            "no object at path",
        );
        // Other links of the container still resolve.
        assert!(c.exists("acquisition/derived/data").unwrap());
        drop(c);

        // hdmf-zarr 0.10.0's form: relative to the linking container's
        // directory.
        write_links(
            &paths[0],
            "acquisition/local",
            json!([{"name": "timestamps", "source": target, "path": "/acquisition/raw/timestamps"}]),
        );
        let c = C::open(&loc(&paths[0]), N5_MODE_READ, "{}").unwrap();
        let r = c.resolve("acquisition/local/timestamps").unwrap();
        assert_eq!(r["location"], loc(&paths[1]));
        drop(c);

        // Sources that are absolute, or climb above the file system's root.
        write_links(
            &paths[0],
            "acquisition/local",
            json!([{"name": "abs", "source": loc(&paths[1]), "path": "/acquisition"},
                   {"name": "up", "source": "../".repeat(64) + "x.zarr", "path": "/"}]),
        );
        let c = C::open(&loc(&paths[0]), N5_MODE_READ, "{}").unwrap();
        fails(
            c.resolve("acquisition/local/abs"),
            N5_ERR_UNSUPPORTED,
            "absolute",
        );
        fails(
            c.resolve("acquisition/local/up"),
            N5_ERR_INVALID_ARGUMENT,
            "climbs above the file-system root",
        );
        let listed = c.links("acquisition/local").unwrap();
        assert_eq!(listed[0]["status"], "N5_ERR_UNSUPPORTED");
        assert_eq!(listed[1]["status"], "N5_ERR_INVALID_ARGUMENT");
        // A malformed list is invalid metadata.
        drop(c);
        write_links(&paths[0], "acquisition/local", json!([{"name": 1}]));
        let c = C::open(&loc(&paths[0]), N5_MODE_READ, "{}").unwrap();
        fails(
            c.links("acquisition/local"),
            n5::ffi::N5_ERR_INVALID_METADATA,
            "acquisition/local",
        );
    }
}

/// A new Zarr v3 container at `root` with the group `g`.
fn new_zarr(root: &Path, format: &str) -> C {
    let c = C::open(
        &loc(root),
        N5_MODE_CREATE,
        &json!({ "format": format }).to_string(),
    )
    .unwrap();
    c.create_group("g/real").unwrap();
    c
}

#[test]
fn cycles_and_long_chains_stop_with_link_cycle() {
    let scratch = Scratch::new("cycles");
    for format in ["zarr3", "zarr2"] {
        let root = scratch.join(&format!("c-{format}.zarr"));
        let c = new_zarr(&root, format);
        let key = if format == "zarr3" {
            "_LINKS"
        } else {
            "zarr_link"
        };
        c.set_attributes(
            "g",
            &json!({ key: [
                {"name": "a", "source": ".", "path": "/g/b"},
                {"name": "b", "source": ".", "path": "/g/a"},
                {"name": "self", "source": ".", "path": "/g/self/x"},
                {"name": "ok", "source": ".", "path": "/g/real"}]}),
        )
        .unwrap();
        for path in ["g/a", "g/b", "g/a/deeper", "g/self"] {
            fails(c.resolve(path), N5_ERR_LINK_CYCLE, "g/");
            fails(c.exists(path), N5_ERR_LINK_CYCLE, "cycle");
            fails(c.open_dataset(path), N5_ERR_LINK_CYCLE, "cycle");
        }
        let listed = c.links("g").unwrap();
        let statuses: Vec<&Value> = listed
            .as_array()
            .unwrap()
            .iter()
            .map(|e| &e["status"])
            .collect();
        assert_eq!(
            statuses,
            [
                &json!("N5_ERR_LINK_CYCLE"),
                &json!("N5_ERR_LINK_CYCLE"),
                &json!("N5_ERR_LINK_CYCLE"),
                &Value::Null
            ]
        );
        assert_eq!(c.resolve("g/ok").unwrap()["path"], "/g/real");

        // A chain of links, each to the next: 40 are followed, 41 not.
        let chain = |n: usize| -> Value {
            (1..=n)
                .map(|i| {
                    let next = if i == n {
                        "/g/real".to_string()
                    } else {
                        format!("/l{}", i + 1)
                    };
                    json!({"name": format!("l{i}"), "source": ".", "path": next})
                })
                .collect()
        };
        c.set_attributes("", &json!({ key: chain(40) })).unwrap();
        let r = c.resolve("l1").unwrap();
        assert_eq!(
            (r["path"].as_str(), r["hops"].as_u64()),
            (Some("/g/real"), Some(40))
        );
        assert!(c.exists("l1").unwrap());
        c.set_attributes("", &json!({ key: chain(41) })).unwrap();
        fails(c.resolve("l1"), N5_ERR_LINK_CYCLE, "more than 40 links");
        fails(c.exists("l1"), N5_ERR_LINK_CYCLE, "more than 40 links");
        assert_eq!(c.resolve("l2").unwrap()["hops"], 40);
    }
}

#[test]
fn links_are_created_in_each_convention_storing_the_final_target() {
    let Some(corpus) = hdmf_corpus_dir() else {
        return;
    };
    for (name, key) in [
        ("nwb-links.nwb.zarr", "_LINKS"),
        ("nwb-links-v2.nwb.zarr", "zarr_link"),
    ] {
        let (_s, paths) = scratch_copy(&corpus, &[name], "create");
        let root = loc(&paths[0]);
        let c = C::open(&root, N5_MODE_READ_WRITE, "{}").unwrap();
        let group = "processing/behavior/BehavioralTimeSeries";
        // Appended to the list the group has; the target is stored as the
        // final node (here through the group's own link), with a leading /.
        c.create_link(
            group,
            "again",
            ".",
            "processing/behavior/BehavioralTimeSeries/ts_a",
        )
        .unwrap();
        c.create_link(
            "processing/behavior",
            "stamps",
            ".",
            "/acquisition/ts_b/timestamps",
        )
        .unwrap();
        let stored = c.attribute(group, key).unwrap();
        let entry = |n: &str, p: &str| -> Value {
            if key == "_LINKS" {
                json!({"source": ".", "path": p, "name": n})
            } else {
                json!({"name": n, "path": p, "source": "."})
            }
        };
        assert_eq!(
            stored,
            json!([
                entry("ts_a", "/acquisition/ts_a"),
                entry("again", "/acquisition/ts_a")
            ])
        );
        // Key order as hdmf-zarr writes it.
        let text = serde_json::to_string(&stored[1]).unwrap();
        let want_text = serde_json::to_string(&entry("again", "/acquisition/ts_a")).unwrap();
        assert_eq!(text, want_text);
        assert_eq!(
            c.attribute("processing/behavior", key).unwrap(),
            json!([entry("stamps", "/acquisition/ts_a/timestamps")])
        );
        assert_eq!(
            c.list("processing/behavior").unwrap(),
            ["BehavioralTimeSeries", "stamps"]
        );
        let d = c.open_dataset("processing/behavior/stamps").unwrap();
        assert_eq!(d.path(), "acquisition/ts_a/timestamps");

        // Errors, and nothing written by them.
        let before = c.attributes("processing/behavior").unwrap();
        fails(
            c.create_link(
                "processing/behavior",
                "BehavioralTimeSeries",
                ".",
                "/acquisition",
            ),
            N5_ERR_ALREADY_EXISTS,
            "BehavioralTimeSeries",
        );
        fails(
            c.create_link("processing/behavior", "stamps", ".", "/acquisition"),
            N5_ERR_ALREADY_EXISTS,
            "stamps",
        );
        for bad in ["", ".", "..", "a/b"] {
            fails(
                c.create_link("processing/behavior", bad, ".", "/acquisition"),
                N5_ERR_INVALID_ARGUMENT,
                "link name",
            );
        }
        fails(
            c.create_link("processing/behavior", "x", ".", "/acquisition/nope"),
            N5_ERR_DANGLING_LINK,
            "/acquisition/nope",
        );
        fails(
            c.create_link(
                "processing/behavior",
                "x",
                "../missing.nwb.zarr",
                "/acquisition",
            ),
            N5_ERR_DANGLING_LINK,
            "container is missing",
        );
        fails(
            c.create_link("processing/nope", "x", ".", "/acquisition"),
            N5_ERR_NOT_FOUND,
            "processing/nope",
        );
        fails(
            c.create_link("acquisition/ts_a/data", "x", ".", "/acquisition"),
            N5_ERR_INVALID_ARGUMENT,
            "dataset",
        );
        fails(
            c.create_link("processing/behavior", "x", ".", "/../x"),
            N5_ERR_INVALID_ARGUMENT,
            "above",
        );
        assert_eq!(c.attributes("processing/behavior").unwrap(), before);
        let r = C::open(&root, N5_MODE_READ, "{}").unwrap();
        fails(
            r.create_link("processing/behavior", "y", ".", "/acquisition"),
            N5_ERR_READ_ONLY,
            "read-only",
        );
    }
    // N5 containers have no links.
    let scratch = Scratch::new("n5-links");
    let root = loc(&scratch.join("c.n5"));
    let c = C::open(&root, N5_MODE_CREATE, "{}").unwrap();
    c.create_group("g").unwrap();
    fails(
        c.create_link("g", "x", ".", "/g"),
        N5_ERR_UNSUPPORTED,
        "no links",
    );
    assert_eq!(c.links("g").unwrap(), json!([]));
    assert_eq!(
        c.resolve("g").unwrap(),
        json!({"location": root, "path": "/g", "kind": "group", "hops": 0})
    );
    fails(c.resolve("x"), N5_ERR_NOT_FOUND, "x");
}

#[test]
fn external_links_are_created_relative_to_the_container() {
    let Some(corpus) = hdmf_corpus_dir() else {
        return;
    };
    let names = ["nwb-external.nwb.zarr", "nwb-external-target.nwb.zarr"];
    let (_s, paths) = scratch_copy(&corpus, &names, "create-external");
    let c = C::open(&loc(&paths[0]), N5_MODE_READ_WRITE, "{}").unwrap();
    // Through the target's own internal link: the final node is stored.
    c.create_link(
        "acquisition",
        "shifted_stamps",
        "../nwb-external-target.nwb.zarr",
        "/acquisition/raw_shifted/timestamps",
    )
    .unwrap();
    // Through this container's external link, named from "." : the
    // entry names the other container.
    c.create_link(
        "acquisition",
        "raw_data",
        ".",
        "/processing/analysis/external_series/raw/data",
    )
    .unwrap();
    // A source naming this very container is ".".
    c.create_link(
        "acquisition",
        "me",
        "../nwb-external.nwb.zarr",
        "/acquisition/derived",
    )
    .unwrap();
    let links = c.attribute("acquisition", "_LINKS").unwrap();
    assert_eq!(
        links,
        json!([
            {"source": "../nwb-external-target.nwb.zarr", "path": "/acquisition/raw/timestamps",
             "name": "shifted_stamps"},
            {"source": "../nwb-external-target.nwb.zarr", "path": "/acquisition/raw/data",
             "name": "raw_data"},
            {"source": ".", "path": "/acquisition/derived", "name": "me"}
        ])
    );
    let r = c.resolve("acquisition/raw_data").unwrap();
    assert_eq!(r["location"], loc(&paths[1]));
    // Links are only created in this container.
    fails(
        c.create_link(
            "processing/analysis/external_series/raw",
            "x",
            ".",
            "/acquisition",
        ),
        N5_ERR_READ_ONLY,
        "external link",
    );
}

#[test]
fn writes_through_links_act_on_their_targets_or_are_read_only() {
    let Some(corpus) = hdmf_corpus_dir() else {
        return;
    };
    let names = [
        "nwb-links.nwb.zarr",
        "nwb-external.nwb.zarr",
        "nwb-external-target.nwb.zarr",
    ];
    let (_s, paths) = scratch_copy(&corpus, &names, "writes");
    let c = C::open(&loc(&paths[0]), N5_MODE_READ_WRITE, "{}").unwrap();
    // Within the container: the target.
    c.set_attributes(
        "processing/behavior/BehavioralTimeSeries/ts_a",
        &json!({"note": "through a link"}),
    )
    .unwrap();
    assert_eq!(
        c.attribute("acquisition/ts_a", "note").unwrap(),
        "through a link"
    );
    let d = c.open_dataset("acquisition/ts_b/timestamps").unwrap();
    let values: Vec<u8> = (0..50)
        .flat_map(|i| (i as f64 * 0.5).to_ne_bytes())
        .collect();
    d.write_all(&values).unwrap();
    let direct = c.open_dataset("acquisition/ts_a/timestamps").unwrap();
    assert_eq!(direct.read_all().unwrap(), values);
    c.create_group("processing/behavior/BehavioralTimeSeries/ts_a/made")
        .unwrap();
    assert!(paths[0].join("acquisition/ts_a/made/zarr.json").is_file());
    let made = c
        .create_dataset(
            "processing/behavior/BehavioralTimeSeries/ts_a/made/values",
            &[3],
        )
        .unwrap();
    assert_eq!(made.path(), "acquisition/ts_a/made/values");
    // At a link's name: already there.
    fails(
        c.create_group("acquisition/ts_b/timestamps"),
        N5_ERR_ALREADY_EXISTS,
        "link",
    );
    fails(
        c.create_dataset("acquisition/ts_b/timestamps", &[3]),
        N5_ERR_ALREADY_EXISTS,
        "link",
    );
    // Removing a link removes its entry only.
    c.remove("acquisition/ts_b/timestamps").unwrap();
    assert!(!c.exists("acquisition/ts_b/timestamps").unwrap());
    assert!(c.exists("acquisition/ts_a/timestamps").unwrap());
    assert_eq!(
        c.attribute("acquisition/ts_b", "_LINKS").unwrap(),
        json!([])
    );
    assert_eq!(c.list("acquisition/ts_b").unwrap(), ["data"]);
    // Removing below a link removes in the target.
    c.remove("processing/behavior/BehavioralTimeSeries/ts_a/made")
        .unwrap();
    assert!(!paths[0].join("acquisition/ts_a/made").exists());
    drop(c);

    // Through external links: read only.
    let c = C::open(&loc(&paths[1]), N5_MODE_READ_WRITE, "{}").unwrap();
    let d = c.open_dataset("acquisition/derived/timestamps").unwrap();
    let values: Vec<u8> = (0..40).flat_map(|i| (i as f64).to_ne_bytes()).collect();
    fails(d.write_all(&values), N5_ERR_READ_ONLY, "external link");
    let group = "processing/analysis/external_series/raw";
    fails(
        c.set_attributes(group, &json!({"x": 1})),
        N5_ERR_READ_ONLY,
        "external link",
    );
    fails(
        c.create_group(&format!("{group}/new")),
        N5_ERR_READ_ONLY,
        "external link",
    );
    fails(
        c.remove(&format!("{group}/data")),
        N5_ERR_READ_ONLY,
        "external link",
    );
    fails(
        c.create_dataset(&format!("{group}/new"), &[2]),
        N5_ERR_READ_ONLY,
        "external link",
    );
    assert!(c.exists(&format!("{group}/data")).unwrap());
    // The link itself is this container's own to remove.
    c.remove(group).unwrap();
    assert!(!c.exists(group).unwrap());
    assert!(paths[2].join("acquisition/raw/data/zarr.json").is_file());
}

/// The consolidated entries of a container: v3 the root's
/// `consolidated_metadata.metadata`, v2 `.zmetadata`'s `metadata`.
fn consolidated(root: &Path) -> Value {
    let v3 = root.join("zarr.json");
    if v3.is_file() {
        let doc: Value = serde_json::from_slice(&std::fs::read(v3).unwrap()).unwrap();
        return doc["consolidated_metadata"]["metadata"].clone();
    }
    let doc: Value =
        serde_json::from_slice(&std::fs::read(root.join(".zmetadata")).unwrap()).unwrap();
    doc["metadata"].clone()
}

#[test]
fn consolidated_metadata_follows_every_metadata_write() {
    let Some(corpus) = hdmf_corpus_dir() else {
        return;
    };
    for (name, v3) in [
        ("nwb-links.nwb.zarr", true),
        ("nwb-links-v2.nwb.zarr", false),
    ] {
        let (_s, paths) = scratch_copy(&corpus, &[name], "consolidated");
        let root = &paths[0];
        let c = C::open(&loc(root), N5_MODE_READ_WRITE, "{}").unwrap();
        let attrs_of = |meta: &Value, p: &str| -> Value {
            if v3 {
                meta[p]["attributes"].clone()
            } else {
                meta[format!("{p}/.zattrs")].clone()
            }
        };
        c.create_link(
            "processing/behavior",
            "stamps",
            ".",
            "/acquisition/ts_a/timestamps",
        )
        .unwrap();
        let key = if v3 { "_LINKS" } else { "zarr_link" };
        let meta = consolidated(root);
        assert_eq!(
            attrs_of(&meta, "processing/behavior")[key],
            c.attribute("processing/behavior", key).unwrap()
        );
        c.set_attributes("acquisition/ts_a", &json!({"added": [1, 2]}))
            .unwrap();
        assert_eq!(
            attrs_of(&consolidated(root), "acquisition/ts_a")["added"],
            json!([1, 2])
        );
        c.create_group("scratch/new/deeper").unwrap();
        c.create_dataset("scratch/new/values", &[4]).unwrap();
        let meta = consolidated(root);
        if v3 {
            assert_eq!(meta["scratch/new"]["node_type"], "group");
            assert_eq!(meta["scratch/new/deeper"]["node_type"], "group");
            assert_eq!(meta["scratch/new/values"]["node_type"], "array");
            assert_eq!(meta["scratch/new/values"]["shape"], json!([4]));
        } else {
            assert_eq!(meta["scratch/new/.zgroup"]["zarr_format"], 2);
            assert_eq!(meta["scratch/new/deeper/.zgroup"]["zarr_format"], 2);
            assert_eq!(meta["scratch/new/values/.zarray"]["shape"], json!([4]));
        }
        c.remove("scratch/new").unwrap();
        c.remove("processing/behavior/stamps").unwrap();
        let meta = consolidated(root);
        let below: Vec<&String> = meta
            .as_object()
            .unwrap()
            .keys()
            .filter(|k| k.starts_with("scratch/new"))
            .collect();
        assert!(below.is_empty(), "{below:?}");
        assert_eq!(attrs_of(&meta, "processing/behavior")[key], json!([]));
        // Everything the consolidation names still matches the nodes'
        // own documents.
        for (k, entry) in meta.as_object().unwrap() {
            let file = if v3 {
                root.join(k).join("zarr.json")
            } else {
                root.join(k)
            };
            let own: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
            let mut entry = entry.clone();
            if let Some(m) = entry.as_object_mut() {
                m.remove("consolidated_metadata");
            }
            let mut own = own;
            if let Some(m) = own.as_object_mut() {
                m.remove("consolidated_metadata");
            }
            assert_eq!(entry, own, "{name}: {k}");
        }
    }
    // A container without consolidated metadata gets none.
    let scratch = Scratch::new("no-consolidation");
    let root = scratch.join("plain.zarr");
    let c = new_zarr(&root, "zarr3");
    c.set_attributes("g", &json!({"a": 1})).unwrap();
    let doc: Value =
        serde_json::from_slice(&std::fs::read(root.join("zarr.json")).unwrap()).unwrap();
    assert!(doc.get("consolidated_metadata").is_none(), "{doc}");
    let root = scratch.join("plain2.zarr");
    let c = new_zarr(&root, "zarr2");
    c.set_attributes("g", &json!({"a": 1})).unwrap();
    assert!(!root.join(".zmetadata").exists());
}

#[test]
fn every_reference_of_the_corpus_resolves_in_every_form() {
    let Some(corpus) = hdmf_corpus_dir() else {
        return;
    };
    let m = manifest(&corpus);
    let mut resolved_count = 0;
    for (name, cm) in m["containers"].as_object().unwrap() {
        let root = loc(&corpus.join(name));
        let c = C::open(&root, N5_MODE_READ, "{}").unwrap();
        let check = |owner: &str, reference: &str, want: &Value| {
            let got = c.reference(owner, reference).unwrap();
            assert_eq!(
                got,
                json!({"location": loc(&corpus.join(want["container"].as_str().unwrap())),
                       "path": want["path"], "kind": kind(&want["kind"])}),
                "{name}: {owner}: {reference}"
            );
        };
        for r in cm["attribute_references"].as_array().unwrap() {
            let owner = r["owner"].as_str().unwrap();
            // As stored (read back through the API), and as the manifest has it.
            let stored = c
                .attribute(owner, r["attribute"].as_str().unwrap())
                .unwrap();
            assert_eq!(stored, r["raw"]);
            check(owner, &stored.to_string(), &r["resolved"]);
            // The element forms of the same target.
            let path = r["path"].as_str().unwrap();
            check(owner, &json!(path).to_string(), &r["resolved"]);
            check(
                owner,
                &json!({"source": ".", "path": path}).to_string(),
                &r["resolved"],
            );
            let text = json!({"source": ".", "path": path}).to_string();
            check(owner, &json!(text).to_string(), &r["resolved"]);
            resolved_count += 1;
        }
        for ds in cm["reference_datasets"].as_array().unwrap() {
            let owner = ds["path"].as_str().unwrap();
            for e in ds["elements"].as_array().unwrap() {
                let refs: Vec<&Value> = match e.get("references") {
                    Some(fields) => fields.as_object().unwrap().values().collect(),
                    None => vec![e],
                };
                for r in refs {
                    check(owner, &r["raw"].to_string(), &r["resolved"]);
                    resolved_count += 1;
                }
            }
        }
        // Errors.
        fails(c.reference("/", "not json"), N5_ERR_JSON, "reference_json");
        for bad in ["42", "{}", "\"\"", "null", "[]", r#"{"_REFERENCE": 3}"#] {
            fails(c.reference("/", bad), N5_ERR_INVALID_ARGUMENT, "reference");
        }
        fails(
            c.reference("/", r#"{"source": ".", "path": "/nope"}"#),
            N5_ERR_DANGLING_LINK,
            "/nope",
        );
        fails(
            c.reference("/", r#"{"source": "../missing.nwb.zarr", "path": "/x"}"#),
            N5_ERR_DANGLING_LINK,
            "../missing.nwb.zarr",
        );
        fails(c.reference("nope", "\"/\""), N5_ERR_NOT_FOUND, "nope");
    }
    assert_eq!(
        resolved_count,
        2 * 2 + 2 * 10,
        "every attribute reference and element"
    );
    // A reference to another container, from a node reached through an
    // external link: relative to the container that node is in.
    let c = C::open(
        &loc(&corpus.join("nwb-external.nwb.zarr")),
        N5_MODE_READ,
        "{}",
    )
    .unwrap();
    let target = loc(&corpus.join("nwb-external-target.nwb.zarr"));
    let r = c
        .reference(
            "/",
            r#"{"source": "../nwb-external-target.nwb.zarr", "path": "/acquisition/raw"}"#,
        )
        .unwrap();
    assert_eq!(
        r,
        json!({"location": target, "path": "/acquisition/raw", "kind": "group"})
    );
    let r = c
        .reference(
            "processing/analysis/external_series/raw",
            "\"/acquisition/raw_shifted/timestamps\"",
        )
        .unwrap();
    assert_eq!(
        r,
        json!({"location": target, "path": "/acquisition/raw/timestamps", "kind": "dataset"})
    );
}
