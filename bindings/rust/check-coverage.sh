#!/bin/sh
# Fails when a function of include/qnt/qnt.h is not called by the safe crate (bindings/rust/qnt),
# so that the crate cannot fall behind the header. Prints the gaps.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$here/../../scripts/header-functions.sh" > "$tmp/header"
# Every sys::qnt_* the safe crate names (calls, or passes to a helper as a function pointer).
grep -rhoE 'sys::qnt_[a-z0-9_]+' "$here/qnt/src" | sed 's/^sys:://' | sort -u > "$tmp/crate"
n=$(wc -l < "$tmp/header")
missing=$(comm -23 "$tmp/header" "$tmp/crate")
if [ -n "$missing" ]; then
  echo "check-coverage: the safe crate does not call these functions of qnt.h:" >&2
  echo "$missing" >&2
  exit 1
fi
echo "check-coverage: the safe crate calls all $n functions of qnt.h"
