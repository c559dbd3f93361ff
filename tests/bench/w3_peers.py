"""W3 peers for tests/bench/bench_w3.sh: scikit-learn DecisionTree and
RandomForest (100 trees, 2 jobs) and XGBoost hist (100 rounds, depth 6,
2 jobs) fitted on DIR/NAME.train.csv and scored on DIR/NAME.test.csv.
Prints one line per repeat r (random_state r): "fit_seconds m1 m2" with
acc and AUC (one-vs-rest macro) or RMSE and R2.  Only fit() is timed.
With REPEATS "serve" it imports and loads once, prints "ready", then fits
once per line read from stdin until stdin ends, "SEED" or "MODEL SEED"
(MODEL one of those named, comma-separated, on the command line), so that
bench_w3.sh can interleave its runs with cfl's without paying the start-up
each time.

usage: w3_peers.py tree|forest|gbdt[,...] clf|reg TRAIN TEST REPEATS|serve THREADS [SEED0]"""
import csv, sys, time

import numpy as np
import pandas as pd


def load(path, clf):
    # pandas parses the 100k sets in a fifth of the csv module's time;
    # round_trip parses each number as float() does, the label is text
    with open(path) as f:
        label = next(csv.reader(f))[-1]
    d = pd.read_csv(path, float_precision='round_trip', dtype={label: str}, keep_default_na=False)
    X = d.iloc[:, :-1].to_numpy(dtype=np.float32)
    y = list(d.iloc[:, -1])
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

models = model.split(',')
if not set(models) <= {'tree', 'forest', 'gbdt'} or (len(models) > 1 and not serve):
    sys.exit('w3_peers.py: unknown model list %r (several only with serve)' % model)
from sklearn.metrics import accuracy_score, mean_squared_error, r2_score, roc_auc_score
if 'tree' in models:
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor
if 'forest' in models:
    from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
if 'gbdt' in models:
    import xgboost as xgb


def seeds():
    if not serve:
        for r in range(seed0, seed0 + reps):
            yield model, r
        return
    print('ready', flush=True)
    for line in sys.stdin:
        f = line.split()
        if len(f) == 1:
            f = [models[0]] + f
        if len(f) != 2 or f[0] not in models:
            sys.exit('w3_peers.py: bad request %r (MODEL SEED, a model of %s)' % (line, model))
        yield f[0], int(f[1])


for model, r in seeds():
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
