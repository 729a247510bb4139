"""Shared exact arithmetic: rationals and their bits, exact linear algebra, enclosures, checked steps."""
