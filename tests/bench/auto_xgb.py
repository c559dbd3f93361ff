"""cfl auto against XGBoost tuned by Optuna for the same wall time, over
many splits (the driver of tests/bench/auto_xgb.sh; needs Debian's
python3-numpy, python3-pandas, python3-xgboost and python3-optuna).

    python3 auto_xgb.py OUT --cfl CFL --sets A,B --held-out C,D [--real E,F]
        [--splits 10] [--first 0] [--seconds 10 | --trials N] [--xgb-seconds X]

The splits are auto_splits.py's (random_state K: 80/20, stratified for
classification), so the two benches see the same rows.  For each split:
  - `cfl auto TRAIN --test TEST --time-limit S --num-jobs 2` (or, with
    --trials, `--max-trials N`: a count budget, the same candidates
    whatever the load): its leaderboard's first entry's test figure, and
    the CPU time it took (user and system, of every process of the run);
  - XGBoost (the `hist` tree method, one thread) tuned by Optuna's TPE
    sampler for that same CPU time (its process's, refit included: on a
    loaded machine a wall-clock budget would measure the load; with
    --xgb-seconds X, X CPU seconds instead, whatever auto took), each
    candidate scored by 5-fold
    cross-validation on TRAIN (log loss for classification, RMSE for
    regression, as auto's search), then the best candidate refitted on all
    of TRAIN and scored on TEST.  String columns are one-hot encoded (the
    categories of TRAIN; others all zero), missing cells left to XGBoost.
Both sides run on the same machine, one after the other, with the same
CPU seconds.  Per set: the paired difference
auto - xgboost over the splits (mean +- standard error; RMSE turned so
that positive is auto better) and auto's wins/ties/losses.  Each split's
figures are kept in OUT/SET/xgb-K.json with the cfl binary's SHA-256 and
the seconds, so a stopped run goes on where it was."""
import argparse, hashlib, json, os, resource, sys, time

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import auto_splits as S  # noqa: E402  the splits and the CSV helpers
TIE = 1e-6  # auto's figure is read from a leaderboard printed to six decimals


def xgb_tuned(tr, te, clf, seconds, seed):
    import optuna
    import xgboost as xgb
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    dtr = pd.read_csv(tr, keep_default_na=True)
    dte = pd.read_csv(te, keep_default_na=True)
    ycol = dtr.columns[-1]
    xtr, xte = dtr.drop(columns=[ycol]), dte.drop(columns=[ycol])
    obj = [c for c in xtr.columns if xtr[c].dtype == object]
    xtr = pd.get_dummies(xtr, columns=obj, dtype=float)
    xte = pd.get_dummies(xte, columns=obj, dtype=float).reindex(columns=xtr.columns, fill_value=0.0)
    xtr, xte = xtr.to_numpy(dtype=float), xte.to_numpy(dtype=float)
    if clf:
        labels = sorted(set(dtr[ycol].astype(str)))
        index = {v: i for i, v in enumerate(labels)}
        ytr = np.array([index[v] for v in dtr[ycol].astype(str)])
        yte = np.array([index.get(v, -1) for v in dte[ycol].astype(str)])
    else:
        ytr, yte = dtr[ycol].to_numpy(dtype=float), dte[ycol].to_numpy(dtype=float)
    k = len(set(ytr)) if clf else 0
    rng = np.random.default_rng(seed)
    folds = np.array_split(rng.permutation(len(ytr)), 5)

    def model(p):
        common = dict(tree_method='hist', n_jobs=1, random_state=seed, **p)
        if not clf:
            return xgb.XGBRegressor(**common)
        if k > 2:
            return xgb.XGBClassifier(objective='multi:softprob', **common)
        return xgb.XGBClassifier(objective='binary:logistic', **common)

    def proba(m, x):
        p = m.predict_proba(x)
        return p if p.ndim == 2 else np.stack([1 - p, p], axis=1)

    def objective(trial):
        p = dict(
            n_estimators=trial.suggest_int('n_estimators', 50, 1000, log=True),
            max_depth=trial.suggest_int('max_depth', 2, 10),
            learning_rate=trial.suggest_float('learning_rate', 0.01, 0.3, log=True),
            subsample=trial.suggest_float('subsample', 0.5, 1.0),
            colsample_bytree=trial.suggest_float('colsample_bytree', 0.5, 1.0),
            min_child_weight=trial.suggest_float('min_child_weight', 0.5, 10, log=True),
            reg_lambda=trial.suggest_float('reg_lambda', 1e-3, 10, log=True))
        loss = 0.0
        for f in folds:
            fit = np.setdiff1d(np.arange(len(ytr)), f)
            if clf and len(set(ytr[fit])) < k:
                continue
            m = model(p).fit(xtr[fit], ytr[fit])
            if clf:
                pr = np.clip(proba(m, xtr[f]), 1e-15, 1)
                loss -= np.log(pr[np.arange(len(f)), ytr[f]]).sum()
            else:
                loss += ((m.predict(xtr[f]) - ytr[f]) ** 2).sum()
        return loss / len(ytr)

    study = optuna.create_study(direction='minimize', sampler=optuna.samplers.TPESampler(seed=seed))
    t0 = time.process_time()
    # the budget counts the refit too (about a fifth of a trial's five
    # fits): stop when the CPU time left is less than the longest trial's
    longest = 0.0
    while True:
        left = seconds - (time.process_time() - t0)
        if study.trials and left < longest * 1.2:
            break
        s = time.process_time()
        study.optimize(objective, n_trials=1)
        longest = max(longest, time.process_time() - s)
    m = model(study.best_params).fit(xtr, ytr)
    if clf:
        got = float(np.mean(np.argmax(proba(m, xte), axis=1) == yte))
    else:
        got = float(np.sqrt(np.mean((m.predict(xte) - yte) ** 2)))
    return got, len(study.trials), time.process_time() - t0


