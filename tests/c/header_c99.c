/* The public headers compile alone as strict C99 with every warning an error, and its enum
 * values are pinned (a renumbering breaks the ABI, so it breaks this build). */
#include <qnt/qnt.h>
#include <qnt/qnt_io.h>

#define QNT_PIN(name, expr) typedef char qnt_pin_##name[(expr) ? 1 : -1]

QNT_PIN(ok, QNT_OK == 0);
QNT_PIN(internal, QNT_ERR_INTERNAL == 11);
QNT_PIN(no_device, QNT_ERR_NO_DEVICE == 10);
QNT_PIN(f32, QNT_DTYPE_F32 == 1);
QNT_PIN(ternary, QNT_DTYPE_TERNARY == 11);
QNT_PIN(nf4, QNT_DTYPE_NF4 == 9);
QNT_PIN(per_block, QNT_GRANULARITY_PER_BLOCK == 3);
QNT_PIN(affine, QNT_SCHEME_AFFINE == 2);
QNT_PIN(amx, QNT_CPU_AMXINT8 == (1 << 8));
QNT_PIN(vpopcntdq, QNT_CPU_AVX512VPOPCNTDQ == (1 << 9));
QNT_PIN(i8mm, QNT_CPU_I8MM == (1 << 18));
QNT_PIN(safetensors, QNT_FILE_SAFETENSORS == 1);
QNT_PIN(gguf, QNT_FILE_GGUF == 2);
QNT_PIN(version, QNT_VERSION_NUMBER ==
                     QNT_VERSION_MAJOR * 10000 + QNT_VERSION_MINOR * 100 + QNT_VERSION_PATCH);

int qnt_header_c99_probe(void);
int qnt_header_c99_probe(void) { return QNT_MAX_RANK; }
