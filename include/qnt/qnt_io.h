/*
 * qnt_io.h: model files in and out (since 0.8). Part of libqnt's C ABI, beside qnt.h, which it
 * includes; the same rules hold (status codes, qnt_last_error_message, opaque handles whose
 * destroy functions accept NULL, UTF-8 strings).
 *
 * Formats:
 *  - safetensors (https://github.com/huggingface/safetensors): an 8-byte little-endian header
 *    length n, n bytes of JSON (at most 100,000,000), then the data. qnt reads every entry; the
 *    dtypes F32, F16, BF16, I32, I16, U16, I8 and U8 become qnt tensors, the others (F64, I64,
 *    BOOL, F8_*, ...) are listed and their bytes readable, but qnt_model_file_tensor refuses
 *    them (QNT_ERR_UNSUPPORTED). A sharded model opens through its index
 *    (model.safetensors.index.json, or the folder that holds it) as one file.
 *  - GGUF, versions 2 and 3 (little-endian): the metadata (all 13 value types and arrays of them),
 *    general.alignment (a power of two; 32 when absent), and every tensor info, checked: at most
 *    4 dimensions, a known ggml type, rows of whole blocks, offsets aligned and inside the data,
 *    no two tensors sharing bytes. A tensor's shape is given row-major, as qnt's (GGUF lists
 *    ggml's dimensions fastest first: the reverse). Its type is ggml's name ("Q4_K"). Reading:
 *     - F32, F16, BF16, I8, I16, I32 are qnt tensors (views);
 *     - Q8_0 is a qnt i8 tensor per block of 32 along the last axis (scale d, zero point 0),
 *       Q4_0 a u4 one (code q and zero point 8 with scale d where d > 0; code 15 - q and zero
 *       point 7 with scale -d where d < 0): the same values as ggml's, bit for bit, except that
 *       where ggml's Q4_0 gives 0 * d = -0.0 (q = 8, d < 0) qnt gives +0.0. A block whose scale
 *       qparams cannot hold (NaN, infinite, a negative Q8_0 scale, zero over nonzero codes) is
 *       QNT_ERR_UNSUPPORTED. TQ1_0 and TQ2_0 (since 0.9) are qnt ternary tensors per block of
 *       256 along the last axis (scale |d|, the codes negated where d < 0; a zero d gives scale
 *       1 and codes 0): the same values except the sign of a zero; the per-token weight-only
 *       mode (QNT_WEIGHT_ONLY_INT8_TOKEN) runs them when each row's blocks share one scale;
 *     - every type qnt_model_file_tensor_dequantize takes (F32, F16, BF16, I8, I16, I32, Q4_0,
 *       Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K, IQ4_NL, TQ1_0, TQ2_0) dequantizes to float32
 *       with the operations of ggml's dequantize_row_* in their order, each product and sum
 *       rounded on its own (as gguf-py's numpy does; ggml's C code compiled with FMA contraction
 *       may fuse q * d + m into one rounding and differ by an ulp there). The other ggml types
 *       are listed and their bytes readable.
 *    Writing GGUF (version 3, alignment 32): typed metadata, the plain types, and Q4_0, Q4_1,
 *    Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K, IQ4_NL, TQ1_0, TQ2_0 quantized from float32
 *    (qnt_model_writer_declare_ggml): every block type qnt reads.
 *
 * Quantized tensors in safetensors. safetensors has no quantized dtypes, so qnt stores a tensor
 * `name` with qparams as up to three entries and one metadata key:
 *  - `name`: the codes: I8, U8, I16 or U16 in the tensor's own shape for 8- and 16-bit dtypes;
 *    for packed dtypes (i4, u4, NF4, binary, ternary), U8 of shape [byte size] holding qnt's
 *    packed layout (see qnt_dtype: element 0 in the low bits);
 *  - `name.qnt_scales`: F32 [count], the scales in qnt_qparams order;
 *  - `name.qnt_zero_points`: I32 [count], the zero points, present unless they are all 0;
 *  - metadata "qnt.name" = "dtype=<qnt_dtype_name>;shape=<d0>,<d1>,...;granularity=
 *    <tensor|axis|block>;axis=<a>;block=<b>" (a rank-0 tensor has an empty shape list).
 *  Any program reads the entries as plain tensors; qnt_model_file_tensor gives `name` back as
 *  the quantized qnt tensor, with its qparams. A file is checked as a whole when it is opened:
 *  a key "qnt.X" whose entries are missing, or disagree with it, fails the open.
 *
 * Memory: a file is never read whole. Opening reads its header; a tensor taken from it is a
 * read-only view of its own bytes mapped from the file (mmap) where they are aligned for its
 * dtype (else a copy), which lives as long as the tensor (the file handle may be destroyed
 * first). So a model larger than memory, or than the address space a process may use, is read
 * one tensor at a time. A writer streams: each tensor's bytes go to the file when it is written.
 *
 * Thread safety: a qnt_model_file is immutable once opened and may be read from many threads; a
 * qnt_model_writer is used by one thread at a time.
 */
