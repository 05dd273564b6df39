"""Model files (include/qnt/qnt_io.h): safetensors and GGUF read over memory maps, and written
tensor by tensor."""
import ctypes as _C
import os
import struct
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from . import _capi
from ._core import DType, QParams, Tensor, _Handle, _as_dtype, _shape_array, asarray
from ._lib import InvalidArgumentError, check, lib

_P = _C.c_void_p
SAFETENSORS = _capi.QNT_FILE_SAFETENSORS
GGUF = _capi.QNT_FILE_GGUF
_INTS = {_capi.QNT_META_INT8, _capi.QNT_META_INT16, _capi.QNT_META_INT32, _capi.QNT_META_INT64}
_UINTS = {_capi.QNT_META_UINT8, _capi.QNT_META_UINT16, _capi.QNT_META_UINT32, _capi.QNT_META_UINT64}
_FLOATS = {_capi.QNT_META_FLOAT32, _capi.QNT_META_FLOAT64}


class ModelFile(_Handle):
    """A safetensors file (or a sharded model: its index or folder) or a GGUF file, opened over
    memory maps: its header is read and checked, tensors are mapped one at a time
    (qnt_model_file_*). A mapping is a dict of name -> Tensor:

        with qnt.ModelFile("model.safetensors") as f:
            for name in f:                      # names in the file's order
                w = f[name]                     # a read-only qnt Tensor over the mapped bytes
                x = f.dequantize(name)          # float32 (F16, BF16, GGUF block types, ...)
    """
    _destroy = "qnt_model_file_destroy"

    def __init__(self, path: Union[str, os.PathLike]):
        h = _P()
        check(lib.qnt_model_file_open(os.fsencode(path), _C.byref(h)), os.fspath(path))
        self._h = h
        self.path = os.fspath(path)

    @property
    def format(self) -> str:
        """"safetensors" or "gguf"."""
        v = _C.c_int32()
        check(lib.qnt_model_file_format(self._handle, _C.byref(v)), "qnt_model_file_format")
        return "gguf" if v.value == GGUF else "safetensors"

    def __len__(self) -> int:
        n = _C.c_size_t()
        check(lib.qnt_model_file_tensor_count(self._handle, _C.byref(n)), "qnt_model_file_tensor_count")
        return n.value

    def name(self, index: int) -> str:
        s = _C.c_char_p()
        check(lib.qnt_model_file_tensor_name(self._handle, index, _C.byref(s)), "qnt_model_file_tensor_name")
        return s.value.decode()

    def names(self) -> List[str]:
        return [self.name(i) for i in range(len(self))]

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def index(self, name: str) -> int:
        """The entry's index (KeyError when the file has none of that name)."""
        i = _C.c_size_t()
        if lib.qnt_model_file_tensor_find(self._handle, name.encode(), _C.byref(i)) != _capi.QNT_OK:
            raise KeyError(name)
        return i.value

    def __contains__(self, name: object) -> bool:
        try:
            self.index(str(name))
            return True
        except KeyError:
            return False

    def _i(self, key):
        return key if isinstance(key, int) else self.index(key)

    def type(self, key: Union[str, int]) -> str:
        """The entry's dtype as the file names it ("F32", "BF16", "Q4_K", ...)."""
        s = _C.c_char_p()
        check(lib.qnt_model_file_tensor_type(self._handle, self._i(key), _C.byref(s)), "qnt_model_file_tensor_type")
        return s.value.decode()

    def shape(self, key: Union[str, int]) -> Tuple[int, ...]:
        """The entry's shape as stored (row-major)."""
        dims = (_C.c_int64 * 8)()
        rank = _C.c_size_t()
        check(lib.qnt_model_file_tensor_shape(self._handle, self._i(key), dims, 8, _C.byref(rank)),
              "qnt_model_file_tensor_shape")
        return tuple(dims[:rank.value])

    def raw(self, key: Union[str, int]) -> memoryview:
        """The entry's bytes, a read-only view of the mapping (valid while the file is open)."""
        p, n = _P(), _C.c_size_t()
        check(lib.qnt_model_file_tensor_bytes(self._handle, self._i(key), _C.byref(p), _C.byref(n)),
              "qnt_model_file_tensor_bytes")
        if n.value == 0:
            return memoryview(b"")
        return memoryview((_C.c_char * n.value).from_address(p.value)).cast("B").toreadonly()

    def __getitem__(self, key: Union[str, int]) -> Tensor:
        """The entry as a read-only qnt Tensor (a view of the mapping; qnt's quantized tensors with
        their qparams; GGUF's Q8_0 / Q4_0 as i8 / u4 per block)."""
        h = _P()
        check(lib.qnt_model_file_tensor(self._handle, self._i(key), _C.byref(h)), f"tensor {key!r}")
        return Tensor(h)

    def tensor(self, key: Union[str, int]) -> Tensor:
        return self[key]

    def dequantize(self, key: Union[str, int]) -> Tensor:
        """The entry as a new float32 tensor: plain dtypes converted, GGUF's block types
        dequantized with ggml's bits, qnt's quantized tensors dequantized."""
        i = self._i(key)
        if self.format == "safetensors":
            t = self[i]
            if t.qparams is not None:
                from ._core import dequantize
                return dequantize(t)
        y = Tensor.empty(self.shape(i), DType.F32)
        check(lib.qnt_model_file_tensor_dequantize(self._handle, i, y._handle), f"dequantize {key!r}")
        return y

    def input_qparams(self, key: Union[str, int]) -> Optional[QParams]:
        """The calibrated qparams of the layer's input stored with the weight (`qnt quantize
        --calibrate`), or None."""
        h = _P()
        check(lib.qnt_model_file_tensor_input_qparams(self._handle, self._i(key), _C.byref(h)),
              "qnt_model_file_tensor_input_qparams")
        return QParams(h) if h.value else None

    # metadata
    def metadata_keys(self) -> List[str]:
        n = _C.c_size_t()
        check(lib.qnt_model_file_metadata_count(self._handle, _C.byref(n)), "qnt_model_file_metadata_count")
        out = []
        for i in range(n.value):
            s = _C.c_char_p()
            check(lib.qnt_model_file_metadata_key(self._handle, i, _C.byref(s)), "qnt_model_file_metadata_key")
            out.append(s.value.decode())
        return out

    def metadata_value(self, key: str) -> Any:
        """A metadata value with its type: str, int, float, bool, or a list of them."""
        k = key.encode()
        t, e, n = _C.c_int32(), _C.c_int32(), _C.c_size_t()
        if lib.qnt_model_file_metadata_type(self._handle, k, _C.byref(t), _C.byref(e), _C.byref(n)) != _capi.QNT_OK:
            raise KeyError(key)
        if e.value == _capi.QNT_META_STRING and t.value != _capi.QNT_META_ARRAY:
            s = _C.c_char_p()
            check(lib.qnt_model_file_metadata_string(self._handle, k, _C.byref(s)), key)
            return s.value.decode("utf-8", "replace")
        values = []
        for i in range(n.value):
            if e.value == _capi.QNT_META_STRING:
                s = _C.c_char_p()
                check(lib.qnt_model_file_metadata_string_at(self._handle, k, i, _C.byref(s)), key)
                values.append(s.value.decode("utf-8", "replace"))
            elif e.value in _FLOATS:
                v = _C.c_double()
                check(lib.qnt_model_file_metadata_float(self._handle, k, i, _C.byref(v)), key)
                values.append(v.value)
            elif e.value in _UINTS:
                v = _C.c_uint64()
                check(lib.qnt_model_file_metadata_uint(self._handle, k, i, _C.byref(v)), key)
                values.append(v.value)
            else:
                v = _C.c_int64()
                check(lib.qnt_model_file_metadata_int(self._handle, k, i, _C.byref(v)), key)
                values.append(bool(v.value) if e.value == _capi.QNT_META_BOOL else v.value)
        return values if t.value == _capi.QNT_META_ARRAY else values[0]

    @property
    def metadata(self) -> Dict[str, Any]:
        """Every metadata key and its value."""
        return {k: self.metadata_value(k) for k in self.metadata_keys()}

    def __repr__(self) -> str:
        return f"qnt.ModelFile({self.path!r}, {self.format}, {len(self)} tensors)" if self._h else "qnt.ModelFile(closed)"


