#!/usr/bin/env python3
"""Generates a reproduction's claims table from data: the paper's values, typed once in
scenarios/<paper>/claims.toml, against ours, read from the tables of the measured document a
reproduce script wrote from its run, with a verdict computed by the rule below; and its views,
measured tables shown in the doc as generated copies (see "Views" below).

Usage: scripts/claims.py CLAIMS_TOML MEASURED_MD DOC_MD

The table replaces the text between `<!-- generated:claims -->` and `<!-- /generated:claims -->`
in DOC_MD (the markers must be there, once each, when CLAIMS_TOML has claims).

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

Views: a table of the measured document, shown in DOC_MD as it is (the rows and columns chosen,
headers renamed), beside constant columns typed once as data (the paper's values). Each view
replaces the text between `<!-- generated:view:ID -->` and `<!-- /generated:view:ID -->` in
DOC_MD; every view of CLAIMS_TOML needs its markers there once each, and every view marker in
DOC_MD needs its view.

    [[view]]
    id = "fig7-c"                     # unique among the views, [a-z0-9-]
    table = 'Class C / full'          # the table, as a reference names it: a regular expression
    nth = 0                           # searched in its enclosing headings; optional `nth`
    where = { run = "Shared, .*" }    # optional: the rows, as a reference's `where`
    columns = [                       # in order, each one of:
      "run",                          #   a column of the table (its header, as a reference's
                                      #   `col`), shown under that header
      { col = "BTIO run time", header = "run time" },   # the same under another header
      { header = "note", value = "simulated" },         # a constant: this text in every row
      { header = "paper", default = "–", values = [     # a constant by row: the value of the
        { where = { run = "Shared, Native" }, value = "+76 %" },   # first entry whose `where`
      ] },                            #   matches the row; `default` for a row none matches
    ]                                 #   (without one, such a row is an error)

As with a reference, `table` and `nth` pick among the tables under a matching heading that have
every column the view names (shown, or in a `where`). A cell is shown as the measured document
has it (its text, not its first number); constant texts are strings, shown as typed. A `where`
may name any column of the table, shown or not. The block is one line naming its sources (and
the columns typed as data), a blank line, then the table.
An unknown field, a missing `id`, `table` or `columns`, a table the measured document does not
have, a column its table does not have, a `where` no row matches and a row no `values` entry
gives a value to (with no `default`) stop the script with the file, the view and the field.
"""
import ast
import os
import re
import sys
import tomllib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import generated  # noqa: E402

NUMBER = re.compile(r"[-+\u2212]?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?")
ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
VIEW_MARKER = re.compile(r"<!-- (/?)generated:view:(\S*) -->")
VIEW_FIELDS = ("id", "table", "nth", "where", "columns")
COLUMN_FIELDS = ("col", "header", "value", "values", "default")
VALUE_FIELDS = ("where", "value")


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


def cell_text(text):
    """A text as one markdown table cell."""
    return str(text).replace("|", "\\|")


