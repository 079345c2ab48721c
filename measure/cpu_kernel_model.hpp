#pragma once
// This machine's CPU described for the kernel model by shape (platforms::KernelModel; simulate/kernel_cost.hpp),
// every value read from the system or measured here, none fitted: what `dsgd bench layers` predicts this machine's
// per-layer times with (docs/simulation.md "Kernels by shape", "The model on this machine").
//
//   parallel_units   physical cores (/proc/cpuinfo)
//   clock_Hz         measured: the clock the cores run at, all busy (a chain of dependent adds; the fastest core),
//                    not /proc/cpuinfo's nominal figure, so the peak is one the kernels cannot beat
//   tile             [1, 1]: the libraries compute a GEMM's edges on what is there (no padded blocks)
//   fixed_s          the median time of the back end's smallest kernel: a ReLU over one float on one thread
//   sync_s_per_unit  that ReLU on every core, less on one thread, per core: the fork-join of a threaded kernel
//   streaming        per layer kind (relu, max_pool, softmax): the back end's reference layer on one thread, the
//                    bytes layer_kernels counts over its forward's and its backward's times; the loss's work per
//                    row; the share of the work on channels padded to whole blocks (L + 1 channels against L);
//                    whether every core runs it faster, and at what share of their speed
//   gemm_library     the inner products' OpenBLAS (its threading rule; measured: its packing rate, its GEMMs'
//                    speed against oneDNN's, its share of the cores) and the convolutions' oneDNN (measured: the
//                    im2col / col2im lowering per column element by pass, its share of the cores), each on
//                    reference layers of no zoo shape
//   cache            the L2 caches (sysfs size x cores), at a memcpy's rate within half of one, x cores
// and the node memories, fastest first: the L3 (sysfs size) at a memcpy's rate within half of it on every core,
// and DRAM at STREAM's triad on every core. The efficiency is 1: a check fits it (simulate/kernel_model_check.hpp).

#include <cstddef>
#include <string>
#include <vector>

#include "platforms/platform.hpp"

namespace dsgd::measure {

struct CpuKernelDescription {
  platforms::Cpu cpu;                       // cores and vector width from /proc/cpuinfo, measured clock, `kernels`
  std::vector<platforms::Memory> memories;  // the L3, then DRAM
};

// Measures and reads the description (a few seconds). `where` (host, date) goes into the sources. Throws
// UnavailableError where /proc/cpuinfo gives no clock or the caches' sizes cannot be read.
CpuKernelDescription describe_cpu_kernels(const std::string& where);

// The size of the level-`level` data (or unified) cache of cpu0, and where it was read: sysfs, else CPUID (through
// glibc's sysconf, for a virtual machine that lists no caches in sysfs). 0 bytes where neither gives it.
struct CacheSize {
  std::size_t bytes = 0;
  std::string source;
};
CacheSize cache_size(int level);
std::size_t cache_bytes(int level);  // cache_size(level).bytes
// The size sysfs alone gives; 0 where it gives none.
std::size_t sysfs_cache_bytes(int level);

}  // namespace dsgd::measure
