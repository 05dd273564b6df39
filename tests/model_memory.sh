#!/bin/sh
# `qnt quantize` streams: a 1.25 GiB safetensors model (ten [4096, 8192] f32 tensors, sparse
# on disk) converts to int4 under an address-space cap (RLIMIT_AS, by prlimit) of 512 MiB,
# less than half the model: the bound is two copies of the largest tensor (its mapping and its
# float32 values) plus 256 MiB for the program. Then `qnt info` reads the result under the same cap.
# usage: model_memory.sh path/to/qnt workdir
set -eu
qnt=$1
work=$2
mkdir -p "$work"
in="$work/big.safetensors"
out="$work/big-int4.safetensors"
rows=4096
cols=8192
n=10
bytes=$((rows * cols * 4))
header="{"
i=0
while [ $i -lt $n ]; do
  [ $i -gt 0 ] && header="$header,"
  header="$header\"layers.$i.weight\":{\"dtype\":\"F32\",\"shape\":[$rows,$cols],\"data_offsets\":[$((i * bytes)),$(((i + 1) * bytes))]}"
  i=$((i + 1))
done
header="$header}"
len=${#header}
# the 8-byte little-endian length, the header, then the data as a hole of zeros (plus a few
# nonzero bytes at the start of each tensor, so that there is something to quantize)
python3 - "$in" "$header" "$n" "$bytes" <<'PY'
import struct, sys
path, header, n, nbytes = sys.argv[1], sys.argv[2].encode(), int(sys.argv[3]), int(sys.argv[4])
with open(path, "wb") as f:
    f.write(struct.pack("<Q", len(header)))
    f.write(header)
    base = 8 + len(header)
    for i in range(n):
        f.seek(base + i * nbytes)
        f.write(struct.pack("<4f", 1.5, -2.0, 0.25, 3.0 + i))
    f.truncate(base + n * nbytes)
PY
cap=$((512 * 1024 * 1024))
size=$(stat -c %s "$in")
echo "model: $size bytes; address-space cap: $cap bytes"
prlimit --as=$cap "$qnt" quantize "$in" "$out" --type int4 --threads 1 --quiet
prlimit --as=$cap "$qnt" info "$out" > "$work/info.txt"
grep -q "layers.9.weight .*U8 (qnt i4)" "$work/info.txt"
echo "converted under the cap: $(stat -c %s "$out") bytes written"
rm -f "$in" "$out"
echo "1 passed, 0 failed"
