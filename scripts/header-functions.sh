#!/bin/sh
# Prints every function include/qnt/qnt.h declares (QNT_API ... qnt_name(, over one or more
# lines), sorted, one a line; fails if it finds suspiciously few. Used by the bindings' coverage
# checks (bindings/rust/check-coverage.sh, bindings/swig/check-coverage.sh).
set -eu
header="$(cd "$(dirname "$0")/.." && pwd)/include/qnt/qnt.h"
list=$(tr '\n' ' ' < "$header" | grep -o 'QNT_API [^;(]*(' | grep -o 'qnt_[a-z0-9_]*($' | tr -d '(' | sort -u)
n=$(printf '%s\n' "$list" | wc -l)
[ "$n" -gt 50 ] || { echo "header-functions: found only $n functions in $header" >&2; exit 2; }
printf '%s\n' "$list"
