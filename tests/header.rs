//! include/n5.h is generated, never edited: this test generates the header
//! from src/ffi/ with cbindgen.toml and the version macros of Cargo.toml,
//! and fails when the committed file differs. `N5_BLESS=1 cargo test --test
//! header` rewrites it. It also checks what the header promises its users:
//! only stddef.h and stdint.h, no `bool`, no enums, no callbacks, every
//! function documented, and every exported function declared.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn version_macros() -> String {
    let major: u32 = env!("CARGO_PKG_VERSION_MAJOR").parse().unwrap();
    let minor: u32 = env!("CARGO_PKG_VERSION_MINOR").parse().unwrap();
    let patch: u32 = env!("CARGO_PKG_VERSION_PATCH").parse().unwrap();
    format!(
        "\n/** The version of libn5 this header belongs to; compare with n5_version_*() at run time. */\n\
         #define N5_VERSION_MAJOR {major}\n\
         #define N5_VERSION_MINOR {minor}\n\
         #define N5_VERSION_PATCH {patch}\n\
         #define N5_VERSION_STRING \"{}\"\n\
         /** MAJOR * 10000 + MINOR * 100 + PATCH, as returned by n5_version_number(). */\n\
         #define N5_VERSION_NUMBER {}\n",
        env!("CARGO_PKG_VERSION"),
        major * 10000 + minor * 100 + patch
    )
}

fn generate() -> String {
    let root = root();
    let config = cbindgen::Config::from_file(root.join("cbindgen.toml")).expect("cbindgen.toml");
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(root.join("src/ffi/mod.rs"))
        .with_after_include(version_macros())
        .generate()
        .expect("cbindgen generates the header");
    let mut out = Vec::new();
    bindings.write(&mut out);
    String::from_utf8(out).expect("UTF-8 header")
}

fn committed_path() -> PathBuf {
    root().join("include/n5.h")
}

#[test]
fn header_is_fresh() {
    let generated = generate();
    let path = committed_path();
    if std::env::var_os("N5_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&path, &generated).expect("write include/n5.h");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != generated {
        let line = committed
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .map_or(
                committed.lines().count().min(generated.lines().count()),
                |i| i,
            );
        panic!(
            "include/n5.h is stale (first difference at line {}): run `N5_BLESS=1 cargo test --test header` and commit it",
            line + 1
        );
    }
}

fn exported_functions(dir: &Path) -> Vec<String> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let mut lines = text.lines();
        while let Some(line) = lines.next() {
            if line.trim() == "#[no_mangle]" {
                let sig = lines.next().unwrap();
                let name = sig
                    .split("fn ")
                    .nth(1)
                    .and_then(|s| s.split('(').next())
                    .unwrap_or_else(|| panic!("no fn after #[no_mangle] in {path:?}: {sig}"));
                names.push(name.to_string());
            }
        }
    }
    names.sort();
    names
}

#[test]
fn header_declares_and_documents_every_function() {
    let header = generate();
    let functions = exported_functions(&root().join("src/ffi"));
    assert!(functions.len() >= 50, "{functions:?}");
    for name in &functions {
        let lines: Vec<&str> = header.lines().collect();
        let at = lines
            .iter()
            .position(|l| {
                let t = l.trim_start();
                !t.starts_with('*')
                    && !t.starts_with("/*")
                    && (l.contains(&format!(" {name}(")) || l.contains(&format!("*{name}(")))
            })
            .unwrap_or_else(|| panic!("{name} is not declared in the header"));
        assert!(
            at > 0 && lines[at - 1].trim_end().ends_with("*/"),
            "{name} has no doc comment in the header"
        );
    }
}

#[test]
fn header_is_ffi_friendly() {
    let header = generate();
    let includes: Vec<&str> = header
        .lines()
        .filter(|l| l.starts_with("#include"))
        .collect();
    assert_eq!(includes, ["#include <stddef.h>", "#include <stdint.h>"]);
    for banned in ["bool", "enum ", "(*", "struct {", "..."] {
        let code: String = header
            .lines()
            .filter(|l| {
                let t = l.trim_start();
                !(t.starts_with('*') || t.starts_with("/*") || t.starts_with("//"))
            })
            .collect::<Vec<_>>()
            .join("\n");
        assert!(
            !code.contains(banned),
            "the header's code contains '{banned}'"
        );
    }
    for needed in [
        "typedef struct n5_container n5_container;",
        "typedef struct n5_dataset n5_dataset;",
        "typedef int32_t n5_status;",
        "typedef int32_t n5_dtype;",
        "typedef int32_t n5_mode;",
        "#define N5_ERR_PANIC 98",
        "#define N5_DTYPE_FLOAT64 10",
        "#define N5_MODE_CREATE 2",
        "#ifdef __cplusplus",
        "#define N5_VERSION_NUMBER",
    ] {
        assert!(header.contains(needed), "the header lacks `{needed}`");
    }
}
