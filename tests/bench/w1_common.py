"""Shared by the W1 peers (w1_torch.py, w1_sklearn.py): loads DIR/NAME.train.csv
and DIR/NAME.test.csv (the split make_data.py wrote), z-scores the features with
the train mean and population std (std 0 -> 1), and scores predictions as
WORKLOADS.md asks: accuracy and ROC AUC (one-vs-rest macro), or RMSE and R2."""
import csv

import numpy as np
from sklearn.metrics import accuracy_score, mean_squared_error, r2_score, roc_auc_score

REGRESSION = {'diabetes', 'synth_reg_100k'}


def _class_key(c):
    try:
        return (0, float(c), c)
    except ValueError:
        return (1, 0.0, c)


def load(bench_dir, name):
    def read(path):
        with open(path) as f:
            rows = list(csv.reader(f))
        return np.array(rows[1:])
    tr = read('%s/%s.train.csv' % (bench_dir, name))
    te = read('%s/%s.test.csv' % (bench_dir, name))
    xtr, xte = tr[:, :-1].astype(np.float64), te[:, :-1].astype(np.float64)
    mu, sd = xtr.mean(0), xtr.std(0)
    sd[sd == 0] = 1
    xtr, xte = ((xtr - mu) / sd).astype(np.float32), ((xte - mu) / sd).astype(np.float32)
    if name in REGRESSION:
        return xtr, tr[:, -1].astype(np.float64), xte, te[:, -1].astype(np.float64), 0
    classes = sorted(set(tr[:, -1]) | set(te[:, -1]), key=_class_key)
    idx = {c: i for i, c in enumerate(classes)}
    ytr = np.array([idx[c] for c in tr[:, -1]])
    yte = np.array([idx[c] for c in te[:, -1]])
    return xtr, ytr, xte, yte, len(classes)


def score(y, out, k):
    """(acc, auc) from class probabilities, or (rmse, r2) from values."""
    if k == 0:
        return float(np.sqrt(mean_squared_error(y, out))), float(r2_score(y, out))
    acc = accuracy_score(y, out.argmax(1))
    auc = roc_auc_score(y, out[:, 1]) if k == 2 else roc_auc_score(y, out, multi_class='ovr')
    return float(acc), float(auc)
