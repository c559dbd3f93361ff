"""W1 end to end with PyTorch (../shared/WORKLOADS.md): the peer of
`cfl repeat TRAIN --test TEST --models fcnn --num-repeat 3 --num-jobs 2`.

Usage: w1_e2e_torch.py TRAIN.csv TEST.csv   (the split make_data.py wrote)

Features z-scored with the train mean and population std (std 0 -> 1), regression
targets too (mapped back before scoring); net d -> 64 -> ReLU -> 64 -> ReLU -> k;
Adam lr 1e-3, batch 128, 40 epochs reshuffled each epoch, last partial batch
kept, no early stopping; seeds 0, 1, 2 on a fork Pool(2); one thread per
process.  Prints one line per seed and the mean.  The whole process (start-up,
import, load, train, score) is what the benchmark times."""
import csv
import sys
from multiprocessing import get_context

import numpy as np
import torch


def load(path):
    with open(path) as f:
        rows = list(csv.reader(f))
    data = rows[1:]
    x = np.array([[float(v) for v in r[:-1]] for r in data], dtype=np.float32)
    y = [r[-1] for r in data]
    return x, y


def prepare(train, test):
    xtr, ytr = load(train)
    xte, yte = load(test)
    mu, sd = xtr.mean(0), xtr.std(0)
    sd[sd == 0] = 1
    xtr, xte = (xtr - mu) / sd, (xte - mu) / sd
    try:
        vals = sorted(set(float(v) for v in ytr))
        clf = len(vals) <= 20 and all(v == int(v) for v in vals)
    except ValueError:
        clf = True
    if clf:
        classes = sorted(set(ytr))
        idx = {c: i for i, c in enumerate(classes)}
        return xtr, np.array([idx[v] for v in ytr]), xte, np.array([idx[v] for v in yte]), len(classes)
    ytr, yte = np.array(ytr, dtype=np.float64), np.array(yte, dtype=np.float64)
    return xtr, ytr, xte, yte, 0


DATA = None


def run(seed):
    torch.set_num_threads(1)
    torch.manual_seed(seed)
    xtr, ytr, xte, yte, k = DATA
    if k:
        yt = torch.tensor(ytr, dtype=torch.long)
        loss_fn = torch.nn.CrossEntropyLoss()
        out = k
    else:
        ym, ys = ytr.mean(), ytr.std() or 1.0
        yt = torch.tensor((ytr - ym) / ys, dtype=torch.float32).unsqueeze(1)
        loss_fn = torch.nn.MSELoss()
        out = 1
    net = torch.nn.Sequential(
        torch.nn.Linear(xtr.shape[1], 64), torch.nn.ReLU(),
        torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, out))
    opt = torch.optim.Adam(net.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8)
    xt = torch.from_numpy(xtr)
    g = torch.Generator().manual_seed(seed)
    n = len(xt)
    for _ in range(40):
        perm = torch.randperm(n, generator=g)
        for i in range(0, n, 128):
            b = perm[i:i + 128]
            opt.zero_grad()
            loss_fn(net(xt[b]), yt[b]).backward()
            opt.step()
    with torch.no_grad():
        p = net(torch.from_numpy(xte))
    if k:
        return float((p.argmax(1).numpy() == yte).mean())
    pred = p.squeeze(1).numpy() * ys + ym
    return float(np.sqrt(((pred - yte) ** 2).mean()))


def main():
    global DATA
    DATA = prepare(sys.argv[1], sys.argv[2])
    with get_context('fork').Pool(2) as pool:
        scores = pool.map(run, [0, 1, 2])
    for s, v in enumerate(scores):
        print('seed %d: %.6f' % (s, v))
    print('mean %.6f std %.6f' % (np.mean(scores), np.std(scores)))


if __name__ == '__main__':
    main()
