#include "core/linear/optimum.hpp"

#include <linear.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <string_view>

#include "core/error.hpp"

namespace dsgd::linear {
namespace {

// liblinear prints through one process-wide function pointer with no context. It trains on the calling thread, so
// a thread-local log keeps concurrent optimum() calls apart; every call installs the same function.
thread_local std::string liblinear_log;

void capture_print(const char* text) { liblinear_log += text; }

// Trust-region iterations: TRON logs one "iter N act ..." line per Newton step.
int count_iterations(std::string_view log) {
  int count = 0;
  for (std::size_t at = 0; at < log.size();) {
    const std::size_t end = std::min(log.find('\n', at), log.size());
    if (log.substr(at, end - at).starts_with("iter")) ++count;
    at = end + 1;
  }
  return count;
}

struct ModelDeleter {
  void operator()(model* m) const { free_and_destroy_model(&m); }
};

}  // namespace

Optimum optimum(const Problem& problem, double eps) {
  DSGD_ENFORCE(problem.data != nullptr, "the problem has no data");
  const data::SparseDataset& data = *problem.data;
  const std::size_t rows = data.rows();
  DSGD_ENFORCE_GT(rows, std::size_t{0});
  DSGD_ENFORCE_GT(problem.lambda, 0.0);
  DSGD_ENFORCE_LE(data.features, static_cast<std::size_t>(std::numeric_limits<int>::max()));

  // liblinear's rows: 1-based (index, value) pairs in double, each row ended by index -1.
  std::vector<feature_node> nodes;
  nodes.reserve(data.nnz() + rows);
  std::vector<feature_node*> row_nodes(rows);
  std::vector<double> labels(rows);
  for (std::size_t row = 0; row < rows; ++row) {
    const auto indices = data.row_index(row);
    const auto values = data.row_value(row);
    for (std::size_t k = 0; k < indices.size(); ++k) {
      nodes.push_back({static_cast<int>(indices[k]) + 1, double{values[k]}});
    }
    nodes.push_back({-1, 0.0});
    labels[row] = double{data.label[row]};
  }
  for (std::size_t row = 0, at = 0; row < rows; ++row) {
    row_nodes[row] = nodes.data() + at;
    at += static_cast<std::size_t>(data.row_begin[row + 1] - data.row_begin[row]) + 1;
  }

  ::problem prob{};
  prob.l = static_cast<int>(rows);
  prob.n = static_cast<int>(data.features);
  prob.y = labels.data();
  prob.x = row_nodes.data();
  prob.bias = -1;  // seed 003's model has no bias term (liblinear would append a regularised constant feature)

  ::parameter param{};
  param.solver_type = L2R_LR;
  param.eps = eps;
  param.C = 1.0 / (problem.lambda * static_cast<double>(rows));
  param.nr_weight = 0;
  param.init_sol = nullptr;
  if (const char* rejected = check_parameter(&prob, &param)) {
    throw InputError(std::string("liblinear rejects the parameters (eps ") + std::to_string(eps) + ", C " +
                     std::to_string(param.C) + "): " + rejected);
  }

  liblinear_log.clear();
  set_print_string_function(&capture_print);
  const auto start = std::chrono::steady_clock::now();
  const std::unique_ptr<model, ModelDeleter> trained(train(&prob, &param));
  const auto stop = std::chrono::steady_clock::now();
  DSGD_ENFORCE(trained != nullptr, "liblinear's train() returned no model");

  // w scores label[0] against the rest. liblinear puts +1 first when the labels are -1 and +1 (group_classes), but
  // with a single class present label[0] may be -1: take the sign from it rather than rely on the ordering.
  const double sign = trained->label[0] > 0 ? 1.0 : -1.0;
  Optimum out;
  out.w.resize(data.features);
  double norm2 = 0;
  for (std::size_t f = 0; f < data.features; ++f) {
    const double weight = sign * trained->w[f];
    out.w[f] = static_cast<float>(weight);
    norm2 += weight * weight;
  }
  double loss_sum = 0;
  for (std::size_t row = 0; row < rows; ++row) {
    double dot = 0;
    for (const feature_node* node = row_nodes[row]; node->index != -1; ++node) {
      dot += node->value * sign * trained->w[node->index - 1];
    }
    loss_sum += logistic_loss(labels[row] * dot);
  }
  out.liblinear_objective = 0.5 * norm2 + param.C * loss_sum;
  out.objective = objective(problem, out.w);
  out.C = param.C;
  out.eps = eps;
  out.iterations = count_iterations(liblinear_log);
  out.converged = liblinear_log.find("WARNING: reaching max") == std::string::npos;
  out.train_s = std::chrono::duration<double>(stop - start).count();
  out.solver = "liblinear " + std::to_string(liblinear_version / 100) + "." + std::to_string(liblinear_version % 100) +
               " L2R_LR (primal trust-region Newton)";
  return out;
}

}  // namespace dsgd::linear
