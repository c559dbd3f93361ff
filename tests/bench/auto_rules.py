"""Replays other final selections on the runs tests/bench/auto_splits.sh
kept, to see whether one would have beaten auto's greedy ensemble
selection, without running auto again:

    python3 tests/bench/auto_rules.py build/bench/auto_splits/SET ...

For every split of a set it reads auto's database (runs-K.db, or runs.db
with the run auto-K), rebuilds each bag from its fold trials (the mean of
their test predictions; their out-of-fold predictions, one per training
row) and scores each rule's choice, made on the out-of-fold predictions
alone, on the split's test part.  Rules: greedy25 (auto's own: Caruana's
selection with replacement, 25 rounds by the proper score over the 50 best
bags, the best round kept; it reproduces auto's figure, a check of the
replay), bestbag (the single best bag), greedy_defaults (greedy over each
family's defaults only), familybest_greedy (over each family's best bag), greedy_fam (over the 50 best
with each family's best always among them),
greedy_top10 (over the 10 best), greedy_bagged (Caruana et al. 2006: greedy
on 20 random halves of the bags, their ensembles averaged), greedy_pre
(over the candidates chosen in advance: defaults and portfolio),
greedy_temp (classification: each bag's probabilities temperature-scaled
first, softmax(log p / T) with the T of the lowest out-of-fold log loss on
a grid of 0.05-20, then greedy on the scaled bags, which predict scaled;
so that an over-confident bag, a deep tree's or a network's, is not
judged by its calibration alone), greedy_metric (the selection by the
user's metric out of fold, as AutoGluon's: for classification the error,
ties broken by log loss), greedy_1se (greedy over the defaults and the
portfolio, and the searched candidates that beat their family's best of
those by more than one standard error of the per-row loss difference out
of fold: Breiman's one-standard-error rule against a long search's
winner's curse).  Per set:
each rule - auto on test over the splits (mean +- standard error, positive:
the rule better, RMSE turned so) and the mean rank of each among itself
and the five defaults (as tests/bench/auto_ranks.py counts it).  AUTO_RULES=a,b
replays only those (and greedy25).  AUTO_HINDSIGHT=1 adds two bounds that
are no rules, as they choose on the test part: the best on test of greedy
and each family's best bag (hindsight_fam), and of greedy and every bag
(hindsight_all): what a selection could gain at most, test noise included.  Written
to look for a better rule, not to tune one: a rule that wins only on the
sets it was looked for on is no rule."""
import sqlite3, glob, json, sys, math, os
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import auto_splits as S  # noqa: E402  the CSV helpers
EPS = 1e-15
def labels(path):
    return [r[-1] for r in S.read(path)[1]]
def classes(labs):
    """The class labels among labs in auto's order: by number when every
    one is a number, else as text."""
    labs = set(labs)
    try:
        return sorted(labs, key=lambda v: float(v))
    except ValueError:
        return sorted(labs)
def load(setdir, k):
    if os.path.exists(setdir + '/runs-%s.db' % k):
        db = sqlite3.connect(setdir + '/runs-%s.db' % k)
        run = db.execute("select id from runs where kind='auto'").fetchone()[0]
    else:
        db = sqlite3.connect(setdir + '/runs.db')
        run = db.execute("select id from runs where name=?", ('auto-%s' % k,)).fetchone()[0]
    tr = labels(setdir + '/%s.train.csv' % k); te = labels(setdir + '/%s.test.csv' % k)
    cls = classes(tr)
    # the task as auto_splits.py decided it: on every row, not the training part
    reg = S.is_regression([[v] for v in tr + te])
    if reg:
        ytr = np.array([float(v) for v in tr]); yte = np.array([float(v) for v in te])
    else:
        ytr = np.array([cls.index(v) for v in tr]); yte = np.array([cls.index(v) if v in cls else -1 for v in te])
    cands = db.execute("select id, model, seq, score from candidates where run=? order by seq", (run,)).fetchall()
    return reg, ytr, yte, bags_of(db, cands, len(ytr))
def bags_of(db, cands, n_train):
    """The bags of candidates (id, model, seq, score) in db: the mean of
    their fold trials' test predictions, their out-of-fold predictions one
    per training row (NaN where none)."""
    bags = []
    for cid, model, seq, score in cands:
        ts = db.execute("select id from trials where candidate=? and status='done' and fold>=0 and repeat=0", (cid,)).fetchall()
        if not ts: continue
        T = None; O = None
        for (tid,) in ts:
            n, no, data = db.execute("select n,n_out,data from predictions where trial=? and split='test'", (tid,)).fetchone()
            a = np.frombuffer(data, '<f8').reshape(n, no)
            T = a.copy() if T is None else T + a
            n, no, data, rows = db.execute("select n,n_out,data,rows from predictions where trial=? and split='oof'", (tid,)).fetchone()
            a = np.frombuffer(data, '<f8').reshape(n, no); ri = np.frombuffer(rows, '<i4')
            if O is None: O = np.full((n_train, no), np.nan)
            O[ri] = a
        bags.append(dict(cid=cid, model=model, seq=seq, score=score, test=T / len(ts), oof=O))
    return bags