def render_view(view, tables, claims_path, measured_path):
    """A view's markdown (see the docstring): a caption line, a blank line, the table."""
    vid = view.get("id")

    def fail(field, message):
        sys.exit(f"{claims_path}: view {vid}: field {field!r}: {message}")

    def regex(field, text):
        if not isinstance(text, str):
            fail(field, f"must be a regular expression, as a string, not {text!r}")
        try:
            return re.compile(text)
        except re.error as e:
            fail(field, f"not a regular expression ({e}): {text!r}")

    def where_of(field, where):
        if not isinstance(where, dict):
            fail(field, "must be a table of header = regular expression")
        return {k: regex(f"{field}.{k}", v) for k, v in where.items()}

    def text_of(field, value):
        if not isinstance(value, str):
            fail(field, f"must be a string (the text shown), not {value!r}")
        return value

    for key in view:
        if key not in VIEW_FIELDS:
            fail(key, f"unknown field (a view has {', '.join(VIEW_FIELDS)})")
    for key in ("table", "columns"):
        if key not in view:
            fail(key, "missing")
    pattern = regex("table", view["table"])
    nth = view.get("nth", 0)
    if not isinstance(nth, int) or isinstance(nth, bool) or nth < 0:
        fail("nth", f"must be an integer from 0, not {nth!r}")
    where = where_of("where", view.get("where", {}))
    columns = view["columns"]
    if not isinstance(columns, list) or not columns:
        fail("columns", "must be a non-empty array")
    # Each column as (field name for errors, header, kind, spec).
    specs = []
    for i, c in enumerate(columns):
        field = f"columns[{i}]"
        if isinstance(c, str):
            c = {"col": c}
        if not isinstance(c, dict):
            fail(field, f"must be a column's header or a table, not {c!r}")
        for key in c:
            if key not in COLUMN_FIELDS:
                fail(f"{field}.{key}", f"unknown field (a column has {', '.join(COLUMN_FIELDS)})")
        kinds = [k for k in ("col", "value", "values") if k in c]
        if len(kinds) != 1:
            fail(field, "needs exactly one of 'col' (a measured column), 'value' or 'values' "
                 f"(a constant), not {kinds or 'none'}")
        kind = kinds[0]
        if "default" in c and kind != "values":
            fail(f"{field}.default", "only a column of 'values' has a default")
        if kind != "col" and "header" not in c:
            fail(f"{field}.header", "missing (a constant column needs its header)")
        if kind == "col":
            spec = text_of(f"{field}.col", c["col"])
        elif kind == "value":
            spec = text_of(f"{field}.value", c["value"])
        else:
            entries = c["values"]
            if not isinstance(entries, list) or not entries:
                fail(f"{field}.values", "must be a non-empty array of { where = {...}, value = \"...\" }")
            spec = []
            for j, e in enumerate(entries):
                efield = f"{field}.values[{j}]"
                if not isinstance(e, dict):
                    fail(efield, f"must be a table {{ where = {{...}}, value = \"...\" }}, not {e!r}")
                for key in e:
                    if key not in VALUE_FIELDS:
                        fail(f"{efield}.{key}", f"unknown field (an entry has {', '.join(VALUE_FIELDS)})")
                for key in VALUE_FIELDS:
                    if key not in e:
                        fail(f"{efield}.{key}", "missing")
                spec.append((efield, where_of(f"{efield}.where", e["where"]),
                             text_of(f"{efield}.value", e["value"])))
            if "default" in c:
                text_of(f"{field}.default", c["default"])
        header = text_of(f"{field}.header", c.get("header", spec if kind == "col" else ""))
        specs.append((field, header, kind, spec, c.get("default")))

    # Every column the view names, with the field that names it.
    named = [("where", k) for k in where]
    for field, _, kind, spec, _ in specs:
        if kind == "col":
            named.append((f"{field}.col", spec))
        elif kind == "values":
            named += [(f"{efield}.where", k) for efield, ewhere, _ in spec for k in ewhere]
    # As a reference: the tables under a matching heading that have the columns named.
    under = [t for t in tables if pattern.search(t[0])]
    matching = [t for t in under if all(name in t[1] for _, name in named)]
    if not under:
        fail("table", f"{measured_path} has no table under a heading matching {view['table']!r}")
    if len(matching) <= nth:
        if matching:
            fail("nth", f"{measured_path} has {len(matching)} table(s) under a heading matching "
                 f"{view['table']!r} with the columns named, so no table #{nth}")
        heading, header, _ = under[min(nth, len(under) - 1)]
        field, name = next((f, n) for f, n in named if n not in header)
        fail(field, f"no column {name!r} in the table under {heading!r} of {measured_path} "
             f"(its columns: {', '.join(header)})")
    heading, header, rows = matching[nth]

    def matches(row, conditions):
        return all(p.fullmatch(row[k]) for k, p in conditions.items())

    shown = [r for r in rows if matches(r, where)]
    if not shown:
        fail("where", f"no row of the table under {heading!r} of {measured_path} matches")
    typed = list(dict.fromkeys(h for _, h, kind, _, _ in specs if kind != "col"))
    out = [
        f"Generated by `scripts/claims.py` from `{measured_path}` (ours, from the run), view "
        f"`{vid}` of `{claims_path}`"
        + ("; typed there as data: " + ", ".join(f"*{cell_text(h)}*" for h in typed) if typed else "")
        + ".",
        "",
        "| " + " | ".join(cell_text(h) for _, h, _, _, _ in specs) + " |",
        "|" + "---|" * len(specs),
    ]
    for row in shown:
        cells = []
        for field, _, kind, spec, default in specs:
            if kind == "col":
                cells.append(row[spec])
            elif kind == "value":
                cells.append(cell_text(spec))
            else:
                found = [text for _, ewhere, text in spec if matches(row, ewhere)]
                if not found and default is None:
                    fail(f"{field}.values", f"no entry matches the row {row} and there is no 'default'")
                cells.append(cell_text(found[0] if found else default))
        out.append("| " + " | ".join(cells) + " |")
    return out


