"""Dana, Pydi & Chevaleyre (AISTATS 2025): attention-only memorizers of associations and distributions."""