#ifndef QNT_QNT_IO_H
#define QNT_QNT_IO_H

#include <qnt/qnt.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct qnt_model_file qnt_model_file;
typedef struct qnt_model_writer qnt_model_writer;

typedef int32_t qnt_file_format;
#define QNT_FILE_SAFETENSORS ((qnt_file_format)1)
#define QNT_FILE_GGUF ((qnt_file_format)2)

/* Metadata value types: GGUF's own numbers (safetensors' values are all strings). */
typedef int32_t qnt_meta_type;
#define QNT_META_UINT8 ((qnt_meta_type)0)
#define QNT_META_INT8 ((qnt_meta_type)1)
#define QNT_META_UINT16 ((qnt_meta_type)2)
#define QNT_META_INT16 ((qnt_meta_type)3)
#define QNT_META_UINT32 ((qnt_meta_type)4)
#define QNT_META_INT32 ((qnt_meta_type)5)
#define QNT_META_FLOAT32 ((qnt_meta_type)6)
#define QNT_META_BOOL ((qnt_meta_type)7)
#define QNT_META_STRING ((qnt_meta_type)8)
#define QNT_META_ARRAY ((qnt_meta_type)9)
#define QNT_META_UINT64 ((qnt_meta_type)10)
#define QNT_META_INT64 ((qnt_meta_type)11)
#define QNT_META_FLOAT64 ((qnt_meta_type)12)

/* Opens a model file (or a sharded safetensors model: its index or its folder) for reading,
 * checking its whole header: the header length within the file and the cap, the JSON (valid
 * UTF-8), each entry's dtype, shape (non-negative, at most QNT_MAX_RANK dimensions) and
 * data_offsets (begin <= end, end - begin = the dtype's size times the element count), the
 * entries covering the data exactly, without gaps or overlaps, and qnt's "qnt.*" keys (above).
 * The format is recognized from the content, not from the name.
 * Caller destroys *out with qnt_model_file_destroy(); *out is untouched on failure.
 * Errors: QNT_ERR_NULL_POINTER, QNT_ERR_INVALID_ARGUMENT (no such file, not readable, not a
 * file this release can read; the message says which), QNT_ERR_CORRUPT_DATA (a truncated or
 * inconsistent file; the message names the entry and the rule), QNT_ERR_UNSUPPORTED (GGUF
 * version 1, big-endian GGUF), QNT_ERR_OUT_OF_MEMORY. */
QNT_API qnt_status qnt_model_file_open(const char *path, qnt_model_file **out);
QNT_API void qnt_model_file_destroy(qnt_model_file *f);

QNT_API qnt_status qnt_model_file_format(const qnt_model_file *f, qnt_file_format *out);

/* The entries in the order of their data in the file (shard after shard, in the index's order
 * of first appearance), counted and named. A name is borrowed: valid while f lives. */
QNT_API qnt_status qnt_model_file_tensor_count(const qnt_model_file *f, size_t *out);
QNT_API qnt_status qnt_model_file_tensor_name(const qnt_model_file *f, size_t index,
                                              const char **out);
/* The index of the entry named name. Errors: QNT_ERR_NULL_POINTER, QNT_ERR_INVALID_ARGUMENT
 * (no such entry). */
