"""LLM inference: the measured serving points, the one LLM model and its stored fit (``llm.serving``:
batched serving and the single stream), and the
figures the rankings, GPU pages, the model page and the fit calculator read (``llm.selectors``).
It reads the catalogue and the benchmark results; dashboard, fitcalc and api read it, never the reverse."""
