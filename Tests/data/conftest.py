"""`pinwheel serve --data` end to end: each test writes a data file, starts the real server on it and
reads what `hello`, the batches and `/metrics` say."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
