#include "core/data/catalog.hpp"

#include <algorithm>
#include <array>
#include <optional>
#include <system_error>

#include "core/data/cifar.hpp"
#include "core/data/idx.hpp"
#include "core/error.hpp"

namespace dsgd::data {
namespace {

namespace fs = std::filesystem;

// The MNIST family has ten classes; Debian's package and the upstream files use these names.
constexpr int kMnistClasses = 10;
constexpr std::string_view kFashionMnistPackage = "dataset-fashion-mnist";

struct Request {
  std::string_view name;      // as the user wrote it, for the dataset's name
  std::string_view argument;  // what follows "prefix:" (empty for plain names)
  Split split;
  const fs::path& root;
};

// IDX files of one split in `folder`: "train" or "t10k" then the kind. Debian and the upstream downloads use
// "train-images-idx3-ubyte.gz"; unpacked copies drop ".gz", and some mirrors write "train-images.idx3-ubyte".
std::optional<fs::path> find_idx_file(const fs::path& folder, Split split, std::string_view kind) {
  const std::string prefix = split == Split::kTrain ? "train" : "t10k";
  const std::string stem = std::string(kind);  // "images-idx3" or "labels-idx1"
  const std::string dotted = stem.substr(0, stem.find('-')) + "." + stem.substr(stem.find('-') + 1);
  const std::array<std::string, 4> candidates = {prefix + "-" + stem + "-ubyte.gz", prefix + "-" + stem + "-ubyte",
                                                 prefix + "-" + dotted + "-ubyte.gz", prefix + "-" + dotted + "-ubyte"};
  std::error_code ec;
  for (const std::string& name : candidates) {
    if (fs::exists(folder / name, ec)) return folder / name;
  }
  return std::nullopt;
}

std::string dataset_name(std::string_view name, Split split) {
  return std::string(name) + " (" + std::string(split_name(split)) + ")";
}

// A packaged MNIST-family dataset under the datasets root; missing files mean the package is not installed.
Dataset load_packaged_idx(const Request& request, std::string_view folder_name, const std::string& how_to_install) {
  const fs::path folder = request.root / folder_name;
  const auto images = find_idx_file(folder, request.split, "images-idx3");
  const auto labels = find_idx_file(folder, request.split, "labels-idx1");
  if (!images || !labels) {
    const std::string prefix = request.split == Split::kTrain ? "train" : "t10k";
    const fs::path missing = folder / (prefix + (images ? "-labels-idx1-ubyte.gz" : "-images-idx3-ubyte.gz"));
    throw UnavailableError("dataset '" + std::string(request.name) + "' is not installed (no " + missing.string() +
                           "): " + how_to_install);
  }
  return read_idx_dataset(*images, *labels, kMnistClasses, dataset_name(request.name, request.split));
}

Dataset load_fashion_mnist(const Request& request) {
  return load_packaged_idx(request, "fashion-mnist",
                           "install " + std::string(kFashionMnistPackage) + " (scripts/setup.sh does)");
}

Dataset load_mnist(const Request& request) {
  return load_packaged_idx(request, "mnist",
                           "Debian 12 packages no MNIST (only " + std::string(kFashionMnistPackage) +
                               "); put the four IDX files from http://yann.lecun.com/exdb/mnist/ in a folder and "
                               "use 'idx:FOLDER'");
}

void require_folder(const fs::path& folder) {
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) throw InputError(folder.string() + ": no such folder");
}

Dataset load_idx_folder(const Request& request) {
  const fs::path folder(request.argument);
  require_folder(folder);
  const auto need = [&](Split split, std::string_view kind) {
    const auto path = find_idx_file(folder, split, kind);
    if (!path) {
      throw InputError(folder.string() + ": no " + (split == Split::kTrain ? "train-" : "t10k-") + std::string(kind) +
                       "-ubyte[.gz] (expected train-images-idx3-ubyte, train-labels-idx1-ubyte, "
                       "t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte, each optionally .gz)");
    }
    return *path;
  };
  // Classes come from the training labels so both splits agree; a test label beyond them is an error.
  const std::vector<std::uint8_t> train_labels = read_idx_labels(need(Split::kTrain, "labels-idx1"));
  const int classes = *std::max_element(train_labels.begin(), train_labels.end()) + 1;
  return read_idx_dataset(need(request.split, "images-idx3"), need(request.split, "labels-idx1"), classes,
                          dataset_name(request.name, request.split));
}

Dataset load_cifar10_folder(const Request& request) {
  const fs::path folder(request.argument);
  return read_cifar10(cifar10_files(folder, request.split == Split::kTrain), dataset_name(request.name, request.split));
}

struct Loader {
  std::string_view name;  // "fashion-mnist", or "cifar10" for "cifar10:FOLDER"
  bool takes_folder;
  std::string_view description;
  Dataset (*load)(const Request&);
};

constexpr std::array<Loader, 4> kLoaders = {{
    {"fashion-mnist", false,
     "Fashion-MNIST from Debian's dataset-fashion-mnist (60000/10000 images, 1x28x28, 10 classes)",
     &load_fashion_mnist},
    {"mnist", false, "MNIST IDX files in /usr/share/datasets/mnist (not packaged in Debian 12)", &load_mnist},
    {"idx", true, "IDX files (train-/t10k-{images-idx3,labels-idx1}-ubyte[.gz]) in FOLDER", &load_idx_folder},
    {"cifar10", true, "CIFAR-10 binary files (data_batch_N.bin, test_batch.bin) in FOLDER", &load_cifar10_folder},
}};

std::string pattern(const Loader& loader) { return std::string(loader.name) + (loader.takes_folder ? ":FOLDER" : ""); }

std::vector<std::string> valid_names() {
  std::vector<std::string> names;
  names.reserve(kLoaders.size() + 1);
  for (const Loader& loader : kLoaders) names.push_back(pattern(loader));
  names.emplace_back("a folder holding IDX or CIFAR-10 files");
  return names;
}

const Loader& loader_named(std::string_view name) {
  const auto* it = std::find_if(kLoaders.begin(), kLoaders.end(), [&](const Loader& l) { return l.name == name; });
  DSGD_ENFORCE(it != kLoaders.end(), "no loader " + std::string(name));
  return *it;
}

// A bare folder: which loader its files belong to, if any.
const Loader* recognise_folder(const fs::path& folder) {
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) return nullptr;
  if (find_idx_file(folder, Split::kTrain, "images-idx3") || find_idx_file(folder, Split::kTest, "images-idx3")) {
    return &loader_named("idx");
  }
  if (fs::exists(folder / "data_batch_1.bin", ec) || fs::exists(folder / "test_batch.bin", ec) ||
      fs::exists(folder / "cifar-10-batches-bin", ec)) {
    return &loader_named("cifar10");
  }
  return nullptr;
}

}  // namespace

