"""W3 peers for tests/bench/bench_w3.sh: scikit-learn DecisionTree and
RandomForest (100 trees, 2 jobs) and XGBoost hist (100 rounds, depth 6,
2 jobs) fitted on DIR/NAME.train.csv and scored on DIR/NAME.test.csv.
Prints one line per repeat r (random_state r): "fit_seconds m1 m2" with
acc and AUC (one-vs-rest macro) or RMSE and R2.  Only fit() is timed.
With REPEATS "serve" it imports and loads once, prints "ready", then fits
once per seed read from stdin (one a line) until stdin ends, so that
bench_w3.sh can interleave its runs with cfl's without paying the start-up
each time.

usage: w3_peers.py tree|forest|gbdt clf|reg TRAIN TEST REPEATS|serve THREADS [SEED0]"""
import csv, sys, time

import numpy as np


def load(path, clf):
    with open(path) as f:
        rows = list(csv.reader(f))[1:]
    X = np.array([[float(v) for v in r[:-1]] for r in rows], dtype=np.float32)
    y = [r[-1] for r in rows]
    return X, y


model, task, train, test, reps, threads = sys.argv[1:7]
clf = task == 'clf'
serve = reps == 'serve'
reps, threads = (0 if serve else int(reps)), int(threads)
seed0 = int(sys.argv[7]) if len(sys.argv) > 7 else 0
Xtr, ytr = load(train, clf)
Xte, yte = load(test, clf)
if clf:
    classes = sorted(set(ytr))
    idx = {c: i for i, c in enumerate(classes)}
    ytr = np.array([idx[c] for c in ytr])
    yte = np.array([idx[c] for c in yte])
else:
    ytr = np.array(ytr, dtype=float)
    yte = np.array(yte, dtype=float)

from sklearn.metrics import accuracy_score, mean_squared_error, r2_score, roc_auc_score
if model == 'tree':
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor
elif model == 'forest':
    from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
else:
    import xgboost as xgb


def seeds():
    if not serve:
        yield from range(seed0, seed0 + reps)
        return
    print('ready', flush=True)
    for line in sys.stdin:
        yield int(line)


for r in seeds():
    if model == 'tree':
        m = (DecisionTreeClassifier if clf else DecisionTreeRegressor)(random_state=r)
    elif model == 'forest':
        m = (RandomForestClassifier if clf else RandomForestRegressor)(
            n_estimators=100, n_jobs=threads, random_state=r)
    else:
        m = (xgb.XGBClassifier if clf else xgb.XGBRegressor)(
            tree_method='hist', n_estimators=100, max_depth=6, learning_rate=0.3,
            n_jobs=threads, random_state=r)
    t = time.perf_counter()
    m.fit(Xtr, ytr)
    dt = time.perf_counter() - t
    if clf:
        p = m.predict_proba(Xte)
        acc = accuracy_score(yte, p.argmax(1))
        auc = roc_auc_score(yte, p[:, 1]) if p.shape[1] == 2 else \
            roc_auc_score(yte, p, multi_class='ovr', average='macro')
        print('%.6f %.6f %.6f' % (dt, acc, auc), flush=True)
    else:
        p = m.predict(Xte)
        print('%.6f %.6f %.6f' % (dt, mean_squared_error(yte, p) ** 0.5, r2_score(yte, p)), flush=True)
