#!/usr/bin/env python3
"""Fails when a function of the public headers (include/qnt/qnt.h, qnt_io.h) is not called by the
Python package's own code (qnt/*.py other than the generated _capi.py), so that the package cannot
fall behind the header. Prints the gaps. usage: check_coverage.py"""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen_capi  # noqa: E402

declared = {f[0] for f in gen_capi.parse(gen_capi.HEADERS)[2]}
called = set()
pkg = os.path.join(HERE, "qnt")
for name in os.listdir(pkg):
    if name.endswith(".py") and name != "_capi.py":
        text = open(os.path.join(pkg, name), encoding="utf-8").read()
        called |= set(re.findall(r"\blib\.(qnt_\w+)\(", text))
        called |= set(re.findall(r'getattr\(lib, "(qnt_\w+)"\)', text))
        called |= set(re.findall(r'_destroy = "(qnt_\w+)"', text))
        called |= set(re.findall(r'_get\("(qnt_\w+)"', text))
missing = sorted(declared - called)
if missing:
    print("check_coverage: the Python package does not call these functions of the headers:", file=sys.stderr)
    print("\n".join(missing), file=sys.stderr)
    sys.exit(1)
print(f"check_coverage: the Python package calls all {len(declared)} functions of qnt.h and qnt_io.h")
