#pragma once
// Datasets by name: the packaged defaults (Debian's dataset-fashion-mnist under /usr/share/datasets) and folders
// of IDX or CIFAR-10 files, so `dsgd train` works with no data arguments once the package is installed.

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/data/dataset.hpp"

namespace dsgd::data {

enum class Split { kTrain, kTest };

// "train" or "test".
std::string_view split_name(Split split);

// Where Debian's dataset-* packages install their files.
inline constexpr std::string_view kDebianDatasetsRoot = "/usr/share/datasets";

// One way of naming a dataset, for help texts and error messages.
struct DatasetEntry {
  std::string name;         // "fashion-mnist", or a pattern such as "cifar10:FOLDER"
  std::string description;  // one line
};

// The accepted names, in the order help texts list them.
std::vector<DatasetEntry> dataset_catalog();

// Loads one split, pixels scaled to [0, 1] and not yet normalised (see normalize_with_train_stats). Accepts
//   "fashion-mnist"    Debian's dataset-fashion-mnist: IDX files in DATASETS_ROOT/fashion-mnist, 10 classes;
//   "mnist"            IDX files in DATASETS_ROOT/mnist (Debian 12 packages none; see docs/datasets.md);
//   "idx:FOLDER"       train-/t10k-{images-idx3,labels-idx1}-ubyte[.gz] in FOLDER, classes = largest train label + 1;
//   "cifar10:FOLDER"   CIFAR-10 binaries (data_batch_N.bin, test_batch.bin) in FOLDER or FOLDER/cifar-10-batches-bin;
//   a folder path      holding either of the two, recognised by its file names.
// The result's name is "<name_or_path> (train|test)". `datasets_root` is a parameter so tests can point it
// elsewhere. Throws UnknownNameError listing the valid names; UnavailableError naming the Debian package when a
// packaged dataset is not installed; InputError naming the file (and offset) for a missing or malformed file.
Dataset load_dataset(std::string_view name_or_path, Split split,
                     const std::filesystem::path& datasets_root = kDebianDatasetsRoot);

// Both splits normalised with the training set's per-channel statistics (seed 000 Algorithm 1 line 1).
struct TrainTestData {
  Dataset train;
  Dataset test;
  ChannelStats stats;  // computed on train, applied to both
};

// load_dataset for both splits, then normalize_with_train_stats. Same errors as load_dataset.
TrainTestData load_normalized(std::string_view name_or_path,
                              const std::filesystem::path& datasets_root = kDebianDatasetsRoot);

}  // namespace dsgd::data
