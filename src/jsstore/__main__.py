"""``python -m jsstore serve ...`` (the same as the ``jsstore`` command)."""

import sys

from jsstore.cli.main import main

sys.exit(main())
