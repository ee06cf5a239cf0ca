//! Until the tool's commands learn Zarr, the ones that would describe or
//! write a Zarr container in N5's terms refuse it, writing nothing, while
//! `ls`, `tree`, `attrs` and `cat` read it through the library.

use std::path::PathBuf;
use std::process::Command;

fn n5() -> Command {
    Command::new(env!("CARGO_BIN_EXE_n5"))
}

fn corpus_zarr(rel: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/corpus-zarr")
        .join(rel)
        .display()
        .to_string()
}

#[test]
fn zarr_containers_are_read_or_refused_plainly() {
    let v3 = corpus_zarr("zarr-python3-v3.zarr");
    let out = n5().args(["ls", &v3]).output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("codec/"));
    let array = format!("{v3}/codec/big_zstd_crc32c");
    let out = n5().args(["cat", &array]).output().unwrap();
    assert!(out.status.success());
    assert_eq!(out.stdout.len(), 45 * 67 * 4);
    for args in [vec!["info", array.as_str()], vec!["verify", v3.as_str()]] {
        let out = n5().args(&args).output().unwrap();
        assert!(out.status.success(), "{args:?}");
    }
    let dir = std::env::temp_dir().join(format!("n5-cli-zarr-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let target = dir.join("copy.zarr");
    let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus/z5py.n5");
    let out = n5()
        .args([
            "cp",
            &source.display().to_string(),
            &target.display().to_string(),
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(!target.exists(), "nothing is written");
    std::fs::remove_dir_all(&dir).unwrap();
}
