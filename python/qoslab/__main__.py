"""``python -m qoslab``: the ``qoslab`` command."""

import sys

from qoslab.cli import main

sys.exit(main())
