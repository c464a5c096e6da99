"""``python -m client_cache.testing.apiserver``: run the embedded API server."""

import sys

from client_cache.testing.apiserver.process import main

sys.exit(main())