QNT_API qnt_status qnt_model_file_tensor_find(const qnt_model_file *f, const char *name,
                                              size_t *out);
/* The entry's dtype as the file names it ("F32", "BF16", ...; borrowed, valid while f lives),
 * its shape (rank in *rank_out, dimensions in shape_out when capacity >= rank, else
 * QNT_ERR_BUFFER_TOO_SMALL with *rank_out set; shape_out may be NULL with capacity 0), and its
 * bytes (mapped on the first call and kept until f is destroyed: borrowed, read only; a program
 * that streams a large model takes tensors instead, whose mappings end with them).
 * Errors: QNT_ERR_NULL_POINTER, QNT_ERR_INVALID_ARGUMENT (index >= the count). */
QNT_API qnt_status qnt_model_file_tensor_type(const qnt_model_file *f, size_t index,
                                              const char **out);
QNT_API qnt_status qnt_model_file_tensor_shape(const qnt_model_file *f, size_t index,
                                               int64_t *shape_out, size_t capacity,
                                               size_t *rank_out);
QNT_API qnt_status qnt_model_file_tensor_bytes(const qnt_model_file *f, size_t index,
                                               const void **data_out, size_t *bytes_out);
/* The entry as a read-only qnt tensor (see Memory above): its qnt dtype and shape, and for a
 * tensor qnt stored quantized, its logical dtype and shape and its qparams. Caller destroys *out
 * with qnt_tensor_destroy(). Errors: QNT_ERR_NULL_POINTER, QNT_ERR_INVALID_ARGUMENT (index),
 * QNT_ERR_UNSUPPORTED (a dtype qnt has no type for), QNT_ERR_INVALID_QPARAMS (stored scales or
 * zero points that qnt_qparams refuses), QNT_ERR_OUT_OF_MEMORY. */
QNT_API qnt_status qnt_model_file_tensor(const qnt_model_file *f, size_t index,
                                         qnt_tensor **out);

/* The file's metadata (safetensors: the "__metadata__" map of strings, qnt's keys included;
 * GGUF: its keys and typed values), by index in the file's order, and by key. Strings are
 * borrowed: valid while f lives. Errors: QNT_ERR_NULL_POINTER, QNT_ERR_INVALID_ARGUMENT (index,
 * or no such key), QNT_ERR_DTYPE_MISMATCH (qnt_model_file_metadata_string of a value that is
 * not a string). */
QNT_API qnt_status qnt_model_file_metadata_count(const qnt_model_file *f, size_t *out);
QNT_API qnt_status qnt_model_file_metadata_key(const qnt_model_file *f, size_t index,
                                               const char **out);
QNT_API qnt_status qnt_model_file_metadata_string(const qnt_model_file *f, const char *key,
                                                  const char **out);
/* A value's type (QNT_META_ARRAY for an array, whose elements' type goes to *element_out; for
 * a scalar *element_out is its type too) and its count of values (1 for a scalar). */
QNT_API qnt_status qnt_model_file_metadata_type(const qnt_model_file *f, const char *key,
                                                qnt_meta_type *type_out,
                                                qnt_meta_type *element_out, size_t *count_out);
/* Value `index` (0 for a scalar) of an integer or bool value (as int64: QNT_ERR_OVERFLOW for a
 * uint64 above INT64_MAX; as uint64: QNT_ERR_OVERFLOW for a negative one), of a float32 or
 * float64 value (as double), or of a string value (borrowed). A value of another kind is
 * QNT_ERR_DTYPE_MISMATCH; index >= the count QNT_ERR_INVALID_ARGUMENT. */
QNT_API qnt_status qnt_model_file_metadata_int(const qnt_model_file *f, const char *key,
                                               size_t index, int64_t *out);
QNT_API qnt_status qnt_model_file_metadata_uint(const qnt_model_file *f, const char *key,
                                                size_t index, uint64_t *out);
QNT_API qnt_status qnt_model_file_metadata_float(const qnt_model_file *f, const char *key,
                                                 size_t index, double *out);
