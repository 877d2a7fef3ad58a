"""``python -m retrievekit.core.cli ...``: the ``retrievekit`` command."""

import sys

from retrievekit.core.cli import main

if __name__ == "__main__":  # run as ``python -m``; imported (the docs corpus reads every module) it does nothing
    sys.exit(main())
