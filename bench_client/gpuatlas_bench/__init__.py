"""gpuatlas-bench: measure a GPU honestly for GPU Atlas and submit the result.

The package never imports Django and needs only the standard library to load; PyTorch is imported
lazily by the commands that measure (``run``, ``info``), so ``submit`` and ``validate`` work without it.
"""

__version__ = "0.1.0"
CLIENT_NAME = "gpuatlas-bench"
SCHEMA_VERSION = 1
