"""Attack scenarios against the real `pinwheel serve` process: each starts its own server, attacks it
with ordinary client libraries on 127.0.0.1, and checks that it stays up and that a well-behaved
viewer keeps being served."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
