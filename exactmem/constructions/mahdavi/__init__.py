"""Mahdavi, Liao & Thrampoulidis (ICLR 2024): one multi-head attention layer memorizes H(n−1)+1 examples."""
