"""The rankings' pure rules and arithmetic: use cases (use_cases.py) and the method (maths.py)."""
