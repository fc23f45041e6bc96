"""Data sets of the course, generated deterministically by code (nothing is downloaded)."""
