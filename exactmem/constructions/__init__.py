"""Memorizing networks in exact arithmetic: one package per paper, and the classical ReLU interpolation memorizers."""
