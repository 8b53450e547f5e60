"""API v1 views, by area."""
