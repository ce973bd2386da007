import sys

from resample_grad.cli import main

sys.exit(main())
