"""The sparsepe subcommands, one module each; explore/cli.py registers them."""
