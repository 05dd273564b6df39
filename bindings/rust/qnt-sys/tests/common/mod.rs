//! Compiles and runs a small C program against the installed header, so that the bindings'
//! constants and struct layouts are checked against a C compiler, not against bindgen's own view.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;

/// The header's include directory: the one build.rs found the library with, else the source tree.
fn include_dir() -> PathBuf {
    match option_env!("QNT_SYS_INCLUDE_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../include"),
    }
}

/// Compiles `body` (the statements of main) with the C compiler ($CC, else cc), runs it and
/// returns each output line's "name value" pair.
pub fn c_values(name: &str, body: &str) -> HashMap<String, i128> {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let src = dir.join(format!("{name}.c"));
    let exe = dir.join(name);
    let program = format!(
        "#include <qnt/qnt.h>\n#include <stddef.h>\n#include <stdio.h>\n\
         #define P(name, value) printf(\"%s %lld\\n\", name, (long long)(value))\n\
         int main(void) {{\n{body}  return 0;\n}}\n"
    );
    std::fs::write(&src, program).expect("write the C program");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let status = Command::new(&cc)
        .arg("-std=c11")
        .arg("-I")
        .arg(include_dir())
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .status()
        .unwrap_or_else(|e| panic!("cannot run the C compiler {cc}: {e}"));
    assert!(
        status.success(),
        "the C compiler failed on {}",
        src.display()
    );
    let out = Command::new(&exe).output().expect("run the C program");
    assert!(out.status.success());
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .map(|line| {
            let (k, v) = line.split_once(' ').expect("name value");
            (k.to_string(), v.parse::<i128>().expect("an integer"))
        })
        .collect()
}

/// Every (name, value) of `rust` must be the C compiler's value of that name.
#[allow(dead_code)]
pub fn check_constants(rust: &[(&str, i128)]) {
    assert!(
        rust.len() > 50,
        "the constants list looks short: {}",
        rust.len()
    );
    let body: String = rust
        .iter()
        .map(|(name, _)| format!("  P(\"{name}\", {name});\n"))
        .collect();
    let c = c_values("qnt_sys_constants", &body);
    for (name, value) in rust {
        assert_eq!(c.get(*name), Some(value), "{name}: C and Rust disagree");
    }
}
