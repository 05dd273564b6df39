"""qnt's objects over the C ABI: dtypes, contexts, qparams, tensors (DLPack in and out),
the operators, calibrators, prepared operators and error reports."""
import array
import ctypes as _C
import dataclasses
import enum
from typing import Any, Iterable, List, Optional, Sequence, Tuple, Union

from . import _capi
from ._lib import InvalidArgumentError, check, lib

_P = _C.c_void_p


def _doc(*names):
    """Appends the header's comment of each C function a wrapper calls to its docstring, so that
    help() shows the contract."""
    def deco(fn):
        parts = [fn.__doc__ or ""]
        for n in names:
            parts.append(f"\n\nC: {n}\n" + "\n".join("    " + ln for ln in _capi.FUNCTIONS[n][3].splitlines()))
        fn.__doc__ = "".join(parts)
        return fn
    return deco


# --- dtypes and enums -------------------------------------------------------------------------
class DType(enum.IntEnum):
    """qnt's element types (qnt_dtype)."""
    F32 = _capi.QNT_DTYPE_F32
    I32 = _capi.QNT_DTYPE_I32
    I8 = _capi.QNT_DTYPE_I8
    U8 = _capi.QNT_DTYPE_U8
    I16 = _capi.QNT_DTYPE_I16
    U16 = _capi.QNT_DTYPE_U16
    I4 = _capi.QNT_DTYPE_I4
    U4 = _capi.QNT_DTYPE_U4
    NF4 = _capi.QNT_DTYPE_NF4
    BINARY = _capi.QNT_DTYPE_BINARY
    TERNARY = _capi.QNT_DTYPE_TERNARY
    F16 = _capi.QNT_DTYPE_F16
    BF16 = _capi.QNT_DTYPE_BF16
    LOG4 = _capi.QNT_DTYPE_LOG4
    LOG8 = _capi.QNT_DTYPE_LOG8

    @property
    def bits(self) -> int:
        """Bits an element (qnt_dtype_bits): 32, 8, 4, 2, 1..."""
        return int(lib.qnt_dtype_bits(self))

    @property
    def packed(self) -> bool:
        """Whether elements are packed several to a byte (i4, u4, NF4, binary, ternary)."""
        return self.bits < 8

    def range(self) -> Tuple[int, int]:
        """The integer codes' [min, max] (qnt_dtype_range), which zero points lie in."""
        lo, hi = _C.c_int32(), _C.c_int32()
        check(lib.qnt_dtype_range(self, _C.byref(lo), _C.byref(hi)), "qnt_dtyperange")
        return lo.value, hi.value

    def __str__(self) -> str:
        return lib.qnt_dtype_name(self).decode()


_DTYPE_NAMES = {
    "float32": DType.F32, "f32": DType.F32, "int32": DType.I32, "i32": DType.I32, "int8": DType.I8,
    "i8": DType.I8, "uint8": DType.U8, "u8": DType.U8, "int16": DType.I16, "i16": DType.I16,
    "uint16": DType.U16, "u16": DType.U16, "int4": DType.I4, "i4": DType.I4, "uint4": DType.U4,
    "u4": DType.U4, "nf4": DType.NF4, "binary": DType.BINARY, "ternary": DType.TERNARY,
    "float16": DType.F16, "f16": DType.F16, "bfloat16": DType.BF16, "bf16": DType.BF16,
    "log4": DType.LOG4, "log8": DType.LOG8,
}


def dtype(d: Any) -> DType:
    """A DType from a DType, its int, its name ("int8", "i8", "nf4", ...) or a NumPy/PyTorch dtype
    of the same name."""
    if isinstance(d, DType):
        return d
    if isinstance(d, int):
        return DType(d)
    name = str(d).replace("torch.", "").lower()
    if name in _DTYPE_NAMES:
        return _DTYPE_NAMES[name]
    raise InvalidArgumentError(_capi.QNT_ERR_INVALID_ARGUMENT, f"{d!r} is not a qnt dtype")


_as_dtype = dtype  # (parameters named dtype shadow the function)


class Granularity(enum.IntEnum):
    PER_TENSOR = _capi.QNT_GRANULARITY_PER_TENSOR
    PER_AXIS = _capi.QNT_GRANULARITY_PER_AXIS
    PER_BLOCK = _capi.QNT_GRANULARITY_PER_BLOCK


class Scheme(enum.IntEnum):
    SYMMETRIC = _capi.QNT_SCHEME_SYMMETRIC
    AFFINE = _capi.QNT_SCHEME_AFFINE
    LOG2 = _capi.QNT_SCHEME_LOG2


class Isa(enum.IntEnum):
    """Kernel sets (qnt_isa), for Context(max_isa=...)."""
    NATIVE = _capi.QNT_ISA_NATIVE
    REFERENCE = _capi.QNT_ISA_REFERENCE
    AVX2 = _capi.QNT_ISA_AVX2
    AVX512 = _capi.QNT_ISA_AVX512
    AVX512_VNNI = _capi.QNT_ISA_AVX512_VNNI
    NEON = _capi.QNT_ISA_NEON
    NEON_DOTPROD = _capi.QNT_ISA_NEON_DOTPROD

    def __str__(self) -> str:
        return lib.qnt_isa_name(self).decode()


class CalibMethod(enum.IntEnum):
    MINMAX = _capi.QNT_CALIB_MINMAX
    MOVING_AVERAGE = _capi.QNT_CALIB_MOVING_AVERAGE
    PERCENTILE = _capi.QNT_CALIB_PERCENTILE
    ENTROPY = _capi.QNT_CALIB_ENTROPY
    MSE = _capi.QNT_CALIB_MSE
    ADAPTIVE = _capi.QNT_CALIB_ADAPTIVE


def _enum(cls, v):
    if isinstance(v, str):
        try:
            return cls[v.upper()]
        except KeyError:
            raise InvalidArgumentError(_capi.QNT_ERR_INVALID_ARGUMENT,
                                       f"{v!r} is not one of {', '.join(m.name.lower() for m in cls)}") from None
    return cls(v)


# --- the library ------------------------------------------------------------------------------
def version() -> str:
    """libqnt's version ("0.12.9"), qnt_version_string."""
    return lib.qnt_version_string().decode()


def version_number() -> int:
    """libqnt's version as major * 10000 + minor * 100 + patch (qnt_version)."""
    return int(lib.qnt_version())


def abi_version() -> int:
    """The library's ABI version (qnt_abi_version)."""
    return int(lib.qnt_abi_version())


def build_info() -> str:
    """How the library was built (compiler, kernels, CUDA module), qnt_build_info."""
    return lib.qnt_build_info().decode()


def status_string(status: int) -> str:
    """The name and meaning of a status code (qnt_status_string)."""
    return lib.qnt_status_string(status).decode()


def live_handles() -> int:
    """How many qnt handles (tensors, qparams, contexts, ...) are alive in the process
    (qnt_live_handles): a leak check."""
    n = _C.c_uint64()
    check(lib.qnt_live_handles(_C.byref(n)), "qnt_live_handles")
    return n.value


def nf4_codebook() -> Tuple[float, ...]:
    """NF4's 16 code values (qnt_nf4_codebook)."""
    out = (_C.c_float * 16)()
    check(lib.qnt_nf4_codebook(out, 16), "qnt_nf4_codebook")
    return tuple(out)


def cpu_feature_name(feature: int) -> str:
    """The name of one CPU feature bit (qnt_cpu_feature_name)."""
    return lib.qnt_cpu_feature_name(feature).decode()


# --- handles ----------------------------------------------------------------------------------
class _Ref(_C.c_void_p):
    """A handle passed to a call, holding the Python object that owns it."""


class _Handle:
    """An owned C handle, destroyed once: by close(), at the end of a `with`, or when garbage
    collected. Handles are independent in C (each keeps what it needs alive), so they may be
    closed in any order."""
    _destroy = None
    _h = None

    def close(self) -> None:
        h, self._h = self._h, None
        if h and self._destroy is not None and lib is not None:
            getattr(lib, self._destroy)(h)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass

    @property
    def _handle(self):
        """The handle as a call argument that keeps this object alive (a temporary such as
        asarray(x)._handle would otherwise be collected, and its handle destroyed, before the call)."""
        if not self._h:
            raise InvalidArgumentError(_capi.QNT_ERR_INVALID_ARGUMENT, f"this {type(self).__name__} is closed")
        ref = _Ref(self._h.value)
        ref.owner = self
        return ref

    def _get(self, fn, ctype):
        """The value a getter `fn`(handle, &out) of this C type writes."""
        v = ctype()
        check(getattr(lib, fn)(self._handle, _C.byref(v)), fn)
        return v.value


def _ctx(ctx):
    return None if ctx is None else ctx._handle


class Tuning(enum.IntEnum):
    """How a context chooses kernel parameters (qnt_tuning): the heuristic's (OFF), the tuning
    table's measured on a miss (MEASURE), or the table's only (CACHED)."""
    OFF = _capi.QNT_TUNING_OFF
    MEASURE = _capi.QNT_TUNING_MEASURE
    CACHED = _capi.QNT_TUNING_CACHED


