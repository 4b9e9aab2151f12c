"""``python -m utdebug`` is the ``utdebug`` command."""

import sys

from utdebug.cli import main

sys.exit(main())
