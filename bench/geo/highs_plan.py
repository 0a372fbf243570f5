#!/usr/bin/env python3
"""Plan one geo deployment as a mixed integer program solved by HiGHS.

The peer of `strata bench geo`: it reads one planning instance as JSON on
stdin, formulates docs/geo.md's latency model ("Latency models") as a MIP,
solves it with HiGHS (PyPI highspy) and writes a JSON answer on stdout.

Instance (all latencies in milliseconds, round trips; null = unmeasured,
which this program refuses):

    {"protocol": "pando" | "epaxos" | "rspaxos",
     "objective": "read" | "write" | "storage",
     "f": 1, "max_splits": 6,
     "read_bound": 0, "write_bound": 0, "storage_bound": 0,   # 0 = none
     "front_ends": [names], "sites": [names],
     "fe_to_site": [[RTT(front-end i -> site j)]],
     "site_to_fe": [[RTT(site j -> front-end i)]],    # indexed [i][j]
     "site_to_site": [[RTT(site a -> site b)]],
     "time_limit": seconds (optional), "threads": n (optional)}

Answer:

    {"status": "optimal" | "infeasible" | "time limit" | ...,
     "objective": MIP objective value,
     "eval_objective": the objective recomputed from the chosen sites and
                       sizes by a direct evaluation of the model,
     "sites": [...], "n", "k", "r", "q1a", "q1b", "q2",
     "delegates": ["" or site per front-end],   # best for the chosen sites
     "read_ms": [...], "write_ms": [...],       # per front-end, recomputed
     "max_read_ms", "max_write_ms", "storage",
     "solve_seconds": HiGHS run() wall time, "build_seconds", "nodes", "mip_gap"}

The formulation (one site per split; quorums of one size per type):

  x_j            binary, site j holds a split; n = sum x_j
  k              splits, one-hot y_k (k = 1..max_splits); nk_k = n if y_k
                 else 0, so storage n/k = sum_k nk_k / k is linear
  q1a, q1b, q2   integer quorum sizes with the protocol's inequalities
                 (EPaxos's fast quorum floor(N/2) + floor((floor(N/2)+1)/2)
                 through a one-hot on N)
  zr_Fj          read quorum membership, zr_Fj <= x_j, sum_j zr_Fj >= q1a,
                 READ >= RTT(F, j) * zr_Fj   (so READ >= the q1a-th nearest)
  dl_FD          front-end F's delegate D (a chosen site, or "none" where the
                 protocol allows the front-end to run the phases itself),
                 sum_D dl_FD = 1, dl_FD <= x_D
  a_Fj, b_Fj     Phase 1 / Phase 2 (write) quorum membership, as zr;
                 t1_F >= sum_D v1(F, j, D) dl_FD - M (1 - a_Fj),
                 t1_F >= sum_D off(F, D) dl_FD,
                 p2_F >= sum_D v2(F, j, D) dl_FD - M (1 - b_Fj)
                 (big-M on membership; the delegate picks the coefficients)
  WRITE >= t1_F + p2_F for every front-end F

and the objective is READ, WRITE or the storage, the other two bounded.
"""

import json
import math
import sys
import time

import highspy
import numpy as np


class Model:
    """A tiny column/row builder that hands HiGHS one sparse model."""

    def __init__(self):
        self.lb, self.ub, self.cost, self.integer = [], [], [], []
        self.rows = []  # (lower, upper, {col: coef})

    def var(self, lb=0.0, ub=math.inf, integer=False, cost=0.0):
        self.lb.append(lb)
        self.ub.append(ub)
        self.cost.append(cost)
        self.integer.append(integer)
        return len(self.lb) - 1

    def binary(self):
        return self.var(0.0, 1.0, True)

    def row(self, terms, lower=-math.inf, upper=math.inf):
        coefs = {}
        for c, v in terms:
            if v != 0:
                coefs[c] = coefs.get(c, 0.0) + v
        self.rows.append((lower, upper, coefs))

    def ge(self, terms, rhs):
        self.row(terms, lower=rhs)

    def le(self, terms, rhs):
        self.row(terms, upper=rhs)

    def eq(self, terms, rhs):
        self.row(terms, lower=rhs, upper=rhs)

    def to_highs(self, h):
        inf = highspy.kHighsInf
        fix = lambda v: inf if v == math.inf else (-inf if v == -math.inf else v)
        ncol = len(self.lb)
        h.addVars(ncol, np.array([fix(v) for v in self.lb]), np.array([fix(v) for v in self.ub]))
        h.changeColsCost(ncol, np.arange(ncol, dtype=np.int32), np.array(self.cost, dtype=np.float64))
        ints = [i for i, b in enumerate(self.integer) if b]
        h.changeColsIntegrality(
            len(ints),
            np.array(ints, dtype=np.int32),
            np.array([highspy.HighsVarType.kInteger] * len(ints)),
        )
        starts, index, value, lower, upper = [], [], [], [], []
        for lo, up, coefs in self.rows:
            starts.append(len(index))
            lower.append(fix(lo))
            upper.append(fix(up))
            for c, v in coefs.items():
                index.append(c)
                value.append(v)
        h.addRows(
            len(self.rows),
            np.array(lower, dtype=np.float64),
            np.array(upper, dtype=np.float64),
            len(index),
            np.array(starts, dtype=np.int32),
            np.array(index, dtype=np.int32),
            np.array(value, dtype=np.float64),
        )