@_doc('qnt_tuning_export')
def tuning_export() -> str:
    """The process's tuning table as text, for tuning_import in a later run."""
    n = _C.c_size_t()
    check(lib.qnt_tuning_export(None, 0, _C.byref(n)), "qnt_tuning_export")
    buf = _C.create_string_buffer(n.value)
    check(lib.qnt_tuning_export(buf, n.value, _C.byref(n)), "qnt_tuning_export")
    return buf.value.decode()


@_doc('qnt_tuning_import')
def tuning_import(text: str) -> None:
    """Adds a table tuning_export wrote to the process's (all or nothing)."""
    check(lib.qnt_tuning_import(text.encode()), "qnt_tuning_import")


@_doc('qnt_tuning_clear')
def tuning_clear() -> None:
    """Empties the process's tuning table."""
    lib.qnt_tuning_clear()


class Context(_Handle):
    """Threads and kernel choice for the calls that take ctx= (qnt_context). Every call also runs
    without one (ctx=None: the defaults). Many threads may use one context at once; its setters
    must not run while another thread uses it."""
    _destroy = "qnt_context_destroy"

    def __init__(self, threads: Optional[int] = None, max_isa: Union[Isa, str, None] = None,
                 tuning: Union[Tuning, str, None] = None):
        h = _P()
        check(lib.qnt_context_create(_C.byref(h)), "qnt_context_create")
        self._h = h
        if threads is not None:
            self.threads = threads
        if max_isa is not None:
            self.max_isa = max_isa
        if tuning is not None:
            self.tuning = tuning

    @property
    def tuning(self) -> Tuning:
        """The tuning mode (qnt_context_set_tuning); results never depend on it."""
        v = _C.c_int32()
        check(lib.qnt_context_tuning(self._handle, _C.byref(v)), "qnt_context_tuning")
        return Tuning(v.value)

    @tuning.setter
    def tuning(self, mode: Union[Tuning, str]) -> None:
        check(lib.qnt_context_set_tuning(self._handle, _enum(Tuning, mode)), "qnt_context_set_tuning")

    @property
    def threads(self) -> int:
        """Threads the ops may use (0 sets the default)."""
        n = _C.c_int32()
        check(lib.qnt_context_num_threads(self._handle, _C.byref(n)), "qnt_context_num_threads")
        return n.value

    @threads.setter
    def threads(self, n: int) -> None:
        check(lib.qnt_context_set_num_threads(self._handle, int(n)), "qnt_context_set_num_threads")

    @property
    def isa(self) -> Isa:
        """The kernel set the ops run (the machine's best under the cap)."""
        v = _C.c_int32()
        check(lib.qnt_context_isa(self._handle, _C.byref(v)), "qnt_context_isa")
        return Isa(v.value)

    @property
    def max_isa(self) -> Isa:
        return self.isa

    @max_isa.setter
    def max_isa(self, isa: Union[Isa, str]) -> None:
        """Caps the kernel set (Isa.REFERENCE runs the reference kernels)."""
        check(lib.qnt_context_set_max_isa(self._handle, _enum(Isa, isa)), "qnt_context_set_max_isa")

    @property
    def kernels(self) -> str:
        """The kernels this context dispatches to, by op."""
        s = _C.c_char_p()
        check(lib.qnt_context_kernels(self._handle, _C.byref(s)), "qnt_context_kernels")
        return s.value.decode()

    @property
    def cpu_features(self) -> Tuple[str, ...]:
        """The CPU features the library uses on this machine, by name."""
        m = _C.c_uint64()
        check(lib.qnt_context_cpu_features(self._handle, _C.byref(m)), "qnt_context_cpu_features")
        return tuple(lib.qnt_cpu_feature_name(1 << b).decode() for b in range(32) if m.value >> b & 1)

    @property
    def cpu_count(self) -> Tuple[int, int]:
        """(logical, physical) CPUs."""
        a, b = _C.c_int32(), _C.c_int32()
        check(lib.qnt_context_cpu_count(self._handle, _C.byref(a), _C.byref(b)), "qnt_context_cpu_count")
        return a.value, b.value

    def cache_size(self, level: int) -> int:
        """Bytes of the data cache at this level (1, 2, 3); 0 when unknown."""
        n = _C.c_size_t()
        check(lib.qnt_context_cache_size(self._handle, level, _C.byref(n)), "qnt_context_cache_size")
        return n.value

    @property
    def cuda_device_count(self) -> int:
        """Usable CUDA devices (0 without the CUDA module, a driver or a GPU)."""
        n = _C.c_int32()
        check(lib.qnt_context_cuda_device_count(self._handle, _C.byref(n)), "qnt_context_cuda_device_count")
        return n.value

    def cuda_compute_capability(self, device: int) -> Tuple[int, int]:
        a, b = _C.c_int32(), _C.c_int32()
        check(lib.qnt_context_cuda_compute_capability(self._handle, device, _C.byref(a), _C.byref(b)),
              "qnt_context_cuda_compute_capability")
        return a.value, b.value

    def set_cuda_stream(self, device: int, stream: int = 0) -> None:
        """Binds the context to a CUDA device and stream (a cudaStream_t as an int; 0: the default
        stream)."""
        check(lib.qnt_context_set_cuda_stream(self._handle, device, _P(stream)), "qnt_context_set_cuda_stream")

    def synchronize(self) -> None:
        """Waits for the device work submitted through this context."""
        check(lib.qnt_context_synchronize(self._handle), "qnt_context_synchronize")

    def __repr__(self) -> str:
        return f"qnt.Context(threads={self.threads}, isa={self.isa})" if self._h else "qnt.Context(closed)"


# --- numbers in and out -----------------------------------------------------------------------
def _c_array(ctype, values):
    """A ctypes array of `values` (any sequence or buffer) and a keeper."""
    try:
        import numpy as np
        if isinstance(values, np.ndarray) or hasattr(values, "__array__"):
            a = np.ascontiguousarray(values, dtype={_C.c_float: np.float32, _C.c_int32: np.int32,
                                                   _C.c_int64: np.int64}[ctype]).reshape(-1)
            return a.ctypes.data_as(_P), a, a.size
    except ImportError:
        pass
    vals = list(values)
    arr = (ctype * len(vals))(*vals)
    return _C.cast(arr, _P), arr, len(vals)


def _scales_zero_points(scales, zero_points):
    """Pointers to the scales and zero points (None: the dtype's symmetric ones), their count,
    and what keeps the arrays alive."""
    sp, sk, n = _c_array(_C.c_float, scales)
    zp, zk, nz = _c_array(_C.c_int32, zero_points) if zero_points is not None else (None, None, n)
    if nz != n:
        raise InvalidArgumentError(_capi.QNT_ERR_INVALID_ARGUMENT, f"{n} scales but {nz} zero points")
    return sp, zp, n, (sk, zk)


def _shape_array(shape):
    shape = [int(d) for d in shape]
    arr = (_C.c_int64 * max(len(shape), 1))(*shape)
    return arr, len(shape)


# --- qparams ----------------------------------------------------------------------------------
class QParams(_Handle):
    """Quantization parameters (qnt_qparams): a dtype, a granularity and scales and zero points.
    Immutable. Make them with QParams.per_tensor / per_axis / per_block or with the calibration
    functions."""
    _destroy = "qnt_qparams_destroy"

    def __init__(self, _handle):
        self._h = _handle

    @classmethod
    @_doc('qnt_qparams_create_per_tensor')
    def per_tensor(cls, dtype: Any, scale: float, zero_point: int = 0) -> "QParams":
        """One scale and zero point for the whole tensor."""
        h = _P()
        check(lib.qnt_qparams_create_per_tensor(_as_dtype(dtype), float(scale), int(zero_point), _C.byref(h)),
              "qnt_qparams_create_per_tensor")
        return cls(h)

    @classmethod
    @_doc('qnt_qparams_create_per_axis')
    def per_axis(cls, dtype: Any, axis: int, scales: Iterable[float],
                 zero_points: Optional[Iterable[int]] = None) -> "QParams":
        """One scale (and zero point) for each index along `axis` (a channel)."""
        sp, zp, n, _keep = _scales_zero_points(scales, zero_points)
        h = _P()
        check(lib.qnt_qparams_create_per_axis(_as_dtype(dtype), axis, n, sp, zp, _C.byref(h)),
              "qnt_qparams_create_per_axis")
        return cls(h)

    @classmethod
    @_doc('qnt_qparams_create_per_block')
    def per_block(cls, dtype: Any, axis: int, block_size: int, scales: Iterable[float],
                  zero_points: Optional[Iterable[int]] = None) -> "QParams":
        """One scale (and zero point) for each block of `block_size` consecutive elements along
        `axis`, in row-major order of the blocks."""
        sp, zp, n, _keep = _scales_zero_points(scales, zero_points)
        h = _P()
        check(lib.qnt_qparams_create_per_block(_as_dtype(dtype), axis, block_size, n, sp, zp, _C.byref(h)),
              "qnt_qparams_create_per_block")
        return cls(h)

    @property
    def dtype(self) -> DType:
        return DType(self._get("qnt_qparams_dtype", _C.c_int32))

    @property
    def granularity(self) -> Granularity:
        return Granularity(self._get("qnt_qparams_granularity", _C.c_int32))

    @property
    def scheme(self) -> Scheme:
        """SYMMETRIC when every zero point is the dtype's symmetric one."""
        return Scheme(self._get("qnt_qparams_scheme", _C.c_int32))

    @property
    def axis(self) -> int:
        return self._get("qnt_qparams_axis", _C.c_int64)

    @property
    def block_size(self) -> int:
        return self._get("qnt_qparams_block_size", _C.c_int64)

    def __len__(self) -> int:
        return self._get("qnt_qparams_scale_count", _C.c_size_t)

    @property
    def scales(self) -> array.array:
        """The scales, as an array.array('f') (np.asarray(qp.scales) views it)."""
        n = len(self)
        out = array.array("f", bytes(4 * n))
        if n:
            addr, _ = out.buffer_info()
            check(lib.qnt_qparams_scales(self._handle, _P(addr), n), "qnt_qparams_scales")
        return out

    @property
    def zero_points(self) -> array.array:
        """The zero points, as an array.array('i')."""
        n = len(self)
        out = array.array("i", bytes(4 * n))
        if n:
            addr, _ = out.buffer_info()
            check(lib.qnt_qparams_zero_points(self._handle, _P(addr), n), "qnt_qparams_zero_points")
        return out

    def __eq__(self, other) -> bool:
        if not isinstance(other, QParams):
            return NotImplemented
        return (self.dtype, self.granularity, self.axis, self.block_size, self.scales.tobytes(),
                self.zero_points.tobytes()) == (other.dtype, other.granularity, other.axis, other.block_size,
                                                other.scales.tobytes(), other.zero_points.tobytes())

    __hash__ = None

    def __repr__(self) -> str:
        if not self._h:
            return "qnt.QParams(closed)"
        g = self.granularity
        n = len(self)
        s = self.scales
        head = f"scale={s[0]!r}, zero_point={self.zero_points[0]}" if n == 1 else f"{n} scales"
        where = "" if g == Granularity.PER_TENSOR else f", axis={self.axis}"
        if g == Granularity.PER_BLOCK:
            where += f", block_size={self.block_size}"
        return f"qnt.QParams.{g.name.lower()}({self.dtype}{where}, {head})"


