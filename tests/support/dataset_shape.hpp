#pragma once
// A dataset's header -- name, sample count, C x H x W and classes -- as one value, so that a reader's test checks it
// in one assertion and a failure prints every field.

#include <cstddef>
#include <ostream>
#include <string>

#include "core/data/dataset.hpp"

namespace dsgd::testing {

struct DatasetShape {
  std::string name;
  std::size_t size = 0;
  int channels = 0;
  int height = 0;
  int width = 0;
  int classes = 0;
  bool operator==(const DatasetShape&) const = default;
};

inline DatasetShape shape_of(const data::Dataset& data) {
  return {data.name, data.size(), data.channels, data.height, data.width, data.classes};
}

inline std::ostream& operator<<(std::ostream& out, const DatasetShape& shape) {
  return out << "'" << shape.name << "': " << shape.size << " x " << shape.channels << " x " << shape.height << " x "
             << shape.width << ", " << shape.classes << " classes";
}

}  // namespace dsgd::testing
