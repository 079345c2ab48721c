#pragma once
// Gradient compression codecs (algorithms/README.md "Compressed gradients"): IEEE half precision, 1-bit
// quantisation with error feedback (Seide et al. 2014) and top-k sparsification with error feedback (Lin et al.
// 2018, Stich et al. 2018). Pure functions on host buffers, with no communication: core/compressed_collectives.hpp
// runs the exchanges over Comm with them, and the size functions here give the bytes those exchanges put on the
// wire, with or without payloads.
//
// Error feedback: an encoder adds the residual (what earlier rounds left out) to the gradient, sends a compressed
// version of the sum and keeps sum - decoded as the next residual, so every part of every gradient is sent
// eventually: decoded + new residual == gradient + old residual, element by element, up to one rounding of the
// subtraction.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace dsgd {

enum class Compression { kNone, kFp16, kOneBit, kTopK };
inline constexpr std::array<Compression, 4> kCompressions = {Compression::kNone, Compression::kFp16,
                                                             Compression::kOneBit, Compression::kTopK};
// "none", "fp16", "onebit", "topk".
std::string_view to_string(Compression compression);
// Parses those names; UnknownNameError lists them.
Compression compression_from_string(std::string_view name);

// --- IEEE binary16 -------------------------------------------------------------------------------------------------

// The half nearest to `value`, ties to even (IEEE 754's default rounding); beyond the largest half (65504) gives
// infinity, NaN stays NaN. Bit-exact, so every executor rounds alike.
std::uint16_t to_half(float value);
// Exact: every half is a float.
float from_half(std::uint16_t half);

// --- 1-bit quantisation ----------------------------------------------------------------------------------------------

// Bytes of a 1-bit message of `count` elements in `segments` segments: two float scales per segment, then one bit
// per element, packed (element i in byte i / 8, bit i % 8).
std::size_t onebit_bytes(std::size_t count, std::size_t segments);
// Encodes gradient + residual into `message` (onebit_bytes(gradient.size(), segment_lengths.size()) bytes) and
// leaves the quantisation error in `residual`. Per segment (segment_lengths sum to gradient.size()) the bit of an
// element is its sign (1 for >= 0), decoded as the mean of the segment's non-negative sums or of its negative ones
// (the reconstruction that minimises the squared error for these bits; 0 where a side is empty).
void onebit_encode(std::span<const float> gradient, std::span<float> residual,
                   std::span<const std::size_t> segment_lengths, std::span<std::byte> message);
// Adds the decoded message to `sum` (of the encoded gradient's size).
void onebit_decode_add(std::span<const std::byte> message, std::span<const std::size_t> segment_lengths,
                       std::span<float> sum);

// --- top-k sparsification ------------------------------------------------------------------------------------------

// k = ceil(ratio x count), at least 1 and at most count (0 for count 0). ratio in (0, 1].
std::size_t topk_count(std::size_t count, double ratio);
// Bytes of a top-k message: k (index, value) pairs, a 4-byte index and a 4-byte float each.
std::size_t topk_bytes(std::size_t k);
// Encodes the k entries of gradient + residual largest in magnitude -- ties to the lower index, so the choice is
// deterministic -- into `message` (topk_bytes(k) bytes: the k indices ascending, then their values) and leaves the
// rest in `residual` (the chosen entries' residual becomes 0).
void topk_encode(std::span<const float> gradient, std::span<float> residual, std::size_t k,
                 std::span<std::byte> message);
// Adds the message's k values at their indices into `sum`.
void topk_decode_add(std::span<const std::byte> message, std::size_t k, std::span<float> sum);

}  // namespace dsgd
