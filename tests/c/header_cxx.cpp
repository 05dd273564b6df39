// The public header compiles alone as C++ (11 and 17) with every warning an error.
#include <qnt/qnt.h>
#include <qnt/qnt_io.h>

static_assert(QNT_OK == 0 && QNT_DTYPE_TERNARY == 11, "enum values are part of the ABI");

int qnt_header_cxx_probe();
int qnt_header_cxx_probe() { return QNT_MAX_RANK; }
