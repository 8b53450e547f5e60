"""The LLM serving model: throughput per GPU against tokens/s per user, from one physical decode
step (``llm.serving.physics``), fitted on every measured serving point (``llm.serving.fit``)."""
