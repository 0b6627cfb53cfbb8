"""``python -m engine.server``: see :mod:`engine.server.main`."""
import sys

from engine.server.main import main

sys.exit(main())
