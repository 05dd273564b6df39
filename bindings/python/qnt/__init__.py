"""qnt: exact quantization for neural-network inference, over libqnt's C ABI.

    import numpy as np, qnt
    x = np.random.randn(64, 256).astype(np.float32)
    qp = qnt.calibrate_minmax(x, "int8", "symmetric", "per_axis", axis=0)
    q = qnt.quantize(x, qp)              # a qnt.Tensor of int8 codes with its qparams
    codes = np.from_dlpack(q)            # a NumPy view of qnt's memory, no copy
    y = np.from_dlpack(qnt.dequantize(q))
    print(qnt.error_report(x, qp))

Arrays go in through DLPack (NumPy >= 1.22, PyTorch, JAX...) without copies, and qnt tensors
implement __dlpack__, so np.from_dlpack(t) and torch.from_dlpack(t) view qnt's memory. Every
call releases the GIL while libqnt works. Errors are exceptions: QntError and one subclass per
status (ShapeMismatchError, ...), with the library's message.
"""
from . import _capi as capi
from ._core import (Budget, Calibrator, CalibMethod, Choice, Context, DType, ErrorReport, Granularity, Isa, OpDesc, Prepared,
                    PreparedBinaryMatmul, PreparedConv2d, PreparedLinearDynamic, PreparedLinearStatic, PreparedLinearWeightOnly,
                    PreparedMatmul, QParams, Recommender, Scheme, Tensor, Tuning, tuning_clear, tuning_export, tuning_import, abi_version, asarray, build_info, calibrate_codebook,
                    binary_matmul, calibrate_minmax, conv2d_output_shape, cpu_feature_name, dequantize, dtype, dynamic_quantize_linear,
                    error_report, pow2_scales, linear_dynamic, linear_weight_only, live_handles, nf4_codebook, qadd, qconv2d,
                    qmatmul, qrelu, quantize, requantize, status_string, ternary_export, ternary_import,
                    ternary_layout_size, version, version_number)
from ._io import ModelFile, ModelWriter
from ._lib import (BufferTooSmallError, CorruptDataError, DTypeMismatchError, InternalError, InvalidArgumentError,
                   InvalidQParamsError, NoDeviceError, NullPointerError, OutOfMemoryError, QntError, ShapeMismatchError,
                   SizeOverflowError, UnsupportedError, lib, library_path)

float32, int32, int8, uint8 = DType.F32, DType.I32, DType.I8, DType.U8
int16, uint16, int4, uint4 = DType.I16, DType.U16, DType.I4, DType.U4
nf4, binary, ternary, float16, bfloat16 = DType.NF4, DType.BINARY, DType.TERNARY, DType.F16, DType.BF16
log4, log8 = DType.LOG4, DType.LOG8

__version__ = "0.12.9"
__all__ = [n for n in dir() if not n.startswith("_")]
