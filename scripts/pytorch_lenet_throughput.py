#!/usr/bin/python3
"""The peer for dsgd's LeNet training throughput (issue 4): the same network, batch and thread count in
PyTorch's CPU build (Debian's python3-torch), timed the same way as `dsgd train` times a step (forward,
loss, backward, momentum-SGD update; batch copies excluded). Prints images/s, median of repeated blocks.

usage: /usr/bin/python3 scripts/pytorch_lenet_throughput.py [--threads 2] [--batch 64] [--steps 200] [--blocks 5]
Data are random (throughput does not depend on values); Fashion-MNIST's shape 1x28x28, 10 classes.
"""
import argparse
import statistics
import time

import torch
import torch.nn as nn


def lenet():
    # Caffe's examples/mnist/lenet.prototxt, as dsgd's zoo "lenet": conv20 5x5, max 2/2, conv50 5x5, max 2/2,
    # ip500, relu, ip10 (431,080 parameters).
    return nn.Sequential(
        nn.Conv2d(1, 20, 5), nn.MaxPool2d(2, 2, ceil_mode=True),
        nn.Conv2d(20, 50, 5), nn.MaxPool2d(2, 2, ceil_mode=True),
        nn.Flatten(), nn.Linear(800, 500), nn.ReLU(), nn.Linear(500, 10))


def training_step(batch, threads, momentum=0.0, weight_decay=0.0):
    """One SGD step of lenet (forward, cross-entropy loss, backward, update) on one fixed random batch, seeded,
    on `threads` threads: what both this script and torch_trace.py run."""
    torch.manual_seed(1)
    torch.set_num_threads(threads)
    model = lenet()
    assert sum(p.numel() for p in model.parameters()) == 431080
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=momentum, weight_decay=weight_decay)
    loss_fn = nn.CrossEntropyLoss()
    images = torch.randn(batch, 1, 28, 28)
    labels = torch.randint(0, 10, (batch,))

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(images), labels)
        loss.backward()
        optimizer.step()

    return step


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--blocks", type=int, default=5)
    args = parser.parse_args()
    step = training_step(args.batch, args.threads, momentum=0.9, weight_decay=5e-4)
    for _ in range(20):  # warm-up
        step()
    rates = []
    for _ in range(args.blocks):
        start = time.perf_counter()
        for _ in range(args.steps):
            step()
        rates.append(args.steps * args.batch / (time.perf_counter() - start))
    print(f"pytorch {torch.__version__} lenet batch {args.batch} threads {args.threads}: "
          f"median {statistics.median(rates):.0f} images/s over {args.blocks} blocks of {args.steps} steps "
          f"(min {min(rates):.0f}, max {max(rates):.0f})")


if __name__ == "__main__":
    main()