def loss(reg, P, y):
    if reg: return math.sqrt(np.mean((P[:, 0] - y) ** 2))
    p = np.clip(P[np.arange(len(y)), y], EPS, 1)
    return -np.mean(np.log(p))
def metric(reg, P, y):
    if reg: return -math.sqrt(np.mean((P[:, 0] - y) ** 2))
    return np.mean(np.argmax(P, 1) == y)
def greedy(reg, y, bags, rounds=25, top=50, key=None):
    key = key or (lambda P: (loss(reg, P, y),))
    bags = sorted(bags, key=lambda b: loss(reg, b['oof'], y))[:top]
    cnt = [0] * len(bags); S = None; best = ((1e300,), None); n = 0
    for r in range(rounds):
        bl, bi = (1e300,), -1
        for i, b in enumerate(bags):
            cand = b['oof'] if S is None else (S + b['oof'])
            l = key(cand / (n + 1))
            if l < bl: bl, bi = l, i
        S = bags[bi]['oof'].copy() if S is None else S + bags[bi]['oof']; n += 1; cnt[bi] += 1
        if bl < best[0]: best = (bl, list(cnt))
    w = np.array(best[1], float); w /= w.sum()
    return w, bags
def combine(bags, w, key):
    return sum(wi * b[key] for wi, b in zip(w, bags) if wi > 0)
def family_best(reg, y, bags):
    """Each family's best bag by the proper score out of fold."""
    best = {}
    for b in bags:
        l = loss(reg, b['oof'], y)
        if b['model'] not in best or l < best[b['model']][0]: best[b['model']] = (l, b)
    return [v[1] for v in best.values()]
RULES = {}
def rule(f): RULES[f.__name__] = f; return f
@rule
def greedy25(reg, y, bags):
    w, bs = greedy(reg, y, bags); return combine(bs, w, 'test')
@rule
def bestbag(reg, y, bags):
    b = min(bags, key=lambda b: loss(reg, b['oof'], y)); return b['test']
@rule
def greedy_defaults(reg, y, bags):
    seen = {}; d = []
    for b in bags:
        if b['model'] not in seen: seen[b['model']] = 1; d.append(b)
    w, bs = greedy(reg, y, d); return combine(bs, w, 'test')
@rule
def familybest_greedy(reg, y, bags):
    w, bs = greedy(reg, y, family_best(reg, y, bags)); return combine(bs, w, 'test')
@rule
def greedy_fam(reg, y, bags, top=50):
    # greedy over the 50 best bags with each family's best always among
    # them, so that hundreds of near-equal candidates of one quick family
    # (linear, tree) cannot fill the selection's pool alone
    order = sorted(bags, key=lambda b: loss(reg, b['oof'], y))
    fam = {}
    for b in order: fam.setdefault(b['model'], b)
    must = {id(b) for b in fam.values()}
    rest = [b for b in order if id(b) not in must][:max(0, top - len(must))]
    keep = must | {id(b) for b in rest}
    pool = [b for b in order if id(b) in keep]
    w, bs = greedy(reg, y, pool, top=len(pool)); return combine(bs, w, 'test')
@rule
def greedy_top10(reg, y, bags):
    w, bs = greedy(reg, y, bags, top=10); return combine(bs, w, 'test')
@rule
def greedy_bagged(reg, y, bags, B=20, frac=0.5):
    # Caruana's bagged ensemble selection: greedy on random halves of the models, averaged
    rs = np.random.RandomState(0); acc = None
    for _ in range(B):
        idx = rs.choice(len(bags), max(1, int(len(bags) * frac)), replace=False)
        w, bs = greedy(reg, y, [bags[i] for i in idx])
        p = combine(bs, w, 'test'); acc = p if acc is None else acc + p
    return acc / B
# each family's defaults and portfolio, as docs/auto.md lists them
PRE = {'linear': 5, 'tree': 3, 'forest': 4, 'gbdt': 4, 'fcnn': 3}
def prechosen(bags):
    seen = {}; out = []
    for b in bags:
        seen[b['model']] = seen.get(b['model'], 0) + 1
        if seen[b['model']] <= PRE.get(b['model'], 1): out.append(b)
    return out
@rule
def greedy_pre(reg, y, bags):
    w, bs = greedy(reg, y, prechosen(bags)); return combine(bs, w, 'test')
