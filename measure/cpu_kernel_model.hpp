#pragma once
// This machine's CPU described for the kernel model by shape (platforms::KernelModel; simulate/kernel_cost.hpp),
// every value read from the system or measured here, none fitted: what `dsgd bench layers` predicts this machine's
// per-layer times with (docs/simulation.md "Kernels by shape", "The model on this machine").
//
//   parallel_units   physical cores (/proc/cpuinfo)
//   clock_Hz         measured: the clock the cores run at, all busy (a chain of dependent adds; the fastest core),
//                    not /proc/cpuinfo's nominal figure, so the peak is one the kernels cannot beat
//   tile             [m, n]: n the fp32 lanes of one vector register of the widest extension (derive_core_peak),
//                    m the rows of OpenBLAS's x86-64 SGEMM register block (8: sgemm_kernel_8x4 on Haswell and Zen)
//   fixed_s          the median time of the back end's smallest kernel: a ReLU over one float on one thread
//   sync_s_per_unit  that ReLU on every core, less on one thread, per core: the fork-join of a threaded kernel
//   streaming        per layer kind (relu, max_pool, softmax): the back end's reference layer on one thread, the
//                    bytes layer_kernels counts over its forward's and its backward's times; the loss's work per
//                    row; the share of the work on channels padded to whole blocks (L + 1 channels against L);
//                    whether every core runs it faster, and at what share of their speed
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

// The size of the level-`level` data (or unified) cache of cpu0 from sysfs; 0 where it cannot be read.
std::size_t cache_bytes(int level);

}  // namespace dsgd::measure
