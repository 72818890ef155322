#!/usr/bin/env python3
"""Generates a reproduction's claims table from data: the paper's values, typed once in
scenarios/<paper>/claims.toml, against ours, read from the tables of the measured document a
reproduce script wrote from its run, with a verdict computed by the rule below.

Usage: scripts/claims.py CLAIMS_TOML MEASURED_MD DOC_MD

The table replaces the text between `<!-- generated:claims -->` and `<!-- /generated:claims -->`
in DOC_MD (the markers must be there, once each).

claims.toml:

    [[claim]]
    id = "fig7-ostcost"              # unique, [a-z0-9-]
    section = "Fig. 7"
    what = "OSTCost, IOR FPP, 64 processes, stripe count 8, iez"
    paper = 1.01
    unit = ""                         # printed after both values
    tolerance = { relative = 0.05 }   # or absolute = x, at_least = x, at_most = x
    ours = "a"                        # an expression over the references below
    a = { table = "Fig. 7", col = "OSTCost", where = { placer = "iez", case = ".*64 processes.*" } }
    explanation = "..."               # optional: the mechanism, no measured number
    explained_if = "below"            # when the explanation holds: below, above, any
    paper_text = "significant gain"   # optional: how the paper states a claim without a number
                                      # (then `paper` and `tolerance` are our reading of it)

A reference names a table by a regular expression searched in its enclosing headings
(joined by " / "; `nth` picks the n-th such table, from 0), a column
by its header (exact; a header that repeats in its table is named with the header before it,
"Δ I/O time s"), and rows by `where`: header -> regular expression matched against the
whole cell. It reads the first number of each matching cell (`index` picks another), in the
table's order, so a reference may give several values; arithmetic then works element by
element and `max`, `min`, `mean` reduce, `cat`
joins. `pct(a, b)` is (a / b - 1) x 100. Expressions are
parsed, never evaluated as code: numbers, references, + - * /, and those functions only.

The verdict rule (the same for every paper):
* agrees: ours is within the tolerance of the paper's value;
* explained: outside it, and the claim carries an explanation whose condition holds (ours below
  the paper's value, above it, or either);
* disagrees: outside it with no explanation, or the explanation's condition fails;
* not measured: the run has no measurement for it (the table or row is missing).
"""
import ast
import re
import sys
import tomllib

BEGIN = "<!-- generated:claims -->"
END = "<!-- /generated:claims -->"
NUMBER = re.compile(r"[-+\u2212]?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?")
ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")


class NotMeasured(Exception):
    pass


def parse_tables(text):
    """Every markdown table with its enclosing headings, joined by " / ": (heading, header, rows)."""
    tables = []
    stack = []  # (level, title) of the enclosing headings
    heading = ""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#"):
            level = len(line) - len(line.lstrip("#"))
            stack = [h for h in stack if h[0] < level] + [(level, line.lstrip("#").strip())]
            heading = " / ".join(t for _, t in stack)
        if line.startswith("|") and i + 1 < len(lines) and re.match(r"^\|[-:| ]+\|$", lines[i + 1]):
            header = [c.strip() for c in line.strip().strip("|").split("|")]
            # A header that repeats (GIFT's tables have a "Δ" after every metric) is named by
            # the column before it: "Δ I/O time s", "Δ run time s", ...
            repeated = {h for h in header if header.count(h) > 1}
            header = [
                f"{h} {header[k - 1]}" if h in repeated and k > 0 else h
                for k, h in enumerate(header)
            ]
            rows = []
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                cells = [c.strip() for c in lines[i].strip().strip("|").split("|")]
                if len(cells) == len(header):
                    rows.append(dict(zip(header, cells)))
                i += 1
            tables.append((heading, header, rows))
            continue
        i += 1
    return tables


def number(cell, index):
    found = NUMBER.findall(cell)
    if len(found) <= index:
        raise NotMeasured(f"no number #{index} in cell {cell!r}")
    return float(found[index].replace(",", "").replace("\u2212", "-"))