QNT_API qnt_status qnt_model_file_metadata_string_at(const qnt_model_file *f, const char *key,
                                                     size_t index, const char **out);

/* The entry's values as float32 into y (an f32 host tensor of the entry's shape:
 * QNT_ERR_DTYPE_MISMATCH, QNT_ERR_SHAPE_MISMATCH): the float and integer dtypes converted, GGUF's
 * block types dequantized as said above. A tensor qnt stored quantized is QNT_ERR_UNSUPPORTED
 * (take it with qnt_model_file_tensor and qnt_dequantize it), as are the types qnt does not
 * dequantize. y is untouched on failure. */
QNT_API qnt_status qnt_model_file_tensor_dequantize(const qnt_model_file *f, size_t index,
                                                    qnt_tensor *y);

/* Writing. A writer is created for a path and a format, given its metadata and the list of its
 * tensors (qnt_model_writer_declare*: name, dtype, shape, and for a quantized tensor the layout
 * of its qparams), and then each tensor's bytes, in the declared order. The header goes to the
 * file before the first tensor's bytes, so a model larger than memory streams through one
 * tensor at a time. qnt_model_writer_finish completes the file; a writer destroyed before that
 * removes what it wrote. The file is written as path + ".partial" and renamed to path by
 * finish, so an existing file at path is replaced only by a complete one.
 * Errors common to the writer's calls: QNT_ERR_NULL_POINTER, QNT_ERR_INVALID_ARGUMENT (a call
 * out of order: a declaration or metadata after the first write, a write past the declared
 * tensors, a finish before the last; the message says which), QNT_ERR_OUT_OF_MEMORY; and
 * QNT_ERR_INTERNAL with the system's message for a failed write (disk full, ...), after which
 * the writer only accepts being destroyed. */
QNT_API qnt_status qnt_model_writer_create(const char *path, qnt_file_format format,
                                           qnt_model_writer **out);
QNT_API void qnt_model_writer_destroy(qnt_model_writer *w);

/* A metadata string (both copied). A key written twice, or one starting with "qnt." or "qnt:"
 * (qnt's own), is QNT_ERR_INVALID_ARGUMENT. */
QNT_API qnt_status qnt_model_writer_set_metadata(qnt_model_writer *w, const char *key,
                                                 const char *value);

/* Declares the next tensor: name (unique, not empty, not ending in ".qnt_scales" or
 * ".qnt_zero_points"), dtype and shape (copied). layout is NULL for a tensor without qparams
 * (dtype f32, f16, bf16, i32, i8, u8, i16 or u16), or qparams whose dtype is dtype and whose
 * granularity, axis, block size and count fit the shape: only that layout is kept, and whether
 * its zero points are all 0 (then no zero-point entry is stored, and the tensor written must have
 * zero points 0 too). Errors: QNT_ERR_INVALID_ARGUMENT (name, dtype), QNT_ERR_SHAPE_MISMATCH,
 * QNT_ERR_DTYPE_MISMATCH, QNT_ERR_OVERFLOW. */
QNT_API qnt_status qnt_model_writer_declare(qnt_model_writer *w, const char *name,
                                            qnt_dtype dtype, const int64_t *shape, size_t rank,
                                            const qnt_qparams *layout);
/* Declares the next tensor as bytes of a file dtype that qnt has no type for (for example
 * "F64", "I64", "BOOL", copied from another file), which must be one safetensors knows, with
 * bytes = its size times the element count (QNT_ERR_SHAPE_MISMATCH otherwise). */
QNT_API qnt_status qnt_model_writer_declare_bytes(qnt_model_writer *w, const char *name,
                                                  const char *file_dtype, const int64_t *shape,
                                                  size_t rank, size_t bytes);
/* Writes the next declared tensor: t must have its declared dtype and shape and, for a
 * quantized declaration, qparams of the declared layout (QNT_ERR_DTYPE_MISMATCH,
 * QNT_ERR_SHAPE_MISMATCH, QNT_ERR_INVALID_QPARAMS for nonzero zero points declared as zero).
 * t must be in host memory. */
