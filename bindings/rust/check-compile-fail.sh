#!/bin/sh
# Each program in qnt/tests/compile-fail/ must fail to compile against the safe crate with the
# error code its first line names ("// expect: E0597"): the borrow checker and the Send/Sync
# bounds, not some other mistake, refuse it. Uses cargo's flags from the environment
# (CARGO_TARGET_DIR, and the offline source replacement given as arguments).
# usage: check-compile-fail.sh [cargo flags...]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/src"
cat > "$tmp/Cargo.toml" <<TOML
[package]
name = "qnt-compile-fail"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
qnt = { path = "$here/qnt" }

[workspace]
TOML
status=0
for f in "$here"/qnt/tests/compile-fail/*.rs; do
  want=$(sed -n '1s|^// expect: \(E[0-9]*\)$|\1|p' "$f")
  [ -n "$want" ] || { echo "$f: no '// expect: E....' first line" >&2; exit 2; }
  cp "$f" "$tmp/src/main.rs"
  if cargo build --manifest-path "$tmp/Cargo.toml" --quiet "$@" > "$tmp/out" 2>&1; then
    echo "FAIL: $(basename "$f") compiled; it must not" >&2
    status=1
  elif grep -q "error\[$want\]" "$tmp/out"; then
    echo "ok: $(basename "$f") refused with $want"
  else
    echo "FAIL: $(basename "$f") failed without $want:" >&2
    cat "$tmp/out" >&2
    status=1
  fi
done
exit $status
