#!/usr/bin/python3
"""Writes a PyTorch profiler trace (its Chrome-trace JSON) of one training iteration of dsgd's "lenet":
forward, cross-entropy loss, backward, SGD step, on the CPU, with PyTorch's CPU build (Debian's python3-torch).

usage: /usr/bin/python3 scripts/torch_trace.py [--batch 16] [--threads 1] --out FILE
The model is kept plain (no record_function per layer), as a user's would be: a reader matches the recorded
operators to dsgd's layers by their order. Data are random; Fashion-MNIST's shape 1x28x28, 10 classes.
Debian's python3-torch 1.13 is built without Kineto, so the file is the autograd profiler's form (a bare array of
events in whole µs); a Kineto build writes {"traceEvents": [...]}. `dsgd calibrate --layers F --torch-trace FILE
--layer-models lenet --layer-batches B --layer-threads T` reads either (docs/simulation.md "Kernel profiles").
"""
import argparse

from torch.profiler import ProfilerActivity, profile

from pytorch_lenet_throughput import training_step  # dsgd's zoo "lenet" in PyTorch (same folder)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", required=True, help="trace file to write (JSON)")
    args = parser.parse_args()
    step = training_step(args.batch, args.threads)  # plain SGD

    for _ in range(3):  # untimed warm-up: first-call allocations and kernel selection stay out of the trace
        step()
    # One profiled iteration; shapes and Python stacks are not recorded, which keeps the file small.
    with profile(activities=[ProfilerActivity.CPU], record_shapes=False, with_stack=False) as prof:
        step()
    prof.export_chrome_trace(args.out)


if __name__ == "__main__":
    main()
