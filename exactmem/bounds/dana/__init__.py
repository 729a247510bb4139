"""Dana, Pydi & Chevaleyre's statements as checked reports and lower-bound certificates."""
