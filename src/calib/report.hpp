// qnt_error_report_compute: quantize, dequantize back, and measure.
#pragma once

#include "core/qparams.hpp"
#include "core/tensor.hpp"

#include <qnt/qnt.h>

namespace qnt::calib {

void error_report(const Tensor &x, const QParams &qp, qnt_error_report &out);

}  // namespace qnt::calib
