"""Plotly figures as pure functions, one module per chart family; shared style in style.py."""
