"""Zero-copy exchange with NumPy and PyTorch through DLPack (the legacy DLManagedTensor that
Debian's NumPy 1.24 and PyTorch 1.13 speak), through ctypes and the public C API only:
NumPy and PyTorch arrays come into qnt without a copy, qnt's tensors go out to both without a
copy, each side's deleter runs exactly once, and the memory outlives the handle that gave it.

usage: dlpack_check.py path/to/libqnt.so
"""
import ctypes as C
import gc
import sys

import numpy as np
import torch
import torch.utils.dlpack

lib = C.CDLL(sys.argv[1])
P = C.c_void_p
lib.qnt_last_error_message.restype = C.c_char_p
for name, args in {
    "qnt_tensor_from_dlpack": [P, C.c_int32, P, P],
    "qnt_tensor_to_dlpack": [P, C.c_int32, P],
    "qnt_tensor_data": [P, P],
    "qnt_tensor_copy_to": [P, P, C.c_size_t],
    "qnt_tensor_create_from_data": [C.c_int32, P, C.c_size_t, P, P, C.c_size_t, P],
    "qnt_tensor_create": [C.c_int32, P, C.c_size_t, P, P],
    "qnt_tensor_destroy": [P],
    "qnt_qparams_create_per_tensor": [C.c_int32, C.c_float, C.c_int32, P],
    "qnt_qparams_destroy": [P],
    "qnt_quantize": [P, P, P],
    "qnt_dequantize": [P, P, P],
}.items():
    getattr(lib, name).argtypes = args
    if not name.endswith("_destroy"):
        getattr(lib, name).restype = C.c_int32

capi = C.pythonapi
capi.PyCapsule_GetPointer.restype = C.c_void_p
capi.PyCapsule_GetPointer.argtypes = [C.py_object, C.c_char_p]
capi.PyCapsule_SetName.restype = C.c_int
capi.PyCapsule_SetName.argtypes = [C.py_object, C.c_char_p]
capi.PyCapsule_New.restype = C.py_object
capi.PyCapsule_New.argtypes = [C.c_void_p, C.c_char_p, C.c_void_p]

F32, I8, U8 = 1, 3, 4
passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL:", what)


def ok(status):
    if status != 0:
        raise RuntimeError(lib.qnt_last_error_message().decode())


def import_capsule(capsule, qparams=None):
    """Consumes a "dltensor" capsule as the DLPack protocol says: on success qnt owns the
    tensor, and the capsule is renamed so that its destructor leaves it alone."""
    ptr = capi.PyCapsule_GetPointer(capsule, b"dltensor")
    t = P()
    ok(lib.qnt_tensor_from_dlpack(ptr, 0, qparams, C.byref(t)))
    capi.PyCapsule_SetName(capsule, b"used_dltensor")
    return t


def export_capsule(t):
    out = P()
    ok(lib.qnt_tensor_to_dlpack(t, 0, C.byref(out)))
    return capi.PyCapsule_New(out.value, b"dltensor", None)


class Exported:
    """What np.from_dlpack consumes: an object with __dlpack__ and __dlpack_device__."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, stream=None):
        return self.capsule

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU


def data_ptr(t):
    p = P()
    ok(lib.qnt_tensor_data(t, C.byref(p)))
    return p.value


def quantize_i8(t, n, scale):
    qp, q = P(), P()
    ok(lib.qnt_qparams_create_per_tensor(I8, scale, 0, C.byref(qp)))
    shape = (C.c_int64 * 1)(n)
    ok(lib.qnt_tensor_create(I8, shape, 1, qp, C.byref(q)))
    ok(lib.qnt_quantize(None, t, q))
    out = np.empty(n, np.int8)
    ok(lib.qnt_tensor_copy_to(q, out.ctypes.data, out.nbytes))
    lib.qnt_tensor_destroy(q)
    lib.qnt_qparams_destroy(qp)
    return out


def onnx_quantize_i8(x, scale):
    return np.clip(np.rint(x / np.float32(scale)), -128, 127).astype(np.int8)


rng = np.random.default_rng(7)

# NumPy -> qnt: the same memory; qnt's quantize equals the ONNX formula; the array's reference
# held by the export is released exactly once, when the qnt tensor goes.
x = rng.standard_normal(1000).astype(np.float32)
refs = sys.getrefcount(x)
t = import_capsule(x.__dlpack__())
check(data_ptr(t) == x.ctypes.data, "NumPy import copied the data")
check(sys.getrefcount(x) == refs + 1, "NumPy's export holds one reference while qnt uses it")
check(np.array_equal(quantize_i8(t, 1000, 0.02), onnx_quantize_i8(x, 0.02)),
      "quantize of an imported NumPy array")
x[0] = 100.0  # writes through NumPy are seen by qnt: one buffer
check(quantize_i8(t, 1000, 0.02)[0] == 127, "qnt sees writes made through NumPy")
lib.qnt_tensor_destroy(t)
check(sys.getrefcount(x) == refs, "NumPy's deleter ran once when the qnt tensor was destroyed")

# PyTorch -> qnt, int8 and uint8 as well as float32.
for dtype, code in ((torch.float32, F32), (torch.int8, I8), (torch.uint8, U8)):
    src = (torch.randn(4, 5) * 50).to(dtype)
    t = import_capsule(torch.utils.dlpack.to_dlpack(src))
    check(data_ptr(t) == src.data_ptr(), f"PyTorch {dtype} import copied the data")
    back = np.empty(src.numel(), src.numpy().dtype)
    ok(lib.qnt_tensor_copy_to(t, back.ctypes.data, back.nbytes))
    check(np.array_equal(back, src.numpy().ravel()), f"PyTorch {dtype} values")
    lib.qnt_tensor_destroy(t)

# qnt -> PyTorch and NumPy: the same memory, which outlives the qnt handle.
vals = np.arange(12, dtype=np.float32)
shape = (C.c_int64 * 2)(3, 4)
t = P()
ok(lib.qnt_tensor_create_from_data(F32, shape, 2, None, vals.ctypes.data, vals.nbytes, C.byref(t)))
pt = torch.utils.dlpack.from_dlpack(export_capsule(t))
na = np.from_dlpack(Exported(export_capsule(t)))
check(pt.data_ptr() == data_ptr(t) and na.ctypes.data == data_ptr(t), "exports copied the data")
check(tuple(pt.shape) == (3, 4) and tuple(na.shape) == (3, 4), "exported shapes")
lib.qnt_tensor_destroy(t)  # the exports keep the storage alive
pt[1, 2] = -7.0  # PyTorch and NumPy still share it
check(na[1, 2] == -7.0 and float(pt.sum()) == float(vals.sum()) - 6.0 - 7.0,
      "the storage outlives the qnt handle and is shared")
del pt, na
gc.collect()

# A refused import leaves the capsule to its producer (whose destructor then frees it).
src = torch.zeros(3, dtype=torch.float64)
capsule = torch.utils.dlpack.to_dlpack(src)
out = P()
status = lib.qnt_tensor_from_dlpack(capi.PyCapsule_GetPointer(capsule, b"dltensor"), 0, None,
                                    C.byref(out))
check(status == 4 and not out.value, "float64 is refused with QNT_ERR_UNSUPPORTED")
del capsule  # still named "dltensor": PyTorch's destructor calls the deleter
gc.collect()

print(f"dlpack: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
