#!/bin/sh
# Only qnt_* symbols leave libqnt.so, its SONAME carries the ABI version, and so does the
# version node of every export.
# usage: check_exports.sh path/to/libqnt.so ABI_MAJOR
set -eu
lib=$1
major=$2
bad=$(nm -D --defined-only "$lib" | awk '$2 != "A" { print $3 }' | grep -v '^qnt_' || true)
if [ -n "$bad" ]; then
  echo "FAIL: symbols other than qnt_* are exported:"
  echo "$bad"
  exit 1
fi
count=$(nm -D --defined-only "$lib" | awk '$2 == "T" { print $3 }' | grep -c '^qnt_')
[ "$count" -gt 0 ] || { echo "FAIL: no qnt_ function is exported"; exit 1; }
soname=$(readelf -d "$lib" | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')
if [ "$soname" != "libqnt.so.$major" ]; then
  echo "FAIL: SONAME is '$soname', expected libqnt.so.$major"
  exit 1
fi
# Every export carries the ABI's version node, QNT_<ABI>.
unversioned=$(objdump -T "$lib" | awk '$NF ~ /^qnt_/ && $(NF-1) != "QNT_'"$major"'" { print $NF }')
if [ -n "$unversioned" ]; then
  echo "FAIL: exports outside the version node QNT_$major:"
  echo "$unversioned"
  exit 1
fi
echo "exports: $count qnt_* functions, SONAME $soname, version node QNT_$major"
echo "3 passed, 0 failed"