def epaxos_fast(n):
    F = n // 2
    return F + (F + 1) // 2


class Instance:
    def __init__(self, d):
        self.protocol = d.get("protocol")
        if self.protocol not in ("pando", "epaxos", "rspaxos"):
            raise ValueError(f"protocol {self.protocol!r}: want pando, epaxos or rspaxos")
        self.objective = d.get("objective")
        if self.objective not in ("read", "write", "storage"):
            raise ValueError(f"objective {self.objective!r}: want read, write or storage")
        self.f = int(d.get("f", 1))
        self.kmax = int(d.get("max_splits") or 6)
        self.rb = float(d.get("read_bound") or 0) or math.inf
        self.wb = float(d.get("write_bound") or 0) or math.inf
        self.sb = float(d.get("storage_bound") or 0) or math.inf
        self.fes = list(d["front_ends"])
        self.sites = list(d["sites"])
        nf, m = len(self.fes), len(self.sites)
        if nf == 0 or m == 0:
            raise ValueError("no front-ends or no sites")
        if self.f < 0 or self.kmax < 1:
            raise ValueError("negative f or max_splits below 1")

        def table(key, rows, cols):
            t = d[key]
            if len(t) != rows or any(len(r) != cols for r in t):
                raise ValueError(f"{key}: want {rows}x{cols}")
            for r in t:
                for v in r:
                    if v is None or not math.isfinite(v) or v < 0:
                        raise ValueError(f"{key}: unmeasured or negative latency {v!r}")
            return [[float(v) for v in r] for r in t]

        self.rd = table("fe_to_site", nf, m)
        self.cf = table("site_to_fe", nf, m)
        self.cc = table("site_to_site", m, m)
        if self.protocol == "epaxos":
            self.kmax = 1
        self.time_limit = d.get("time_limit")
        self.threads = d.get("threads")

    # Delegate options: index -1 is "the front-end itself" where allowed.
    def options(self):
        m = len(self.sites)
        if self.protocol == "epaxos":
            return list(range(m))
        return [-1] + list(range(m))

    def v1(self, F, j, D):  # Pando Phase 1 arrival time at the decider
        if D < 0:
            return self.rd[F][j]
        return (self.rd[F][j] + self.cc[j][D]) / 2

    def off1(self, F, D):  # Pando: the value reaches the delegate
        return 0.0 if D < 0 else self.rd[F][D] / 2

    def v2(self, F, j, D):  # Phase 2 (or the write round(s)) per member
        p = self.protocol
        if p == "pando":
            return self.rd[F][j] if D < 0 else (self.cc[D][j] + self.cf[F][j]) / 2
        if p == "epaxos":
            return self.cc[D][j]
        return 2 * self.rd[F][j] if D < 0 else 2 * self.cc[D][j]

    def off2(self, F, D):  # EPaxos / RS-Paxos: the request reaches the leader
        if self.protocol == "pando" or D < 0:
            return 0.0
        return self.rd[F][D]

    # Direct evaluation (no MIP): the model of docs/geo.md on a site set.
    def evaluate(self, S, q1a, q2):
        def nth(q, vals):
            vals = sorted(vals)
            return vals[q - 1] if 1 <= q <= len(vals) else math.inf

        reads, writes, dels = [], [], []
        for F in range(len(self.fes)):
            reads.append(nth(q1a, [self.rd[F][j] for j in S]))
            best, bestD = math.inf, -1
            for D in self.options():
                if D >= 0 and D not in S:
                    continue
                if self.protocol == "pando":
                    t1 = max(self.off1(F, D), nth(q1a, [self.v1(F, j, D) for j in S]))
                    w = t1 + nth(q2, [self.v2(F, j, D) for j in S])
                elif self.protocol == "epaxos":
                    w = nth(q2, [self.rd[F][D] + self.cc[D][j] for j in S])
                else:
                    w = self.off2(F, D) + 2 * nth(q2, [(self.rd[F][j] if D < 0 else self.cc[D][j]) for j in S])
                if w < best:
                    best, bestD = w, D
            writes.append(best)
            dels.append("" if bestD < 0 else self.sites[bestD])
        return reads, writes, dels


