#!/usr/bin/python3
"""W2 peer: Optuna TPE over optimizer x lr of the W1 net (d -> 64 -> ReLU ->
64 -> ReLU -> k, batch 128, 20 epochs), a candidate's value being its mean
accuracy over seeds 0 and 1 on a validation part (10% of train, as cfl
scores), 2 processes sharing a SQLite storage (TPE seeds 0 and 1).
Prints 'optuna DATASET N best_value V test_acc A wall_s W params P'; the
test accuracy of the best params (seeds 0, 1) is measured after the wall
time.

    w2_optuna.py CSV N_TRIALS WORK_DIR
"""
import csv
import multiprocessing as mp
import os
import sys
import time

T0 = time.perf_counter()
import numpy as np
import optuna
import torch
from sklearn.model_selection import train_test_split

optuna.logging.set_verbosity(optuna.logging.WARNING)
CSV, N, WORK = sys.argv[1], int(sys.argv[2]), sys.argv[3]


def load():
    with open(CSV) as f:
        rows = list(csv.reader(f))[1:]
    x = np.array([[float(v) for v in r[:-1]] for r in rows])
    _, y = np.unique([r[-1] for r in rows], return_inverse=True)  # labels may be text
    xtr, xte, ytr, yte = train_test_split(x, y, test_size=0.2, random_state=0, stratify=y)
    xfit, xva, yfit, yva = train_test_split(xtr, ytr, test_size=0.1, random_state=0, stratify=ytr)
    m, s = xfit.mean(0), xfit.std(0)
    s[s == 0] = 1
    f = lambda a: ((a - m) / s).astype(np.float32)
    return f(xfit), yfit, f(xva), yva, f(xte), yte, int(y.max()) + 1


def acc(data, optimizer, lr, seed, test=False):
    xfit, yfit, xva, yva, xte, yte, k = data
    torch.manual_seed(seed)
    x, t = torch.tensor(xfit), torch.tensor(yfit, dtype=torch.long)
    net = torch.nn.Sequential(torch.nn.Linear(x.shape[1], 64), torch.nn.ReLU(),
                              torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, k))
    opt = {"sgd": lambda p: torch.optim.SGD(p, lr=lr),
           "rmsprop": lambda p: torch.optim.RMSprop(p, lr=lr, alpha=0.99),
           "adam": lambda p: torch.optim.Adam(p, lr=lr)}[optimizer](net.parameters())
    loss_fn = torch.nn.CrossEntropyLoss()
    for _ in range(20):
        perm = torch.randperm(x.shape[0])
        for b in range(0, x.shape[0], 128):
            i = perm[b:b + 128]
            opt.zero_grad()
            loss_fn(net(x[i]), t[i]).backward()
            opt.step()
    xe, ye = (xte, yte) if test else (xva, yva)
    with torch.no_grad():
        return float((net(torch.tensor(xe)).argmax(1).numpy() == ye).mean())


def worker(proc, data, storage, n):
    torch.set_num_threads(1)
    study = optuna.load_study(study_name="w2", storage=storage,
                              sampler=optuna.samplers.TPESampler(seed=proc))

    def objective(trial):
        o = trial.suggest_categorical("optimizer", ["sgd", "rmsprop", "adam"])
        lr = trial.suggest_float("lr", 1e-5, 0.1, log=True)
        return np.mean([acc(data, o, lr, s) for s in (0, 1)])
    study.optimize(objective, n_trials=n)


if __name__ == "__main__":
    torch.set_num_threads(1)
    data = load()
    db = os.path.join(WORK, "w2_optuna_%d.db" % os.getpid())
    if os.path.exists(db):
        os.remove(db)
    storage = "sqlite:///" + db
    optuna.create_study(study_name="w2", storage=storage, direction="maximize")
    ps = [mp.get_context("fork").Process(target=worker, args=(p, data, storage, n))
          for p, n in ((0, (N + 1) // 2), (1, N // 2))]
    for p in ps:
        p.start()
    for p in ps:
        p.join()
    study = optuna.load_study(study_name="w2", storage=storage)
    wall = time.perf_counter() - T0
    bp = study.best_params
    test = np.mean([acc(data, bp["optimizer"], bp["lr"], s, test=True) for s in (0, 1)])
    print("optuna %s %d best_value %.6f test_acc %.6f wall_s %.3f params optimizer=%s,lr=%.6g"
          % (os.path.basename(CSV), N, study.best_value, test, wall, bp["optimizer"], bp["lr"]))
    os.remove(db)
