"""``python -m pb_gym.experiments.cli``: the ``pb-gym`` command without its console script."""

import sys

from pb_gym.experiments.cli import main

sys.exit(main())
