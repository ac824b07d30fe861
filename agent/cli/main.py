"""The entry point: run the typer application and turn every failure into one line.

Each command imports what it needs when it runs (pip's habit), so start-up is typer and
the option declarations; ``--version`` alone is answered before even typer loads.
"""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:] == ["--version"]:
        from agent._version import __version__

        print(f"dflash-doctor {__version__}")
        sys.exit(0)
    import typer

    from agent.cli.application import app
    from tools.errors import DoctorError

    if not sys.argv[1:]:
        app()  # no command at all: typer's help, as a bare `dflash-doctor` always showed
    try:
        # Not standalone: typer's usage errors come here, to be one line like every other
        # error instead of a usage banner and a boxed message.
        code = app(standalone_mode=False)
    except typer.Abort:
        print("dflash-doctor: interrupted", file=sys.stderr)
        sys.exit(130)
    except typer.TyperException as exc:
        # A usage error (an unknown option, a bad value): its message, and where to look.
        formatted = getattr(exc, "format_message", None)
        raw = formatted() if callable(formatted) else str(exc)
        message = " ".join(str(raw).split())
        ctx = getattr(exc, "ctx", None)
        where = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
        print(f"dflash-doctor: error: {message}{where}", file=sys.stderr)
        code = getattr(exc, "exit_code", 2)
        sys.exit(code if isinstance(code, int) else 2)
    except DoctorError as exc:
        # One line, no traceback: what went wrong and where is in the message.
        message = " ".join(str(exc).split())
        print(f"dflash-doctor: error: {message}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        print("dflash-doctor: interrupted", file=sys.stderr)
        sys.exit(130)
    # A command's `typer.Exit(code)` comes back as its code.
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