def lookup(tables, ref, claim_id):
    for key in ref:
        if key not in ("table", "col", "where", "index", "nth"):
            sys.exit(f"claim {claim_id}: unknown reference field {key!r}")
    pattern = re.compile(ref["table"])
    matching = [t for t in tables if pattern.search(t[0]) and ref["col"] in t[1]]
    nth = ref.get("nth", 0)
    if len(matching) <= nth:
        raise NotMeasured(f"no table under a heading matching {ref['table']!r} with column {ref['col']!r}")
    _, header, rows = matching[nth]
    where = {k: re.compile(v) for k, v in ref.get("where", {}).items()}
    for k in where:
        if k not in header:
            raise NotMeasured(f"table {ref['table']!r} has no column {k!r}")
    values = [
        number(r[ref["col"]], ref.get("index", 0))
        for r in rows
        if all(p.fullmatch(r[k]) for k, p in where.items())
    ]
    if not values:
        raise NotMeasured(f"no row of {ref['table']!r} matches {ref.get('where')}")
    return values


def broadcast(op, a, b):
    if len(a) != len(b) and 1 not in (len(a), len(b)):
        raise ValueError(f"cannot combine {len(a)} values with {len(b)}")
    n = max(len(a), len(b))
    return [op(a[i if len(a) > 1 else 0], b[i if len(b) > 1 else 0]) for i in range(n)]


def evaluate(expr, refs):
    """Evaluates the restricted expression language over lists of floats."""
    ops = {
        ast.Add: lambda x, y: x + y,
        ast.Sub: lambda x, y: x - y,
        ast.Mult: lambda x, y: x * y,
        ast.Div: lambda x, y: x / y,
    }
    reducers = {"max": max, "min": min, "mean": lambda v: sum(v) / len(v)}

    def ev(node):
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return [float(node.value)]
        if isinstance(node, ast.Name):
            if node.id not in refs:
                raise ValueError(f"unknown reference {node.id!r}")
            return refs[node.id]()
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return [-x for x in ev(node.operand)]
        if isinstance(node, ast.BinOp) and type(node.op) in ops:
            return broadcast(ops[type(node.op)], ev(node.left), ev(node.right))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
            name = node.func.id
            args = [ev(a) for a in node.args]
            if name in reducers and len(args) >= 1:
                return [reducers[name]([x for a in args for x in a])]
            if name == "pct" and len(args) == 2:
                return broadcast(lambda x, y: (x / y - 1.0) * 100.0, *args)
            if name == "cat" and args:
                return [x for a in args for x in a]
            if name == "abs" and len(args) == 1:
                return [abs(x) for x in args[0]]
        raise ValueError(f"not allowed in an expression: {ast.dump(node)[:80]}")

    return ev(ast.parse(expr, mode="eval"))


def within(ours, paper, tol):
    if "relative" in tol:
        return abs(ours - paper) <= tol["relative"] * abs(paper)
    if "absolute" in tol:
        return abs(ours - paper) <= tol["absolute"]
    if "at_least" in tol:
        return ours >= tol["at_least"]
    if "at_most" in tol:
        return ours <= tol["at_most"]
    raise ValueError(f"unknown tolerance {tol}")


def describe_tolerance(tol, unit):
    u = f" {unit}" if unit and unit not in ("x",) else unit
    if "relative" in tol:
        return f"within {tol['relative'] * 100:g} %"
    if "absolute" in tol:
        return f"within ±{tol['absolute']:g}" + (" points" if unit == "%" else u)
    if "at_least" in tol:
        return f"at least {tol['at_least']:g}{u}"
    return f"at most {tol['at_most']:g}{u}"


def fmt(v, unit, digits):
    s = f"{v:,.{digits}f}"
    if unit == "%":
        s = ("+" if v > 0 else "") + s + " %"
    elif unit:
        s += unit if unit == "x" else f" {unit}"
    return s


