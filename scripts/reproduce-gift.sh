#!/usr/bin/env bash
# Regenerates every measured number of docs/reproductions/gift.md (GIFT, FAST '20, Section 4):
# runs the scenarios under scenarios/gift/ with the fluid engine under the eight policies and
# GIFT's parameter sweeps, twice: with the paper's definitions (pfsqos's defaults) and with the
# authors' artifact's (per-stream shares, no constraint (3), the fixed coupon cap, the
# cumulative system gate). Every table also carries the artifact's allocation metric.
# Writes the tables to docs/reproductions/gift-measured.md, and from them the generated blocks
# of docs/reproductions/gift.md: `generated:gift-coupons` (section s13: GIFT's coupon ledger
# per run, `gift_coupons`) and `generated:gift-solver` (section s14: GIFT's rows with the
# whole LP in one `microlp` call, `lp=whole`, beside the default presolve and block simplex).
# Usage: scripts/reproduce-gift.sh [--quick] [--lanes N] [--sections "s01 s02 ..."] [--parts DIR]
#   --quick: only Fig. 5 in small and the real-system-sized set (s01-s05)
#   --lanes N: run N sections at once (default 2); output order does not depend on it
#   --sections LIST: run only these sections (names below)
#   --parts DIR: keep each section's table in DIR/<section>.md (kept between invocations) and
#     assemble gift-measured.md from every section found there, so a long re-run can be done
#     in parts (a section run again replaces its file)
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
lanes=2
only=""
parts=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) quick=1 ;;
    --lanes) lanes="$2"; shift ;;
    --sections) only="$2"; shift ;;
    --parts) parts="$2"; shift ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
cargo build --release --locked -q -p pfsqos-sim --example gift_repro --example gift_coupons
bin=${CARGO_TARGET_DIR:-target}/release/examples/gift_repro
coupons=${CARGO_TARGET_DIR:-target}/release/examples/gift_coupons
out=docs/reproductions/gift-measured.md
policies="pofs bsip mbw tsa esa tmf rnd gift"
# The artifact's definitions: every policy shares per open stream; GIFT without constraint (3),
# with the fixed outstanding-coupon cap and the never-reset system gate. (No redistribution
# and the headroom-clamped throttle are the defaults of both readings.)
art_gift="gift:share=stream:constraint3=false:window=cap:system_gate=cumulative"
art_policies="pofs:share=stream bsip:share=stream mbw:share=stream tsa:share=stream esa:share=stream tmf:share=stream rnd:share=stream $art_gift"
art_base="pofs:share=stream"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
keep=${parts:-$dir}
mkdir -p "$keep"

