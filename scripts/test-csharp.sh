#!/bin/sh
# Builds the C# binding (bindings/swig + bindings/csharp) with Mono against a qnt installed to a
# prefix and tests it: SWIG's wrapper calls every function of the header (check-coverage.sh);
# the native library builds with warnings as errors; the assembly builds with warnings as errors
# and its XML documentation; the NUnit tests (Debian's nunit-console) pass; the example runs.
# usage: scripts/test-csharp.sh   (QNT_FROM_BUILD=DIR installs from that CMake build tree)
set -eu
cd "$(dirname "$0")/.."
root=$(pwd)
scripts/deps.sh csharp
out="$root/${QNT_CSHARP_BUILD_DIR:-build-csharp}"
prefix=$(scripts/install-prefix.sh "$out")
gen="$out/gen"
bin="$out/bin"
rm -rf "$gen" "$bin" "$out/reference"
mkdir -p "$gen" "$bin" "$out/reference"

python3 bindings/swig/gen_csdoc.py bindings/swig/qnt.i bindings/swig/qnt_csharp.swg "$gen/qnt_csdoc.i"
swig -csharp -DSWIGWORDSIZE64 -namespace Qnt -dllimport qnt_csharp -I"$gen" -I"$root/include" \
  -outdir "$gen" -o "$out/qnt_csharp_wrap.c" bindings/swig/qnt.i
python3 bindings/swig/gen_constants.py include/qnt/qnt.h csharp "$gen/Constants.cs"
bindings/swig/check-coverage.sh "$out/qnt_csharp_wrap.c"

# The native library beside the assembly, finding libqnt.so.1 beside itself ($ORIGIN).
cc -std=c11 -O2 -fPIC -shared -fno-strict-aliasing -Wall -Wextra -Werror -I"$prefix/include" \
  "$out/qnt_csharp_wrap.c" -o "$bin/libqnt_csharp.so" -L"$prefix/lib" -lqnt -Wl,-rpath,'$ORIGIN'
cp "$prefix/lib/libqnt.so.1" "$bin/"
mcs -target:library -warnaserror -nowarn:1591 -doc:"$bin/Qnt.xml" -out:"$bin/Qnt.dll" \
  "$gen"/*.cs bindings/csharp/src/*.cs

# NUnit, with the C API's results from bindings/swig/tests/reference.c.
cc -std=c99 -Wall -Wextra -Werror -I"$prefix/include" bindings/swig/tests/reference.c \
  -o "$out/reference-gen" -L"$prefix/lib" -lqnt -Wl,-rpath,"$prefix/lib"
"$out/reference-gen" "$out/reference"
nunit_framework=$(pkg-config --libs nunit | tr ' ' '\n' | grep 'nunit.framework.dll')
mcs -target:library -warnaserror -r:"$bin/Qnt.dll" "$nunit_framework" -out:"$bin/QntTests.dll" \
  bindings/csharp/tests/QntTests.cs
(cd "$bin" && QNT_REFERENCE_DIR="$out/reference" nunit-console -nologo -noresult QntTests.dll) \
  > "$out/nunit.log" 2>&1 || { cat "$out/nunit.log"; exit 1; }
grep -E "^Tests run" "$out/nunit.log"
grep -q "Tests run: [1-9][0-9]*, Errors: 0, Failures: 0" "$out/nunit.log" || { cat "$out/nunit.log"; exit 1; }

mcs -warnaserror -r:"$bin/Qnt.dll" -out:"$bin/Quickstart.exe" bindings/csharp/examples/Quickstart.cs
(cd "$bin" && mono Quickstart.exe) > "$out/quickstart.out"
grep -q "NF4, per block of 64" "$out/quickstart.out" || { echo "FAIL: the C# quickstart printed:"; cat "$out/quickstart.out"; exit 1; }
echo "ok: the C# quickstart"
