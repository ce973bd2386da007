"""python -m resample_grad.models OUT_DIR: writes the example models."""
import sys

from resample_grad.models import build_all

for path in build_all(sys.argv[1] if len(sys.argv) > 1 else "models_out"):
    print(path)
