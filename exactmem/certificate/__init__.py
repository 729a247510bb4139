"""Certificates: the writer (producer side) and the small independent checker."""
