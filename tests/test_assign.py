"""Head-to-subset assignment graphs (exactmem.constructions.mahdavi.assign): validity, heuristics, export, built-model analysis."""

import importlib.util

import json

import networkx as nx
import pytest

from exactmem.constructions.mahdavi import assign
from exactmem.data.assumptions import AssumptionError
from exactmem.data.mahdavi_data import QueryContextData, random_query_context


def test_sizes_and_blocks():
    assert assign.partition_sizes(7, 3, 3) == [3, 2, 2]
    assert assign.partition_sizes(5, 3, 3) == [3, 2, 0]
    assert assign.block_partition(7, 3, 3) == [[0, 1, 2], [3, 4], [5, 6]]
    with pytest.raises(assign.AssignmentError, match="exceed the capacity"):
        assign.partition_sizes(8, 3, 3)


@pytest.mark.parametrize("part,msg", [
    ([[0, 1, 2], [3, 4], [4, 5]], "active in heads 2 and 3"),
    ([[0, 1, 2], [3, 4], [5]], "active in no head"),
    ([[0, 1], [2, 3, 4], [5, 6]], "head 1 has 2 active examples"),
    ([[0, 1, 2], [3, 4]], "expected one per head"),
    ([[0, 1, 2], [3, 4], [5, 9]], "not an example index"),
])
def test_validate_partition_names_the_rule(part, msg):
    with pytest.raises(assign.AssignmentError, match=msg):
        assign.validate_partition(part, 7, 3, 3)


def test_graph_edges_states_and_validation():
    part = [[0, 1, 2], [3, 4], [5, 6]]
    G = assign.assignment_graph(part, 7)
    states = [d["state"] for _, _, d in G.edges(data=True)]
    assert states.count("active") == 7
    assert states.count("saturated") == 2 * 7 - 4  # heads 2, 3 saturate every example they are not active on
    assert not any(G.has_edge("h1", f"x{t}") for t in range(3, 7))  # head 1 never saturates
    assign.validate_graph(G, 3)
    G.remove_edge("h2", "x0")
    with pytest.raises(assign.AssignmentError, match="neither active nor saturated"):
        assign.validate_graph(G, 3)


@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None, reason="needs the plot extra (matplotlib)")
def test_export_graphml_json_png(tmp_path):
    G = assign.assignment_graph([[0, 1, 2], [3, 4], [5, 6]], 7)
    gm = assign.write_graphml(G, str(tmp_path / "g.graphml"))
    back = nx.read_graphml(gm)
    edges = lambda g: {(frozenset((a, b)), d["state"], int(d["head"])) for a, b, d in g.edges(data=True)}  # noqa
    assert edges(back) == edges(G)
    js = json.load(open(assign.write_json(G, str(tmp_path / "g.json"))))
    assert len(js["edges"]) == G.number_of_edges() and len(js["nodes"]) == 10
    png = assign.draw(G, str(tmp_path / "g.png"))
    assert open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n"


def _kruskal_deficient():
    """n = 3, d = 4, H = 2, T = 5; x2 = x0 + x1, so the Kruskal rank is 2 < n = 3 and the
    consecutive partition S_1 = {0, 1, 2} fails, but other partitions pass note §4.6."""
    q = [(1, 0, 0, 0), (0, 1, 0, 0), (1, 1, 0, 0), (0, 0, 1, 0), (1, 2, 3, 5)]
    E = ((1, 0, 2, 0), (0, 1, 0, 3), (2, 1, 1, 1))
    Es = [E, ((1, 1, 0, 0), (0, 1, 1, 0), (0, 0, 1, 1)), ((2, 0, 0, 1), (0, 2, 1, 0), (1, 0, 2, 0)),
          ((1, 2, 0, 0), (0, 0, 1, 2), (3, 0, 0, 1)), ((0, 1, 2, 0), (1, 0, 0, 2), (2, 2, 1, 0))]
    return QueryContextData(q, Es, (1, 2, 3, 4, 5))


def test_heuristics_find_a_partition_when_blocks_fail():
    data = _kruskal_deficient()
    ch = assign.choose_partition(data, H=2, k=3, seed=0)
    assert ch.strategy in ("shuffle", "greedy") and ch.failures
    assert "linearly dependent" in ch.failures[0]
    assign.validate_partition(ch.partition, 5, 2, 3)
    S1 = ch.partition[0]
    assert sorted(S1) != [0, 1, 2]


def test_no_valid_partition_is_a_clear_error():
    # parallel queries: whichever head holds one alone, the other lies in its span
    q = [(1, 0, 0), (2, 0, 0), (0, 0, 1)]
    Es = [((1, 0, 0), (0, 1, 1)), ((1, 1, 0), (0, 0, 1)), ((2, 0, 1), (0, 1, 0))]
    data = QueryContextData(q, Es, (1, 2, 3))
    with pytest.raises(assign.AssignmentError, match="no valid head-to-subset partition"):
        assign.choose_partition(data, H=2, k=2, seed=0, tries=3)


def test_rank_deficient_context_is_not_retried_as_a_partition_problem():
    data = random_query_context(5, 2, 4, seed=0)
    bad = QueryContextData(data.queries, (((1, 0, 0, 0), (2, 0, 0, 0)),) + data.contexts[1:], data.labels)
    with pytest.raises(AssumptionError, match="Assumption 2"):
        assign.choose_partition(bad, H=4, k=2)
