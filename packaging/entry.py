"""Entry script of the bundled executables (PyInstaller runs this as __main__).

``workbench`` starts the app (or the self-test with ``--self-test``); ``workbench-cli`` is a
symbolic link to the same executable and runs the command-line front end.
"""

import multiprocessing
import os
import sys


def _main() -> int:
    multiprocessing.freeze_support()  # a spawned child runs its task here and exits
    args = sys.argv[1:]
    if os.path.basename(sys.argv[0]).startswith("workbench-cli"):
        from workbench.cli import main as cli_main

        return cli_main(args)
    if "--self-test" in args:  # handled here too, so a bundle can be smoke-tested on its own
        from workbench.qt.selftest import run_self_test

        return run_self_test(args)
    from workbench.qt.main import main

    return main()


if __name__ == "__main__":
    sys.exit(_main())
