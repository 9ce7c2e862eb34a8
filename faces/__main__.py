"""`python -m gpuscout` is the `gpuscout` command."""

from gpuscout.cli.app import main

main()
