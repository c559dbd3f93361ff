"""Peers of tests/bench/bench_quality.sh at the W1 settings (../shared/WORKLOADS.md):
the W1 net in PyTorch (d -> 64 -> ReLU -> 64 -> ReLU -> k, Adam lr 1e-3,
batch 128, 40 epochs, reshuffled each epoch, last partial batch kept,
regression targets z-scored and mapped back; torch.manual_seed(s)) and
scikit-learn's MLP with the same settings (random_state s), for seeds
0..SEEDS-1, one thread, on BENCH_DIR/NAME.train.csv and NAME.test.csv.
Prints one line per seed: 'PEER NAME seed S M1 V M2 V' (acc auc, or rmse r2).

usage: quality_peers.py BENCH_DIR NAME SEEDS"""
import sys
import warnings

import numpy as np
import torch

from w1_common import load, score

BENCH_DIR, NAME, SEEDS = sys.argv[1], sys.argv[2], int(sys.argv[3])
EPOCHS = 40
torch.set_num_threads(1)
xtr, ytr, xte, yte, k = load(BENCH_DIR, NAME)
names = ('rmse', 'r2') if k == 0 else ('acc', 'auc')
ym, ys = (ytr.mean(), ytr.std() or 1.0) if k == 0 else (0.0, 1.0)


def torch_run(seed):
    torch.manual_seed(seed)
    if k == 0:
        t = torch.tensor((ytr - ym) / ys, dtype=torch.float32).unsqueeze(1)
        loss_fn = torch.nn.MSELoss()
    else:
        t = torch.tensor(ytr, dtype=torch.long)
        loss_fn = torch.nn.CrossEntropyLoss()
    x = torch.tensor(xtr)
    net = torch.nn.Sequential(torch.nn.Linear(x.shape[1], 64), torch.nn.ReLU(),
                              torch.nn.Linear(64, 64), torch.nn.ReLU(),
                              torch.nn.Linear(64, k or 1))
    opt = torch.optim.Adam(net.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8)
    n = x.shape[0]
    for _ in range(EPOCHS):
        perm = torch.randperm(n)
        for b in range(0, n, 128):
            i = perm[b:b + 128]
            opt.zero_grad()
            loss_fn(net(x[i]), t[i]).backward()
            opt.step()
    with torch.no_grad():
        z = net(torch.tensor(xte))
        return (z[:, 0].numpy() * ys + ym) if k == 0 else torch.softmax(z, 1).numpy()


def sklearn_run(seed):
    from sklearn.neural_network import MLPClassifier, MLPRegressor
    warnings.simplefilter('ignore')
    kw = dict(hidden_layer_sizes=(64, 64), activation='relu', solver='adam',
              learning_rate_init=1e-3, batch_size=128, max_iter=EPOCHS, alpha=0.0,
              tol=0.0, n_iter_no_change=EPOCHS + 1, early_stopping=False,
              shuffle=True, random_state=seed)
    if k == 0:
        return MLPRegressor(**kw).fit(xtr, (ytr - ym) / ys).predict(xte) * ys + ym
    return MLPClassifier(**kw).fit(xtr, ytr).predict_proba(xte)


for peer, fn in (('torch', torch_run), ('sklearn', sklearn_run)):
    for s in range(SEEDS):
        a, b = score(yte, fn(s), k)
        print('%s %s seed %d %s %.6f %s %.6f' % (peer, NAME, s, names[0], a, names[1], b), flush=True)
