// build.rs owns one thing: the SONAME of the cdylib on ELF targets.
//
// libn5.so.0.<minor> while the major version is 0 (every minor release may
// break the ABI, patch releases must not), libn5.so.<major> from 1.0. CMake
// mirrors this (IMPORTED_SONAME, the install symlinks) and a ctest checks that
// the two agree.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let elf = matches!(
        std::env::var("CARGO_CFG_TARGET_OS").as_deref(),
        Ok("linux" | "android" | "freebsd" | "netbsd" | "openbsd" | "dragonfly")
    );
    if elf {
        let major = env!("CARGO_PKG_VERSION_MAJOR");
        let minor = env!("CARGO_PKG_VERSION_MINOR");
        let sover = if major == "0" {
            format!("0.{minor}")
        } else {
            major.to_string()
        };
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libn5.so.{sover}");
    }
}
