"""``python -m exactmem`` and the ``exactmem`` command (``docs/cli.md``).

``check`` goes straight to the checker's command (``exactmem.cli.check``), so its path imports only
the package, that command, the chunk reader and the kernel ``exactmem.kernel``
(``docs/certificate.md`` § *What you must trust*); every other
command (and ``check --help``) goes through `exactmem.cli.app`.
"""

import sys


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["check"] and not {"-h", "--help"} & set(argv):
        from exactmem.cli.check import main as check_main

        return check_main(argv)
    from exactmem.cli.app import main as cli_main

    return cli_main(argv)


if __name__ == "__main__":  # not when a spawned worker process (Dask, multiprocessing) re-imports it
    sys.exit(main())
