"""Writes for the catalogue: imports, curation and price observations."""