def build(inst):
    M = Model()
    m, nf, f = len(inst.sites), len(inst.fes), inst.f
    x = [M.binary() for _ in range(m)]
    n = M.var(0, m, True)
    M.eq([(n, 1)] + [(xj, -1) for xj in x], 0)

    # k as a one-hot, and nk_k = n * y_k for the storage n / k.
    ks = list(range(1, inst.kmax + 1))
    y = {kk: M.binary() for kk in ks}
    nk = {kk: M.var(0, m) for kk in ks}
    k = M.var(1, inst.kmax, True)
    M.eq([(y[kk], 1) for kk in ks], 1)
    M.eq([(k, 1)] + [(y[kk], -kk) for kk in ks], 0)
    M.eq([(n, 1)] + [(nk[kk], -1) for kk in ks], 0)
    for kk in ks:
        M.le([(nk[kk], 1), (y[kk], -m)], 0)
    storage = [(nk[kk], 1.0 / kk) for kk in ks]
    if inst.sb < math.inf:
        M.le(storage, inst.sb * (1 + 1e-12))

    q1a = M.var(0, m, True)
    q2 = M.var(0, m, True)
    q1b = None
    if inst.protocol == "pando":
        q1b = M.var(0, m, True)
        M.ge([(q1a, 1), (q2, 1), (n, -1)], 1)  # 1a ∩ 2 >= 1
        M.ge([(q1b, 1), (q2, 1), (n, -1), (k, -1)], 0)  # 1b ∩ 2 >= k
        M.ge([(q2, 2), (n, -1), (k, -1)], 0)  # 2 ∩ 2 >= k
        M.ge([(q1a, 1), (k, -1)], 0)
        M.ge([(q1a, 1)], f + 1)
        M.ge([(q1b, 1), (k, -1)], f)
        M.ge([(q2, 1), (k, -1)], f)
        M.le([(q1b, 1), (n, -1)], -f)
        M.le([(q2, 1), (n, -1)], -f)
    elif inst.protocol == "epaxos":
        # R = q1a, W = q2, N = n; the fast quorum through a one-hot on N.
        lo = 2 * f + 1
        if lo > m:
            raise ValueError("too few sites for f")
        zn = {nn: M.binary() for nn in range(lo, m + 1)}
        M.eq([(v, 1) for v in zn.values()], 1)
        M.eq([(n, 1)] + [(v, -nn) for nn, v in zn.items()], 0)
        M.ge([(q2, 1)] + [(v, -epaxos_fast(nn)) for nn, v in zn.items()], 0)
        M.ge([(q1a, 1)], f + 1)
        M.ge([(q2, 1)], f + 1)
        M.ge([(q1a, 1), (q2, 1), (n, -1)], 1)
        M.ge([(q2, 2), (n, -1)], 1)
        M.le([(q1a, 1), (n, -1)], -f)
        M.le([(q2, 1), (n, -1)], -f)
    else:  # rspaxos: one quorum size Q
        M.eq([(q1a, 1), (q2, -1)], 0)
        M.ge([(q2, 1), (k, -1)], f)
        M.ge([(q2, 2), (n, -1), (k, -1)], 0)
        M.le([(q2, 1), (n, -1)], -f)

    read = M.var(0, inst.rb)
    write = M.var(0, inst.wb)
    opts = inst.options()
    for F in range(nf):
        zr = [M.binary() for _ in range(m)]
        for j in range(m):
            M.le([(zr[j], 1), (x[j], -1)], 0)
            M.ge([(read, 1), (zr[j], -inst.rd[F][j])], 0)
        M.ge([(v, 1) for v in zr] + [(q1a, -1)], 0)

        dl = {D: M.binary() for D in opts}
        M.eq([(v, 1) for v in dl.values()], 1)
        for D in opts:
            if D >= 0:
                M.le([(dl[D], 1), (x[D], -1)], 0)

        b = [M.binary() for _ in range(m)]
        p2 = M.var(0)
        for j in range(m):
            M.le([(b[j], 1), (x[j], -1)], 0)
            big = max(inst.v2(F, j, D) for D in opts)
            # p2 >= sum_D v2(F,j,D) dl_D - big (1 - b_j)
            M.ge([(p2, 1), (b[j], -big)] + [(dl[D], -inst.v2(F, j, D)) for D in opts], -big)
        M.ge([(v, 1) for v in b] + [(q2, -1)], 0)

        if inst.protocol == "pando":
            a = [M.binary() for _ in range(m)]
            t1 = M.var(0)
            for j in range(m):
                M.le([(a[j], 1), (x[j], -1)], 0)
                big = max(inst.v1(F, j, D) for D in opts)
                M.ge([(t1, 1), (a[j], -big)] + [(dl[D], -inst.v1(F, j, D)) for D in opts], -big)
            M.ge([(v, 1) for v in a] + [(q1a, -1)], 0)
            M.ge([(t1, 1)] + [(dl[D], -inst.off1(F, D)) for D in opts], 0)
            M.ge([(write, 1), (t1, -1), (p2, -1)], 0)
        else:
            M.ge([(write, 1), (p2, -1)] + [(dl[D], -inst.off2(F, D)) for D in opts], 0)

    if inst.objective == "read":
        M.cost[read] = 1.0
    elif inst.objective == "write":
        M.cost[write] = 1.0
    else:
        for c, v in storage:
            M.cost[c] = v
    return M, dict(x=x, n=n, k=k, q1a=q1a, q1b=q1b, q2=q2)


