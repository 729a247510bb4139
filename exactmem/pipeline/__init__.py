"""The certify pipeline: proof file -> build -> forward pass -> certificate -> kernel verdict."""
