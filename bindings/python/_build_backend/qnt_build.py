"""The package's build backend: scikit-build-core's, whose sdist also carries libqnt's sources.

The package lives in the qnt repository (bindings/python) and builds libqnt from the repository
(../..). An sdist holds only this folder, so its wheel could not be built: build_sdist adds the
library's sources (CMakeLists.txt, include, src, kernels, cmake, pkgconfig) under libqnt/, which
CMakeLists.txt uses when it is there. Every other hook is scikit-build-core's.
"""
import gzip
import io
import os
import tarfile

from scikit_build_core import build as _sk
from scikit_build_core.build import *  # noqa: F401,F403  (the PEP 517 hooks)

_ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
_PARTS = ["CMakeLists.txt", "include", "src", "kernels", "cmake", "pkgconfig"]


def build_sdist(sdist_directory, config_settings=None):
    name = _sk.build_sdist(sdist_directory, config_settings)
    if not os.path.exists(os.path.join(_ROOT, "include", "qnt", "qnt.h")):
        return name  # not the repository: an sdist's own tree, which has libqnt/ already
    path = os.path.join(sdist_directory, name)
    with tarfile.open(path, "r:gz") as t:
        members = [(m, t.extractfile(m).read() if m.isfile() else None) for m in t.getmembers()]
    top = members[0][0].name.split("/")[0]

    def clean(info):
        if "__pycache__" in info.name:
            return None
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        info.mtime = 0
        return info

    with gzip.GzipFile(path, "wb", mtime=0) as gz, \
            tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as out:
        for m, data in members:
            out.addfile(m, io.BytesIO(data) if data is not None else None)
        for part in _PARTS:
            out.add(os.path.join(_ROOT, part), arcname=f"{top}/libqnt/{part}", filter=clean)
    return name