def solve(inst):
    t0 = time.perf_counter()
    model, v = build(inst)
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("mip_rel_gap", 0.0)
    h.setOptionValue("mip_abs_gap", 1e-7)
    if inst.time_limit:
        h.setOptionValue("time_limit", float(inst.time_limit))
    if inst.threads:
        h.setOptionValue("threads", int(inst.threads))
    model.to_highs(h)
    build_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    h.run()
    solve_s = time.perf_counter() - t1
    status = h.getModelStatus()
    info = h.getInfo()
    out = {
        "status": h.modelStatusToString(status).lower(),
        "build_seconds": build_s,
        "solve_seconds": solve_s,
        "nodes": int(getattr(info, "mip_node_count", 0)),
        "mip_gap": float(getattr(info, "mip_gap", math.nan)),
        "variables": len(model.lb),
        "constraints": len(model.rows),
    }
    if status == highspy.HighsModelStatus.kOptimal:
        out["status"] = "optimal"
    elif status == highspy.HighsModelStatus.kInfeasible:
        out["status"] = "infeasible"
        return out
    elif status == highspy.HighsModelStatus.kTimeLimit:
        out["status"] = "time limit"
    if info.primal_solution_status != 2:  # no feasible solution at hand
        return out
    col = list(h.getSolution().col_value)
    r = lambda c: int(round(col[c]))
    S = [j for j, c in enumerate(v["x"]) if col[c] > 0.5]
    n, k, q1a, q2 = len(S), r(v["k"]), r(v["q1a"]), r(v["q2"])
    q1b = r(v["q1b"]) if v["q1b"] is not None else q1a
    reads, writes, dels = inst.evaluate(S, q1a, q2)
    storage = n / k
    ev = {"read": max(reads), "write": max(writes), "storage": storage}[inst.objective]
    out.update({
        "objective": info.objective_function_value,
        "eval_objective": ev,
        "sites": [inst.sites[j] for j in S],
        "n": n, "k": k, "r": n - k, "q1a": q1a, "q1b": q1b, "q2": q2,
        "delegates": dels,
        "read_ms": reads, "write_ms": writes,
        "max_read_ms": max(reads), "max_write_ms": max(writes),
        "storage": storage,
    })
    return out


def main():
    try:
        inst = Instance(json.load(sys.stdin))
    except (ValueError, KeyError, TypeError) as e:
        print(f"highs_plan: bad instance: {e}", file=sys.stderr)
        return 2
    json.dump(solve(inst), sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
