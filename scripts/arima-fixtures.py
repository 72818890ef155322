#!/usr/bin/env python3
"""Generate the ARIMA reference fixtures of pfsqos-core's forecast module (iez).

Run once, outside the repository's toolchain, in a throwaway virtualenv:

    python3 -m venv /tmp/smvenv && /tmp/smvenv/bin/pip install statsmodels
    /tmp/smvenv/bin/python scripts/arima-fixtures.py crates/pfsqos-core/src/forecast/fixtures

For each case it simulates a series from a known ARIMA model (numpy default_rng, fixed seed, 200
burn-in values), then writes one small text fixture with:

- `mle_*`: statsmodels.tsa.arima.model.ARIMA(y, order=(p, d, q)).fit() -- exact Gaussian maximum
  likelihood by the Kalman filter (state space), statsmodels' default trend ("c" for d = 0, "n"
  for d >= 1), enforce_stationarity/invertibility on -- and its forecast(10). This is the
  estimator the iez paper used (old arima_model "css-mle": CSS start, then exact MLE).
- `css_*`: the conditional-sum-of-squares estimate the Rust code computes (statsmodels >= 0.13
  no longer offers CSS, so it is computed here with numpy/scipy: residual recursion from t = p
  with zero pre-sample residuals, minimized by scipy's Nelder-Mead then BFGS polish, started
  from the statsmodels MLE) and its 10-step conditional forecast, integrated back d times.

Format: one `key value value ...` line per field, '#' comments. The Rust tests parse it with
include_str!; they never run Python.
"""
import sys
import os

import numpy as np
import scipy
import scipy.optimize
import statsmodels
from statsmodels.tsa.arima.model import ARIMA

CASES = [
    # name, (p, d, q), mean of the d-th difference, ar, ma, sigma, start level, n, seed
    ("ar1", (1, 0, 0), 10.0, [0.6], [], 1.0, 0.0, 200, 11),
    ("arima211", (2, 1, 1), 0.0, [0.5, -0.3], [0.4], 2.0, 100.0, 300, 12),
    ("arima011", (0, 1, 1), 0.0, [], [-0.5], 1.0, 50.0, 200, 13),
    ("arima111", (1, 1, 1), 0.0, [0.7], [-0.3], 1.5, 20.0, 250, 14),
    # Bytes-scaled ARMA(1,1): the scaling of the Rust fit must not matter.
    ("arma11_bytes", (1, 0, 1), 1.0e9, [0.5], [0.3], 2.0e7, 0.0, 200, 15),
    # Twice integrated: checks the d >= 2 integration and statsmodels' diffuse likelihood.
    ("arima120", (1, 2, 0), 0.0, [0.4], [], 1.0, 10.0, 150, 16),
]
HORIZON = 10


def simulate(rng, n, d, mean, ar, ma, sigma, start):
    burn = 200
    total = n + burn
    w = np.zeros(total)
    e = sigma * rng.standard_normal(total)
    for t in range(total):
        v = e[t]
        for i, a in enumerate(ar):
            if t > i:
                v += a * (w[t - 1 - i] - mean)
        for j, b in enumerate(ma):
            if t > j:
                v += b * e[t - 1 - j]
        w[t] = mean + v
    y = w[burn:]
    for _ in range(d):
        y = start + np.cumsum(y)
    return y


def css_residuals(w, mu, ar, ma):
    p, q = len(ar), len(ma)
    e = np.zeros(len(w))
    for t in range(p, len(w)):
        v = w[t] - mu
        for i in range(p):
            v -= ar[i] * (w[t - 1 - i] - mu)
        for j in range(min(q, t)):
            v -= ma[j] * e[t - 1 - j]
        e[t] = v
    return e


