"""``python -m qoslab.cli``: the ``qoslab`` command."""

import sys

from qoslab.cli import main

sys.exit(main())
