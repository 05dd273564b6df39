#!/bin/sh
# Tests the Python package (bindings/python):
#  1. its ctypes declarations are what the headers say now (gen_capi.py --check), and it calls
#     every function of qnt.h and qnt_io.h (check_coverage.py);
#  2. `python -m build` (PyPI's build, pinned) makes the sdist, which carries libqnt's sources,
#     and from it the wheel, scikit-build-core (pinned in pyproject.toml) compiling libqnt into
#     it; the wheel installs into a fresh virtual environment with NumPy 2 (pinned), where the
#     pytest suite and the example run against the wheel's own libqnt;
#  3. with QNT_FROM_BUILD=DIR, the suite again under Debian's python3 (NumPy 1.24, PyTorch 1.13:
#     the PyTorch tests) on the source tree, with QNT_LIBRARY pointing at DIR's libqnt.
# usage: scripts/test-python.sh
set -eu
cd "$(dirname "$0")/.."
root=$(pwd)
scripts/deps.sh test
out="$root/${QNT_PYTHON_BUILD_DIR:-build-python}"
rm -rf "$out/venv" "$out/wheel"
mkdir -p "$out"
/usr/bin/python3 bindings/python/gen_capi.py --check
/usr/bin/python3 bindings/python/check_coverage.py
/usr/bin/python3 -m venv "$out/venv"
pip="$out/venv/bin/pip --quiet --disable-pip-version-check"
$pip install numpy==2.1.3 pytest==8.3.3 build==1.2.2
"$out/venv/bin/python" -m build --outdir "$out/wheel" bindings/python > "$out/build.log" 2>&1 ||
  { tail -40 "$out/build.log"; exit 1; }
$pip install --no-deps "$out"/wheel/qnt-*.whl
(cd "$out" && "$out/venv/bin/python" -m pytest -q -p no:cacheprovider "$root/bindings/python/tests")
if [ -n "${QNT_FROM_BUILD:-}" ]; then
  (cd "$out" && QNT_LIBRARY="$root/$QNT_FROM_BUILD/lib/libqnt.so" PYTHONPATH="$root/bindings/python" \
    /usr/bin/python3 -m pytest -q -p no:cacheprovider "$root/bindings/python/tests")
fi
