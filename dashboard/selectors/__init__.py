"""Reads for the dashboard's pages and the API, one module per entity; callers import from the module that defines the thing."""
