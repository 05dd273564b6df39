#!/bin/sh
# Fails when a function of include/qnt/qnt.h is not called by a SWIG-generated wrapper, so that
# the Java and C# bindings cannot fall behind the header. Prints the gaps.
# usage: check-coverage.sh WRAPPER.c [WRAPPER.c ...]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$here/../../scripts/header-functions.sh" > "$tmp/header"
n=$(wc -l < "$tmp/header")
status=0
for wrapper in "$@"; do
  # calls in the wrapper's code (comments removed)
  sed 's|/\*.*\*/||g' "$wrapper" | grep -oE '\bqnt_[a-z0-9_]+\(' | tr -d '(' | sort -u > "$tmp/called"
  missing=$(comm -23 "$tmp/header" "$tmp/called")
  if [ -n "$missing" ]; then
    echo "check-coverage: $(basename "$wrapper") does not call these functions of qnt.h:" >&2
    echo "$missing" >&2
    status=1
  else
    echo "check-coverage: $(basename "$wrapper") calls all $n functions of qnt.h"
  fi
done
exit $status
