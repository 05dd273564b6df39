#!/bin/sh
# The objects compiled with ISA flags (AVX2, AVX-512, ...) define no weak or unique symbols:
# such a symbol is a copy of an inline function (from the C++ library, say) that the linker
# may keep for every caller, generic code included, which would then run AVX-512 instructions
# on machines without them. Only strong, ISA-specific kernel entry points may be defined.
# usage: check_isa_objects.sh OBJECT...
set -eu
[ "$#" -gt 0 ] || { echo "no ISA objects on this architecture"; echo "1 passed, 0 failed"; exit 0; }
bad=0
for o in "$@"; do
  weak=$(nm -C "$o" | awk '$1 ~ /^[0-9a-f]+$/ && $2 ~ /^[WVu]$/ { $1 = ""; print }')
  if [ -n "$weak" ]; then
    echo "FAIL: $o defines weak symbols:"
    echo "$weak"
    bad=$((bad + 1))
  fi
done
[ "$bad" -eq 0 ] || { echo "0 passed, $bad failed"; exit 1; }
echo "isa objects: $# checked, no weak symbol"
echo "1 passed, 0 failed"
