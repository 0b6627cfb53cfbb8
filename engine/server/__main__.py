"""``python -m sceneforge.engine.server``: see :mod:`engine.server.main`."""

import sys

from sceneforge.engine.server.main import main

sys.exit(main())