s01() {
  echo "## Fig. 5 in small (scenarios/gift/phases-example.toml): RPC-level engine, then fluid engine"
  echo
  $bin scenarios/gift/phases-example.toml --baseline pofs:period_ms=200 bsip:period_ms=200 gift:period_ms=200
  echo
  $bin scenarios/gift/phases-example.toml --fluid --baseline pofs:period_ms=200 bsip:period_ms=200 gift:period_ms=200
  echo
}
s02() {
  echo "## (a) Real-system-sized set: 250 applications, 64 OSTs, 192 nodes (Fig. 7, 8, 9)"
  echo
  echo "### The paper's definitions"
  echo
  $bin scenarios/gift/real-250.toml --seeds 3 $policies
  echo
}
s03() {
  echo "### The artifact's definitions (per-stream shares; GIFT: no constraint (3), coupon cap, cumulative gate)"
  echo
  $bin scenarios/gift/real-250.toml --seeds 3 --baseline $art_base $art_policies
  echo
}
s04() {
  echo "### The same set with processes meeting only at the end of each phase (no lockstep)"
  echo
  $bin scenarios/gift/real-250.toml --seeds 3 --barrier $policies
  echo
  echo "The artifact's definitions, no lockstep, with and without redistribution of leftover bandwidth:"
  echo
  $bin scenarios/gift/real-250.toml --seeds 3 --barrier --baseline $art_base bsip:share=stream bsip:share=stream:redistribute=true $art_gift $art_gift:redistribute=true
  echo
}
s05() {
  echo "### The same set (lockstep) with every run its own application (appset identity = \"run\", 2 seeds)"
  echo
  $bin scenarios/gift/real-250.toml --seeds 2 --per-run $policies
  echo
}
s06() {
  echo "## Width sweep: OSTs per application on the 250-application set (1 seed)"
  echo
  echo "The paper's definitions:"
  echo
  for r in 1,1 1,4 4,16 16,64; do
    $bin scenarios/gift/real-250.toml --seeds 1 --osts-per-app $r --label "$r OSTs" bsip gift > "$dir/rows"
    if [[ $r == 1,1 ]]; then sed -n '1,2p' "$dir/rows"; fi
    sed -n '3,$p' "$dir/rows"
  done
  echo
  echo "The artifact's definitions:"
  echo
  for r in 1,1 1,4 4,16 16,64; do
    $bin scenarios/gift/real-250.toml --seeds 1 --osts-per-app $r --label "$r OSTs" --baseline $art_base bsip:share=stream $art_gift > "$dir/rows"
    if [[ $r == 1,1 ]]; then sed -n '1,2p' "$dir/rows"; fi
    sed -n '3,$p' "$dir/rows"
  done
  echo
}
s07() {
  echo "## (b) Simulation set: 500 applications over 25 days (Fig. 10, 12; 2 seeds)"
  echo
  echo "### The paper's definitions"
  echo
  $bin scenarios/gift/sim-500.toml --seeds 2 $policies
  echo
}
s08() {
  echo "### The artifact's definitions"
  echo
  $bin scenarios/gift/sim-500.toml --seeds 2 --baseline $art_base $art_policies
  echo
}
s09() {
  echo "## Sweeps of GIFT's parameters on the 500-application set (Fig. 11)"
  echo
  echo "### τ (B_thres = 0.1, N = 10⁶)"
  echo
  $bin scenarios/gift/sim-500.toml --seeds 2 gift:tau=0.1 gift:tau=0.5 gift:tau=0.8 gift:tau=0.95
  echo
  echo "### B_thres (τ = 0.8)"
  echo
  $bin scenarios/gift/sim-500.toml --seeds 2 gift:b_thres=0.05 gift:b_thres=0.1 gift:b_thres=0.3 gift:b_thres=0.5 gift:b_thres=0.8
  echo
  echo "### N, receding window in coupon units (τ = 0.8, B_thres = 0.1)"
  echo
  $bin scenarios/gift/sim-500.toml --seeds 2 gift:window_coupons=100000 gift:window_coupons=1000000 gift:window_coupons=10000000
  echo
  echo "### Pessimistic parameters (Fig. 12): τ = 0.1, B_thres = 0.1 and τ = 0.8, B_thres = 0.8"
  echo
  $bin scenarios/gift/sim-500.toml --seeds 2 gift:tau=0.1:b_thres=0.1 gift:tau=0.8:b_thres=0.8
  echo
}
s10() {
  echo "### The same sweeps with the artifact's definitions (baseline: per-stream POFS)"
  echo
  $bin scenarios/gift/sim-500.toml --seeds 2 --baseline $art_base $art_gift:tau=0.1 $art_gift:tau=0.5 $art_gift:tau=0.95 \
    $art_gift:b_thres=0.05 $art_gift:b_thres=0.3 $art_gift:b_thres=0.5 $art_gift:b_thres=0.8 \
    $art_gift:window_coupons=100000 $art_gift:window_coupons=10000000 \
    $art_gift:tau=0.1:b_thres=0.1 $art_gift:tau=0.8:b_thres=0.8
  echo
}
s11() {
  echo "## Contention: 100 to 1,000 applications over the same 25 days (Fig. 14; 2 seeds)"
  echo
  echo "The paper's definitions:"
  echo
  for n in 100 250 500 750 1000; do
    $bin scenarios/gift/sim-500.toml --seeds 2 --apps "$n" --label "$n apps" bsip gift > "$dir/rows11"
    if [[ $n == 100 ]]; then sed -n '1,2p' "$dir/rows11"; fi
    sed -n '3,$p' "$dir/rows11"
  done
  echo
}
s12() {
  echo "The artifact's definitions:"
  echo
  for n in 100 250 500 750 1000; do
    $bin scenarios/gift/sim-500.toml --seeds 2 --apps "$n" --label "$n apps" --baseline $art_base bsip:share=stream $art_gift > "$dir/rows12"
    if [[ $n == 100 ]]; then sed -n '1,2p' "$dir/rows12"; fi
    sed -n '3,$p' "$dir/rows12"
  done
  echo
}
# The coupon ledger behind "Why GIFT gains little here": one row per spec and seed.
coupon_specs="gift gift:window_coupons=100000000 gift:window_coupons=1000000000:b_thres=0.5"
s13() {
  echo "## Coupon totals per run (gift_coupons, one row per seed)"
  echo
  echo "### 250-application set, 3 seeds"
  echo
  $coupons scenarios/gift/real-250.toml --seeds 3 pofs $coupon_specs
  echo
  echo "### 250-application set, every run its own application (appset identity = \"run\"), 3 seeds"
  echo
  $coupons scenarios/gift/real-250.toml --seeds 3 --per-run pofs bsip $coupon_specs
  echo
  echo "### 500 applications over 25 days, 2 seeds"
  echo
  $coupons scenarios/gift/sim-500.toml --seeds 2 gift
  echo
}
# Which of several equally optimal allocations the LP solver returns moves GIFT's rows: the
# default (exact presolve, block simplex) beside the whole LP in one `microlp` call.
s14() {
  echo "## The LP solver: GIFT with the whole LP in one microlp call (lp=whole) beside the default"
  echo
  echo "### 250-application set, the paper's definitions (3 seeds)"
  echo
  $bin scenarios/gift/real-250.toml --seeds 3 gift gift:lp=whole
  echo
  echo "### 250-application set, the artifact's definitions (3 seeds)"
  echo
  $bin scenarios/gift/real-250.toml --seeds 3 --baseline $art_base $art_gift $art_gift:lp=whole
  echo
  echo "### 250-application set, no lockstep, the paper's definitions (3 seeds)"
  echo
  $bin scenarios/gift/real-250.toml --seeds 3 --barrier gift gift:lp=whole
  echo
  echo "### Width sweep, 16-64 OSTs per application, the paper's definitions (1 seed)"
  echo
  $bin scenarios/gift/real-250.toml --seeds 1 --osts-per-app 16,64 gift gift:lp=whole
  echo
  echo "### Width sweep, 16-64 OSTs per application, the artifact's definitions (1 seed)"
  echo
  $bin scenarios/gift/real-250.toml --seeds 1 --osts-per-app 16,64 --baseline $art_base $art_gift $art_gift:lp=whole
  echo
}
sections="s01 s02 s03 s04 s05"
if [[ $quick == 0 ]]; then
  sections="$sections s06 s07 s08 s09 s10 s11 s12 s13 s14"
