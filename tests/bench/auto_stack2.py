"""A second stacking level, measured by replay on the runs
tests/bench/auto_splits.sh kept, before building it into cfl auto:

    python3 tests/bench/auto_stack2.py [--cfl ./cfl] [--layer1 family|greedy] DIR/SET ...

For every split of a set it rebuilds auto's bags from its database (as
auto_rules.py does), takes layer one (each family's best bag by the proper
score out of fold; --layer1 greedy: auto's greedy ensemble alone) and
writes the split's training and test rows again with that layer's
predictions as extra columns: out of fold for the training rows, the mean
of the fold models for the test rows (AutoGluon's multi-layer stacking).
`cfl repeat --folds 5` then bags cfl's five defaults on those rows (layer
two; the same run seed, so the same folds as auto's), and the replay
scores on the split's test part: auto (the figure auto printed), greedy
over layer two alone (l2), greedy over auto's bags and layer two together
(l1l2), and the best layer-two bag out of fold (l2best).  Per set: each -
auto (mean +- standard error, positive: better, RMSE turned so) and the
mean rank of each among itself and the five defaults (as auto_ranks.py
counts it).  Files go beside the split's (K.l2.train.csv, K.l2.test.csv,
l2-K.db; l2g for --layer1 greedy); a split done is not run again.  docs/auto.md
says what it measured."""
import argparse, json, glob, math, os, subprocess, sys, sqlite3
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import auto_splits as S  # noqa: E402
import auto_rules as R  # noqa: E402
MODELS = ['fcnn', 'linear', 'tree', 'forest', 'gbdt']


def family_best(reg, y, bags):
    best = {}
    for b in bags:
        l = R.loss(reg, b['oof'], y)
        if b['model'] not in best or l < best[b['model']][0]:
            best[b['model']] = (l, b)
    return [best[m][1] for m in sorted(best)]


def augment(src, dst, layer, key):
    header, body = S.read(src)
    cols = []
    for b in layer:
        for j in range(b[key].shape[1]):
            cols.append('l1_%s_%d' % (b['model'], j))
    rows = []
    for i, r in enumerate(body):
        extra = []
        for b in layer:
            extra += ['%.17g' % v for v in b[key][i]]
        rows.append(list(r[:-1]) + extra + [r[-1]])
    S.write(dst, list(header[:-1]) + cols + [header[-1]], rows)


def layer2(cfl, sd, k, reg, ytr, layer, tag):
    tr, te = '%s/%s.%s.train.csv' % (sd, k, tag), '%s/%s.%s.test.csv' % (sd, k, tag)
    db = '%s/%s-%s.db' % (sd, tag, k)
    if not os.path.exists(db + '.done'):
        augment('%s/%s.train.csv' % (sd, k), tr, layer, 'oof')
        augment('%s/%s.test.csv' % (sd, k), te, layer, 'test')
        if os.path.exists(db):
            os.remove(db)
        with open('%s/%s-%s.err' % (sd, tag, k), 'w') as err:
            subprocess.run([cfl, 'repeat', tr, '--test', te, '--models', ','.join(MODELS),
                            '--num-repeat', '1', '--folds', '5', '--ensemble', 'none',
                            '--num-jobs', '2', '--db', db, '--name', 'l2', '-q'],
                           stdout=subprocess.DEVNULL, stderr=err, check=True)
        open(db + '.done', 'w').close()
    con = sqlite3.connect(db)
    cands = [(cid, 'l2_' + model, None, None)
             for cid, model in con.execute("select id, model from candidates order by id")]
    return R.bags_of(con, cands, len(ytr))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--cfl', default=os.path.join(os.path.dirname(os.path.abspath(__file__)), '../../cfl'))
    ap.add_argument('--layer1', choices=['family', 'greedy'], default='family',
                    help="layer one's columns: each family's best bag, or auto's greedy ensemble")
    ap.add_argument('sets', nargs='+')
    a = ap.parse_args()
    names = ['auto', 'l2', 'l1l2', 'l2best']
    allrank = {n: [] for n in names}
    for sd in a.sets:
        js = sorted(glob.glob(sd + '/split-*.json'), key=lambda x: int(x.split('-')[-1][:-5]))
        V = {n: [] for n in names}; RK = {n: [] for n in names}
        for f in js:
            k = f.split('-')[-1][:-5]; r = json.load(open(f))
            reg, ytr, yte, bags = R.load(sd, k)
            sign = -1 if reg else 1
            w, bs = R.greedy(reg, ytr, bags)
            got = {'auto': R.combine(bs, w, 'test')}
            if a.layer1 == 'family':
                l1, tag = family_best(reg, ytr, bags), 'l2'
            else:
                l1 = [dict(model='greedy', oof=R.combine(bs, w, 'oof'), test=got['auto'])]
                tag = 'l2g'
            l2 = layer2(a.cfl, sd, k, reg, ytr, l1, tag)
            w, bs = R.greedy(reg, ytr, l2)
            got['l2'] = R.combine(bs, w, 'test')
            w, bs = R.greedy(reg, ytr, bags + l2)
            got['l1l2'] = R.combine(bs, w, 'test')
            got['l2best'] = min(l2, key=lambda b: R.loss(reg, b['oof'], ytr))['test']
            dv = [sign * r['dflt'][m] for m in r['dflt']]

            def rank(v):
                return 1 + sum(1 for x in dv if x > v + 1e-6) + sum(1 for x in dv if abs(x - v) <= 1e-6) / 2
            for n in names:
                # auto: the figure auto printed (greedy's replay can differ
                # from it by a tie broken otherwise)
                v = sign * r['auto'] if n == 'auto' else R.metric(reg, got[n], yte)
                V[n].append(v); RK[n].append(rank(v))
        A = np.array(V['auto']); n = len(A)
        s = '%-14s %2d splits auto %.4f' % (os.path.basename(sd.rstrip('/')), n, abs(A.mean()))
        for nm in names[1:]:
            d = np.array(V[nm]) - A
            s += ' | %s %+.4f+-%.4f' % (nm, d.mean(), d.std(ddof=1) / math.sqrt(n))
        print(s)
        print('    ranks: ' + ' '.join('%s %.2f' % (nm, np.mean(RK[nm])) for nm in names), flush=True)
        for nm in names:
            allrank[nm].append(np.mean(RK[nm]))
    print('mean rank over the %d sets: ' % len(a.sets) + ' '.join('%s %.2f' % (nm, np.mean(allrank[nm])) for nm in names))


if __name__ == '__main__':
    main()
