"""MkDocs hook (mkdocs.yml ``hooks:``): a tutorial page shows its notebook's stored outputs.

A tutorial is a pair (``jupytext.toml``): ``NAME.md`` (jupytext Markdown, no outputs) and
``NAME.ipynb`` (executed, outputs kept). The site keeps ``NAME.md`` as the page — the links
of the other guides point at it — but renders it from the paired notebook: each markdown cell
as it is, each code cell as a Python block followed by what it printed (a ``text`` block
titled "output") and any figure it displayed (an inline PNG). ``tests/test_tutorials.py``
checks that the two files hold the same cells, so the page is the .md's text either way.

Chosen over the mkdocs-jupyter plugin: that plugin renders the .ipynb as a page of its own,
which would clash with the .md page of the same name (or break the guides' links to it), and
it pulls in nbconvert; this hook needs only the standard library.
"""

import json
import os
import re

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _fence(text: str, info: str) -> str:
    """``text`` in a fenced block longer than any run of backticks inside it."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{info}\n{text.rstrip()}\n{ticks}"


def _outputs(outputs) -> list:
    parts, stream = [], []

    def flush():
        if stream:
            parts.append(_fence("".join(stream), 'text title="output"'))
            stream.clear()

    for out in outputs:
        kind = out.get("output_type")
        if kind == "stream":
            stream.append("".join(out.get("text", "")))
            continue
        flush()
        if kind == "error":
            parts.append(_fence(ANSI.sub("", "\n".join(out.get("traceback", []))), 'text title="error"'))
            continue
        data = out.get("data", {})
        if "image/png" in data:
            png = "".join(data["image/png"]).replace("\n", "")
            parts.append(f'<p class="nb-figure"><img alt="figure" src="data:image/png;base64,{png}"></p>')
        elif "text/plain" in data:
            parts.append(_fence("".join(data["text/plain"]), 'text title="output"'))
    flush()
    return parts


def notebook_markdown(ipynb_path: str) -> str:
    """The page's Markdown: the notebook's cells, each code cell followed by its outputs."""
    with open(ipynb_path, encoding="utf-8") as f:
        nb = json.load(f)
    parts = []
    for cell in nb["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            parts.append(source)
        elif cell["cell_type"] == "code":
            parts.append(_fence(source, "python"))
            parts.extend(_outputs(cell.get("outputs", [])))
    return "\n\n".join(parts) + "\n"


def on_page_markdown(markdown, page, config, files):
    src = page.file.abs_src_path or ""
    if page.file.src_uri.startswith("tutorials/") and src.endswith(".md"):
        ipynb = src[:-3] + ".ipynb"
        if os.path.exists(ipynb):
            return notebook_markdown(ipynb)
    return markdown
