//! `n5 ls` and `n5 tree` on containers with hdmf-zarr links (written with
//! the library in Zarr v3 and v2): links show as `name -> path` or
//! `name -> source:path`, dangling ones say what is missing, trees and
//! recursive listings do not descend into them, and the JSON outputs give
//! each link's source, path, target and error.

mod common;

use common::{json, ok, TempDir};
use n5::{Container, Mode, Options};
use serde_json::{json as j, Value};

/// `a.zarr` with a group `g` holding links of every kind, beside `b.zarr`
/// (the target of its external links), in `format`.
fn containers(dir: &TempDir, format: &str) -> String {
    let options = Options::from_json(&j!({ "format": format }).to_string()).unwrap();
    let b = Container::open_with(dir.path("b.zarr"), Mode::Create, options.clone()).unwrap();
    b.create_group("grp/inner").unwrap();
    let a = Container::open_with(dir.path("a.zarr"), Mode::Create, options).unwrap();
    a.create_group("x/sub").unwrap();
    a.create_group("g").unwrap();
    a.create_link("g", "internal", ".", "/x").unwrap();
    a.create_link("g", "ext", "../b.zarr", "/grp").unwrap();
    // Links that lead nowhere, as another writer may leave them.
    let key = if format == "zarr3" {
        "_LINKS"
    } else {
        "zarr_link"
    };
    let mut links = a.attributes("g").unwrap()[key].clone();
    let list = links.as_array_mut().unwrap();
    list.push(j!({"name": "gone", "source": "../missing.zarr", "path": "/x"}));
    list.push(j!({"name": "wrong", "source": ".", "path": "/nope"}));
    a.set_attribute("g", key, links).unwrap();
    dir.path("a.zarr")
}

#[test]
fn ls_and_tree_show_links_without_descending() {
    for format in ["zarr3", "zarr2"] {
        let dir = TempDir::new("links");
        let a = containers(&dir, format);
        let out = ok(&["ls", &format!("{a}/g")]).text();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines,
            [
                "ext -> ../b.zarr:/grp",
                "gone -> ../missing.zarr:/x  (dangling: container missing)",
                "internal -> /x",
                "wrong -> /nope  (dangling: no object at path)",
            ],
            "{format}"
        );
        let out = ok(&["ls", "-r", &a]).text();
        assert!(out.contains("g/ext -> ../b.zarr:/grp"), "{out}");
        assert!(out.contains("x/sub/"), "{out}");
        assert!(!out.contains("g/ext/inner"), "{out}");
        assert!(!out.contains("g/internal/sub"), "{out}");

        let out = ok(&["tree", &a]).text();
        assert!(out.contains("├── ext -> ../b.zarr:/grp\n"), "{out}");
        assert!(
            out.contains("└── wrong -> /nope  (dangling: no object at path)"),
            "{out}"
        );
        // The link's target has children; the tree does not show them.
        assert!(!out.contains("inner"), "{out}");
        assert_eq!(out.matches("sub").count(), 1, "{out}");

        let listed = json(&["ls", "--json", &format!("{a}/g")]);
        let ext = &listed[0];
        assert_eq!(ext["name"], "ext");
        assert_eq!(ext["type"], "link");
        assert_eq!(ext["source"], "../b.zarr");
        assert_eq!(ext["path"], "/grp");
        assert_eq!(ext["target"]["path"], "/grp");
        assert_eq!(ext["target"]["kind"], "group");
        assert_eq!(ext["error"], Value::Null);
        let gone = &listed[1];
        assert_eq!(gone["target"], Value::Null);
        assert_eq!(gone["status"], "N5_ERR_DANGLING_LINK");
        assert!(
            gone["error"].as_str().unwrap().contains("missing"),
            "{gone}"
        );

        let tree = json(&["tree", "--json", &a]);
        let g = tree["children"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == "g")
            .unwrap();
        let names: Vec<&str> = g["children"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["ext", "gone", "internal", "wrong"]);
        for child in g["children"].as_array().unwrap() {
            assert_eq!(child["type"], "link", "{child}");
            assert!(child.get("children").is_none(), "{child}");
        }
        // A path through a link lists the target's members.
        let out = ok(&["ls", &format!("{a}/g/ext")]).text();
        assert_eq!(out.trim(), "inner/  group");
    }
}
