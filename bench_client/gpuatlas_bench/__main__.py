"""``python -m gpuatlas_bench`` is the ``gpuatlas-bench`` command."""

import sys

from .cli import main

sys.exit(main())
