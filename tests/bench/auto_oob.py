"""Would forests fitted on every training row, judged out of bag, help
`cfl auto`?  A replay, before building it.  AutoGluon does not bag its
random forests with k folds: it fits each once on all the rows and gives
greedy selection the forest's out-of-bag predictions as its out-of-fold
ones, so the forest it keeps has seen every row (a k-fold bag's fold
models see four fifths of them) and costs one fit, not five.

    python3 tests/bench/auto_oob.py build/bench/auto_splits/SET ...

On the runs tests/bench/auto_splits.sh kept, auto's own final selection
(greedy25 of tests/bench/auto_rules.py, which reproduces auto's figure) is
made again with auto's forest bags taken out and, in their place, random
forests of scikit-learn (the configurations of auto's forest defaults and
portfolio: 100 trees; min_samples_leaf=3; max_features=log2; 300 trees
with min_samples_leaf=2):
  - kfold: each bagged on auto's own five folds, its test prediction the
    mean of the five fold models' (the control: what auto does now, with
    scikit-learn's forest);
  - oob: each fitted once on every training row, its out-of-fold rows its
    out-of-bag predictions, its test prediction the one forest's.
Per set: oob - kfold and oob - auto on test (mean +- standard error over
the splits, positive: oob better, RMSE turned so), wins/ties/losses, and
the mean rank among auto and the five defaults (as
tests/bench/auto_ranks.py counts it) of auto, kfold and oob.  Columns are
encoded as tests/bench/auto_knn.py encodes them (text one-hot, missing
numbers median-imputed).  Needs numpy and scikit-learn (python3-sklearn)."""
import os, sys
import numpy as np
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import auto_knn as K  # noqa: E402
import auto_rules as R  # noqa: E402
import auto_splits as S  # noqa: E402

CONFIGS = [dict(), dict(min_samples_leaf=3), dict(max_features='log2'),
           dict(n_estimators=300, min_samples_leaf=2)]


def forest(reg, cfg, seed, oob=False):
    kw = dict(n_estimators=100, max_features=1.0 if reg else 'sqrt', random_state=seed,
              oob_score=oob, n_jobs=1)
    kw.update(cfg)
    return (RandomForestRegressor if reg else RandomForestClassifier)(**kw)


def oob_rows(reg, m, n_cls, y):
    """The forest's out-of-bag predictions, one per training row (a row in
    no tree's out-of-bag sample, rare with 100 trees, gets the mean or the
    class shares)."""
    if reg:
        O = np.array(m.oob_prediction_, float)[:, None]
        bad = ~np.isfinite(O[:, 0])
        O[bad, 0] = y.mean()
        return O
    p = np.array(m.oob_decision_function_, float)
    O = np.zeros((len(p), n_cls))
    O[:, m.classes_] = p
    bad = ~np.isfinite(O).all(1) | (O.sum(1) <= 0)
    if bad.any():
        O[bad] = np.bincount(y, minlength=n_cls) / len(y)
    return O


def forest_bags(reg, X, XT, y, fold, n_cls, seed):
    kf, ob = [], []
    ks = sorted(set(fold.tolist()))
    for i, cfg in enumerate(CONFIGS):
        O = np.full((len(X), 1 if reg else n_cls), np.nan)
        T = 0
        for f in ks:
            fit, oof = np.where(fold != f)[0], np.where(fold == f)[0]
            m = forest(reg, cfg, seed + i).fit(X[fit], y[fit])
            O[oof] = K.predict(reg, m, X[oof], n_cls)
            T = T + K.predict(reg, m, XT, n_cls)
        kf.append(dict(cid=-1, model='forest', seq=-1, score=0, oof=O, test=T / len(ks)))
        m = forest(reg, cfg, seed + i, oob=True).fit(X, y)
        ob.append(dict(cid=-1, model='forest', seq=-1, score=0, oof=oob_rows(reg, m, n_cls, y),
                       test=K.predict(reg, m, XT, n_cls)))
    return kf, ob


def main():
    tot = {'auto': [], 'kfold': [], 'oob': []}
    for sd in sys.argv[1:]:
        V = {'auto': [], 'kfold': [], 'oob': []}
        RK = {'auto': [], 'kfold': [], 'oob': []}
        n = 0
        for sp in K.splits(sd):
            reg, ytr, yte, bags, dv = sp['reg'], sp['ytr'], sp['yte'], sp['bags'], sp['dv']
            enc = K.Encoder(sp['tr_body'])
            X, XT = enc(sp['tr_body']), enc(sp['te_body'])
            kf, ob = forest_bags(reg, X, XT, ytr, sp['fold'], sp['n_cls'], int(sp['k']))
            n += 1
            rest = [b for b in bags if b['model'] != 'forest']
            for key, bs in (('kfold', rest + kf), ('oob', rest + ob)):
                V[key].append(R.metric(reg, R.greedy25(reg, ytr, bs), yte))
            V['auto'].append(sp['auto'])
            for key in V:
                RK[key].append(S.rank_among(V[key][-1], dv))
        name = os.path.basename(sd.rstrip('/'))
        ok = S.paired(V['oob'], V['kfold'])
        oa = S.paired(V['oob'], V['auto'])
        print('| %s | %d | %.4f | %.4f | %.4f | %+.4f +- %.4f | %d/%d/%d | %+.4f +- %.4f | %d/%d/%d '
              '| %.2f | %.2f | %.2f |' % (
                  name, n, abs(np.mean(V['auto'])), abs(np.mean(V['kfold'])),
                  abs(np.mean(V['oob'])), *ok, *oa, np.mean(RK['auto']), np.mean(RK['kfold']),
                  np.mean(RK['oob'])), flush=True)
        for key in tot:
            tot[key].append(np.mean(RK[key]))
    print('\nMean rank over the %d sets among auto and the five defaults: auto %.3f, kfold %.3f, '
          'oob %.3f' % (len(tot['auto']), np.mean(tot['auto']), np.mean(tot['kfold']),
                        np.mean(tot['oob'])))


if __name__ == '__main__':
    print('| set | splits | auto | kfold | oob | oob - kfold | W/T/L | oob - auto | W/T/L '
          '| rank auto | rank kfold | rank oob |')
    print('|---|---|---|---|---|---|---|---|---|---|---|---|')
    main()
