"""Reads of the catalogue: GPUs, rental prices, providers, price health; one module per concept."""