def auto_timed(cfl, tr, te, metric, budget, db, name, log):
    t0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = S.run([cfl, 'auto', tr, '--test', te, budget[0], budget[1], '--metric', metric,
                 '--num-jobs', '2', '--db', db, '--name', name, '-q'], log)
    t1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = t1.ru_utime + t1.ru_stime - t0.ru_utime - t0.ru_stime
    return S.first_entry(out, log) + (cpu,)


def one_set(a, name, binsha, budget):
    path = name if '/' in name else os.path.join(S.ROOT, 'datasets', name + '.csv')
    header, body = S.read(path)
    clf = not S.is_regression(body)
    metric = 'acc' if clf else 'rmse'
    out = os.path.join(a.out, os.path.basename(path)[:-4])
    os.makedirs(out, exist_ok=True)
    res = []
    for rs in range(a.first, a.first + a.splits):
        keep = os.path.join(out, 'xgb-%d.json' % rs)
        key = '%s %s %s' % (binsha, budget[0], budget[1])
        if a.xgb_seconds:
            key += ' xgb %g' % a.xgb_seconds
        if os.path.exists(keep):
            with open(keep) as f:
                got = json.load(f)
            if got.get('key') == key:
                res.append(got)
                continue
        tri, tei = S.split(body, clf, rs)
        tr, te = os.path.join(out, '%d.train.csv' % rs), os.path.join(out, '%d.test.csv' % rs)
        S.write(tr, header, [body[i] for i in tri])
        S.write(te, header, [body[i] for i in tei])
        db = os.path.join(out, 'xgb-runs-%d.db' % rs)
        for f in (db, db + '-wal', db + '-shm', db + '-journal'):
            if os.path.exists(f):
                os.remove(f)
        entry, auto, cpu = auto_timed(a.cfl, tr, te, metric, budget, db, 'auto-%d' % rs,
                                      os.path.join(out, 'xgb-auto-%d.err' % rs))
        xgb, n_trials, xcpu = xgb_tuned(tr, te, clf, a.xgb_seconds or cpu, rs)
        res.append({'auto': auto, 'entry': entry, 'cpu': cpu, 'xgb': xgb,
                    'xgb_trials': n_trials, 'xgb_cpu': xcpu, 'key': key})
        with open(keep, 'w') as f:
            json.dump(res[-1], f)
        print('  %s split %d: auto %s %.4f in %.1f CPU s, xgboost+optuna %.4f (%d trials, %.1f CPU s)'
              % (name, rs, entry, auto, cpu, xgb, n_trials, xcpu), file=sys.stderr, flush=True)
    return {'name': os.path.basename(path)[:-4], 'rows': len(body), 'metric': metric,
            'sign': 1 if clf else -1, 'res': res}


