"""``python -m loopscope`` runs the same CLI as the ``loopscope`` script."""

from loopscope.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
