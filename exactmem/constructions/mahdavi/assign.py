"""Head-to-subset assignment graphs (note ``mahdavi.md`` §4.1, §5.4), with networkx.

In the construction of note §4, the T examples are partitioned into S_1, …, S_H with
|S_1| = k and |S_h| = k − 1 (h ≥ 2), k = min(n, d_h). As a bipartite graph heads × examples:

* an **active** edge (h, t) for t ∈ S_h: head h carries a designed, non-saturated attention
  pattern on example t;
* a **saturated** edge (h, t) for h ≥ 2 and t ∉ S_h: head h attends (in the limit) to a
  single context token of example t;
* head 1 has no saturated edges: its values on t ∉ S_1 are simply whatever they are.

This module builds and validates such partitions (each example active in exactly one head,
the sizes above), chooses one by heuristics when the first fails the exact per-partition
certificate of note §4.6, exports the graph (GraphML and JSON), draws it (PNG), and measures
in a *built* model which heads are saturated on each example — the analysis the paper ran
on trained models (``analyze_attention``: a head is saturated when its largest attention
weight exceeds 0.99, note §5.4). Saturation is decided with certified enclosures: a weight
counts as above 99/100 only if its lower bound is, below only if its upper bound is.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Dict, List, Optional, Sequence, Tuple

import networkx as nx

from ...errors import require
from ...data.assumptions import AssumptionError, partition_certificate
from ...data.mahdavi_data import QueryContextData

SATURATION_THRESHOLD = Fraction(99, 100)  # the paper's analyze_attention threshold (note §5.4)


class AssignmentError(ValueError):
    """A partition is not a valid head-to-subset assignment; the message says which rule fails."""


# ----------------------------------------------------------------------------- partitions

def capacity(H: int, k: int) -> int:
    """T = H(k − 1) + 1 examples (note §3.1, §4.1)."""
    return H * (k - 1) + 1


def partition_sizes(T: int, H: int, k: int) -> List[int]:
    """Sizes |S_1| = min(k, T), then k − 1 per head until T is used up (note §4.1)."""
    if T > capacity(H, k):
        raise AssignmentError(f"T = {T} examples exceed the capacity H(k-1)+1 = {capacity(H, k)} "
                              f"(H = {H}, k = {k})")
    sizes = [min(k, T)]
    left = T - sizes[0]
    for _ in range(1, H):
        s = min(k - 1, left)
        sizes.append(s)
        left -= s
    return sizes


def block_partition(T: int, H: int, k: int, order: Optional[Sequence[int]] = None) -> List[List[int]]:
    """Consecutive blocks of ``order`` (default 0..T−1) with the sizes of `partition_sizes`."""
    order = list(range(T)) if order is None else list(order)
    out, pos = [], 0
    for s in partition_sizes(T, H, k):
        out.append(sorted(order[pos:pos + s]))
        pos += s
    return out


def validate_partition(partition: Sequence[Sequence[int]], T: int, H: int, k: int) -> None:
    """The rules of note §4.1: H subsets, each example active in exactly one head,
    |S_1| ≤ k and |S_h| ≤ k − 1 (with equality when T = H(k−1)+1). Raises AssignmentError."""
    if len(partition) != H:
        raise AssignmentError(f"partition has {len(partition)} subsets, expected one per head (H = {H})")
    seen: Dict[int, int] = {}
    for h, S in enumerate(partition):
        for t in S:
            if not isinstance(t, int) or not 0 <= t < T:
                raise AssignmentError(f"head {h + 1}: {t!r} is not an example index in [0, {T})")
            if t in seen:
                raise AssignmentError(f"example {t} is active in heads {seen[t] + 1} and {h + 1}; each example must be "
                                      "active in exactly one head")
            seen[t] = h
    missing = [t for t in range(T) if t not in seen]
    if missing:
        raise AssignmentError(f"examples {missing[:10]} are active in no head; each example must be active in "
                              "exactly one head")
    full = T == capacity(H, k)
    for h, S in enumerate(partition):
        cap = k if h == 0 else k - 1
        if len(S) > cap or (full and len(S) != cap):
            rule = f"|S_{h + 1}| {'=' if full else '<='} {cap}"
            raise AssignmentError(f"head {h + 1} has {len(S)} active examples; the construction needs {rule} "
                                  f"(k = {k}{', T = H(k-1)+1' if full else ''})")


@dataclass
class PartitionChoice:
    partition: List[List[int]]
    strategy: str
    attempts: int
    failures: List[str] = field(default_factory=list)
    certificate: Optional[Dict] = None  # the note §4.6 certificate summary of the chosen partition


def _greedy(data: QueryContextData, H: int, k: int, rng: random.Random) -> Optional[List[List[int]]]:
    """Build S_1, S_2, … in turn from a shuffled pool, keeping each head's queries independent
    (note §4.6 (i)) and restarting a head when some outside query falls in its span ((ii))."""
    from ...arith import linalg
    from ...data.assumptions import outside_span

    sizes = partition_sizes(data.T, H, k)
    pool = list(range(data.T))
    rng.shuffle(pool)
    out: List[List[int]] = []
    for h, size in enumerate(sizes):
        for _restart in range(20):
            cand = list(pool)
            rng.shuffle(cand)
            S: List[int] = []
            for t in cand:
                if len(S) == size:
                    break
                if linalg.rank([data.queries[s] for s in S + [t]]) == len(S) + 1:
                    S.append(t)
            if len(S) < size:
                return None
            if h == 0 or not outside_span(data, S)[0]:
                break
        else:
            return None
        out.append(sorted(S))
        pool = [t for t in pool if t not in S]
    return out


def choose_partition(data: QueryContextData, H: int, k: int, seed: int = 0, strategy: str = "auto",
                     tries: int = 20) -> PartitionChoice:
    """A partition passing the exact certificate of note §4.6 (i), (ii) (and Assumption 2).

    Heuristics, in order (``strategy="auto"``): consecutive ``blocks``; seeded random
    ``shuffle``s; a ``greedy`` build that keeps each head's queries independent. Under
    Assumption 1 (Kruskal rank ≥ n) the first always passes; the others exist for data that
    violate Assumption 1 but still admit a valid partition. Raises `AssignmentError`
    listing the failures when nothing passes.
    """
    rng = random.Random(seed)
    failures: List[str] = []
    attempts = 0
    cert: Dict = {}

    def ok(part) -> bool:
        nonlocal attempts
        attempts += 1
        try:
            cert.update(partition_certificate(data, part))
            return True
        except AssumptionError as e:
            if e.assumption.startswith("Assumption 2"):
                raise
            if len(failures) < 10:
                failures.append(str(e))
            return False

    if strategy in ("auto", "blocks"):
        p = block_partition(data.T, H, k)
        if ok(p):
            return PartitionChoice(p, "blocks", attempts, failures, dict(cert))
    if strategy in ("auto", "shuffle"):
        for _ in range(tries):
            order = list(range(data.T))
            rng.shuffle(order)
            p = block_partition(data.T, H, k, order)
            if ok(p):
                return PartitionChoice(p, "shuffle", attempts, failures, dict(cert))
    if strategy in ("auto", "greedy"):
        for _ in range(tries):
            p = _greedy(data, H, k, rng)
            if p is not None and ok(p):
                return PartitionChoice(p, "greedy", attempts, failures, dict(cert))
    if strategy not in ("auto", "blocks", "shuffle", "greedy"):
        raise AssignmentError(f"unknown strategy {strategy!r}; use auto, blocks, shuffle or greedy")
    raise AssignmentError(f"no valid head-to-subset partition found ({attempts} candidates, strategy {strategy!r}); "
                          f"first failures: " + " | ".join(failures[:3]))


# ----------------------------------------------------------------------------- the graph

def head_node(h: int) -> str:
    return f"h{h + 1}"


def example_node(t: int) -> str:
    return f"x{t}"


def assignment_graph(partition: Sequence[Sequence[int]], T: int) -> nx.Graph:
    """Bipartite graph heads × examples with edge attribute ``state`` = active | saturated.

    Nodes: ``h1``…``hH`` (``bipartite=0``, ``head`` = 1-based index) and ``x0``…``x{T−1}``
    (``bipartite=1``, ``example``, ``active_head``). Edges carry ``state`` and ``head``.
    """
    G = nx.Graph()
    active_of = {t: h for h, S in enumerate(partition) for t in S}
    for h in range(len(partition)):
        G.add_node(head_node(h), bipartite=0, kind="head", head=h + 1, n_active=len(partition[h]))
    for t in range(T):
        G.add_node(example_node(t), bipartite=1, kind="example", example=t, active_head=active_of.get(t, -1) + 1)
    for h, S in enumerate(partition):
        Sset = set(S)
        for t in range(T):
            if t in Sset:
                G.add_edge(head_node(h), example_node(t), state="active", head=h + 1)
            elif h >= 1:
                G.add_edge(head_node(h), example_node(t), state="saturated", head=h + 1)
    return G


def validate_graph(G: nx.Graph, k: int) -> None:
    """The rules of `validate_partition`, read off a graph, plus: every pair (h ≥ 2, t ∉ S_h)
    is a saturated edge and head 1 has none."""
    heads = sorted((d["head"] for _, d in G.nodes(data=True) if d.get("kind") == "head"))
    T = sum(1 for _, d in G.nodes(data=True) if d.get("kind") == "example")
    part = [[] for _ in heads]
    for a, b, d in G.edges(data=True):
        h = d["head"] - 1
        t = G.nodes[b if G.nodes[b].get("kind") == "example" else a]["example"]
        if d["state"] == "active":
            part[h].append(t)
        elif d["state"] == "saturated":
            if h == 0:
                raise AssignmentError(f"head 1 has a saturated edge to example {t}; head 1 is never saturated")
        else:
            raise AssignmentError(f"edge (h{h + 1}, x{t}) has unknown state {d['state']!r}")
    validate_partition([sorted(S) for S in part], T, len(heads), k)
    for h in range(1, len(heads)):
        for t in range(T):
            if t not in part[h] and not G.has_edge(head_node(h), example_node(t)):
                raise AssignmentError(f"pair (head {h + 1}, example {t}) is neither active nor saturated")


def graph_to_json(G: nx.Graph) -> Dict:
    """Node-link JSON (networkx ``node_link_data``), values made JSON-safe."""
    data = nx.node_link_data(G, edges="edges")
    return json.loads(json.dumps(data, default=str))


def write_json(G: nx.Graph, path: str) -> str:
    with open(path, "w") as f:
        json.dump(graph_to_json(G), f, indent=1, sort_keys=True)
    return path


def write_graphml(G: nx.Graph, path: str) -> str:
    """GraphML with scalar attributes only (Fractions and lists become strings)."""
    H = nx.Graph()
    for v, d in G.nodes(data=True):
        H.add_node(v, **{k: _scalar(x) for k, x in d.items()})
    for a, b, d in G.edges(data=True):
        H.add_edge(a, b, **{k: _scalar(x) for k, x in d.items()})
    nx.write_graphml(H, path)
    return path


def _scalar(x):
    return x if isinstance(x, (int, float, str, bool)) else str(x)


# ----------------------------------------------------------------------------- built-model analysis

@dataclass
class HeadAttention:
    """Head h on example t in a built model: certified bounds on its largest attention weight."""

    head: int  # 0-based
    example: int
    max_lo: Fraction
    max_hi: Fraction
    argmax: Optional[int]  # key index whose weight is certainly the largest, if decided

    @property
    def saturated(self) -> Optional[bool]:
        """True if certainly > 99/100, False if certainly < 99/100, None if undecided."""
        if self.max_lo > SATURATION_THRESHOLD:
            return True
        if self.max_hi < SATURATION_THRESHOLD:
            return False
        return None


def _bounds(x) -> Tuple[Fraction, Fraction]:
    if isinstance(x, Fraction):
        return x, x
    from ...arith.linalg import lower_fraction, upper_fraction

    return lower_fraction(x), upper_fraction(x)


def attention_profile(model, data: QueryContextData, prec: int = 128) -> List[List[HeadAttention]]:
    """For every example and head of a built one-layer model: the largest attention weight.

    Runs the model's own forward pass (``exactmem.model.forward`` with a trace; Arb balls
    for softmax, exact for hardmax) — the built model is measured, not the construction's
    intentions. Returns ``profile[t][h]``.
    """
    from ...model import forward
    from ...model.layers import Attention

    res = forward(model, [data.sequence(t) for t in range(data.T)], trace=True, prec=prec)
    entry = next(e for e in res.trace if e.kind == "attention" and isinstance(model.layers[e.layer], Attention))
    out = []
    for t, per_head in enumerate(entry.attention):
        row = []
        for h, rows in enumerate(per_head):
            ws = [_bounds(x) for x in rows[-1]]
            lo = max(l for l, _ in ws)
            hi = max(u for _, u in ws)
            cand = [i for i, (l, u) in enumerate(ws) if u >= lo]
            row.append(HeadAttention(h, t, lo, hi, cand[0] if len(cand) == 1 else None))
        out.append(row)
    return out


@dataclass
class Dominance:
    """Which heads handle example t in the built model (note §5.4's saturation analysis)."""

    example: int
    designed_head: int  # 0-based head with t ∈ S_h
    saturated_heads: List[int]
    unsaturated_heads: List[int]
    undecided_heads: List[int]
    dominant_head: Optional[int]  # the unsaturated head h ≥ 2, or head 1 if all h ≥ 2 are saturated

    @property
    def agrees(self) -> bool:
        """The built model saturates every head h ≥ 2 except the designed one (note §4.3)."""
        return self.dominant_head == self.designed_head and not self.undecided_heads


def dominance(profile: List[List[HeadAttention]], partition: Sequence[Sequence[int]]) -> List[Dominance]:
    """Per example: saturated / unsaturated heads (certified against 99/100) and the dominant head.

    The construction predicts: every head h ≥ 2 with t ∉ S_h saturates; the head with t ∈ S_h
    does not (its designed pattern is interior); head 1 is free. The *dominant* head of t is
    the one unsaturated head among 2..H, or head 1 if heads 2..H are all saturated.
    """
    active_of = {t: h for h, S in enumerate(partition) for t in S}
    out = []
    for t, row in enumerate(profile):
        sat = [a.head for a in row if a.saturated is True]
        uns = [a.head for a in row if a.saturated is False]
        und = [a.head for a in row if a.saturated is None]
        later = [h for h in uns + und if h >= 1]
        dom = later[0] if len(later) == 1 and later[0] in uns else (0 if not later else None)
        out.append(Dominance(t, active_of.get(t, -1), sat, uns, und, dom))
    return out


def annotate(G: nx.Graph, profile: List[List[HeadAttention]], dom: List[Dominance]) -> nx.Graph:
    """Attach measured max attention weights to edges and the dominant head to example nodes."""
    for row in profile:
        for a in row:
            u, v = head_node(a.head), example_node(a.example)
            if G.has_edge(u, v):
                G.edges[u, v]["max_weight_lo"] = str(a.max_lo)
                G.edges[u, v]["max_weight_hi"] = str(a.max_hi)
                G.edges[u, v]["saturated_measured"] = str(a.saturated)
    for d in dom:
        node = G.nodes[example_node(d.example)]
        node["dominant_head"] = (d.dominant_head + 1) if d.dominant_head is not None else 0
        node["saturated_heads"] = len(d.saturated_heads)
        node["agrees"] = d.agrees
    return G


# ----------------------------------------------------------------------------- drawing

def draw(G: nx.Graph, path: str, title: Optional[str] = None) -> str:
    """A PNG of the assignment graph: heads on top, examples below; active edges thick and
    coloured by head, saturated edges thin and grey. If the graph was `annotate`d, an
    example whose dominant head in the built model differs from its designed head is drawn
    with a red ring. (Floats appear here only as drawing coordinates.)"""
    require("matplotlib", "plot", "mahdavi.assign.draw")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    heads = sorted((v for v, d in G.nodes(data=True) if d["kind"] == "head"), key=lambda v: G.nodes[v]["head"])
    exs = sorted((v for v, d in G.nodes(data=True) if d["kind"] == "example"), key=lambda v: G.nodes[v]["example"])
    # examples grouped by their active head, so the picture shows the partition
    exs.sort(key=lambda v: (G.nodes[v]["active_head"], G.nodes[v]["example"]))
    W = max(len(exs), 1)
    pos = {}
    for i, v in enumerate(exs):
        pos[v] = (i, 0.0)
    for i, v in enumerate(heads):
        pos[v] = ((i + 0.5) * W / max(len(heads), 1) - 0.5, 1.0)
    cmap = plt.get_cmap("tab10")
    colour = {G.nodes[v]["head"]: cmap((G.nodes[v]["head"] - 1) % 10) for v in heads}
    fig, ax = plt.subplots(figsize=(max(8.0, 0.45 * W + 2), 4.6))
    for a, b, d in G.edges(data=True):
        (x0, y0), (x1, y1) = pos[a], pos[b]
        if d["state"] == "active":
            ax.plot([x0, x1], [y0, y1], color=colour[d["head"]], lw=2.4, zorder=2)
        else:
            ax.plot([x0, x1], [y0, y1], color="0.8", lw=0.6, ls="--", zorder=1)
    for v in heads:
        h = G.nodes[v]["head"]
        ax.scatter(*pos[v], s=900, color=colour[h], zorder=3, edgecolors="k")
        ax.annotate(f"h{h}", pos[v], ha="center", va="center", fontsize=10, color="white", weight="bold", zorder=4)
        ax.annotate(f"|S_{h}| = {G.nodes[v]['n_active']}", (pos[v][0], pos[v][1] + 0.13), ha="center",
                    va="bottom", fontsize=8, zorder=4)
    for v in exs:
        d = G.nodes[v]
        c = colour.get(d["active_head"], "0.5")
        ring = "red" if d.get("agrees") is False else "k"
        ax.scatter(*pos[v], s=260, color=c, zorder=3, edgecolors=ring, linewidths=2.0 if ring == "red" else 0.8)
        ax.annotate(str(d["example"]), pos[v], ha="center", va="center", fontsize=7, zorder=4)
        if "dominant_head" in d:
            ax.annotate(f"h{d['dominant_head']}" if d["dominant_head"] else "?", (pos[v][0], pos[v][1] - 0.1),
                        ha="center", va="top", fontsize=7, color="0.3", zorder=4)
    handles = [Line2D([0], [0], color="k", lw=2.4, label="active (designed pattern)"),
               Line2D([0], [0], color="0.6", lw=0.8, ls="--", label="saturated (one token)")]
    if any("dominant_head" in d for _, d in G.nodes(data=True)):
        handles.append(Line2D([0], [0], color="w", label="hN under an example: its dominant head, measured"))
    if any("agrees" in d for _, d in G.nodes(data=True)):
        handles.append(Line2D([0], [0], marker="o", color="w", markeredgecolor="red", markersize=9,
                              label="red ring: built model disagrees"))
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.0), ncol=2, fontsize=8, frameon=False)
    ax.set_title(title or "head-to-subset assignment", fontsize=10)
    ax.set_xlim(-1, W)
    ax.set_ylim(-0.4, 1.3)
    ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path
