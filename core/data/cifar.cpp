#include "core/data/cifar.hpp"

#include <system_error>

#include "core/data/binary_file.hpp"
#include "core/error.hpp"
#include "core/memory.hpp"

namespace dsgd::data {

Dataset read_cifar10(const std::vector<std::filesystem::path>& files, std::string name) {
  if (files.empty()) throw InputError(name + ": no CIFAR-10 files given");
  Dataset data;
  data.name = std::move(name);
  data.channels = kCifarChannels;
  data.height = kCifarSide;
  data.width = kCifarSide;
  data.classes = kCifarClasses;
  for (const std::filesystem::path& path : files) append_cifar10_records(data, read_binary_file(path), path);
  return data;
}

void append_cifar10_records(Dataset& data, std::span<const std::uint8_t> bytes, const std::filesystem::path& path) {
  constexpr std::size_t kPixels = kCifarRecordBytes - 1;
  // There is no header: the size is the only check on the framing, so a partial record is an error rather than
  // silently shifting every later label into pixel data.
  if (bytes.empty()) {
    throw InputError(path.string() + ": offset 0: empty file (expected records of " +
                     std::to_string(kCifarRecordBytes) + " bytes)");
  }
  const std::size_t records = bytes.size() / kCifarRecordBytes;
  if (bytes.size() % kCifarRecordBytes != 0) {
    throw InputError(path.string() + ": offset " + std::to_string(records * kCifarRecordBytes) + ": file size " +
                     std::to_string(bytes.size()) + " is not a multiple of " + std::to_string(kCifarRecordBytes) +
                     " (1 label byte + 3072 pixel bytes); the last record has only " +
                     std::to_string(bytes.size() % kCifarRecordBytes) + " bytes");
  }
  const std::size_t first = data.labels.size();
  // Pixels become floats: four times the file's bytes.
  check_available_memory(static_cast<double>(first + records) * kPixels * sizeof(float),
                         path.string() + ": " + std::to_string(first + records) + " CIFAR-10 images need ",
                         " as floats");
  data.labels.resize(first + records);
  data.images.resize((first + records) * kPixels);
  for (std::size_t r = 0; r < records; ++r) {
    const std::uint8_t* record = bytes.data() + r * kCifarRecordBytes;
    if (record[0] >= kCifarClasses) {
      throw InputError(path.string() + ": offset " + std::to_string(r * kCifarRecordBytes) + ": label " +
                       std::to_string(record[0]) + " is not a CIFAR-10 class (expected 0.." +
                       std::to_string(kCifarClasses - 1) + ")");
    }
    data.labels[first + r] = record[0];
    // The file's pixel order is already CHW, the order Dataset keeps: a straight scaled copy.
    float* out = data.images.data() + (first + r) * kPixels;
#pragma omp simd
    for (std::size_t k = 0; k < kPixels; ++k) out[k] = static_cast<float>(record[1 + k]) / 255.0f;
  }
}

std::vector<std::filesystem::path> cifar10_files(const std::filesystem::path& folder, bool train) {
  std::error_code ec;
  if (!std::filesystem::is_directory(folder, ec)) throw InputError(folder.string() + ": no such folder");
  std::filesystem::path root = folder;
  const std::filesystem::path nested = folder / "cifar-10-batches-bin";
  if (!std::filesystem::exists(folder / "test_batch.bin", ec) &&
      !std::filesystem::exists(folder / "data_batch_1.bin", ec) && std::filesystem::is_directory(nested, ec)) {
    root = nested;
  }
  std::vector<std::filesystem::path> files;
  if (train) {
    for (int i = 1;; ++i) {
      std::filesystem::path file = root / ("data_batch_" + std::to_string(i) + ".bin");
      if (!std::filesystem::exists(file, ec)) break;
      files.push_back(std::move(file));
    }
  } else if (std::filesystem::exists(root / "test_batch.bin", ec)) {
    files.push_back(root / "test_batch.bin");
  }
  if (files.empty()) {
    throw InputError(folder.string() + ": no " + (train ? "data_batch_1.bin" : "test_batch.bin") +
                     " (expected the CIFAR-10 binary files data_batch_1.bin .. data_batch_5.bin and test_batch.bin)");
  }
  return files;
}

}  // namespace dsgd::data
