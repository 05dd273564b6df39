//! Finds libqnt and tells cargo how to link it.
//!
//! In this order:
//! 1. `QNT_LIB_DIR`: the directory that holds libqnt.so / libqnt.a (headers from `QNT_INCLUDE_DIR`
//!    if set);
//! 2. `QNT_DIR`: an install prefix (`$QNT_DIR/lib` or `$QNT_DIR/lib64`, `$QNT_DIR/include`);
//! 3. pkg-config (`qnt.pc`; set `PKG_CONFIG_PATH` for a prefix of your own).
//!
//! The library is linked shared, or statically with the `static` feature (then also its C++
//! runtime, libm, libdl and OpenMP's runtime, as `qnt.pc`'s Libs.private lists them).
//! Dependents get the include directory as `DEP_QNT_INCLUDE`.

use std::env;
use std::path::{Path, PathBuf};

// What libqnt.a needs besides itself (qnt.pc's Libs.private, for a GCC/OpenMP build).
const STATIC_DEPS: &[&str] = &["gomp", "pthread", "stdc++", "m", "dl"];

fn emit_include(dir: &Path) {
    println!("cargo:include={}", dir.display());
    println!("cargo:rustc-env=QNT_SYS_INCLUDE_DIR={}", dir.display());
}

fn link_from_dir(lib_dir: &Path, include: Option<PathBuf>, statik: bool) {
    println!("cargo:rustc-link-search=native={}", lib_dir.display());
    if statik {
        println!("cargo:rustc-link-lib=static=qnt");
        for dep in STATIC_DEPS {
            println!("cargo:rustc-link-lib=dylib={dep}");
        }
    } else {
        println!("cargo:rustc-link-lib=dylib=qnt");
    }
    if let Some(dir) = include {
        emit_include(&dir);
    }
}

fn main() {
    for var in [
        "QNT_LIB_DIR",
        "QNT_INCLUDE_DIR",
        "QNT_DIR",
        "PKG_CONFIG_PATH",
    ] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    println!("cargo:rerun-if-changed=build.rs");
    let statik = env::var_os("CARGO_FEATURE_STATIC").is_some();

    if let Some(lib_dir) = env::var_os("QNT_LIB_DIR") {
        let include = env::var_os("QNT_INCLUDE_DIR").map(PathBuf::from);
        link_from_dir(Path::new(&lib_dir), include, statik);
        return;
    }
    if let Some(prefix) = env::var_os("QNT_DIR") {
        let prefix = PathBuf::from(prefix);
        let lib_dir = ["lib", "lib64"]
            .iter()
            .map(|d| prefix.join(d))
            .find(|d| d.join("libqnt.so").exists() || d.join("libqnt.a").exists())
            .unwrap_or_else(|| {
                panic!(
                    "qnt-sys: QNT_DIR={} has no lib/libqnt.so or lib/libqnt.a",
                    prefix.display()
                )
            });
        link_from_dir(&lib_dir, Some(prefix.join("include")), statik);
        return;
    }
    match pkg_config::Config::new()
        .atleast_version("0.11")
        .statik(statik)
        .probe("qnt")
    {
        Ok(lib) => {
            if let Some(dir) = lib.include_paths.first() {
                emit_include(dir);
            }
        }
        Err(e) => panic!(
            "qnt-sys: cannot find libqnt. Install qnt (cmake --install), then set PKG_CONFIG_PATH \
             to the directory of its qnt.pc, or QNT_DIR to its prefix, or QNT_LIB_DIR to the \
             directory of libqnt.so.\npkg-config said: {e}"
        ),
    }
}
