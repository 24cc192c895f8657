"""``python -m convexmetric``: the ``convexmetric`` command."""

from convexmetric.cli.launch import main

if __name__ == "__main__":  # pragma: no cover
    main()
