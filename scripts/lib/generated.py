"""Generated blocks of the documentation: the one way a script rewrites one.

A block is the text between `<!-- generated:NAME -->` and `<!-- /generated:NAME -->`; each
marker stands in the document once, the opening one first. A script that measured something
replaces the block's text with what it measured; everything outside the markers stays.

    sys.path.insert(0, "<repository>/scripts/lib")
    import generated
    doc = generated.replace(doc, "server-costs", body, where="docs/physics.md")
"""


def markers(name):
    """The opening and closing markers of block NAME."""
    return f"<!-- generated:{name} -->", f"<!-- /generated:{name} -->"


def present(doc, name):
    """Whether DOC holds either marker of block NAME."""
    begin, end = markers(name)
    return begin in doc or end in doc


def replace(doc, name, body, where="the document"):
    """DOC with block NAME's text replaced by BODY (put between two line breaks). Stops the
    script, naming WHERE and the markers, unless each marker is there once and in order."""
    begin, end = markers(name)
    if doc.count(begin) != 1 or doc.count(end) != 1 or doc.index(begin) > doc.index(end):
        raise SystemExit(f"{where}: needs one {begin} and one {end}, in that order")
    head, rest = doc.split(begin)
    _, tail = rest.split(end)
    return head + begin + "\n" + body + "\n" + end + tail