fi
if [[ -n $only ]]; then
  sections="$only"
fi
# Longest first, so the lanes finish together; each section writes its own file.
running=0
for s in s14 s12 s11 s10 s09 s13 s06 s08 s07 s04 s03 s02 s05 s01; do
  [[ " $sections " == *" $s "* ]] || continue
  # Written aside and moved into place when complete, so an interrupted section leaves no part.
  ( $s > "$dir/$s.part" 2> "$dir/$s.err" && mv "$dir/$s.part" "$keep/$s.md" || { echo "section $s failed" >&2; cat "$dir/$s.err" >&2; exit 1; } ) &
  running=$((running + 1))
  if (( running >= lanes )); then
    wait -n
    running=$((running - 1))
  fi
done
wait
{
  echo "# GIFT Section 4: measured tables"
  echo
  echo "Generated by \`scripts/reproduce-gift.sh\` on $(date -u +%Y-%m-%d) ($(nproc) cores,"
  echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')). Do not edit: rerun the script."
  echo "Each table compares every policy with its baseline (POFS; per-stream POFS for the artifact's"
  echo "definitions) on the same generated application sets (fluid engine), averaged over the seeds"
  echo "each heading states (3 unless said); each seed draws another set. Columns are explained in"
  echo "\`crates/pfsqos-sim/examples/gift_repro.rs\`; \"alloc. eff. BW\" is the artifact's allocation"
  echo "metric (idle decisions count 0 for every policy), \"artifact's alloc.\" the same with the"
  echo "artifact's asymmetry (GIFT and MBW skip idle decisions). Wall times are this machine's"
  echo "(release build, $lanes runs at a time, machine shared with other work)."
  echo "Sections in this file: $(cd "$keep" && ls s??.md 2>/dev/null | sed 's/\.md//' | tr '\n' ' ')(of s01-s14; see the script)."
  echo
  for s in s01 s02 s03 s04 s05 s06 s07 s08 s09 s10 s11 s12 s13 s14; do
    if [[ -f "$keep/$s.md" ]]; then cat "$keep/$s.md"; fi
  done
} > "$dir/all.md"
mv "$dir/all.md" "$out"
echo "wrote $out"
python3 scripts/claims.py scenarios/gift/claims.toml "$out" docs/reproductions/gift.md
python3 - "$out" docs/reproductions/gift.md <<'PY'
"""gift.md's generated:gift-coupons and generated:gift-solver blocks, from gift-measured.md's
sections s13 and s14 (a block whose section is not in the file is left as it is)."""
import re
import sys

sys.path.insert(0, "scripts/lib")
import generated  # noqa: E402

