"""Loading libqnt, its functions' signatures, and its status codes as exceptions.

The library is found, in order: the path in the environment variable QNT_LIBRARY; the libqnt.so
inside this package (the wheel's); the system's (ctypes.util.find_library("qnt")). Every function
is called through ctypes.CDLL, which releases the GIL for the length of the call, so that Python
threads run qnt's work in parallel.
"""
import ctypes as _C
import ctypes.util
import os

from . import _capi


class QntError(Exception):
    """A qnt call failed: `status` is its qnt_status, `message` the library's message
    (qnt_last_error_message), `status_name` its name ("QNT_ERR_SHAPE_MISMATCH")."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status
        self.message = message

    @property
    def status_name(self):
        for k, v in vars(_capi).items():
            if k.startswith("QNT_ERR_") and v == self.status:
                return k
        return f"status {self.status}"


class InvalidArgumentError(QntError, ValueError):
    """QNT_ERR_INVALID_ARGUMENT: a value is out of its domain."""


class NullPointerError(QntError, ValueError):
    """QNT_ERR_NULL_POINTER: a required object is missing."""


class OutOfMemoryError(QntError, MemoryError):
    """QNT_ERR_OUT_OF_MEMORY: an allocation failed."""


class UnsupportedError(QntError, NotImplementedError):
    """QNT_ERR_UNSUPPORTED: valid, but not implemented for this case (the message says which)."""


class ShapeMismatchError(QntError, ValueError):
    """QNT_ERR_SHAPE_MISMATCH: shapes or parameter counts disagree."""


class DTypeMismatchError(QntError, TypeError):
    """QNT_ERR_DTYPE_MISMATCH: a tensor has the wrong dtype for this call."""


class BufferTooSmallError(QntError, ValueError):
    """QNT_ERR_BUFFER_TOO_SMALL: a buffer or capacity is short."""


class SizeOverflowError(QntError, OverflowError):
    """QNT_ERR_OVERFLOW: a size computation overflows."""


class InvalidQParamsError(QntError, ValueError):
    """QNT_ERR_INVALID_QPARAMS: a scale that is not finite and > 0, a zero point out of range..."""


class NoDeviceError(QntError, RuntimeError):
    """QNT_ERR_NO_DEVICE: no CUDA device, module or driver for this call."""


class InternalError(QntError, RuntimeError):
    """QNT_ERR_INTERNAL: a bug in qnt; please report it with the message."""


class CorruptDataError(QntError, ValueError):
    """QNT_ERR_CORRUPT_DATA: a serialized buffer or a file is truncated, damaged or of another
    version."""


ERRORS = {
    _capi.QNT_ERR_INVALID_ARGUMENT: InvalidArgumentError,
    _capi.QNT_ERR_NULL_POINTER: NullPointerError,
    _capi.QNT_ERR_OUT_OF_MEMORY: OutOfMemoryError,
    _capi.QNT_ERR_UNSUPPORTED: UnsupportedError,
    _capi.QNT_ERR_SHAPE_MISMATCH: ShapeMismatchError,
    _capi.QNT_ERR_DTYPE_MISMATCH: DTypeMismatchError,
    _capi.QNT_ERR_BUFFER_TOO_SMALL: BufferTooSmallError,
    _capi.QNT_ERR_OVERFLOW: SizeOverflowError,
    _capi.QNT_ERR_INVALID_QPARAMS: InvalidQParamsError,
    _capi.QNT_ERR_NO_DEVICE: NoDeviceError,
    _capi.QNT_ERR_INTERNAL: InternalError,
    _capi.QNT_ERR_CORRUPT_DATA: CorruptDataError,
}


def library_path():
    """The path of the libqnt this package loads (see the module's docstring)."""
    env = os.environ.get("QNT_LIBRARY")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    for name in ("libqnt.so", "libqnt.dylib", "qnt.dll"):
        p = os.path.join(here, name)
        if os.path.exists(p):
            return p
    found = ctypes.util.find_library("qnt")
    if found:
        return found
    raise ImportError("qnt: libqnt not found: set QNT_LIBRARY to its path, or install the qnt wheel "
                      "(which carries it), or install libqnt where the loader finds it")


def _missing(name):
    def call(*_args):
        raise UnsupportedError(_capi.QNT_ERR_UNSUPPORTED,
                               f"{name}: the loaded libqnt ({library_path()}) is older than this package")
    return call


class _Lib:
    """The loaded library: each function of the headers as an attribute, with its signature."""

    def __init__(self, path):
        self.path = path
        self.dll = _C.CDLL(path)
        for name, (restype, argtypes, _names, _doc) in _capi.FUNCTIONS.items():
            try:
                fn = getattr(self.dll, name)
            except AttributeError:
                setattr(self, name, _missing(name))
                continue
            fn.restype = restype
            fn.argtypes = argtypes
            setattr(self, name, fn)


lib = _Lib(library_path())
if lib.qnt_abi_check(_capi.QNT_ABI_VERSION) != _capi.QNT_OK:
    raise ImportError(f"qnt: {lib.path}: {lib.qnt_last_error_message().decode()}")


def check(status, what=None):
    """Raises the QntError subclass of a failed status, with the library's message."""
    if status != _capi.QNT_OK:
        msg = (lib.qnt_last_error_message() or b"").decode("utf-8", "replace")
        cls = ERRORS.get(status, QntError)
        raise cls(status, f"{what}: {msg}" if what and not msg.startswith(what) else msg)