def replace_views(doc, doc_path, views):
    """DOC with the text between each view's markers replaced by its lines (id -> lines)."""
    found = {}
    for m in VIEW_MARKER.finditer(doc):
        found.setdefault(m.group(2), []).append(m)
    for vid, marks in found.items():
        if vid not in views:
            sys.exit(f"{doc_path}: a marker of view {vid!r}, which the claims file does not have")
        kinds = [m.group(1) for m in marks]
        if kinds != ["", "/"]:
            sys.exit(f"{doc_path}: needs one <!-- generated:view:{vid} --> and one "
                     f"<!-- /generated:view:{vid} -->, in that order")
    for vid in views:
        if vid not in found:
            sys.exit(f"{doc_path}: has no <!-- generated:view:{vid} --> ... "
                     f"<!-- /generated:view:{vid} --> for view {vid!r}")
    # Replaced from the last block to the first, so the earlier offsets stay valid.
    for vid, (begin, end) in sorted(found.items(), key=lambda kv: -kv[1][0].start()):
        doc = doc[: begin.end()] + "\n" + "\n".join(views[vid]) + "\n" + doc[end.start():]
    return doc


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__.split("\n\n")[1])
    claims_path, measured_path, doc_path = sys.argv[1:]
    with open(claims_path, "rb") as f:
        data = tomllib.load(f)
    for key in data:
        if key not in ("claim", "view"):
            sys.exit(f"{claims_path}: unknown top-level field {key!r} (known: [[claim]], [[view]])")
    tables = parse_tables(open(measured_path, encoding="utf-8").read())
    if not isinstance(data.get("view", []), list):
        sys.exit(f"{claims_path}: 'view' must be an array of tables ([[view]])")
    views = {}
    for view in data.get("view", []):
        vid = view.get("id") if isinstance(view, dict) else None
        if not isinstance(vid, str) or not ID.match(vid):
            sys.exit(f"{claims_path}: view id {vid!r} is missing or malformed ([a-z0-9-])")
        if vid in views:
            sys.exit(f"{claims_path}: view id {vid!r} is repeated")
        views[vid] = render_view(view, tables, claims_path, measured_path)
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
    if seen or generated.present(doc, "claims"):
        doc = generated.replace(doc, "claims", "\n".join(out), where=doc_path)
    doc = replace_views(doc, doc_path, views)
    with open(doc_path, "w", encoding="utf-8") as f:
        f.write(doc)
    said = [f"{len(seen)} claims, " + ", ".join(f"{n} {k}" for k, n in counts.items())] if seen else []
    if views:
        said.append(f"{len(views)} views")
    print(f"{doc_path}: " + "; ".join(said or ["nothing to generate"]))


if __name__ == "__main__":
    main()