# --- DLPack -----------------------------------------------------------------------------------
class _DLDevice(_C.Structure):
    _fields_ = [("device_type", _C.c_int32), ("device_id", _C.c_int32)]


class _DLDataType(_C.Structure):
    _fields_ = [("code", _C.c_uint8), ("bits", _C.c_uint8), ("lanes", _C.c_uint16)]


class _DLTensor(_C.Structure):
    _fields_ = [("data", _P), ("device", _DLDevice), ("ndim", _C.c_int32), ("dtype", _DLDataType),
                ("shape", _C.POINTER(_C.c_int64)), ("strides", _C.POINTER(_C.c_int64)),
                ("byte_offset", _C.c_uint64)]


class _DLManaged(_C.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", _P), ("deleter", _P)]


class _DLVersion(_C.Structure):
    _fields_ = [("major", _C.c_uint32), ("minor", _C.c_uint32)]


class _DLManagedVersioned(_C.Structure):
    _fields_ = [("version", _DLVersion), ("manager_ctx", _P), ("deleter", _P), ("flags", _C.c_uint64),
                ("dl_tensor", _DLTensor)]


_api = _C.pythonapi
_capsule_new = _C.PYFUNCTYPE(_C.py_object, _P, _C.c_char_p, _P)(("PyCapsule_New", _api))
_capsule_pointer = _C.PYFUNCTYPE(_P, _C.py_object, _C.c_char_p)(("PyCapsule_GetPointer", _api))
_capsule_valid = _C.PYFUNCTYPE(_C.c_int, _C.py_object, _C.c_char_p)(("PyCapsule_IsValid", _api))
_capsule_set_name = _C.PYFUNCTYPE(_C.c_int, _C.py_object, _C.c_char_p)(("PyCapsule_SetName", _api))
# in a capsule's destructor the capsule is being freed: raw pointers, no new references
_capsule_valid_raw = _C.PYFUNCTYPE(_C.c_int, _P, _C.c_char_p)(("PyCapsule_IsValid", _api))
_capsule_pointer_raw = _C.PYFUNCTYPE(_P, _P, _C.c_char_p)(("PyCapsule_GetPointer", _api))
_deleter_fn = _C.CFUNCTYPE(None, _P)


@_C.PYFUNCTYPE(None, _P)
def _capsule_destructor(cap):
    """Frees an export nobody consumed (a consumer renames the capsule "used_dltensor")."""
    for name, cls in ((b"dltensor", _DLManaged), (b"dltensor_versioned", _DLManagedVersioned)):
        if _capsule_valid_raw(cap, name):
            ptr = _capsule_pointer_raw(cap, name)
            m = cls.from_address(ptr)
            if m.deleter:
                _deleter_fn(m.deleter)(ptr)
            return


_CAPSULE_DESTRUCTOR = _C.cast(_capsule_destructor, _P)
_SUBBYTE_CODES = {DType.I4: (0, 4), DType.U4: (1, 4), DType.TERNARY: (0, 2)}  # kDLInt 0, kDLUInt 1


def _packed_shape(shape, bits):
    """The uint8 shape a packed tensor's bytes take: its shape with the last dimension in bytes
    when that is a whole number of bytes (then rows are byte-aligned), else one dimension of all
    its bytes."""
    if shape and (shape[-1] * bits) % 8 == 0:
        return tuple(shape[:-1]) + (shape[-1] * bits // 8,)
    n = 1
    for d in shape:
        n *= d
    return ((n * bits + 7) // 8,)


def _retyped_import(managed, versioned, code_bits, shape, qparams):
    """qnt_tensor_from_dlpack of a DLPack tensor whose dtype and shape are first replaced (the
    same bytes seen as another dtype: packed codes as uint8 and back); the producer's fields are
    restored once qnt has read them, so its deleter sees its own."""
    m = (_DLManagedVersioned if versioned else _DLManaged).from_address(managed)
    t = m.dl_tensor
    saved = (t.dtype.code, t.dtype.bits, t.dtype.lanes, t.ndim, _C.cast(t.shape, _P).value,
             _C.cast(t.strides, _P).value)
    dims = (_C.c_int64 * max(len(shape), 1))(*shape)
    t.dtype.code, t.dtype.bits, t.dtype.lanes = code_bits[0], code_bits[1], 1
    t.ndim, t.shape, t.strides = len(shape), _C.cast(dims, _C.POINTER(_C.c_int64)), None
    h = _P()
    try:
        check(lib.qnt_tensor_from_dlpack(_P(managed), int(versioned), qparams, _C.byref(h)), "qnt_tensor_from_dlpack")
    finally:
        t.dtype.code, t.dtype.bits, t.dtype.lanes, t.ndim = saved[0], saved[1], saved[2], saved[3]
        t.shape = _C.cast(_P(saved[4]), _C.POINTER(_C.c_int64))
        t.strides = _C.cast(_P(saved[5]), _C.POINTER(_C.c_int64))
    return h


# --- tensors ----------------------------------------------------------------------------------
class Tensor(_Handle):
    """A qnt tensor (qnt_tensor): dtype, shape, optional qparams, and its memory (qnt's own, an
    imported DLPack producer's, or a mapped model file's). Exchanges memory with NumPy, PyTorch,
    JAX... through DLPack both ways without copying:

        t = qnt.asarray(np_array)       # or torch_tensor: a view of its memory
        a = np.from_dlpack(t)           # or torch.from_dlpack(t): a view of t's memory

    Packed dtypes (i4, u4, ternary, NF4, binary) leave as uint8 bytes in qnt's packing (element 0
    in the low bits): of shape (*shape[:-1], shape[-1] * bits / 8) when the last dimension fills
    whole bytes, else (byte_size,); i4, u4 and ternary as views, NF4 and binary (which DLPack has
    no type for, so qnt does not export them) as a copy. qnt.asarray(u8_bytes, dtype="i4", shape=...) takes them back.
    """
    _destroy = "qnt_tensor_destroy"

    def __init__(self, _handle, _keep=None):
        self._h = _handle
        self._keep = _keep  # what a wrapped tensor's memory belongs to

    @classmethod
    def empty(cls, shape: Sequence[int], dtype: Any = DType.F32, qparams: Optional[QParams] = None) -> "Tensor":
        """A new zero-filled tensor in qnt's memory (qnt_tensor_create)."""
        dims, rank = _shape_array(shape)
        h = _P()
        check(lib.qnt_tensor_create(_as_dtype(dtype), dims, rank, qparams._handle if qparams else None, _C.byref(h)),
              "qnt_tensor_create")
        return cls(h)

    @classmethod
    def from_bytes(cls, data: bytes, shape: Sequence[int], dtype: Any, qparams: Optional[QParams] = None) -> "Tensor":
        """A new tensor holding a copy of `data` (its byte size exactly; qnt_tensor_create_from_data)."""
        dims, rank = _shape_array(shape)
        buf = bytes(data)
        h = _P()
        check(lib.qnt_tensor_create_from_data(_as_dtype(dtype), dims, rank, qparams._handle if qparams else None,
                                              buf, len(buf), _C.byref(h)), "qnt_tensor_create_from_data")
        return cls(h)

    @classmethod
    @_doc('qnt_tensor_wrap')
    def wrap(cls, buffer: Any, shape: Sequence[int], dtype: Any, qparams: Optional[QParams] = None) -> "Tensor":
        """A tensor over a writable buffer's memory (bytearray, array.array, a NumPy array...),
        without copying (qnt_tensor_wrap); the tensor keeps the buffer alive."""
        mv = memoryview(buffer)
        if mv.readonly or not mv.c_contiguous:
            raise InvalidArgumentError(_capi.QNT_ERR_INVALID_ARGUMENT, "wrap needs a writable, C-contiguous buffer")
        n = mv.nbytes
        addr = _C.addressof(_C.c_char.from_buffer(mv.cast("B"))) if n else 0
        dims, rank = _shape_array(shape)
        h = _P()
        check(lib.qnt_tensor_wrap(_as_dtype(dtype), dims, rank, qparams._handle if qparams else None, _P(addr), n,
                                  _C.byref(h)), "qnt_tensor_wrap")
        return cls(h, _keep=(buffer, mv))

    @classmethod
    def empty_on_device(cls, shape: Sequence[int], dtype: Any = DType.F32, qparams: Optional[QParams] = None,
                        device: int = 0) -> "Tensor":
        """A new tensor in a CUDA device's memory (qnt_tensor_create_on_device); NoDeviceError
        without one."""
        dims, rank = _shape_array(shape)
        h = _P()
        check(lib.qnt_tensor_create_on_device(_as_dtype(dtype), dims, rank, qparams._handle if qparams else None,
                                              _capi.QNT_DEVICE_CUDA, device, _C.byref(h)),
              "qnt_tensor_create_on_device")
        return cls(h)

    @classmethod
    def wrap_device(cls, pointer: int, nbytes: int, shape: Sequence[int], dtype: Any,
                    qparams: Optional[QParams] = None, device: int = 0) -> "Tensor":
        """A tensor over CUDA device memory at `pointer` (borrowed; qnt_tensor_wrap_device)."""
        dims, rank = _shape_array(shape)
        h = _P()
        check(lib.qnt_tensor_wrap_device(_as_dtype(dtype), dims, rank, qparams._handle if qparams else None,
                                         _capi.QNT_DEVICE_CUDA, device, _P(pointer), nbytes, _C.byref(h)),
              "qnt_tensor_wrap_device")
        return cls(h)

    @classmethod
    @_doc('qnt_tensor_from_dlpack')
    def from_dlpack(cls, obj: Any, qparams: Optional[QParams] = None, dtype: Any = None,
                    shape: Optional[Sequence[int]] = None) -> "Tensor":
        """A tensor over the memory of anything with __dlpack__ (NumPy >= 1.22, PyTorch, JAX, a
        qnt Tensor), without copying; it must be compact and row-major. qparams are attached on
        import. dtype and shape take a uint8 array of packed codes as a packed tensor."""
        if not hasattr(obj, "__dlpack__"):
            raise InvalidArgumentError(_capi.QNT_ERR_INVALID_ARGUMENT,
                                       f"{type(obj).__name__} has no __dlpack__ (use qnt.asarray)")
        try:
            cap = obj.__dlpack__(max_version=(1, 0))
        except TypeError:  # a producer older than DLPack 1.0's protocol
            cap = obj.__dlpack__()
        versioned = bool(_capsule_valid(cap, b"dltensor_versioned"))
        name = b"dltensor_versioned" if versioned else b"dltensor"
        managed = _capsule_pointer(cap, name)
        qh = qparams._handle if qparams is not None else None
        if dtype is not None and _as_dtype(dtype).packed:
            d = _as_dtype(dtype)
            if d not in _SUBBYTE_CODES:
                raise InvalidArgumentError(_capi.QNT_ERR_UNSUPPORTED,
                                           f"{d} codes have no DLPack type; wrap them with Tensor.wrap")
            if shape is None:
                raise InvalidArgumentError(_capi.QNT_ERR_INVALID_ARGUMENT, f"a {d} tensor from bytes needs its shape")
            src = (_DLManagedVersioned if versioned else _DLManaged).from_address(managed).dl_tensor
            n = 1
            for k in range(src.ndim):
                n *= src.shape[k]
            if (src.dtype.code, src.dtype.bits) != (1, 8) or n != _nbytes(shape, d.bits):
                raise InvalidArgumentError(_capi.QNT_ERR_SHAPE_MISMATCH,
                                           f"{d} {list(shape)} is {_nbytes(shape, d.bits)} bytes of uint8; got "
                                           f"{n} elements of DLPack type ({src.dtype.code}, {src.dtype.bits})")
            h = _retyped_import(managed, versioned, _SUBBYTE_CODES[d], list(shape), qh)
        else:
            h = _P()
            check(lib.qnt_tensor_from_dlpack(_P(managed), int(versioned), qh, _C.byref(h)), "qnt_tensor_from_dlpack")
        # qnt owns the producer's tensor now: the capsule must not free it
        _capsule_set_name(cap, b"used_dltensor_versioned" if versioned else b"used_dltensor")
        t = cls(h)
        if dtype is not None and t.dtype != _as_dtype(dtype):
            raise InvalidArgumentError(_capi.QNT_ERR_DTYPE_MISMATCH, f"the array is {t.dtype}, not {_as_dtype(dtype)}")
        return t

    @property
    def dtype(self) -> DType:
        return DType(self._get("qnt_tensor_dtype", _C.c_int32))

    @property
    def ndim(self) -> int:
        return self._get("qnt_tensor_rank", _C.c_size_t)

    @property
    def shape(self) -> Tuple[int, ...]:
        n = self.ndim
        dims = (_C.c_int64 * max(n, 1))()
        check(lib.qnt_tensor_shape(self._handle, dims, n), "qnt_tensor_shape")
        return tuple(dims[:n])

    @property
    def size(self) -> int:
        """Elements."""
        return self._get("qnt_tensor_element_count", _C.c_size_t)

    @property
    def nbytes(self) -> int:
        return self._get("qnt_tensor_byte_size", _C.c_size_t)

    @property
    def qparams(self) -> Optional[QParams]:
        h = _P()
        check(lib.qnt_tensor_qparams(self._handle, _C.byref(h)), "qnt_tensor_qparams")
        return QParams(h) if h.value else None

    @property
    def data_ptr(self) -> int:
        """The address of the first byte (host or device memory)."""
        return self._get("qnt_tensor_data", _P) or 0

    @property
    def device(self) -> Tuple[str, int]:
        """("cpu", 0) or ("cuda", index)."""
        a, b = _C.c_int32(), _C.c_int32()
        check(lib.qnt_tensor_device(self._handle, _C.byref(a), _C.byref(b)), "qnt_tensor_device")
        return ("cuda" if a.value == _capi.QNT_DEVICE_CUDA else "cpu", b.value)

    @property
    def read_only(self) -> bool:
        return bool(self._get("qnt_tensor_is_read_only", _C.c_int32))

    def __len__(self) -> int:
        s = self.shape
        if not s:
            raise TypeError("len() of a 0-d tensor")
        return s[0]

    def tobytes(self) -> bytes:
        """A copy of the tensor's bytes (qnt_tensor_copy_to; device tensors too)."""
        n = self.nbytes
        buf = _C.create_string_buffer(max(n, 1))
        check(lib.qnt_tensor_copy_to(self._handle, buf, n), "qnt_tensor_copy_to")
        return buf.raw[:n]

    def copy_from(self, data: Any) -> None:
        """Overwrites the tensor's bytes from a buffer of exactly its byte size (qnt_tensor_copy_from)."""
        mv = memoryview(data).cast("B")
        src = bytes(mv) if not mv.c_contiguous else mv
        buf = (_C.c_char * len(src)).from_buffer_copy(src) if len(src) else None
        check(lib.qnt_tensor_copy_from(self._handle, buf, len(src)), "qnt_tensor_copy_from")

    def copy(self, device: Optional[Tuple[str, int]] = None, ctx: Optional[Context] = None) -> "Tensor":
        """A copy in qnt's memory, on this tensor's device or another ("cpu" or ("cuda", i))."""
        dev = device if device is not None else self.device
        if isinstance(dev, str):
            dev = (dev, 0)
        q = self.qparams
        if dev[0] == "cpu":
            out = Tensor.empty(self.shape, self.dtype, q)
        else:
            out = Tensor.empty_on_device(self.shape, self.dtype, q, dev[1])
        check(lib.qnt_tensor_copy(_ctx(ctx), self._handle, out._handle), "qnt_tensor_copy")
        return out

    # DLPack out
    def __dlpack_device__(self) -> Tuple[int, int]:
        kind, index = self.device
        return (2, index) if kind == "cuda" else (1, 0)

    @_doc('qnt_tensor_to_dlpack')
    def __dlpack__(self, *, stream: Any = None, max_version: Optional[Tuple[int, int]] = None,
                   dl_device: Any = None, copy: Optional[bool] = None):
        """A DLPack capsule of this tensor's memory (DLPack 1.0 when the consumer asks for it,
        else the legacy form); see the class docstring for packed dtypes."""
        if copy:
            return self.copy().__dlpack__(stream=stream, max_version=max_version)
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError("qnt: export to another device needs copy=True (Tensor.copy(device))")
        versioned = max_version is not None and tuple(max_version) >= (1, 0)
        if self.read_only and not versioned:
            raise BufferError("qnt: this tensor is read-only (a view of a file) and the consumer asked for "
                              "legacy DLPack, which cannot say so; use a DLPack 1.0 consumer (NumPy 2) or copy()")
        d = self.dtype
        src = self
        if d.packed:
            if d not in _SUBBYTE_CODES:
                src = Tensor.from_bytes(self.tobytes(), (self.nbytes,), DType.U8)  # NF4, binary: a copy
            else:
                out = _P()
                check(lib.qnt_tensor_to_dlpack(self._handle, 0, _C.byref(out)), "qnt_tensor_to_dlpack")
                try:
                    h = _retyped_import(out.value, False, (1, 8), list(_packed_shape(self.shape, d.bits)), None)
                except Exception:
                    m = _DLManaged.from_address(out.value)
                    _deleter_fn(m.deleter)(out.value)
                    raise
                src = Tensor(h)
        out = _P()
        check(lib.qnt_tensor_to_dlpack(src._handle, int(versioned), _C.byref(out)), "qnt_tensor_to_dlpack")
        return _capsule_new(out, b"dltensor_versioned" if versioned else b"dltensor", _CAPSULE_DESTRUCTOR)

    def numpy(self):
        """A NumPy array over this tensor's memory (np.from_dlpack; packed dtypes as uint8)."""
        import numpy as np
        return np.from_dlpack(self)

    def __repr__(self) -> str:
        if not self._h:
            return "qnt.Tensor(closed)"
        q = self.qparams
        dev = "" if self.device[0] == "cpu" else f", device={self.device}"
        return f"qnt.Tensor(shape={list(self.shape)}, dtype={self.dtype}{dev}" + (f", qparams={q!r})" if q else ")")


def _nbytes(shape, bits):
    n = 1
    for d in shape:
        n *= int(d)
    return (n * bits + 7) // 8


def asarray(obj: Any, dtype: Any = None, qparams: Optional[QParams] = None,
            shape: Optional[Sequence[int]] = None) -> Tensor:
    """A qnt Tensor of obj: a Tensor as it is (qparams attached to a view when given); anything
    with __dlpack__ without a copy (compact row-major memory); anything else (lists, scalars,
    non-contiguous arrays, read-only arrays that NumPy 1.x will not export) through NumPy, copied,
    as float32 unless dtype says otherwise. A uint8
    array with a packed dtype (i4, u4, ternary) and a shape is read as packed codes."""
    if isinstance(obj, Tensor):
        if qparams is None and (dtype is None or _as_dtype(dtype) == obj.dtype):
            return obj
        return Tensor.from_dlpack(obj, qparams=qparams, dtype=dtype, shape=shape)
    if hasattr(obj, "__dlpack__"):
        try:
            return Tensor.from_dlpack(obj, qparams=qparams, dtype=dtype, shape=shape)
        except InvalidArgumentError as e:  # strided: copied below
            if "strides" not in str(e):
                raise
        except BufferError:  # NumPy 1.x exports no read-only array through DLPack: copied below
            pass
    import numpy as np
    d = _as_dtype(dtype) if dtype is not None else DType.F32
    npd = {DType.F32: np.float32, DType.I32: np.int32, DType.I8: np.int8, DType.U8: np.uint8,
           DType.I16: np.int16, DType.U16: np.uint16, DType.F16: np.float16}.get(d, np.uint8)
    a = np.array(obj, dtype=npd, order="C")  # a copy, writable
    return Tensor.from_dlpack(a, qparams=qparams, dtype=dtype, shape=shape)


# --- quantize, dequantize, requantize ---------------------------------------------------------
@_doc('qnt_quantize')
def quantize(x: Any, qparams: QParams, dtype: Any = None, *, out: Optional[Tensor] = None,
             ctx: Optional[Context] = None) -> Tensor:
    """y = quantize(x) by the ONNX QuantizeLinear rule: saturate(round_half_to_even(x / scale) +
    zero_point), with qparams' granularity (NF4: nearest code of x / absmax; binary: sign). x is
    float32 (or float16 / bfloat16). dtype defaults to qparams.dtype. Returns out, or a new
    tensor carrying qparams (qnt_quantize)."""
    xt = asarray(x)
    if out is None:
        out = Tensor.empty(xt.shape, dtype if dtype is not None else qparams.dtype, qparams)
    check(lib.qnt_quantize(_ctx(ctx), xt._handle, out._handle), "qnt_quantize")
    return out


@_doc('qnt_dequantize')
def dequantize(q: Any, qparams: Optional[QParams] = None, *, dtype: Any = DType.F32,
               out: Optional[Tensor] = None, ctx: Optional[Context] = None) -> Tensor:
    """x = (q - zero_point) * scale in float32 (the ONNX DequantizeLinear rule; NF4 and binary
    by their codes), into a new float32 (or dtype: f16, bf16) tensor (qnt_dequantize). qparams
    attach to q when it carries none."""
    qt = asarray(q, qparams=qparams)
    if out is None:
        out = Tensor.empty(qt.shape, dtype)
    check(lib.qnt_dequantize(_ctx(ctx), qt._handle, out._handle), "qnt_dequantize")
    return out


@_doc('qnt_requantize')
def requantize(q: Tensor, qparams: QParams, dtype: Any = None, *, out: Optional[Tensor] = None,
               ctx: Optional[Context] = None) -> Tensor:
    """q moved to other qparams and dtype without going through float (qnt_requantize)."""
    if out is None:
        out = Tensor.empty(q.shape, dtype if dtype is not None else qparams.dtype, qparams)
    check(lib.qnt_requantize(_ctx(ctx), asarray(q)._handle, out._handle), "qnt_requantize")
    return out


@_doc('qnt_calibrate_minmax', 'qnt_calibrate_minmax_range')
def calibrate_minmax(x: Any, dtype: Any, scheme: Union[Scheme, str] = Scheme.SYMMETRIC,
                     granularity: Union[Granularity, str] = Granularity.PER_TENSOR, axis: int = 0,
                     block_size: int = 0, *, quant_min: Optional[int] = None, quant_max: Optional[int] = None,
                     ctx: Optional[Context] = None) -> QParams:
    """qparams from x's min and max by PyTorch's observers' formulas (qnt_calibrate_minmax, or
    qnt_calibrate_minmax_range with quant_min / quant_max)."""
    xt = asarray(x)
    h = _P()
    g = _enum(Granularity, granularity)
    s = _enum(Scheme, scheme)
    if quant_min is None and quant_max is None:
        check(lib.qnt_calibrate_minmax(_ctx(ctx), xt._handle, _as_dtype(dtype), s, g, axis, block_size, _C.byref(h)),
              "qnt_calibrate_minmax")
    else:
        lo, hi = _as_dtype(dtype).range()
        check(lib.qnt_calibrate_minmax_range(_ctx(ctx), xt._handle, _as_dtype(dtype), s, g, axis, block_size,
                                             lo if quant_min is None else quant_min,
                                             hi if quant_max is None else quant_max, _C.byref(h)),
              "qnt_calibrate_minmax_range")
    return QParams(h)


@_doc('qnt_calibrate_codebook')
def calibrate_codebook(x: Any, dtype: Any, granularity: Union[Granularity, str] = Granularity.PER_BLOCK,
                       axis: int = 0, block_size: int = 64, *, ctx: Optional[Context] = None) -> QParams:
    """The codebook dtypes' scales: NF4 and log absmax, binary / ternary absmean (qnt_calibrate_codebook)."""
    h = _P()
    check(lib.qnt_calibrate_codebook(_ctx(ctx), asarray(x)._handle, _as_dtype(dtype), _enum(Granularity, granularity),
                                     axis, block_size, _C.byref(h)), "qnt_calibrate_codebook")
    return QParams(h)


@_doc('qnt_qparams_pow2_scales')
def pow2_scales(qparams: QParams, x: Any = None, *, ctx: Optional[Context] = None) -> QParams:
    """qparams with every scale a power of two (qnt_qparams_pow2_scales): without x the power of two
    at or above each scale; with x, of the two either side, the one with the smaller squared error."""
    h = _P()
    xh = None if x is None else asarray(x)._handle
    check(lib.qnt_qparams_pow2_scales(_ctx(ctx), qparams._handle, xh, _C.byref(h)), "qnt_qparams_pow2_scales")
    return QParams(h)


@dataclasses.dataclass(frozen=True)
class ErrorReport:
    """How well qparams represent x (qnt_error_report): mse, sqnr_db (+inf when exact),
    max_abs_error, saturated_fraction, count (finite values measured)."""
    mse: float
    sqnr_db: float
    max_abs_error: float
    saturated_fraction: float
    count: int


@_doc('qnt_error_report_compute')
def error_report(x: Any, qparams: QParams, *, ctx: Optional[Context] = None) -> ErrorReport:
    """x quantized with qparams and dequantized back, measured (qnt_error_report_compute)."""
    r = _capi.QntErrorReport()
    check(lib.qnt_error_report_compute(_ctx(ctx), asarray(x)._handle, qparams._handle, _C.byref(r), _C.sizeof(r)),
          "qnt_error_report_compute")
    return ErrorReport(r.mse, r.sqnr_db, r.max_abs_error, r.saturated_fraction, r.count)


# --- operators --------------------------------------------------------------------------------
_OPTIONS = {
    "stride": (_capi.QNT_OP_STRIDE_H, _capi.QNT_OP_STRIDE_W), "padding": None, "dilation":
    (_capi.QNT_OP_DILATION_H, _capi.QNT_OP_DILATION_W), "groups": _capi.QNT_OP_GROUPS,
    "relu": _capi.QNT_OP_FUSE_RELU, "act_quant": _capi.QNT_OP_ACT_QUANT, "reduce_range": _capi.QNT_OP_REDUCE_RANGE,
    "layout": _capi.QNT_OP_LAYOUT, "weight_only_mode": _capi.QNT_OP_WEIGHT_ONLY_MODE,
}
_NAMED = {
    "act_quant": {"per_tensor": _capi.QNT_ACT_PER_TENSOR, "per_row": _capi.QNT_ACT_PER_ROW},
    "layout": {"nchw": _capi.QNT_LAYOUT_NCHW, "nhwc": _capi.QNT_LAYOUT_NHWC},
    "weight_only_mode": {"f32": _capi.QNT_WEIGHT_ONLY_F32, "int8_act": _capi.QNT_WEIGHT_ONLY_INT8_ACT,
                         "int8_token": _capi.QNT_WEIGHT_ONLY_INT8_TOKEN, "int8_block": _capi.QNT_WEIGHT_ONLY_INT8_BLOCK},
}


class OpDesc(_Handle):
    """An operator's options (qnt_op_desc), from keywords: stride=(h, w) or s, padding=(top, left,
    bottom, right) or p, dilation, groups, relu, act_quant ("per_tensor" | "per_row"),
    reduce_range, layout ("nchw" | "nhwc"), weight_only_mode ("f32" | "int8_act" | "int8_token" |
    "int8_block")."""
    _destroy = "qnt_op_desc_destroy"

    def __init__(self, **options):
        h = _P()
        check(lib.qnt_op_desc_create(_C.byref(h)), "qnt_op_desc_create")
        self._h = h
        for k, v in options.items():
            if v is None:
                continue
            if k not in _OPTIONS:
                raise InvalidArgumentError(_capi.QNT_ERR_INVALID_ARGUMENT,
                                           f"unknown option {k!r} (one of {', '.join(_OPTIONS)})")
            if k == "padding":
                p = (v,) * 4 if isinstance(v, int) else tuple(v)
                if len(p) == 2:
                    p = (p[0], p[1], p[0], p[1])
                keys = (_capi.QNT_OP_PAD_TOP, _capi.QNT_OP_PAD_LEFT, _capi.QNT_OP_PAD_BOTTOM, _capi.QNT_OP_PAD_RIGHT)
                for key, val in zip(keys, p):
                    self.set(key, val)
            elif isinstance(_OPTIONS[k], tuple):
                pair = (v, v) if isinstance(v, int) else tuple(v)
                for key, val in zip(_OPTIONS[k], pair):
                    self.set(key, val)
            else:
                if isinstance(v, str):
                    v = _NAMED[k][v.lower()]
                self.set(_OPTIONS[k], int(v))

    def set(self, key: int, value: int) -> None:
        check(lib.qnt_op_desc_set(self._handle, key, int(value)), "qnt_op_desc_set")

    def get(self, key: int) -> int:
        v = _C.c_int64()
        check(lib.qnt_op_desc_get(self._handle, key, _C.byref(v)), "qnt_op_desc_get")
        return v.value


def _desc(options):
    return OpDesc(**options) if options else None


def _h(t):
    return None if t is None else asarray(t)._handle


@_doc('qnt_qmatmul')
def qmatmul(a: Any, b: Any, bias: Any = None, *, out_dtype: Any = DType.I32, out_qparams: Optional[QParams] = None,
            out: Optional[Tensor] = None, ctx: Optional[Context] = None) -> Tensor:
    """ONNX MatMulInteger / QLinearMatMul (qnt_qmatmul): a [..., M, K] times b [..., K, N], int32
    accumulation; the output's dtype picks the mode (i32: the accumulators; i8/u8 with
    out_qparams: requantized; f32: scaled)."""
    at, bt = asarray(a), asarray(b)
    if out is None:
        batch = _broadcast(at.shape[:-2], bt.shape[:-2])
        out = Tensor.empty(batch + (at.shape[-2], bt.shape[-1]), out_dtype, out_qparams)
    check(lib.qnt_qmatmul(_ctx(ctx), at._handle, bt._handle, _h(bias), out._handle), "qnt_qmatmul")
    return out


@_doc('qnt_binary_matmul')
def binary_matmul(a: Any, b: Any, *, out_dtype: Any = DType.I32, out: Optional[Tensor] = None,
                  ctx: Optional[Context] = None) -> Tensor:
    """Binary matrix product by XOR and popcount (qnt_binary_matmul): a binary [M, K] times b binary
    [N, K] (values -1 and +1); i32 output: the exact sums; f32: scaled by the rows' scales (a and b
    then need qparams)."""
    at, bt = asarray(a), asarray(b)
    if out is None:
        out = Tensor.empty((at.shape[0], bt.shape[0]), out_dtype)
    check(lib.qnt_binary_matmul(_ctx(ctx), at._handle, bt._handle, out._handle), "qnt_binary_matmul")
    return out


def _broadcast(a, b):
    n = max(len(a), len(b))
    a = (1,) * (n - len(a)) + tuple(a)
    b = (1,) * (n - len(b)) + tuple(b)
    return tuple(max(x, y) if 1 in (x, y) else x for x, y in zip(a, b))


@_doc('qnt_dynamic_quantize_linear')
def dynamic_quantize_linear(x: Any, *, ctx: Optional[Context] = None) -> Tensor:
    """ONNX DynamicQuantizeLinear: x to uint8 with per-tensor qparams from its range
    (qnt_dynamic_quantize_linear); read them with .qparams."""
    h = _P()
    check(lib.qnt_dynamic_quantize_linear(_ctx(ctx), asarray(x)._handle, _C.byref(h)), "qnt_dynamic_quantize_linear")
    return Tensor(h)


_TERNARY_LAYOUTS = {"i2_s": 1, "tl1": 2, "tl2": 3}


def _ternary_layout(layout: Union[str, int]) -> int:
    if isinstance(layout, str):
        try:
            return _TERNARY_LAYOUTS[layout.lower()]
        except KeyError:
            raise ValueError(f"unknown ternary layout {layout!r} (i2_s, tl1, tl2)") from None
    return int(layout)


def _tiling(tiling):
    if tiling is None:
        return None
    bm, bk, bmm = tiling
    return _C.byref(_capi.QntTernaryTiling(int(bm), int(bk), int(bmm)))


@_doc('qnt_ternary_layout_size')
def ternary_layout_size(layout: Union[str, int], shape: Tuple[int, int], tiling: Optional[Tuple[int, int, int]] = None) -> int:
    """The bytes of a ternary [rows, cols] tensor in bitnet.cpp's layout "i2_s", "tl1" or "tl2"
    (tiling: the (bm, bk, bmm) of TL1 and TL2)."""
    n = _C.c_size_t()
    check(lib.qnt_ternary_layout_size(_ternary_layout(layout), int(shape[0]), int(shape[1]), _tiling(tiling),
                                      _C.byref(n)), "qnt_ternary_layout_size")
    return n.value


@_doc('qnt_ternary_export')
def ternary_export(w: Tensor, layout: Union[str, int], tiling: Optional[Tuple[int, int, int]] = None) -> bytes:
    """A ternary tensor [rows, cols] as the bytes of bitnet.cpp's layout "i2_s", "tl1" or "tl2"."""
    n = ternary_layout_size(layout, w.shape, tiling)
    buf = (_C.c_uint8 * max(n, 1))()
    check(lib.qnt_ternary_export(_ternary_layout(layout), w._handle, _tiling(tiling), buf, n), "qnt_ternary_export")
    return bytes(buf)[:n]


@_doc('qnt_ternary_import')
def ternary_import(data: bytes, layout: Union[str, int], shape: Tuple[int, int],
                   tiling: Optional[Tuple[int, int, int]] = None, scale: float = 1.0) -> Tensor:
    """The ternary tensor [rows, cols] that bytes of bitnet.cpp's layout hold (scale: TL1's and
    TL2's; I2_S carries its own)."""
    raw = bytes(data)
    buf = (_C.c_uint8 * max(len(raw), 1)).from_buffer_copy(raw + b"\0" * (1 - min(len(raw), 1)))
    h = _P()
    check(lib.qnt_ternary_import(_ternary_layout(layout), buf, len(raw), int(shape[0]), int(shape[1]),
                                 _tiling(tiling), float(scale), _C.byref(h)), "qnt_ternary_import")
    return Tensor(h)


@_doc('qnt_linear_dynamic')
def linear_dynamic(x: Any, w: Tensor, bias: Any = None, *, out: Optional[Tensor] = None,
                   ctx: Optional[Context] = None, **options) -> Tensor:
    """PyTorch's dynamic quantized Linear (qnt_linear_dynamic): x f32 [..., K], w i8 [N, K] with
    qparams, bias f32 [N]; options act_quant, reduce_range, relu."""
    xt = asarray(x)
    if out is None:
        out = Tensor.empty(xt.shape[:-1] + (w.shape[0],), DType.F32)
    d = _desc(options)
    check(lib.qnt_linear_dynamic(_ctx(ctx), xt._handle, w._handle, _h(bias), d._handle if d else None, out._handle),
          "qnt_linear_dynamic")
    return out


@_doc('qnt_linear_weight_only')
def linear_weight_only(x: Any, w: Tensor, bias: Any = None, *, out: Optional[Tensor] = None,
                       ctx: Optional[Context] = None) -> Tensor:
    """Weight-only linear layer (qnt_linear_weight_only): x f32/f16/bf16 [..., K], w quantized
    [N, K] (i4/u4/NF4 per block...), bias f32 [N]; y in x's dtype."""
    xt = asarray(x)
    if out is None:
        out = Tensor.empty(xt.shape[:-1] + (w.shape[0],), xt.dtype)
    check(lib.qnt_linear_weight_only(_ctx(ctx), xt._handle, w._handle, _h(bias), out._handle),
          "qnt_linear_weight_only")
    return out


@_doc('qnt_conv2d_output_shape')
def conv2d_output_shape(x: Any, w: Any, **options) -> Tuple[int, ...]:
    """qconv2d's output shape for these shapes and options (qnt_conv2d_output_shape)."""
    d = _desc(options)
    dims = (_C.c_int64 * 4)()
    check(lib.qnt_conv2d_output_shape(asarray(x)._handle, asarray(w)._handle, d._handle if d else None, dims, 4),
          "qnt_conv2d_output_shape")
    return tuple(dims)


@_doc('qnt_qconv2d')
def qconv2d(x: Any, w: Tensor, bias: Any = None, *, out_dtype: Any = DType.I32,
            out_qparams: Optional[QParams] = None, out: Optional[Tensor] = None, ctx: Optional[Context] = None,
            **options) -> Tensor:
    """ONNX QLinearConv / ConvInteger (qnt_qconv2d); options stride, padding, dilation, groups,
    relu, layout."""
    xt = asarray(x)
    d = _desc(options)
    if out is None:
        out = Tensor.empty(conv2d_output_shape(xt, w, **options), out_dtype, out_qparams)
    check(lib.qnt_qconv2d(_ctx(ctx), xt._handle, w._handle, _h(bias), d._handle if d else None, out._handle),
          "qnt_qconv2d")
    return out


@_doc('qnt_qadd')
def qadd(a: Tensor, b: Tensor, out_qparams: QParams, out_dtype: Any = None, *, relu: bool = False,
         out: Optional[Tensor] = None, ctx: Optional[Context] = None) -> Tensor:
    """Quantized addition in float32 (qnt_qadd): dequantize, add, (relu,) quantize."""
    if out is None:
        out = Tensor.empty(a.shape, out_dtype if out_dtype is not None else out_qparams.dtype, out_qparams)
    d = _desc({"relu": 1} if relu else {})
    check(lib.qnt_qadd(_ctx(ctx), a._handle, b._handle, d._handle if d else None, out._handle), "qnt_qadd")
    return out


@_doc('qnt_qrelu', 'qnt_qrelu_clamp')
def qrelu(x: Tensor, upper: Optional[float] = None, *, out: Optional[Tensor] = None,
          ctx: Optional[Context] = None) -> Tensor:
    """Quantized ReLU, max(x, zero_point) (qnt_qrelu), or with an upper bound (ReLU6: upper=6;
    qnt_qrelu_clamp)."""
    if out is None:
        out = Tensor.empty(x.shape, x.dtype, x.qparams)
    if upper is None:
        check(lib.qnt_qrelu(_ctx(ctx), x._handle, out._handle), "qnt_qrelu")
    else:
        check(lib.qnt_qrelu_clamp(_ctx(ctx), x._handle, float(upper), out._handle), "qnt_qrelu_clamp")
    return out


# --- prepared operators -----------------------------------------------------------------------
class Prepared(_Handle):
    """An operator with its constant weights prepared once for this machine's kernels
    (qnt_prepared); call it like a function. Immutable: many threads may call it at once."""
    _destroy = "qnt_prepared_destroy"
    _out_dtype = DType.F32
    _out_qparams = None
    _n = 0

    def _out_shape(self, xt):
        return xt.shape[:-1] + (self._n,)

    def __call__(self, x: Any, *, out: Optional[Tensor] = None, ctx: Optional[Context] = None) -> Tensor:
        xt = asarray(x)
        if out is None:
            out = Tensor.empty(self._out_shape(xt), self._out_dtype_for(xt), self._out_qparams)
        check(lib.qnt_prepared_run(_ctx(ctx), self._handle, xt._handle, out._handle), "qnt_prepared_run")
        return out

    def _out_dtype_for(self, xt):
        return self._out_dtype

    @property
    def kind(self) -> int:
        v = _C.c_int32()
        check(lib.qnt_prepared_kind_of(self._handle, _C.byref(v)), "qnt_prepared_kind_of")
        return v.value

    @property
    def packed_size(self) -> int:
        """Bytes held for the packed weights and what the kernels precompute."""
        v = _C.c_size_t()
        check(lib.qnt_prepared_packed_size(self._handle, _C.byref(v)), "qnt_prepared_packed_size")
        return v.value

    @property
    def isa(self) -> Isa:
        v = _C.c_int32()
        check(lib.qnt_prepared_isa(self._handle, _C.byref(v)), "qnt_prepared_isa")
        return Isa(v.value)


class PreparedMatmul(Prepared):
    """qmatmul with a constant b (qnt_prepared_create_matmul)."""

    def __init__(self, b: Tensor, bias: Any = None, *, out_dtype: Any = DType.I32,
                 out_qparams: Optional[QParams] = None, ctx: Optional[Context] = None):
        h = _P()
        check(lib.qnt_prepared_create_matmul(_ctx(ctx), b._handle, _h(bias), None, _C.byref(h)),
              "qnt_prepared_create_matmul")
        self._h = h
        self._b_shape = b.shape
        self._out_dtype, self._out_qparams = _as_dtype(out_dtype), out_qparams

    def _out_shape(self, xt):
        batch = _broadcast(xt.shape[:-2], self._b_shape[:-2])
        return batch + (xt.shape[-2], self._b_shape[-1])


class PreparedBinaryMatmul(Prepared):
    """binary_matmul with a constant b (qnt_prepared_create_binary_matmul)."""

    def __init__(self, b: Tensor, *, out_dtype: Any = DType.I32, ctx: Optional[Context] = None):
        h = _P()
        check(lib.qnt_prepared_create_binary_matmul(_ctx(ctx), b._handle, None, _C.byref(h)),
              "qnt_prepared_create_binary_matmul")
        self._h, self._n = h, b.shape[0]
        self._out_dtype = _as_dtype(out_dtype)


class PreparedLinearDynamic(Prepared):
    """linear_dynamic with constant w and bias (qnt_prepared_create_linear_dynamic)."""

    def __init__(self, w: Tensor, bias: Any = None, *, ctx: Optional[Context] = None, **options):
        h = _P()
        d = _desc(options)
        check(lib.qnt_prepared_create_linear_dynamic(_ctx(ctx), w._handle, _h(bias), d._handle if d else None,
                                                     _C.byref(h)), "qnt_prepared_create_linear_dynamic")
        self._h, self._n = h, w.shape[0]


class PreparedLinearStatic(Prepared):
    """A statically quantized linear layer (qnt_prepared_create_linear_static): x carries
    x_qparams' dtype and values; the output is f32, or out_qparams' dtype."""

    def __init__(self, w: Tensor, x_qparams: QParams, bias: Any = None, out_qparams: Optional[QParams] = None, *,
                 relu: bool = False, ctx: Optional[Context] = None):
        h = _P()
        d = _desc({"relu": 1} if relu else {})
        check(lib.qnt_prepared_create_linear_static(_ctx(ctx), w._handle, _h(bias), x_qparams._handle,
                                                    out_qparams._handle if out_qparams else None,
                                                    d._handle if d else None, _C.byref(h)),
              "qnt_prepared_create_linear_static")
        self._h, self._n = h, w.shape[0]
        self._x_qparams = x_qparams
        self._out_qparams = out_qparams
        self._out_dtype = out_qparams.dtype if out_qparams is not None else DType.F32

    def __call__(self, x: Any, *, out: Optional[Tensor] = None, ctx: Optional[Context] = None) -> Tensor:
        """x: a quantized tensor of x_qparams, or float32 (quantized with x_qparams first)."""
        xt = asarray(x)
        if xt.dtype in (DType.F32, DType.F16, DType.BF16):
            xt = quantize(xt, self._x_qparams, ctx=ctx)
        return super().__call__(xt, out=out, ctx=ctx)


class PreparedLinearWeightOnly(Prepared):
    """linear_weight_only with constant w and bias (qnt_prepared_create_linear_weight_only);
    mode "f32" (exact float), "int8_act" (W4A8 / W8A8), "int8_block" (W4A8 / W8A8 with one exact
    integer dot product per block: the mode for batches) or "int8_token" (ternary or binary
    weights, int8 activations per token: BitNet b1.58)."""

    def __init__(self, w: Tensor, bias: Any = None, *, mode: str = "f32", ctx: Optional[Context] = None):
        h = _P()
        d = _desc({"weight_only_mode": mode})
        check(lib.qnt_prepared_create_linear_weight_only(_ctx(ctx), w._handle, _h(bias), d._handle, _C.byref(h)),
              "qnt_prepared_create_linear_weight_only")
        self._h, self._n = h, w.shape[0]

    def _out_dtype_for(self, xt):
        return xt.dtype


class PreparedConv2d(Prepared):
    """qconv2d with constant w and bias (qnt_prepared_create_conv2d)."""

    def __init__(self, w: Tensor, bias: Any = None, *, out_dtype: Any = DType.I32,
                 out_qparams: Optional[QParams] = None, ctx: Optional[Context] = None, **options):
        h = _P()
        self._options = options
        d = _desc(options)
        check(lib.qnt_prepared_create_conv2d(_ctx(ctx), w._handle, _h(bias), d._handle if d else None, _C.byref(h)),
              "qnt_prepared_create_conv2d")
        self._h, self._w = h, w
        self._out_dtype, self._out_qparams = _as_dtype(out_dtype), out_qparams

    def _out_shape(self, xt):
        return conv2d_output_shape(xt, self._w, **self._options)


# --- calibrators ------------------------------------------------------------------------------
class Budget(enum.IntEnum):
    """What a Recommender's budget counts (qnt_budget)."""
    BYTES = _capi.QNT_BUDGET_BYTES
    MIN_SQNR = _capi.QNT_BUDGET_MIN_SQNR


@dataclasses.dataclass(frozen=True)
class Choice:
    """One tensor's format after Recommender.run: name, format, bytes, sqnr_db."""
    name: str
    format: str
    bytes: int
    sqnr_db: float


class Recommender(_Handle):
    """Mixed precision by measured error (qnt_recommender): candidate formats ("i8", "i4.b128",
    "nf4.b64", "q4_k", "ternary", "log4.b32", ...), tensors measured in each as they are added
    (optionally weighted by an importance per input channel, the mean of x^2 over calibration
    inputs), and a format per tensor under a byte or minimum-SQNR budget, explained by report.
    One thread at a time."""
    _destroy = "qnt_recommender_destroy"

    def __init__(self, formats: Sequence[str] = ()):
        h = _P()
        check(lib.qnt_recommender_create(_C.byref(h)), "qnt_recommender_create")
        self._h = h
        for f in formats:
            self.add_format(f)

    @_doc('qnt_recommender_add_format')
    def add_format(self, format: str) -> "Recommender":
        check(lib.qnt_recommender_add_format(self._handle, format.encode()), "qnt_recommender_add_format")
        return self

    @_doc('qnt_recommender_add_tensor')
    def add_tensor(self, name: str, w: Any, importance: Any = None, *, ctx: Optional[Context] = None) -> "Recommender":
        imp = None if importance is None else array.array("f", [float(v) for v in importance])
        ptr = None if imp is None else (_C.c_float * len(imp)).from_buffer(imp)
        check(lib.qnt_recommender_add_tensor(_ctx(ctx), self._handle, name.encode(), asarray(w)._handle, ptr,
                                             0 if imp is None else len(imp)), "qnt_recommender_add_tensor")
        return self

    @_doc('qnt_recommender_run')
    def run(self, budget: Union[Budget, str], value: float) -> List[Choice]:
        """Chooses a format per tensor; returns the choices (also in choices())."""
        check(lib.qnt_recommender_run(self._handle, _enum(Budget, budget), float(value)), "qnt_recommender_run")
        return self.choices()

    def __len__(self) -> int:
        n = _C.c_size_t()
        check(lib.qnt_recommender_tensor_count(self._handle, _C.byref(n)), "qnt_recommender_tensor_count")
        return n.value

    @_doc('qnt_recommender_choice')
    def choice(self, index: int) -> Choice:
        name, fmt_, nbytes, sqnr = _C.c_char_p(), _C.c_char_p(), _C.c_uint64(), _C.c_double()
        check(lib.qnt_recommender_choice(self._handle, index, _C.byref(name), _C.byref(fmt_), _C.byref(nbytes),
                                         _C.byref(sqnr)), "qnt_recommender_choice")
        return Choice(name.value.decode(), fmt_.value.decode(), nbytes.value, sqnr.value)

    def choices(self) -> List[Choice]:
        return [self.choice(i) for i in range(len(self))]

    @property
    def report(self) -> str:
        """The last run's table (qnt_recommender_report)."""
        s = _C.c_char_p()
        check(lib.qnt_recommender_report(self._handle, _C.byref(s)), "qnt_recommender_report")
        return s.value.decode()


class Calibrator(_Handle):
    """Streaming calibration (qnt_calibrator): observe batches, then compute qparams. Mergeable
    (shards on threads or machines give the result of one pass) and picklable (serialize).
    One calibrator must not be used by two threads at once: give each thread its own and merge."""
    _destroy = "qnt_calibrator_destroy"

    def __init__(self, method: Union[CalibMethod, str] = CalibMethod.MINMAX, dtype: Any = DType.I8,
                 scheme: Union[Scheme, str] = Scheme.SYMMETRIC,
                 granularity: Union[Granularity, str] = Granularity.PER_TENSOR, axis: int = 0, *,
                 percentile: Optional[float] = None, bins: Optional[int] = None, averaging: Optional[float] = None,
                 quant_min: Optional[int] = None, quant_max: Optional[int] = None, _handle=None):
        if _handle is not None:
            self._h = _handle
            return
        h = _P()
        check(lib.qnt_calibrator_create(_enum(CalibMethod, method), _as_dtype(dtype), _enum(Scheme, scheme),
                                        _enum(Granularity, granularity), axis, _C.byref(h)), "qnt_calibrator_create")
        self._h = h
        for key, v in ((_capi.QNT_CALIB_OPT_PERCENTILE, percentile), (_capi.QNT_CALIB_OPT_BINS, bins),
                       (_capi.QNT_CALIB_OPT_AVERAGING, averaging), (_capi.QNT_CALIB_OPT_QUANT_MIN, quant_min),
                       (_capi.QNT_CALIB_OPT_QUANT_MAX, quant_max)):
            if v is not None:
                self.set_option(key, v)

    def set_option(self, option: int, value: float) -> None:
        check(lib.qnt_calibrator_set_option(self._handle, option, float(value)), "qnt_calibrator_set_option")

    @_doc('qnt_calibrator_observe')
    def observe(self, x: Any, *, ctx: Optional[Context] = None) -> "Calibrator":
        """Adds a float32 batch to the statistics."""
        check(lib.qnt_calibrator_observe(_ctx(ctx), self._handle, asarray(x)._handle), "qnt_calibrator_observe")
        return self

    @_doc('qnt_calibrator_compute')
    def compute(self, *, ctx: Optional[Context] = None) -> QParams:
        """The qparams of what was observed."""
        h = _P()
        check(lib.qnt_calibrator_compute(_ctx(ctx), self._handle, _C.byref(h)), "qnt_calibrator_compute")
        return QParams(h)

    @property
    def chosen_method(self) -> CalibMethod:
        """The method ADAPTIVE chose (the method itself for the others)."""
        v = _C.c_int32()
        check(lib.qnt_calibrator_chosen_method(self._handle, _C.byref(v)), "qnt_calibrator_chosen_method")
        return CalibMethod(v.value)

    def reset(self) -> None:
        check(lib.qnt_calibrator_reset(self._handle), "qnt_calibrator_reset")

    @_doc('qnt_calibrator_merge')
    def merge(self, other: "Calibrator") -> "Calibrator":
        """Adds another calibrator's statistics (same settings) to this one's."""
        check(lib.qnt_calibrator_merge(self._handle, other._handle), "qnt_calibrator_merge")
        return self

    @property
    def counts(self) -> Tuple[int, int, int]:
        """(finite, NaN, infinite) values seen."""
        a, b, c = _C.c_uint64(), _C.c_uint64(), _C.c_uint64()
        check(lib.qnt_calibrator_counts(self._handle, _C.byref(a), _C.byref(b), _C.byref(c)), "qnt_calibrator_counts")
        return a.value, b.value, c.value

    @_doc('qnt_calibrator_serialize')
    def serialize(self) -> bytes:
        """The calibrator's state as bytes (versioned; Calibrator.deserialize reads them)."""
        n = _C.c_size_t()
        check(lib.qnt_calibrator_serialize(self._handle, None, 0, _C.byref(n)), "qnt_calibrator_serialize")
        buf = _C.create_string_buffer(max(n.value, 1))
        check(lib.qnt_calibrator_serialize(self._handle, buf, n.value, _C.byref(n)), "qnt_calibrator_serialize")
        return buf.raw[:n.value]

    @classmethod
    def deserialize(cls, data: bytes) -> "Calibrator":
        h = _P()
        b = bytes(data)
        check(lib.qnt_calibrator_deserialize(b, len(b), _C.byref(h)), "qnt_calibrator_deserialize")
        return cls(_handle=h)

    def __reduce__(self):
        return (Calibrator.deserialize, (self.serialize(),))