def table(sets, title):
    print('#### ' + title)
    print()
    print('| set | rows | metric | splits | auto | xgboost+optuna | auto - xgboost | W/T/L | CPU s auto | CPU s xgboost | xgboost trials |')
    print('|---|---|---|---|---|---|---|---|---|---|---|')
    for s in sets:
        r = s['res']
        d = [s['sign'] * (x['auto'] - x['xgb']) for x in r]
        m, se = S.mean_se(d)
        w = sum(1 for v in d if v > TIE)
        l_ = sum(1 for v in d if v < -TIE)
        print('| %s | %d | %s | %d | %.4f | %.4f | %+.4f +- %.4f | %d/%d/%d | %.1f | %.1f | %.0f |' % (
            s['name'], s['rows'], s['metric'], len(r), np.mean([x['auto'] for x in r]),
            np.mean([x['xgb'] for x in r]), m, se, w, len(r) - w - l_, l_,
            np.mean([x['cpu'] for x in r]), np.mean([x['xgb_cpu'] for x in r]),
            np.mean([x['xgb_trials'] for x in r])))
    print()


def main():
    p = argparse.ArgumentParser()
    p.add_argument('out')
    p.add_argument('--cfl', required=True)
    p.add_argument('--sets', default='')
    p.add_argument('--held-out', default='')
    p.add_argument('--real', default='', help='real public sets (make_real.R): a table of their own')
    p.add_argument('--splits', type=int, default=10)
    p.add_argument('--first', type=int, default=0)
    p.add_argument('--seconds', type=float, default=10)
    p.add_argument('--trials', type=int, default=0)
    p.add_argument('--xgb-seconds', type=float, default=0)
    a = p.parse_args()
    with open(a.cfl, 'rb') as f:
        binsha = hashlib.sha256(f.read()).hexdigest()
    budget = ('--max-trials', str(a.trials)) if a.trials > 0 else ('--time-limit', '%g' % a.seconds)
    ins = [one_set(a, n, binsha, budget) for n in a.sets.split(',') if n]
    outs = [one_set(a, n, binsha, budget) for n in a.held_out.split(',') if n]
    real = [one_set(a, n, binsha, budget) for n in a.real.split(',') if n]
    print('Paired differences over splits random_state %d..%d (mean +- standard error; positive: '
          'auto better; RMSE turned so); `cfl auto %s %s --num-jobs 2` against XGBoost '
          '(hist, one thread) tuned by Optuna (TPE, 5-fold CV log loss / RMSE) for %s, refitted on '
          'the training part.' % (a.first, a.first + a.splits - 1, budget[0], budget[1],
                                  '%g CPU seconds' % a.xgb_seconds if a.xgb_seconds
                                  else 'the CPU time auto took'))
    print()
    if ins:
        table(ins, 'Held-in sets (datasets/ and the synthetic sets looked at)')
    if outs:
        table(outs, 'Held-out synthetic sets (measured only, never tuned on)')
    panels = S.real_panels(real)
    for sets, title, _ in panels:
        table(sets, title)
    every = ins + outs + [s for p in panels for s in p[0]]
    ahead = sum(1 for s in every
                if S.mean_se([s["sign"] * (x["auto"] - x["xgb"]) for x in s["res"]])[0] >= -TIE)
    print('auto at or above XGBoost tuned by Optuna on %d of %d sets (mean over the splits).'
          % (ahead, len(every)))


if __name__ == '__main__':
    main()
