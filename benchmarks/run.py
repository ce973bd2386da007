"""The kernels' benchmark table (see resample_grad.benchmark): python benchmarks/run.py [--threads 1,2]."""
from resample_grad.benchmark import main

raise SystemExit(main())
