"""``python -m memdir``: the same command line as ``memdir``."""

from memdir.cli import main

if __name__ == "__main__":
    main()
