"""Would a k-nearest-neighbour family help `cfl auto`?  A replay, before
building one: on the runs tests/bench/auto_splits.sh kept, auto's own final
selection (greedy25 of tests/bench/auto_rules.py: Caruana's, 25 rounds over
the 50 best bags by the proper score out of fold; it reproduces auto's
figure) is made again over auto's bags plus k-nearest-neighbour bags
trained on the same folds, and the choice scored on the split's test part:

    python3 tests/bench/auto_knn.py build/bench/auto_splits/SET ...

The kNN bags are scikit-learn's KNeighborsClassifier/Regressor with its
default k=5, uniform and distance weights (AutoGluon's two KNN
configurations), fitted on each fold's training rows: numeric columns
median-imputed and standardised on those rows, text columns one-hot (a
missing cell: '', '?', NA, NaN, null, N/A, as cfl reads them); each bag's
test prediction is the mean of its five fold models', as a cfl bag's.  Per
set: with kNN - auto on test (mean +- standard error over the splits,
positive: with kNN better, RMSE turned so), wins/ties/losses, kNN's own
default (k=5, uniform, every training row) on test, and the mean rank
among auto and the five defaults (as tests/bench/auto_ranks.py counts it)
of auto and of auto with kNN; then the same with kNN's default as a sixth
default.  Needs numpy and scikit-learn (python3-sklearn)."""
import glob, json, os, sys
import numpy as np
from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import auto_rules as R  # noqa: E402
import auto_splits as S  # noqa: E402

MISSING = {'', '?', 'na', 'nan', 'null', 'n/a'}


def missing(v):
    return v.strip().lower() in MISSING


def number(v):
    try:
        return float(v)
    except ValueError:
        return None


class Encoder:
    """Numeric columns: median-imputed, standardised; text: one-hot (fitted
    on the rows given)."""

    def __init__(self, rows):
        d = len(rows[0]) - 1
        self.cols = []
        for j in range(d):
            cells = [r[j] for r in rows if not missing(r[j])]
            nums = [number(c) for c in cells]
            if all(x is not None for x in nums):
                med = float(np.median(nums)) if nums else 0.0
                full = np.array([number(r[j]) if not missing(r[j]) else med for r in rows])
                sd = full.std()
                self.cols.append(('num', med, full.mean(), sd if sd > 0 else 1.0))
            else:
                self.cols.append(('cat', sorted(set(cells))))

    def __call__(self, rows):
        out = []
        for j, c in enumerate(self.cols):
            if c[0] == 'num':
                _, med, mu, sd = c
                v = np.array([med if missing(r[j]) or number(r[j]) is None else number(r[j])
                              for r in rows])
                out.append(((v - mu) / sd)[:, None])
            else:
                idx = {k: i for i, k in enumerate(c[1])}
                m = np.zeros((len(rows), len(c[1])))
                for i, r in enumerate(rows):
                    if r[j] in idx:
                        m[i, idx[r[j]]] = 1
                out.append(m)
        return np.hstack(out) if out else np.zeros((len(rows), 0))


def folds_of(db_path, n_train):
    """Each training row's fold, from the first bag's fold trials (every
    candidate of a run has the same folds)."""
    import sqlite3
    db = sqlite3.connect(db_path)
    run = db.execute("select id from runs where kind='auto'").fetchone()[0]
    cid = db.execute("select candidate from trials where run=? and fold>=0 and status='done' "
                     "order by id limit 1", (run,)).fetchone()[0]
    fold = np.full(n_train, -1)
    for tid, f in db.execute("select id, fold from trials where candidate=? and fold>=0 "
                             "and repeat=0", (cid,)):
        rows = db.execute("select rows from predictions where trial=? and split='oof'",
                          (tid,)).fetchone()[0]
        fold[np.frombuffer(rows, '<i4')] = f
    return fold


def knn_model(reg, weights, n):
    k = min(5, n)
    return (KNeighborsRegressor if reg else KNeighborsClassifier)(n_neighbors=k, weights=weights)


def predict(reg, model, X, n_cls):
    if reg:
        return model.predict(X)[:, None]
    p = model.predict_proba(X)
    P = np.zeros((len(X), n_cls))
    P[:, model.classes_] = p
    return P


def knn_bags(reg, tr_rows, te_rows, y, fold, n_cls):
    bags = []
    for w in ('uniform', 'distance'):
        O = np.full((len(tr_rows), 1 if reg else n_cls), np.nan)
        T = 0
        ks = sorted(set(fold.tolist()))
        for f in ks:
            fit = np.where(fold != f)[0]
            oof = np.where(fold == f)[0]
            enc = Encoder([tr_rows[i] for i in fit])
            m = knn_model(reg, w, len(fit)).fit(enc([tr_rows[i] for i in fit]), y[fit])
            O[oof] = predict(reg, m, enc([tr_rows[i] for i in oof]), n_cls)
            T = T + predict(reg, m, enc(te_rows), n_cls)
        bags.append(dict(cid=-1, model='knn', seq=-1, score=0, oof=O, test=T / len(ks)))
    return bags