def row_loss(reg, P, y):
    if reg: return (P[:, 0] - y) ** 2
    return -np.log(np.clip(P[np.arange(len(y)), y], EPS, 1))
@rule
def greedy_1se(reg, y, bags):
    # the winner's curse of a long search on few rows: a searched candidate
    # joins the selection only when it beats its family's best chosen in
    # advance by more than one standard error of the per-row loss difference
    # out of fold (Breiman's one-standard-error rule)
    pre = prechosen(bags); ids = {id(b) for b in pre}; best = {}
    for b in pre:
        l = row_loss(reg, b['oof'], y)
        if b['model'] not in best or l.mean() < best[b['model']].mean(): best[b['model']] = l
    keep = list(pre)
    for b in bags:
        if id(b) in ids or b['model'] not in best: continue
        d = row_loss(reg, b['oof'], y) - best[b['model']]
        if d.mean() + d.std(ddof=1) / math.sqrt(len(d)) < 0: keep.append(b)
    w, bs = greedy(reg, y, keep); return combine(bs, w, 'test')
TS = np.exp(np.linspace(math.log(0.05), math.log(20), 121))
def temper(P, T):
    z = np.log(np.clip(P, EPS, 1)) / T
    z -= z.max(1, keepdims=True); e = np.exp(z)
    return e / e.sum(1, keepdims=True)
@rule
def greedy_temp(reg, y, bags):
    if reg:
        w, bs = greedy(reg, y, bags); return combine(bs, w, 'test')
    tb = []
    for b in bags:
        T = min(TS, key=lambda t: loss(reg, temper(b['oof'], t), y))
        tb.append(dict(b, oof=temper(b['oof'], T), test=temper(b['test'], T)))
    w, bs = greedy(reg, y, tb); return combine(bs, w, 'test')
@rule
def greedy_metric(reg, y, bags):
    # AutoGluon's way: the selection minimises the user's metric on the
    # out-of-fold rows (classification: the error, ties broken by log loss)
    if reg:
        w, bs = greedy(reg, y, bags); return combine(bs, w, 'test')
    w, bs = greedy(reg, y, bags, key=lambda P: (np.mean(np.argmax(P, 1) != y), loss(reg, P, y)))
    return combine(bs, w, 'test')
def main():
    sets = sys.argv[1:]
    # AUTO_RULES=a,b: only those rules (greedy25, the replay's check, always)
    only = [r for r in os.environ.get('AUTO_RULES', '').split(',') if r]
    names = [n for n in RULES if not only or n in only or n == 'greedy25']
    TOT = {}
    for sd in sets:
        js = sorted(glob.glob(sd + '/split-*.json'), key=lambda x: int(x.split('-')[-1][:-5]))
        hs = ['hindsight_fam', 'hindsight_all'] if os.environ.get('AUTO_HINDSIGHT') == '1' else []
        R = {n: [] for n in names}; A = []; D = []; RK = {n: [] for n in names + ['auto'] + hs}
        for f in js:
            k = f.split('-')[-1][:-5]; r = json.load(open(f))
            reg, ytr, yte, bags = load(sd, k)
            sign = -1 if reg else 1
            A.append(sign * r['auto']); D.append(max(sign * r['dflt'][m] for m in r['dflt']))
            dv = [sign * r['dflt'][m] for m in r['dflt']]
            def rank(v): return S.rank_among(v, dv)
            RK['auto'].append(rank(sign * r['auto']))
            for n in names:
                v = metric(reg, RULES[n](reg, ytr, bags), yte)
                R[n].append(v); RK[n].append(rank(v))
            if hs:
                g = R['greedy25'][-1]	# always replayed
                RK['hindsight_fam'].append(rank(max([g] + [metric(reg, b['test'], yte)
                                                           for b in family_best(reg, ytr, bags)])))
                RK['hindsight_all'].append(rank(max([g] + [metric(reg, b['test'], yte) for b in bags])))
        A = np.array(A); n = len(A)
        s = '%-14s auto %.4f' % (os.path.basename(sd.rstrip('/')), A.mean())
        for nm in names:
            d = np.array(R[nm]) - A
            s += ' | %s %+.4f+-%.4f' % (nm, d.mean(), d.std(ddof=1) / math.sqrt(n))
        print(s, flush=True)
        print('    ranks: ' + ' '.join('%s %.2f' % (nm, np.mean(RK[nm])) for nm in ['auto'] + names + hs), flush=True)
        for nm in ['auto'] + names + hs:
            TOT.setdefault(nm, []).append(np.mean(RK[nm]))
    if TOT:
        print('mean ranks over the %d sets: ' % len(TOT['auto'])
              + ' '.join('%s %.3f' % (nm, np.mean(v)) for nm, v in TOT.items()), flush=True)
if __name__ == '__main__':
    main()