def verdict(claim, ours):
    paper = claim["paper"]
    if within(ours, paper, claim["tolerance"]):
        return "agrees"
    cond = claim.get("explained_if", "any")
    if cond not in ("below", "above", "any"):
        sys.exit(f"claim {claim['id']}: explained_if must be below, above or any")
    if "explanation" in claim and (
        cond == "any" or (cond == "below" and ours < paper) or (cond == "above" and ours > paper)
    ):
        return "explained"
    return "disagrees"


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__.split("\n\n")[1])
    claims_path, measured_path, doc_path = sys.argv[1:]
    with open(claims_path, "rb") as f:
        data = tomllib.load(f)
    tables = parse_tables(open(measured_path, encoding="utf-8").read())
    seen = set()
    out = [
        f"Generated by `scripts/claims.py` from `{claims_path}` (the paper's values) and "
        f"`{measured_path}` (ours, from the run). Verdict rule: [Claims tables](README.md).",
        "",
        "| claim | paper | ours | tolerance | verdict | why |",
        "|---|---:|---:|---|---|---|",
    ]
    counts = {}
    for claim in data.get("claim", []):
        cid = claim.get("id", "")
        if not ID.match(cid) or cid in seen:
            sys.exit(f"{claims_path}: claim id {cid!r} is missing, malformed or repeated")
        seen.add(cid)
        for field in ("section", "what", "paper", "tolerance", "ours"):
            if field not in claim:
                sys.exit(f"{claims_path}: claim {cid} has no {field!r}")
        unit = claim.get("unit", "")
        digits = claim.get("digits", 1)
        refs = {}
        for k, v in claim.items():
            if isinstance(v, dict) and "table" in v:
                refs[k] = (lambda ref=v: lookup(tables, ref, cid))
        why = claim.get("explanation", "")
        try:
            values = evaluate(claim["ours"], refs)
            ours_text = " / ".join(fmt(x, unit, digits) for x in values)
            # A claim over several cells is judged cell by cell; the worst verdict counts.
            order = ["agrees", "explained", "disagrees"]
            verdicts = [verdict(claim, x) for x in values]
            v = max(verdicts, key=order.index)
            if len(values) > 1:
                inside = sum(1 for x in values if within(x, claim["paper"], claim["tolerance"]))
                v = f"{v} ({inside} of {len(values)} within)"
            if v.startswith("agrees"):
                why = claim.get("agrees_note", "")
        except NotMeasured as e:
            ours_text = "not measured"
            v = "not measured"
            why = claim.get("not_measured", str(e))
        counts[v.split(" (")[0]] = counts.get(v.split(" (")[0], 0) + 1
        out.append(
            f"| {claim['section']}: {claim['what']} | "
            f"{claim.get('paper_text', fmt(claim['paper'], unit, digits))} | "
            f"{ours_text} | {describe_tolerance(claim['tolerance'], unit)} | **{v}** | {why} |"
        )
    out.append("")
    out.append(
        "Verdicts: "
        + ", ".join(f"{n} {k}" for k, n in sorted(counts.items(), key=lambda kv: -kv[1]))
        + f" of {len(seen)} claims."
    )
    doc = open(doc_path, encoding="utf-8").read()
    if doc.count(BEGIN) != 1 or doc.count(END) != 1 or doc.index(BEGIN) > doc.index(END):
        sys.exit(f"{doc_path}: needs one {BEGIN} and one {END}, in that order")
    head, rest = doc.split(BEGIN)
    _, tail = rest.split(END)
    with open(doc_path, "w", encoding="utf-8") as f:
        f.write(head + BEGIN + "\n" + "\n".join(out) + "\n" + END + tail)
    print(f"{doc_path}: {len(seen)} claims, " + ", ".join(f"{n} {k}" for k, n in counts.items()))


if __name__ == "__main__":
    main()