std::string_view split_name(Split split) { return split == Split::kTrain ? "train" : "test"; }

std::vector<DatasetEntry> dataset_catalog() {
  std::vector<DatasetEntry> entries;
  entries.reserve(kLoaders.size());
  for (const Loader& loader : kLoaders) entries.push_back({pattern(loader), std::string(loader.description)});
  return entries;
}

Dataset load_dataset(std::string_view name_or_path, Split split, const fs::path& datasets_root) {
  // "prefix:argument" for the loaders that take a folder, the whole string for the others.
  const std::size_t colon = name_or_path.find(':');
  const std::string_view head = colon == std::string_view::npos ? name_or_path : name_or_path.substr(0, colon);
  for (const Loader& loader : kLoaders) {
    if (loader.name != head) continue;
    const bool has_colon = colon != std::string_view::npos;
    const std::string_view argument = has_colon ? name_or_path.substr(colon + 1) : std::string_view{};
    if (loader.takes_folder != has_colon || (has_colon && argument.empty())) {
      throw InputError("dataset '" + std::string(name_or_path) + "': expected '" + pattern(loader) + "'" +
                       (loader.takes_folder ? ", a folder after the colon" : ""));
    }
    return loader.load(Request{name_or_path, argument, split, datasets_root});
  }
  const fs::path folder(name_or_path);
  if (const Loader* loader = recognise_folder(folder)) {
    return loader->load(Request{name_or_path, name_or_path, split, datasets_root});
  }
  // Something that looks like a path gets a message about the path rather than the list of names.
  std::error_code ec;
  if (name_or_path.find('/') != std::string_view::npos) {
    if (!fs::exists(folder, ec)) throw InputError(folder.string() + ": no such folder");
    throw InputError(folder.string() +
                     ": holds neither IDX files (train-images-idx3-ubyte[.gz], ...) nor CIFAR-10 "
                     "binaries (data_batch_1.bin, ...)");
  }
  throw UnknownNameError("dataset", name_or_path, valid_names());
}

TrainTestData load_normalized(std::string_view name_or_path, const fs::path& datasets_root) {
  TrainTestData data{load_dataset(name_or_path, Split::kTrain, datasets_root),
                     load_dataset(name_or_path, Split::kTest, datasets_root),
                     {}};
  data.stats = normalize_with_train_stats(data.train, data.test);
  return data;
}

}  // namespace dsgd::data
