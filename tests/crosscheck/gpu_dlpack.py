"""PyTorch CUDA tensors in and out of qnt through DLPack, without a copy, on a GPU machine:
a torch CUDA tensor imports as a qnt device tensor over the same memory, qnt quantizes it on
the device (on torch's current stream, through a context bound to it), the result goes back to
torch as a CUDA tensor over qnt's memory, and every value equals the CPU's.

usage: gpu_dlpack.py path/to/libqnt.so   (skips, exit 0, without torch.cuda or a qnt device)
"""
import ctypes as C
import os
import sys

import torch
import torch.utils.dlpack

lib = C.CDLL(sys.argv[1])
P = C.c_void_p
lib.qnt_last_error_message.restype = C.c_char_p
for name, args in {
    "qnt_context_create": [P],
    "qnt_context_destroy": [P],
    "qnt_context_cuda_device_count": [P, P],
    "qnt_context_set_cuda_stream": [P, C.c_int32, P],
    "qnt_context_synchronize": [P],
    "qnt_tensor_from_dlpack": [P, C.c_int32, P, P],
    "qnt_tensor_to_dlpack": [P, C.c_int32, P],
    "qnt_tensor_data": [P, P],
    "qnt_tensor_device": [P, P, P],
    "qnt_tensor_create_on_device": [C.c_int32, P, C.c_size_t, P, C.c_int32, C.c_int32, P],
    "qnt_tensor_destroy": [P],
    "qnt_tensor_create": [C.c_int32, P, C.c_size_t, P, P],
    "qnt_qparams_create_per_tensor": [C.c_int32, C.c_float, C.c_int32, P],
    "qnt_qparams_destroy": [P],
    "qnt_quantize": [P, P, P],
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

F32, F16, I8, CUDA = 1, 12, 3, 2


def ok(status):
    if status != 0:
        raise RuntimeError(lib.qnt_last_error_message().decode())


ctx = P()
ok(lib.qnt_context_create(C.byref(ctx)))
n = C.c_int32()
ok(lib.qnt_context_cuda_device_count(ctx, C.byref(n)))
if not torch.cuda.is_available() or n.value == 0:
    print("gpu_dlpack: skipped (torch.cuda available: %s, qnt CUDA devices: %d)"
          % (torch.cuda.is_available(), n.value))
    sys.exit(0)

failed = 0


def check(cond, what):
    global failed
    if not cond:
        failed += 1
        print("FAIL:", what)


stream = torch.cuda.current_stream()
ok(lib.qnt_context_set_cuda_stream(ctx, 0, P(stream.cuda_stream)))
torch.manual_seed(0)
for dtype, code in ((torch.float32, F32), (torch.float16, F16)):
    x = (torch.randn(1000, 257, device="cuda") * 3).to(dtype)
    cap = torch.utils.dlpack.to_dlpack(x)
    ptr = capi.PyCapsule_GetPointer(cap, b"dltensor")
    xt = P()
    ok(lib.qnt_tensor_from_dlpack(ptr, 0, None, C.byref(xt)))
    capi.PyCapsule_SetName(cap, b"used_dltensor")
    data = P()
    ok(lib.qnt_tensor_data(xt, C.byref(data)))
    check(data.value == x.data_ptr(), "import without a copy")
    dev_type, dev_id = C.c_int32(), C.c_int32()
    ok(lib.qnt_tensor_device(xt, C.byref(dev_type), C.byref(dev_id)))
    check(dev_type.value == CUDA and dev_id.value == 0, "imported onto cuda:0")

    qp = P()
    ok(lib.qnt_qparams_create_per_tensor(I8, C.c_float(0.05), 3, C.byref(qp)))
    shape = (C.c_int64 * 2)(1000, 257)
    yt = P()
    ok(lib.qnt_tensor_create_on_device(I8, shape, 2, qp, CUDA, 0, C.byref(yt)))
    ok(lib.qnt_quantize(ctx, xt, yt))
    ok(lib.qnt_context_synchronize(ctx))

    out = P()
    ok(lib.qnt_tensor_to_dlpack(yt, 0, C.byref(out)))
    y = torch.utils.dlpack.from_dlpack(capi.PyCapsule_New(out.value, b"dltensor", None))
    ydata = P()
    ok(lib.qnt_tensor_data(yt, C.byref(ydata)))
    check(y.is_cuda and y.data_ptr() == ydata.value, "export without a copy")
    # The CPU's answer: qnt on host copies of the same tensors.
    xc = x.cpu().contiguous()
    cap_c = torch.utils.dlpack.to_dlpack(xc)
    xh = P()
    ok(lib.qnt_tensor_from_dlpack(capi.PyCapsule_GetPointer(cap_c, b"dltensor"), 0, None,
                                  C.byref(xh)))
    capi.PyCapsule_SetName(cap_c, b"used_dltensor")
    yh = P()
    ok(lib.qnt_tensor_create(I8, shape, 2, qp, C.byref(yh)))
    ok(lib.qnt_quantize(None, xh, yh))
    hout = P()
    ok(lib.qnt_tensor_to_dlpack(yh, 0, C.byref(hout)))
    want = torch.utils.dlpack.from_dlpack(capi.PyCapsule_New(hout.value, b"dltensor", None)).clone()
    lib.qnt_tensor_destroy(yh)
    lib.qnt_tensor_destroy(xh)
    check(torch.equal(y.cpu(), want), "device quantize of %s equals the CPU's" % dtype)
    lib.qnt_tensor_destroy(yt)  # the export keeps the memory alive
    check(torch.equal(y.cpu(), want), "the export outlives its handle")
    lib.qnt_tensor_destroy(xt)
    lib.qnt_qparams_destroy(qp)
    del y

lib.qnt_context_destroy(ctx)
print("gpu_dlpack: %s" % ("ok" if failed == 0 else "%d FAILED" % failed))
sys.exit(1 if failed else 0)
