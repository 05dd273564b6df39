#!/bin/sh
# Builds and tests the Rust crates (bindings/rust: qnt-sys and qnt) offline, against Debian's
# packaged crates (/usr/share/cargo/registry) and a qnt installed to a temporary prefix:
#  - the committed bindings equal a regeneration from the header (qnt-sys/regen.sh --check);
#  - the safe crate calls every function of the header (check-coverage.sh);
#  - cargo test (unit, integration and doc tests), shared and with the `static` feature; the
#    drop-order tests again under valgrind;
#  - the programs of qnt/tests/compile-fail fail to compile, each with its expected error code;
#  - the quickstart example; cargo package for both crates.
set -eu
cd "$(dirname "$0")/.."
root=$(pwd)
scripts/deps.sh rust
build=${QNT_RUST_BUILD_DIR:-build-rust}

# The library, installed as a user would install it.
prefix=$(scripts/install-prefix.sh "$root/$build")
pcdir=$(dirname "$(find "$prefix" -name qnt.pc | head -n 1)")
export PKG_CONFIG_PATH="$pcdir"
export LD_LIBRARY_PATH="$(dirname "$pcdir")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CARGO_TARGET_DIR="$root/$build/target"
export RUSTFLAGS="${RUSTFLAGS:-} -D warnings"
export RUSTDOCFLAGS="${RUSTDOCFLAGS:-} -D warnings"

bindings/rust/qnt-sys/regen.sh --check
bindings/rust/check-coverage.sh

# Debian's crates instead of crates.io, set on the command line so that the crates stay ordinary
# crates.io crates for everyone else.
cargo_offline() {
  cargo "$@" --offline \
    --config 'source.crates-io.replace-with="debian"' \
    --config 'source.debian.directory="/usr/share/cargo/registry"'
}
cd bindings/rust
cargo_offline test --workspace
cargo_offline doc --no-deps -p qnt   # every public item documented, every link resolved
cargo_offline test -p qnt --features static --test ops --test drop_order
./check-compile-fail.sh --offline \
  --config 'source.crates-io.replace-with="debian"' \
  --config 'source.debian.directory="/usr/share/cargo/registry"'
cargo_offline run -p qnt --example quickstart > "$root/$build/quickstart.out"
grep -q "NF4, per block of 64" "$root/$build/quickstart.out" || {
  echo "FAIL: the Rust quickstart printed:"; cat "$root/$build/quickstart.out"; exit 1; }
echo "ok: the Rust quickstart"

# Dropping handles in every order, under valgrind's memcheck: no invalid access, no leak.
cargo_offline test -p qnt --test drop_order --no-run
drop_test=$(find "$CARGO_TARGET_DIR/debug/deps" -maxdepth 1 -type f -executable -name 'drop_order-*' | head -n 1)
valgrind --quiet --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite \
  "$drop_test" --test-threads=1
echo "ok: drop order under valgrind"

# cargo package, each crate built from its packaged sources alone. qnt needs qnt-sys from a
# registry, so its package is checked against a local directory registry holding Debian's crates
# and the qnt-sys package just made.
cargo_offline package -p qnt-sys --allow-dirty --registry crates-io
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' qnt-sys/Cargo.toml)
crate="$CARGO_TARGET_DIR/package/qnt-sys-$version.crate"
registry=$(mktemp -d)
trap 'rm -rf "$registry"' EXIT
for d in /usr/share/cargo/registry/*; do ln -s "$d" "$registry/"; done
tar -xzf "$crate" -C "$registry"
printf '{"package":"%s","files":{}}' "$(sha256sum "$crate" | cut -d' ' -f1)" \
  > "$registry/qnt-sys-$version/.cargo-checksum.json"
cargo package -p qnt --allow-dirty --offline --registry crates-io \
  --config 'source.crates-io.replace-with="packaged"' \
  --config "source.packaged.directory=\"$registry\""
echo "ok: cargo package (qnt-sys, qnt)"