def knn_default(reg, tr_rows, te_rows, y, n_cls):
    enc = Encoder(tr_rows)
    m = knn_model(reg, 'uniform', len(tr_rows)).fit(enc(tr_rows), y)
    return predict(reg, m, enc(te_rows), n_cls)


def splits(sd):
    """Each kept split of set directory sd, in order: a dict of its split
    file (r), auto_rules.load's reg, ytr, yte and bags, the training and
    test parts' rows, the class count (the classes of the training part,
    numbered as auto_rules.load numbers them; 0 for regression), each
    training row's fold, the sign that turns RMSE so that higher is better,
    the defaults' test figures so turned (dv), and auto's own selection
    (greedy25) replayed and scored on test (auto), said on stderr where it
    is not auto's figure."""
    js = sorted(glob.glob(sd + '/split-*.json'), key=lambda x: int(x.split('-')[-1][:-5]))
    for f in js:
        k = f.split('-')[-1][:-5]
        r = json.load(open(f))
        reg, ytr, yte, bags = R.load(sd, k)
        _, tr_body = S.read(sd + '/%s.train.csv' % k)
        _, te_body = S.read(sd + '/%s.test.csv' % k)
        sign = -1 if reg else 1
        a = R.metric(reg, R.greedy25(reg, ytr, bags), yte)
        if abs(sign * r['auto'] - a) > 1e-6:
            print('  %s split %s: the replay gives %.6f, auto %.6f' % (sd, k, a, sign * r['auto']),
                  file=sys.stderr)
        yield dict(k=k, r=r, reg=reg, ytr=ytr, yte=yte, bags=bags,
                   tr_body=tr_body, te_body=te_body,
                   n_cls=0 if reg else int(ytr.max()) + 1,
                   fold=folds_of(sd + '/runs-%s.db' % k, len(tr_body)),
                   sign=sign, dv=[sign * r['dflt'][m] for m in r['dflt']], auto=a)


def main():
    tot = {'auto': [], 'knn': [], 'auto6': [], 'knn6': []}
    for sd in sys.argv[1:]:
        A, K, KD, RK = [], [], [], {'auto': [], 'knn': [], 'auto6': [], 'knn6': []}
        for sp in splits(sd):
            reg, ytr, yte, bags = sp['reg'], sp['ytr'], sp['yte'], sp['bags']
            tr_body, te_body, n_cls, fold = sp['tr_body'], sp['te_body'], sp['n_cls'], sp['fold']
            a, dv = sp['auto'], sp['dv']
            kb = knn_bags(reg, tr_body, te_body, ytr, fold, n_cls)
            kk = R.metric(reg, R.greedy25(reg, ytr, bags + kb), yte)
            kd = R.metric(reg, knn_default(reg, tr_body, te_body, ytr, n_cls), yte)
            RK['auto'].append(S.rank_among(a, dv))
            RK['knn'].append(S.rank_among(kk, dv))
            RK['auto6'].append(S.rank_among(a, dv + [kd]))
            RK['knn6'].append(S.rank_among(kk, dv + [kd]))
            A.append(a)
            K.append(kk)
            KD.append((kd, max(dv)))
        A, K = np.array(A), np.array(K)
        kd = np.array(KD)
        name = os.path.basename(sd.rstrip('/'))
        print('| %s | %d | %.4f | %.4f | %+.4f +- %.4f | %d/%d/%d | %.4f | %d | %.2f | %.2f | %.2f | %.2f |' % (
            name, len(A), abs(A.mean()), abs(K.mean()), *S.paired(K, A), abs(kd[:, 0].mean()),
            int((kd[:, 0] > kd[:, 1] + 1e-6).sum()), np.mean(RK['auto']), np.mean(RK['knn']),
            np.mean(RK['auto6']), np.mean(RK['knn6'])), flush=True)
        for key in tot:
            tot[key].append(np.mean(RK[key]))
    print('\nMean rank over the %d sets: among auto and the five defaults, auto %.3f, with kNN %.3f; '
          'with kNN\'s default a sixth, auto %.3f, with kNN %.3f' % (
              len(tot['auto']), np.mean(tot['auto']), np.mean(tot['knn']), np.mean(tot['auto6']),
              np.mean(tot['knn6'])))


if __name__ == '__main__':
    print('| set | splits | auto | auto with kNN | with kNN - auto | W/T/L | kNN default | splits kNN default best | rank auto | rank with kNN | rank auto (6 defaults) | rank with kNN (6 defaults) |')
    print('|---|---|---|---|---|---|---|---|---|---|---|---|')
    main()