QNT_API qnt_status qnt_model_writer_write(qnt_model_writer *w, const qnt_tensor *t);
/* Writes the next declared tensor from bytes (a qnt_model_writer_declare_bytes declaration, or
 * a declaration without qparams), exactly its size (QNT_ERR_SHAPE_MISMATCH otherwise). */
QNT_API qnt_status qnt_model_writer_write_bytes(qnt_model_writer *w, const void *data,
                                                size_t bytes);
/* GGUF's typed metadata: one value of `type` at value (the C type of its size: uint8_t ...
 * double; a bool is a uint8_t 0 or 1; a string is a const char *, its address passed), or an
 * array of count values of element_type (strings: an array of const char *). For safetensors
 * only a string scalar is taken (QNT_ERR_INVALID_ARGUMENT otherwise). "general.alignment" is
 * qnt's: it writes the default, 32. */
QNT_API qnt_status qnt_model_writer_set_metadata_scalar(qnt_model_writer *w, const char *key,
                                                        qnt_meta_type type, const void *value);
QNT_API qnt_status qnt_model_writer_set_metadata_array(qnt_model_writer *w, const char *key,
                                                       qnt_meta_type element_type,
                                                       const void *values, size_t count);
/* GGUF: declares the next tensor as ggml type ggml_type ("Q8_0", ...), written later from an
 * f32 tensor of this shape by qnt_model_writer_write: F32 as it is, F16 and BF16 rounded to
 * nearest even, and Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K, IQ4_NL, TQ1_0, TQ2_0 with the bits
 * of ggml's
 * reference quantizers (quantize_row_*_ref, the K-quants' scale and minimum search included;
 * ggml built without FMA contraction, and gguf-py's quantize for the legacy types, give the same
 * bytes; a NaN or an infinity in the values is QNT_ERR_INVALID_ARGUMENT). The last dimension must be a whole number of the type's blocks
 * (QNT_ERR_SHAPE_MISMATCH); other ggml types are QNT_ERR_UNSUPPORTED in this release (their
 * bytes can still be copied: qnt_model_writer_declare_bytes with the ggml name). In a GGUF file,
 * qnt_model_writer_declare takes the plain dtypes (f32, f16, bf16, i8, i16, i32) without
 * qparams; qnt_model_writer_declare_bytes takes any ggml type name. */
QNT_API qnt_status qnt_model_writer_declare_ggml(qnt_model_writer *w, const char *name,
                                                 const char *ggml_type, const int64_t *shape,
                                                 size_t rank);
/* Calibrated inputs (since 0.9). A weight's file can carry the qparams of its layer's input, as
 * a static quantized linear (qnt_linear_static) needs them: per-tensor qparams of an integer
 * dtype, computed by a calibrator over activations (`qnt quantize --calibrate`). Both formats
 * store them as the metadata string "qnt:input.<name>" = "dtype=<qnt_dtype_name>;scale=<the
 * float32 scale, 9 significant digits>;zero_point=<z>", which reads back to the same bits; a
 * file whose such key is malformed, or names no tensor of the file, fails to open
 * (QNT_ERR_CORRUPT_DATA).
 * qnt_model_writer_set_input_qparams records qp for the tensor `name`, before the first tensor
 * is written; the name must be declared by then (the first write fails otherwise). Errors:
 * QNT_ERR_INVALID_ARGUMENT (empty name, set twice, after the first write), QNT_ERR_UNSUPPORTED
 * (qparams that are not per-tensor, or of NF4, binary or ternary). */
QNT_API qnt_status qnt_model_writer_set_input_qparams(qnt_model_writer *w, const char *name,
                                                      const qnt_qparams *qp);
/* The qparams recorded for the input of entry `index`, or *out = NULL (and QNT_OK) when the file
 * records none. Caller destroys *out with qnt_qparams_destroy(). */
QNT_API qnt_status qnt_model_file_tensor_input_qparams(const qnt_model_file *f, size_t index,
                                                       qnt_qparams **out);

/* Completes the file (every declared tensor written) and renames it into place. */
QNT_API qnt_status qnt_model_writer_finish(qnt_model_writer *w);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* QNT_QNT_IO_H */
