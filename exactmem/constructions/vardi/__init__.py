"""The Õ(√N) ReLU memorizer of Vardi et al. as Lemma C.1 of Kajitsuka & Sato, its sizes and tent map."""
