"""``python -m evalloop``: the same command line as the installed ``evalloop`` script
(``docs/exit-codes.md``), for a checkout used without ``pip install``."""

from evalloop.cli.main import main

if __name__ == "__main__":
    main()
