"""W7 peers for tests/bench/bench_w7.sh: scikit-learn's defaults on the
peers' split (DIR/NAME.train.csv, DIR/NAME.test.csv): MLPClassifier /
MLPRegressor and LogisticRegression / Ridge after StandardScaler,
DecisionTree, RandomForest and HistGradientBoosting on raw features, with
random_state FIRST..REPEATS-1 (FIRST: 0 unless given).  Prints one line per
model and seed: "name seed value", the test accuracy (classification) or
RMSE (regression).  tests/bench/lib.sh's sk_defaults keeps these lines for
a bench run, so that bench_auto.sh and bench_w7.sh share the seeds.

usage: w7_peers.py clf|reg TRAIN TEST REPEATS [FIRST]"""
import csv, sys, warnings

import numpy as np

warnings.filterwarnings('ignore')
task, train, test, reps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
first = int(sys.argv[5]) if len(sys.argv) > 5 else 0
clf = task == 'clf'


def load(path):
    with open(path) as f:
        rows = list(csv.reader(f))[1:]
    return np.array([[float(v) for v in r[:-1]] for r in rows]), [r[-1] for r in rows]


Xtr, ytr = load(train)
Xte, yte = load(test)
if clf:
    idx = {c: i for i, c in enumerate(sorted(set(ytr) | set(yte)))}
    ytr = np.array([idx[c] for c in ytr])
    yte = np.array([idx[c] for c in yte])
else:
    ytr, yte = np.array(ytr, dtype=float), np.array(yte, dtype=float)

from sklearn.ensemble import (HistGradientBoostingClassifier, HistGradientBoostingRegressor,
                              RandomForestClassifier, RandomForestRegressor)
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.neural_network import MLPClassifier, MLPRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

models = [
    ('fcnn', lambda r: make_pipeline(StandardScaler(), (MLPClassifier if clf else MLPRegressor)(random_state=r))),
    ('linear', lambda r: make_pipeline(StandardScaler(), LogisticRegression(random_state=r) if clf else Ridge())),
    ('tree', lambda r: (DecisionTreeClassifier if clf else DecisionTreeRegressor)(random_state=r)),
    ('forest', lambda r: (RandomForestClassifier if clf else RandomForestRegressor)(random_state=r)),
    ('gbdt', lambda r: (HistGradientBoostingClassifier if clf else HistGradientBoostingRegressor)(random_state=r)),
]
for name, make in models:
    for r in range(first, reps):
        p = make(r).fit(Xtr, ytr).predict(Xte)
        v = float(np.mean(p == yte)) if clf else float(np.sqrt(np.mean((p - yte) ** 2)))
        print('%s %d %.10f' % (name, r, v), flush=True)
