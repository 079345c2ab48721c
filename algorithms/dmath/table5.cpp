#include "algorithms/dmath/table5.hpp"

namespace dsgd::algorithms::dmath {

const std::vector<Table5Row>& table5() {
  static const std::vector<Table5Row> rows = {
      {4096, 0.052, 0.035, 0.146, 0.021, 0.169, 0.101},
      {6144, 0.174, 0.109, 0.589, 0.038, 0.259, 0.104},
      {8192, 0.413, 0.245, 1.209, 0.076, 0.493, 0.121},
      {12288, 1.450, 0.840, 3.268, 0.433, 1.420, 0.258},
      {16384, 3.340, 2.034, 8.455, 0.528, 3.223, 0.726},
      {24576, 12.279, 6.809, 28.062, 1.744, 10.295, 1.091},
      {32768, std::nullopt, std::nullopt, 68.618, 4.015, 24.657, 2.389},
      {49152, std::nullopt, std::nullopt, 187.344, 14.016, 82.161, 5.260},
      {65536, std::nullopt, std::nullopt, 461.233, std::nullopt, 192.380, 10.592},
  };
  return rows;
}

std::optional<double> table5_published(const Table5Row& row, int gpus) {
  switch (gpus) {
    case 1:
      return row.cublas_1;
    case 2:
      return row.dmath_2;
    case 8:
      return row.dmath_8;
    case 32:
      return row.dmath_32;
    default:
      return std::nullopt;
  }
}

std::optional<double> table5_cublasxt(const Table5Row& row, int gpus) {
  if (gpus == 2) return row.cublasxt_2;
  if (gpus == 8) return row.cublasxt_8;
  return std::nullopt;
}

}  // namespace dsgd::algorithms::dmath
