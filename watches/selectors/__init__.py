"""Reads of the watches app: the figures watches follow (readings), which watches a write moved
(changes), and the lists the pages, the API and the feeds show (lists)."""
