// A granularity as a loop over runs (see kernels/registry.hpp): the elements [begin, end) of a
// tensor cut where their quantization parameters change pattern, with one division per run.
#pragma once

#include "core/layout.hpp"
#include "kernels/registry.hpp"

#include <algorithm>
#include <cstddef>

namespace qnt::ops {

// fn(first, n, group, kind): elements first .. first + n; element k of the run uses parameter
// group (kShared), group + k (kPerElement) or group + k / L.block (kBlocked).
template <class F>
void for_each_run(const GroupLayout &L, size_t begin, size_t end, F &&fn) {
  const auto inner = static_cast<size_t>(L.inner);
  const auto dim = static_cast<size_t>(L.dim);
  size_t i = begin;
  switch (L.granularity) {
    case QNT_GRANULARITY_PER_AXIS:
      if (inner == 1) {
        while (i < end) {  // the axis is the last one: parameters advance with the element
          const size_t d = i % dim;
          const size_t n = std::min(end - i, dim - d);
          fn(i, n, d, kern::kPerElement);
          i += n;
        }
      } else {
        while (i < end) {  // inner elements share the axis index's parameters
          const size_t row = i / inner;
          const size_t n = std::min(end - i, (row + 1) * inner - i);
          fn(i, n, row % dim, kern::kShared);
          i += n;
        }
      }
      return;
    case QNT_GRANULARITY_PER_BLOCK: {
      const auto block = static_cast<size_t>(L.block);
      const auto blocks = static_cast<size_t>(L.blocks);
      if (inner == 1) {
        // Blocks along the last axis: a partial first block as a shared run, then each row's
        // whole blocks as one blocked run (one division a row).
        if (i >= end) return;
        size_t d = i % dim, g = (i / dim) * blocks + d / block;
        while (i < end) {
          size_t n;
          if (d % block != 0) {
            n = std::min(end - i, std::min(dim, (d / block + 1) * block) - d);
            fn(i, n, g, kern::kShared);
            ++g;
          } else {
            n = std::min(end - i, dim - d);
            fn(i, n, g, kern::kBlocked);
            g += (n + block - 1) / block;
          }
          i += n;
          d += n;
          if (d == dim) d = 0;
        }
      } else {
        while (i < end) {  // along inner, parameters advance with the element
          const size_t row = i / inner, in = i % inner;
          const size_t o = row / dim, d = row % dim;
          const size_t n = std::min(end - i, inner - in);
          fn(i, n, (o * blocks + d / block) * inner + in, kern::kPerElement);
          i += n;
        }
      }
      return;
    }
    default:
      if (begin < end) fn(begin, end - begin, size_t{0}, kern::kShared);
      return;
  }
}

}  // namespace qnt::ops
