"""Entry script of the bundled ``workbench-cli`` executable (PyInstaller runs this as __main__)."""

import sys

from workbench.cli import main

if __name__ == "__main__":
    sys.exit(main())
