"""The package against the headers: _capi.py is what gen_capi.py makes of them now (no drift),
every declared function is bound in the loaded library and called by the package (coverage), and
the constants agree with the library's own answers."""
import os
import subprocess
import sys

import qnt

HERE = os.path.dirname(os.path.abspath(__file__))
PKG = os.path.normpath(os.path.join(HERE, ".."))


def test_declarations_are_the_headers():
    # against the source tree's _capi.py, and the imported one (the wheel's) is the same text
    r = subprocess.run([sys.executable, os.path.join(PKG, "gen_capi.py"), "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    with open(os.path.join(PKG, "qnt", "_capi.py"), encoding="utf-8") as a, open(qnt.capi.__file__, encoding="utf-8") as b:
        assert a.read() == b.read()


def test_every_function_is_called_by_the_package():
    r = subprocess.run([sys.executable, os.path.join(PKG, "check_coverage.py")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_every_function_is_in_the_library():
    missing = [n for n in qnt.capi.FUNCTIONS if not hasattr(qnt.lib.dll, n)]
    assert missing == []
    assert len(qnt.capi.FUNCTIONS) > 120


def test_constants_agree_with_the_library():
    c = qnt.capi
    assert qnt.version_number() == c.QNT_VERSION_MAJOR * 10000 + c.QNT_VERSION_MINOR * 100 + c.QNT_VERSION_PATCH
    assert qnt.DType.I4.bits == 4 and qnt.DType.TERNARY.bits == 2 and qnt.DType.BINARY.bits == 1
    assert qnt.status_string(c.QNT_ERR_CORRUPT_DATA).startswith("QNT_ERR_CORRUPT_DATA")
    assert str(qnt.Isa.AVX512_VNNI) == "avx512_vnni"
