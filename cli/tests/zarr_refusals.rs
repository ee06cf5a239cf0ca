//! `import` and `clean` still handle N5 containers only: on a Zarr
//! container, or a location that would create one, they refuse with a
//! message and write nothing, while `ls`, `tree`, `attrs`, `cat`, `info`,
//! `verify` and `cp` work on Zarr through the library.

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
    // import into a location that would be a Zarr container.
    let npy = dir.join("v.npy");
    let out = n5()
        .args(["cat", &array, "-o", &npy.display().to_string()])
        .output()
        .unwrap();
    assert!(out.status.success());
    let target = dir.join("new.zarr");
    let out = n5()
        .args([
            "import",
            &npy.display().to_string(),
            &format!("{}/raw", target.display()),
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("N5 containers only"), "{err}");
    assert!(!target.exists(), "nothing is written");
    // clean of a Zarr container.
    let copy = dir.join("copy.zarr");
    let out = n5()
        .args(["cp", &v3, &copy.display().to_string()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = n5()
        .args(["clean", &copy.display().to_string()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("N5 containers only") && err.contains("zarr3"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
