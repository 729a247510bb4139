"""The command line: the main parser and the commands whose packages sit below the proof files."""