def css_fit(y, order, start):
    p, d, q = order
    w = np.diff(y, n=d) if d else y.copy()
    has_mean = d == 0

    def unpack(x):
        mu = x[0] if has_mean else 0.0
        off = 1 if has_mean else 0
        return mu, x[off:off + p], x[off + p:off + p + q]

    def obj(x):
        mu, ar, ma = unpack(x)
        # Reject non-stationary / non-invertible points (the Rust fit cannot reach them).
        if p and np.any(np.abs(np.roots(np.r_[1.0, -ar])) >= 1.0):
            return np.inf
        if q and np.any(np.abs(np.roots(np.r_[1.0, ma])) >= 1.0):
            return np.inf
        e = css_residuals(w, mu, ar, ma)
        return float(np.sum(e[p:] ** 2))

    x0 = np.asarray(start, dtype=float)
    r = scipy.optimize.minimize(obj, x0, method="Nelder-Mead",
                                options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 40000,
                                         "maxfev": 40000})
    r = scipy.optimize.minimize(obj, r.x, method="Nelder-Mead",
                                options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 40000,
                                         "maxfev": 40000})
    mu, ar, ma = unpack(r.x)
    e = css_residuals(w, mu, ar, ma)
    css = float(np.sum(e[p:] ** 2))
    sigma2 = css / (len(w) - p)
    # Conditional forecast of w, future innovations 0.
    zc = list(w - mu)
    m = len(w)
    out = []
    for s in range(HORIZON):
        t = m + s
        v = sum(ar[i] * zc[t - 1 - i] for i in range(p))
        v += sum(ma[j] * e[t - 1 - j] for j in range(q) if 0 <= t - 1 - j < m)
        zc.append(v)
        out.append(v + mu)
    out = np.array(out)
    # Integrate back d times from the last values of each differencing level.
    for k in reversed(range(d)):
        level = np.diff(y, n=k) if k else y
        out = level[-1] + np.cumsum(out)
    return mu, ar, ma, sigma2, css, out


def fmt(values):
    return " ".join(repr(float(v)) for v in values)


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else "crates/pfsqos-core/src/forecast/fixtures"
    os.makedirs(outdir, exist_ok=True)
    for name, order, mean, ar, ma, sigma, start, n, seed in CASES:
        p, d, q = order
        rng = np.random.default_rng(seed)
        y = simulate(rng, n, d, mean, ar, ma, sigma, start)
        res = ARIMA(y, order=order).fit()
        params = dict(zip(res.param_names, res.params))
        mle_mean = params.get("const", 0.0)
        mle_ar = [params[f"ar.L{i}"] for i in range(1, p + 1)]
        mle_ma = [params[f"ma.L{j}"] for j in range(1, q + 1)]
        mle_sigma2 = params["sigma2"]
        mle_fc = res.forecast(HORIZON)
        start_x = ([mle_mean] if d == 0 else []) + mle_ar + mle_ma
        c_mu, c_ar, c_ma, c_s2, c_css, c_fc = css_fit(y, order, start_x)
        path = os.path.join(outdir, f"{name}.txt")
        with open(path, "w") as f:
            f.write(f"# ARIMA fixture '{name}', generated by scripts/arima-fixtures.py\n")
            f.write(f"# statsmodels {statsmodels.__version__}, numpy {np.__version__}, "
                    f"scipy {scipy.__version__}\n")
            f.write(f"# simulated: order {order}, mean {mean}, ar {ar}, ma {ma}, sigma {sigma}, "
                    f"start {start}, n {n}, numpy default_rng seed {seed}\n")
            f.write("# mle_*: statsmodels.tsa.arima.model.ARIMA(y, order).fit() (exact MLE)\n")
            f.write("# css_*: conditional sum of squares, numpy/scipy (see the script)\n")
            f.write(f"order {p} {d} {q}\n")
            f.write(f"series {fmt(y)}\n")
            f.write(f"mle_mean {fmt([mle_mean])}\n")
            f.write(f"mle_ar {fmt(mle_ar)}\n")
            f.write(f"mle_ma {fmt(mle_ma)}\n")
            f.write(f"mle_sigma2 {fmt([mle_sigma2])}\n")
            f.write(f"mle_llf {fmt([res.llf])}\n")
            f.write(f"mle_forecast {fmt(mle_fc)}\n")
            f.write(f"css_mean {fmt([c_mu])}\n")
            f.write(f"css_ar {fmt(c_ar)}\n")
            f.write(f"css_ma {fmt(c_ma)}\n")
            f.write(f"css_sigma2 {fmt([c_s2])}\n")
            f.write(f"css_css {fmt([c_css])}\n")
            f.write(f"css_forecast {fmt(c_fc)}\n")
        print(name, "mle", mle_mean, mle_ar, mle_ma, mle_sigma2, "css", c_mu, c_ar, c_ma, c_s2)


if __name__ == "__main__":
    main()
