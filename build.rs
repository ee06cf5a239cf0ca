// build.rs owns two things: the SONAME of the cdylib on ELF targets, and,
// with the `hdf5` feature, what the linked libhdf5 offers.
//
// libn5.so.0.<minor> while the major version is 0 (every minor release may
// break the ABI, patch releases must not), libn5.so.<major> from 1.0. CMake
// mirrors this (IMPORTED_SONAME, the install symlinks) and a ctest checks that
// the two agree.
//
// hdf5-metno-sys finds libhdf5 (pkg-config or HDF5_DIR) and tells the crates
// that depend on it every known version up to the one it found
// (DEP_HDF5_VERSION_<major>_<minor>_<micro>). From that: libhdf5 1.10.5 or
// newer is required (chunk queries: H5Dget_chunk_info, H5Dget_num_chunks;
// direct chunk writes: H5Dwrite_chunk, 1.10.3), and two cfgs choose between
// API generations in src/format/hdf5/native/: `n5_hdf5_1_12` (H5Lget_info2,
// H5Treclaim) and `n5_hdf5_1_14_4` (chunk addresses that include the user
// block).

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

    println!("cargo:rustc-check-cfg=cfg(n5_hdf5_1_12)");
    println!("cargo:rustc-check-cfg=cfg(n5_hdf5_1_14_4)");
    if std::env::var_os("CARGO_FEATURE_HDF5").is_some() {
        let has = |v: &str| std::env::var_os(format!("DEP_HDF5_VERSION_{v}")).is_some();
        if !has("1_10_5") {
            let found: Vec<String> = std::env::vars()
                .filter_map(|(k, _)| k.strip_prefix("DEP_HDF5_VERSION_").map(str::to_string))
                .collect();
            panic!(
                "the `hdf5` feature needs libhdf5 1.10.5 or newer (H5Dget_chunk_info, \
                 H5Dwrite_chunk); the libhdf5 found is older (versions it reaches: {}). \
                 Install a newer libhdf5 (Debian/Ubuntu: libhdf5-dev) or point HDF5_DIR at one.",
                found.join(", ")
            );
        }
        if has("1_12_0") {
            println!("cargo:rustc-cfg=n5_hdf5_1_12");
        }
        if has("1_14_4") {
            println!("cargo:rustc-cfg=n5_hdf5_1_14_4");
        }
    }
}
