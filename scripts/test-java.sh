#!/bin/sh
# Builds the Java binding (bindings/swig + bindings/java) against a qnt installed to a prefix and
# tests it: SWIG's wrapper calls every function of the header (check-coverage.sh); the JNI
# library builds with warnings as errors; the JAR carries the natives and loads them by itself;
# the JUnit 5 tests (Debian's junit5 jars) pass; the example runs from a JAR with the natives
# beside it; javadoc builds.
# usage: scripts/test-java.sh   (QNT_FROM_BUILD=DIR installs from that CMake build tree)
set -eu
cd "$(dirname "$0")/.."
root=$(pwd)
scripts/deps.sh java
out="$root/${QNT_JAVA_BUILD_DIR:-build-java}"
prefix=$(scripts/install-prefix.sh "$out")
javac_bin=$(readlink -f "$(command -v javac)")
java_home=$(dirname "$(dirname "$javac_bin")")
gen="$out/gen"
rm -rf "$gen" "$out/classes" "$out/test-classes" "$out/jar" "$out/reference"
mkdir -p "$gen/org/qnt" "$out/classes" "$out/test-classes" "$out/jar/org/qnt/native" "$out/reference"

# 1. SWIG's wrapper and proxies; the named constants; the coverage check.
swig -java -doxygen -DSWIGWORDSIZE64 -package org.qnt -I"$root/include" -outdir "$gen/org/qnt" \
  -o "$out/qnt_java_wrap.c" bindings/swig/qnt.i
python3 bindings/swig/gen_constants.py include/qnt/qnt.h java "$gen"
bindings/swig/check-coverage.sh "$out/qnt_java_wrap.c"

# 2. The JNI library, found by libqnt_java.so beside it ($ORIGIN).
cc -std=c11 -O2 -fPIC -shared -fno-strict-aliasing -Wall -Wextra -Werror \
  -I"$prefix/include" -I"$java_home/include" -I"$java_home/include/linux" \
  "$out/qnt_java_wrap.c" -o "$out/libqnt_java.so" -L"$prefix/lib" -lqnt -Wl,-rpath,'$ORIGIN'

# 3. The classes and the JAR, natives inside (org/qnt/native/<platform>/).
javac -Xlint:all -Werror -d "$out/classes" "$gen"/org/qnt/*.java bindings/java/src/main/java/org/qnt/*.java
platform=linux-$(uname -m)
mkdir -p "$out/classes/org/qnt/native/$platform"
cp "$prefix/lib/libqnt.so.1" "$out/libqnt_java.so" "$out/classes/org/qnt/native/$platform/"
version=$(sed -n 's/^#define QNT_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\)$/\2/p' include/qnt/qnt.h | paste -sd.)
jar --create --file "$out/qnt-$version.jar" -C "$out/classes" .
javadoc -quiet -Xdoclint:none -d "$out/javadoc" -sourcepath "$gen:bindings/java/src/main/java" org.qnt \
  > "$out/javadoc.log" 2>&1 || { cat "$out/javadoc.log"; exit 1; }

# 4. The JUnit 5 tests, against the JAR alone (the natives come out of it), with the C API's
# results from bindings/swig/tests/reference.c.
cc -std=c99 -Wall -Wextra -Werror -I"$prefix/include" bindings/swig/tests/reference.c \
  -o "$out/reference-gen" -L"$prefix/lib" -lqnt -Wl,-rpath,"$prefix/lib"
"$out/reference-gen" "$out/reference"
junit=/usr/share/java
cp_test="$junit/junit-jupiter-api.jar:$junit/apiguardian-api.jar:$junit/opentest4j.jar"
javac -Xlint:all -Werror -d "$out/test-classes" -cp "$out/qnt-$version.jar:$cp_test" \
  bindings/java/src/test/java/org/qnt/*.java
mkdir -p "$out/alone" && cp "$out/qnt-$version.jar" "$out/alone/"
java -Dqnt.reference.dir="$out/reference" -jar "$junit/junit-platform-console-standalone.jar" \
  --disable-banner --details=summary --fail-if-no-tests \
  --class-path "$out/alone/qnt-$version.jar:$out/test-classes" --scan-class-path "$out/test-classes"

# 5. The example, from a JAR with the natives beside it.
mkdir -p "$out/beside" "$out/example"
cp "$out/qnt-$version.jar" "$out/libqnt_java.so" "$prefix/lib/libqnt.so.1" "$out/beside/"
javac -Xlint:all -Werror -d "$out/example" -cp "$out/beside/qnt-$version.jar" bindings/java/examples/Quickstart.java
java -cp "$out/beside/qnt-$version.jar:$out/example" Quickstart > "$out/quickstart.out"
grep -q "NF4, per block of 64" "$out/quickstart.out" || { echo "FAIL: the Java quickstart printed:"; cat "$out/quickstart.out"; exit 1; }
echo "ok: the Java quickstart"
