// Mixed precision by measured error: qnt_recommender (see qnt.h). Every candidate format is
// applied to every tensor as it is added (quantized and dequantized back through the library's
// own kernels, or ggml's reference quantizers for the GGUF block types), and the measured bytes
// and SQNR, weighted per input channel by an importance when one is given, are all the selection
// looks at: it is a pure, deterministic function of that table and the budget.
#pragma once

#include "core/context.hpp"
#include "core/tensor.hpp"

#include <qnt/qnt.h>

#include <cstdint>
#include <string>
#include <vector>

namespace qnt::calib {

struct FormatSpec {
  std::string name;  // as given, lower-cased
  bool ggml = false;
  uint32_t ggml_id = 0;       // ggml's type number (ggml)
  qnt_dtype dtype = QNT_DTYPE_I8;  // qnt's dtype (otherwise)
  int64_t block = 0;          // per block of `block` along the last axis; 0: per output channel
};

// Parses a format name: a qnt dtype, per output channel ("i8", "u8", "i4", "u4", "nf4",
// "ternary", "binary", "log4", "log8") or per block along the last axis ("i4.b32", ...), or a
// GGUF type ggml quantizes ("q8_0", "q4_k", "f16", ...). Throws QNT_ERR_INVALID_ARGUMENT.
FormatSpec parse_format(const char *name);

struct Measured {
  bool applies = false;
  uint64_t bytes = 0;
  double sqnr_db = 0.0;
};

class Recommender {
 public:
  void add_format(const char *name);
  void add_tensor(const Context &ctx, const char *name, const Tensor &w, const float *importance,
                  size_t importance_count);
  void run(qnt_budget budget, double value);

  size_t tensor_count() const noexcept { return tensors_.size(); }
  // The choice for tensor i after run(); throws QNT_ERR_INVALID_ARGUMENT before it.
  void choice(size_t i, const char **name, const char **format, uint64_t *bytes,
              double *sqnr_db) const;
  const std::string &report() const;

 private:
  struct Entry {
    std::string name;
    std::vector<Measured> m;  // one per format
    int chosen = -1, runner_up = -1;
  };
  std::vector<FormatSpec> formats_;
  std::vector<Entry> tensors_;
  bool ran_ = false;
  std::string report_;
};

}  // namespace qnt::calib
