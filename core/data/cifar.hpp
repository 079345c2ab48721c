#pragma once
// The CIFAR-10 binary format (https://www.cs.toronto.edu/~kriz/cifar.html, "binary version"): each file
// (data_batch_1.bin .. data_batch_5.bin, test_batch.bin) is a sequence of 3073-byte records -- 1 label byte (0..9)
// then 3072 pixel bytes, the 32 x 32 red plane, then green, then blue (CHW) -- with no header.
// Errors are InputError "FILE: offset N: ..." with N the byte offset in the (decompressed) file.

#include <cstddef>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "core/data/dataset.hpp"

namespace dsgd::data {

inline constexpr int kCifarClasses = 10;
inline constexpr int kCifarChannels = 3;
inline constexpr int kCifarSide = 32;
inline constexpr std::size_t kCifarRecordBytes = 1 + 3 * 32 * 32;  // 3073

// Reads the records of `files`, in order, into one Dataset of 3 x 32 x 32 images scaled to [0, 1] and 10 classes.
// Throws InputError naming the file and offset for a missing file, an empty one, one whose size is not a multiple
// of 3073 (a truncated last record) and a label > 9; InputError when `files` is empty.
Dataset read_cifar10(const std::vector<std::filesystem::path>& files, std::string name);

// Appends the records of one file's (decompressed) bytes to `data` (a CIFAR-10 Dataset); `path` names it in errors.
void append_cifar10_records(Dataset& data, std::span<const std::uint8_t> bytes, const std::filesystem::path& path);

// The files of one split of the CIFAR-10 binary distribution in `folder` (or in its cifar-10-batches-bin/
// subfolder, as the archive unpacks): data_batch_1.bin, data_batch_2.bin, ... (consecutive, at least one) for
// train, test_batch.bin for test. Throws InputError when the folder or the files are not there.
std::vector<std::filesystem::path> cifar10_files(const std::filesystem::path& folder, bool train);

}  // namespace dsgd::data
