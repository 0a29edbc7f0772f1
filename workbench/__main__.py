"""``python -m workbench`` starts the desktop app (``python -m workbench.cli`` is the CLI)."""

from workbench.qt.main import main

if __name__ == "__main__":
    raise SystemExit(main())
