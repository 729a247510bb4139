"""Kajitsuka & Sato (ICLR 2025): the constructions of Thms B.1/4.1, Cor. 4.1, D.1, E.1, F.1."""