measured, doc = sys.argv[1], sys.argv[2]
text = open(measured).read()


def section(title_start):
    """The tables under each ### heading of the ## section starting with title_start."""
    m = re.search(r"^## " + re.escape(title_start) + r".*?(?=^## |\Z)", text, re.S | re.M)
    if not m:
        return None
    out = {}
    for sub in re.finditer(r"^### (.*?)\n(.*?)(?=^### |\Z)", m.group(0), re.S | re.M):
        rows = [l for l in sub.group(2).splitlines() if l.startswith("| ")]
        head = [c.strip() for c in rows[0].strip("|").split("|")]
        table = []
        for r in rows[1:]:
            # The first column of a name wins: "Δ" and "Δ range" are the I/O time's.
            cells = {}
            for k, v in zip(head, [c.strip() for c in r.strip("|").split("|")]):
                cells.setdefault(k, v)
            table.append(cells)
        out[sub.group(1).strip()] = table
    return out


def span(values, fmt):
    lo, hi = min(values), max(values)
    return fmt.format(lo) if fmt.format(lo) == fmt.format(hi) else fmt.format(lo) + "-" + fmt.format(hi)


def num(cell):
    return float(cell.replace("%", "").strip())


blocks = {}
coupons = section("Coupon totals per run")
if coupons:
    lines = [
        "Generated by `scripts/reproduce-gift.sh` from section s13 of "
        "[`gift-measured.md`](gift-measured.md) (`gift_coupons`, one run per spec and seed). "
        "Ranges are over the seeds; \"I/O\" is the mean over the seeds of each seed's mean "
        "application I/O time, its change against POFS's mean of the same seeds.",
        "",
    ]
    for title, rows in coupons.items():
        by = {}
        for r in rows:
            by.setdefault(r["policy"], []).append(r)
        base = by.get("pofs")
        base_io = sum(num(r["I/O time s"]) for r in base) / len(base) if base else None
        lines += [f"{title}:", ""]
        lines += [
            "| spec | coupon worth issued GB | share of bytes written | redeemed | regret paid node-h | I/O s | against POFS |",
            "|---|---|---|---|---|---:|---:|",
        ]
        for spec, rs in by.items():
            io = sum(num(r["I/O time s"]) for r in rs) / len(rs)
            delta = f"{100 * (io / base_io - 1):+.1f} %" if base_io and spec != "pofs" else ""
            if rs[0]["issued GB"] == "–":
                cells = ["–"] * 4
            else:
                red = [num(r["redeemed % of issued"]) for r in rs if r["redeemed % of issued"] != "–"]
                cells = [
                    span([num(r["issued GB"]) for r in rs], "{:.1f}"),
                    span([num(r["issued % of written"]) for r in rs], "{:.4f}") + " %",
                    (span(red, "{:.1f}") + " %") if red else "–",
                    span([num(r["paid node-h"]) for r in rs], "{:.2f}"),
                ]
            lines.append(f"| `{spec}` | " + " | ".join(cells) + f" | {io:,.1f} | {delta} |")
        lines.append("")
    blocks["gift-coupons"] = "\n".join(lines).rstrip("\n")
solver = section("The LP solver")
if solver:
    lines = [
        "Generated by `scripts/reproduce-gift.sh` from section s14 of "
        "[`gift-measured.md`](gift-measured.md): mean application I/O time against POFS "
        "(per-stream POFS for the artifact's definitions), mean over the seeds, and its range.",
        "",
        "| set | GIFT | default (presolve, block simplex) | whole LP (`lp=whole`) |",
        "|---|---|---|---|",
    ]
    for title, rows in solver.items():
        gifts = [r for r in rows if r["policy"].startswith("gift")]
        plain = [r for r in gifts if not r["policy"].endswith(":lp=whole")]
        whole = [r for r in gifts if r["policy"].endswith(":lp=whole")]
        for p, w in zip(plain, whole):
            name = "gift" if p["policy"] == "gift" else "gift (artifact)"
            lines.append(
                f"| {title} | {name} | {p['Δ']} ({p['Δ range']}) | {w['Δ']} ({w['Δ range']}) |"
            )
    blocks["gift-solver"] = "\n".join(lines)
d = open(doc).read()
for name, body in blocks.items():
    if not generated.present(d, name):
        print(f"{doc} has no {generated.markers(name)[0]} section: not written")
        continue
    d = generated.replace(d, name, body, where=doc)
open(doc, "w").write(d)
print(f"wrote the generated blocks {', '.join(blocks) or '(none)'} of {doc}")
PY
