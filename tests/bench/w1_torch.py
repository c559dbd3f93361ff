"""W1 with PyTorch: d -> 64 -> ReLU -> 64 -> ReLU -> k, Adam lr 1e-3, batch 128,
40 epochs, reshuffled each epoch, last partial batch kept, regression targets
z-scored and mapped back; seeds 0, 1, 2 on a fork Pool(2), one thread each.
Usage: w1_torch.py BENCH_DIR NAME [EPOCHS].  Prints one line per seed:
'torch NAME seed S m1 V m2 V train_s T', then 'torch NAME wall_s T'."""
import multiprocessing as mp
import os
import sys
import time

T0 = time.perf_counter()
import numpy as np
import torch

from w1_common import load, score

BENCH_DIR, NAME = sys.argv[1], sys.argv[2]
EPOCHS = int(sys.argv[3]) if len(sys.argv) > 3 else 40


def run(seed):
    torch.set_num_threads(1)
    torch.manual_seed(seed)
    xtr, ytr, xte, yte, k = load(BENCH_DIR, NAME)
    if k == 0:
        ym, ys = ytr.mean(), ytr.std() or 1.0
        t = torch.tensor((ytr - ym) / ys, dtype=torch.float32).unsqueeze(1)
        loss_fn = torch.nn.MSELoss()
    else:
        t = torch.tensor(ytr, dtype=torch.long)
        loss_fn = torch.nn.CrossEntropyLoss()
    x = torch.tensor(xtr)
    d = x.shape[1]
    net = torch.nn.Sequential(torch.nn.Linear(d, 64), torch.nn.ReLU(),
                              torch.nn.Linear(64, 64), torch.nn.ReLU(),
                              torch.nn.Linear(64, k or 1))
    opt = torch.optim.Adam(net.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8)
    t0 = time.perf_counter()
    n = x.shape[0]
    for _ in range(EPOCHS):
        perm = torch.randperm(n)
        for b in range(0, n, 128):
            i = perm[b:b + 128]
            opt.zero_grad()
            loss = loss_fn(net(x[i]), t[i])
            loss.backward()
            opt.step()
    train_s = time.perf_counter() - t0
    with torch.no_grad():
        z = net(torch.tensor(xte))
        out = (z[:, 0].numpy() * ys + ym) if k == 0 else torch.softmax(z, 1).numpy()
    return seed, score(yte, out, k), train_s, k


if __name__ == '__main__':
    with mp.get_context('fork').Pool(2) as pool:
        res = pool.map(run, [0, 1, 2])
    for seed, (a, b), train_s, k in res:
        names = ('rmse', 'r2') if k == 0 else ('acc', 'auc')
        print('torch %s seed %d %s %.6f %s %.6f train_s %.4f' % (NAME, seed, names[0], a, names[1], b, train_s))
    print('torch %s wall_s %.3f' % (NAME, time.perf_counter() - T0))
