"""Entry script of the bundled ``workbench`` executable (PyInstaller runs this as __main__)."""

import sys


def _main() -> int:
    args = sys.argv[1:]
    if "--self-test" in args:  # handled here too, so a bundle can be smoke-tested on its own
        from workbench.qt.selftest import run_self_test

        return run_self_test(args)
    from workbench.qt.main import main

    return main()


if __name__ == "__main__":
    sys.exit(_main())
