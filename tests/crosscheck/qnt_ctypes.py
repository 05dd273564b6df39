"""Shared by the model-file cross-checks: libqnt loaded through ctypes with the signatures a
script declares, and a counter of checks."""
import ctypes as C

P = C.c_void_p


def load(path, signatures):
    """libqnt at path, each function of `signatures` (name -> argument types) declared; every
    function but the destroy ones returns a qnt_status (int32)."""
    lib = C.CDLL(path)
    lib.qnt_last_error_message.restype = C.c_char_p
    for name, args in signatures.items():
        getattr(lib, name).argtypes = args
        if not name.endswith("destroy"):
            getattr(lib, name).restype = C.c_int32
    return lib


class Checks:
    """check() counts and prints failures; ok() raises on a failed qnt call with its message."""

    def __init__(self, lib):
        self.lib, self.checks, self.failures = lib, 0, 0

    def check(self, cond, what):
        self.checks += 1
        if not cond:
            self.failures += 1
            print("FAIL:", what)

    def ok(self, status, what):
        if status != 0:
            raise RuntimeError(f"{what}: status {status}: {self.lib.qnt_last_error_message().decode()}")

    def summary(self, label):
        print(f"{label}: {self.checks - self.failures} of {self.checks} checks passed")
        return 1 if self.failures else 0
