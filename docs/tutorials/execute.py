"""Re-pair and re-execute the tutorial notebooks, keeping their outputs.

    python docs/tutorials/execute.py            # all four
    python docs/tutorials/execute.py 02         # those whose name starts with 02

Each tutorial is a pair (``jupytext.toml``): ``NAME.md``, jupytext's Markdown (what you edit
and diff; the page of the docs site), and ``NAME.ipynb``, the executed notebook with its
outputs. This script takes the cells of each ``NAME.md``, executes them top to bottom in a
fresh ``python3`` kernel (working directory: this folder) and writes ``NAME.ipynb`` with the
outputs. It records no timings and numbers the cells ``cell-1``, ``cell-2``, … so that
re-running an unchanged tutorial rewrites the same file. If you edited a notebook in Jupyter
without the jupytext extension, bring the change to the .md first:
``jupytext --sync docs/tutorials/NAME.ipynb``.

The kernel starts with matplotlib's inline backend (``--matplotlib=inline``, what
``%matplotlib inline`` does in a notebook), so the figures of tutorial 1 are stored as images.

Needs the ``docs`` extra (jupytext, nbclient via nbmake, ipykernel, matplotlib).
``tests/test_tutorials.py`` fails when a pair disagrees or a notebook's stored output is not
what its code prints now.
"""

import os
import sys
import time

import jupytext
import nbclient
import nbformat

HERE = os.path.dirname(os.path.abspath(__file__))
KERNEL = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


def execute(md_path: str) -> str:
    """Execute the cells of ``md_path`` and write the paired .ipynb; returns its path."""
    nb = jupytext.read(md_path, fmt="md")
    for i, cell in enumerate(nb.cells, 1):
        cell.id = f"cell-{i}"
        cell.metadata = {}
    nb.metadata = {"jupytext": {"formats": "ipynb,md", "notebook_metadata_filter": "-all",
                                "cell_metadata_filter": "-all"},
                   "kernelspec": KERNEL, "language_info": {"name": "python"}}
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3", record_timing=False,
                            extra_arguments=["--matplotlib=inline"],
                            resources={"metadata": {"path": HERE}}).execute()
    nb.metadata["language_info"] = {"name": "python"}  # not the kernel's version details
    out = md_path[:-3] + ".ipynb"
    nbformat.validate(nb)
    with open(out, "w", encoding="utf-8") as f:
        nbformat.write(nb, f)
    return out


def main(prefixes):
    names = sorted(p for p in os.listdir(HERE) if p.endswith(".md") and p[:2].isdigit())
    if prefixes:
        names = [p for p in names if any(p.startswith(x) for x in prefixes)]
    for name in names:
        t = time.perf_counter()
        out = execute(os.path.join(HERE, name))
        print(f"{os.path.relpath(out)}: executed in {time.perf_counter() - t:.1f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
