"""Datasets and exact checks of the papers' assumptions: token sequences, multisets, query/context examples."""
