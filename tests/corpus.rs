//! Reads every container of the peer corpus (`../shared/corpus`: written by
//! tensorstore, z5py, zarr 2, Java n5 and rust-n5) and compares each dataset
//! with the manifest: whole arrays by sha256, per-block datasets (varlength,
//! string, object) block by block, and every group's attributes.

mod common;

use n5::{Container, Mode};

use common::corpus_check::check_against_manifest;
use common::{corpus_dir, manifest};

fn check_container(name: &str) {
    let container = Container::open(corpus_dir().join(name), Mode::Read)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    check_against_manifest(&container, name);
}

#[test]
fn reads_tensorstore_container() {
    check_container("tensorstore.n5");
}

#[test]
fn reads_z5py_container() {
    check_container("z5py.n5");
}

#[test]
fn reads_zarr2_container() {
    check_container("zarr2.n5");
}

#[test]
fn reads_java_n5_container() {
    check_container("java-n5.n5");
}

#[test]
fn reads_rust_n5_container() {
    check_container("rust-n5.n5");
}

#[test]
fn root_versions_of_every_writer() {
    let m = manifest();
    for c in m["containers"].as_array().unwrap() {
        let name = c["name"].as_str().unwrap();
        let container = Container::open(corpus_dir().join(name), Mode::Read).unwrap();
        let want = c["root_attributes"]
            .get("n5")
            .and_then(|v| v.as_str())
            .map(String::from);
        assert_eq!(container.version().unwrap(), want, "{name}");
    }
}
