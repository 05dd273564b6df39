#!/bin/sh
# Builds and tests the Rust crates (bindings/rust: qnt-sys and qnt) offline, against Debian's
# packaged crates (/usr/share/cargo/registry) and a qnt installed to a temporary prefix:
#  - the committed bindings equal a regeneration from the header (qnt-sys/regen.sh --check);
#  - the safe crate calls every function of the header (check-coverage.sh);
#  - cargo test (unit, integration and doc tests, the compile-fail doc test included), shared
#    and with the `static` feature; the drop-order tests again under valgrind;
#  - the quickstart example; cargo package for both crates.
set -eu
cd "$(dirname "$0")/.."
root=$(pwd)
scripts/deps.sh rust
build=${QNT_RUST_BUILD_DIR:-build-rust}

# The library, installed as a user would install it.
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DQNT_BUILD_TESTS=OFF \
  -DQNT_BUILD_EXAMPLES=OFF -DQNT_WITH_CUDA=OFF -DQNT_WERROR=ON > /dev/null
cmake --build "$build" -j "$(nproc)" --target qnt qnt_static
rm -rf "$build/prefix"
cmake --install "$build" --prefix "$root/$build/prefix" > /dev/null
pcdir=$(dirname "$(find "$root/$build/prefix" -name qnt.pc | head -n 1)")
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
cargo_offline test -p qnt --features static --test ops --test drop_order
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

cargo_offline package --workspace --allow-dirty
echo "ok: cargo package"
