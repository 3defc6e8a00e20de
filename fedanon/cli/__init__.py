"""The `fedanon` command line: one module per subcommand group, registered in `main`."""