_META_TYPES = {"uint8": (_capi.QNT_META_UINT8, "B"), "int8": (_capi.QNT_META_INT8, "b"),
               "uint16": (_capi.QNT_META_UINT16, "H"), "int16": (_capi.QNT_META_INT16, "h"),
               "uint32": (_capi.QNT_META_UINT32, "I"), "int32": (_capi.QNT_META_INT32, "i"),
               "float32": (_capi.QNT_META_FLOAT32, "f"), "bool": (_capi.QNT_META_BOOL, "B"),
               "uint64": (_capi.QNT_META_UINT64, "Q"), "int64": (_capi.QNT_META_INT64, "q"),
               "float64": (_capi.QNT_META_FLOAT64, "d")}


class ModelWriter(_Handle):
    """Writes a safetensors or GGUF file tensor by tensor (qnt_model_writer_*): metadata and
    declarations first, then each tensor in the declared order, then finish(); the file appears
    (renamed from path + ".partial") only when finished. With `with`, a clean exit finishes.

        with qnt.ModelWriter("q.safetensors") as w:
            w.set_metadata("note", "int8 weights")
            w.declare("w", q.dtype, q.shape, q.qparams)
            w.write(q)
    """
    _destroy = "qnt_model_writer_destroy"

    def __init__(self, path: Union[str, os.PathLike], format: Optional[str] = None):
        p = os.fspath(path)
        fmt = format or ("gguf" if p.endswith(".gguf") else "safetensors")
        if fmt not in ("gguf", "safetensors"):
            raise InvalidArgumentError(_capi.QNT_ERR_INVALID_ARGUMENT, f"format {fmt!r}: 'safetensors' or 'gguf'")
        h = _P()
        check(lib.qnt_model_writer_create(os.fsencode(p), GGUF if fmt == "gguf" else SAFETENSORS, _C.byref(h)), p)
        self._h = h
        self.path = p
        self._finished = False

    def set_metadata(self, key: str, value: Any, type: Optional[str] = None) -> None:
        """A metadata value: a string (both formats), or for GGUF an int, float, bool or list,
        typed by `type` ("uint32", "float32", ...; default int64, float64, bool, string)."""
        k = key.encode()
        if isinstance(value, str) and type is None:
            check(lib.qnt_model_writer_set_metadata(self._handle, k, value.encode()), key)
            return
        values = list(value) if isinstance(value, (list, tuple)) else [value]
        is_array = isinstance(value, (list, tuple))
        sample = values[0] if values else ""
        if type is None:
            type = ("string" if isinstance(sample, str) else "bool" if isinstance(sample, bool)
                    else "int64" if isinstance(sample, int) else "float64")
        if type == "string":
            arr = (_C.c_char_p * max(len(values), 1))(*[v.encode() for v in values])
            mt, buf = _capi.QNT_META_STRING, arr
        else:
            if type not in _META_TYPES:
                raise InvalidArgumentError(_capi.QNT_ERR_INVALID_ARGUMENT, f"metadata type {type!r}")
            mt, fmt = _META_TYPES[type]
            raw = struct.pack(f"<{len(values)}{fmt}", *values)
            buf = _C.create_string_buffer(raw, max(len(raw), 1))
        if is_array:
            check(lib.qnt_model_writer_set_metadata_array(self._handle, k, mt, buf, len(values)), key)
        else:
            check(lib.qnt_model_writer_set_metadata_scalar(self._handle, k, mt, buf), key)

    def set_input_qparams(self, name: str, qparams: QParams) -> None:
        """Records the calibrated per-tensor qparams of the input of tensor `name`."""
        check(lib.qnt_model_writer_set_input_qparams(self._handle, name.encode(), qparams._handle), name)

    def declare(self, name: str, dtype: Any, shape: Sequence[int], layout: Optional[QParams] = None) -> None:
        """Declares the next tensor: a qnt dtype, and for a quantized one its qparams' layout."""
        dims, rank = _shape_array(shape)
        check(lib.qnt_model_writer_declare(self._handle, name.encode(), _as_dtype(dtype), dims, rank,
                                           layout._handle if layout is not None else None), name)

    def declare_bytes(self, name: str, file_dtype: str, shape: Sequence[int], nbytes: int) -> None:
        """Declares the next tensor as bytes of a file dtype qnt has no type for ("F64", "I64", a ggml
        type name...)."""
        dims, rank = _shape_array(shape)
        check(lib.qnt_model_writer_declare_bytes(self._handle, name.encode(), file_dtype.encode(), dims, rank,
                                                 nbytes), name)

    def declare_ggml(self, name: str, ggml_type: str, shape: Sequence[int]) -> None:
        """GGUF: declares the next tensor as a ggml type ("Q4_K", ...), written from float32."""
        dims, rank = _shape_array(shape)
        check(lib.qnt_model_writer_declare_ggml(self._handle, name.encode(), ggml_type.encode(), dims, rank), name)

    def write(self, t: Any) -> None:
        """Writes the next declared tensor (a qnt Tensor, or an array through qnt.asarray)."""
        check(lib.qnt_model_writer_write(self._handle, asarray(t)._handle), "qnt_model_writer_write")

    def write_bytes(self, data: Any) -> None:
        mv = memoryview(data).cast("B")
        buf = (_C.c_char * len(mv)).from_buffer_copy(mv) if len(mv) else None
        check(lib.qnt_model_writer_write_bytes(self._handle, buf, len(mv)), "qnt_model_writer_write_bytes")

    def finish(self) -> None:
        """Completes the file and renames it into place."""
        check(lib.qnt_model_writer_finish(self._handle), self.path)
        self._finished = True

    def __exit__(self, exc_type, *rest) -> None:
        try:
            if exc_type is None and not self._finished:
                self.finish()
        finally:
            self.close()
