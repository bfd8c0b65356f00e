"""The ``evalkit`` command line: a thin layer over the library.

Each command lives in its own module and is imported only when it runs (or
when ``--help`` lists it), and command modules import heavy libraries inside
the command body, so ``evalkit --help`` stays fast. Errors are handled here,
in one place: a known :class:`~evalkit.errors.EvalkitError` becomes one line on
stderr and its exit code; Ctrl-C exits 130; a traceback is shown only with
``--debug``.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import os
import sys
import traceback
from collections.abc import Iterator
from typing import NoReturn

import click

from evalkit._version import __version__
from evalkit.cli._vocabulary import Group
from evalkit.errors import EvalkitError

# name -> (module, attribute). Add a command by adding its module here.
COMMANDS: dict[str, tuple[str, str]] = {
    "split": ("evalkit.cli.split_cmd", "split_command"),
    "compare": ("evalkit.cli.compare_cmd", "compare_command"),
    "gate": ("evalkit.cli.gate_cmd", "gate_command"),
    "audit": ("evalkit.cli.audit_cmd", "audit_command"),
    "prompts": ("evalkit.cli.prompts_cmd", "prompts_command"),
    "score": ("evalkit.cli.score_cmd", "score_command"),
    "rescore": ("evalkit.cli.rescore_cmd", "rescore_command"),
    "contract": ("evalkit.cli.contract_cmd", "contract_group"),
    "card": ("evalkit.cli.card_cmd", "card_command"),
    "ledger": ("evalkit.cli.ledger_cmd", "ledger_command"),
    "plan": ("evalkit.cli.plan_cmd", "plan_command"),
    "tokens": ("evalkit.cli.tokens_cmd", "tokens_command"),
    "generate": ("evalkit.cli.generate_cmd", "generate_command"),
    "reload-check": ("evalkit.cli.reload_check_cmd", "reload_check_command"),
    "smoke": ("evalkit.cli.smoke_cmd", "smoke_command"),
}

INTERNAL_ERROR_EXIT = 3


class LazyGroup(Group):
    """A click group that imports a command's module only when it is needed.

    An error a command raises reaches the handler of :func:`_run_guarded`
    named with that command's flags (:func:`evalkit.cli._vocabulary.flags_named`);
    one raised outside any command is named with the options of ``evalkit`` itself.
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.commands:
            return self.commands[cmd_name]
        if cmd_name not in COMMANDS:
            return None
        module_name, attribute = COMMANDS[cmd_name]
        command = getattr(importlib.import_module(module_name), attribute)
        assert isinstance(command, click.Command)
        return command


class _State:
    debug = False
    own_process = False  # run as the console script: the process ends with the command


def debug_enabled() -> bool:
    """Whether ``--debug`` was given (a command passes it on to a child process)."""
    return _State.debug


@contextlib.contextmanager
def heavy_imports(*, blas_threads: int | None = None) -> Iterator[None]:
    """Import a command's libraries with the cyclic garbage collector paused.

    Importing polars and numpy builds ~35k tracked objects that live as long as
    the process, none of them garbage; the collector, run by allocation
    counts, walks them again and again while they are built: ~100 collections,
    30-50 ms of a whole split of 100k items. In the console script's process
    the collector is paused for the imports and what they built is moved out
    of its reach (``gc.freeze``), so later collections walk only what the
    command allocates. Called in-process (tests, ``main(argv)``) it does nothing.

    ``blas_threads`` caps the threads of the OpenBLAS that numpy loads, for a
    command whose matrix products are too small for more than one: OpenBLAS
    starts its pool as numpy is imported, ~60 ms of that import on 2 cores.
    A value set in the environment wins.
    """
    if not _State.own_process or not gc.isenabled():
        yield
        return
    if blas_threads is not None and "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", str(blas_threads))
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="evalkit")
@click.option("--debug", is_flag=True, help="Show the full traceback when something fails.")
def cli(debug: bool) -> None:
    """evalkit keeps fine-tuning experiments honest.

    \b
    Before training:   split        - group-aware, exact, stratified splits
                       audit        - leakage between existing splits
                       tokens       - the data as the model sees it (chat template, mask)
                       plan         - GPU memory of load, train, eval, export
                       smoke        - a few real steps, measured beside the plan [hf]
    Evaluation inputs: prompts      - a split's conversations as Batch requests
                       generate     - greedy predictions, every input pinned [hf]
    After training:    card         - what a PEFT adapter is, without loading it
                       score        - format validity and accuracy per class
                       rescore      - results again under a new contract version
                       ledger       - how often each test set was looked at
                       compare      - paired regression report vs a baseline
                       gate         - CI verdict: exit 0 pass, 1 fail
                       contract     - check a contract, print its schema
    Before shipping:   reload-check - the shipped artifact gives the scored tokens [hf]

    Conversations (messages, ShareGPT, prompt-completion) are read wherever a
    command takes --text. Nothing is downloaded: models are local folders.

    Exit codes: 0 done/pass, 1 a check found a problem, 2 bad input or usage,
    3 internal error (a bug: please report it with --debug output).
    """
    _State.debug = _State.debug or debug


def main(argv: list[str] | None = None) -> None:
    """Entry point of the console script: run a command and map errors to exit codes.

    Called with ``argv`` it ends in ``SystemExit``, like any click program. As
    the console script (no ``argv``) the process then ends at once, without
    the interpreter's teardown (see :func:`_end_now`).
    """
    _State.own_process = argv is None
    try:
        _run(sys.argv[1:] if argv is None else argv)
    except SystemExit as done:
        if argv is not None or sys.gettrace() is not None or sys.getprofile() is not None:
            raise  # a caller, a coverage tracer or a profiler still has work to do
        _end_now(done.code)


def _end_now(code: object) -> NoReturn:
    """End the process with ``code`` as ``sys.exit`` would, skipping the teardown.

    By now every output is complete, closed and renamed into place; what the
    interpreter's teardown would add is freeing every module and object one
    by one: 0.1-0.3 s after scoring 500k outputs, a tenth of a split of 100k
    items, time nobody needs.
    """
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:
        print(code, file=sys.stderr)
        status = 1
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        pass  # a closed pipe (evalkit ... | head) leaves nothing more to say
    except (OSError, ValueError) as error:  # e.g. stdout on a full disk: the output is lost
        reason = getattr(error, "strerror", None) or str(error)
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write(f"evalkit: error: cannot write the output to stdout ({reason})\n")
        status = status or 2
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.flush()
    os._exit(status)


def _run(args: list[str]) -> None:
    """Run the command line ``args``; always ends in ``SystemExit`` with the exit code.

    Under GitHub Actions every line printed, errors included, goes through
    :mod:`evalkit.cli._workflow_guard`, so no value can act as a workflow command.
    """
    from evalkit.cli._workflow_guard import guarded_streams

    with guarded_streams():
        _run_guarded(args)


def _run_guarded(args: list[str]) -> None:
    # pydantic looks for plugins (validation hooks for observability tools) in
    # the entry points of every installed distribution the first time a model
    # is built: ~30 ms in an environment with the ML extras, on every command,
    # for hooks a command-line run has no use for. Set the variable (to "" for
    # none disabled) to choose otherwise.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    # --debug works anywhere on the line: after an error, people append it.
    _State.debug = "--debug" in args
    args = [arg for arg in args if arg != "--debug"]
    try:
        # Without standalone mode click returns a command's ctx.exit() code.
        result = cli.main(args=args, prog_name="evalkit", standalone_mode=False)
    except click.exceptions.Exit as done:
        sys.exit(done.exit_code)
    except click.Abort:
        click.echo("evalkit: interrupted", err=True)
        sys.exit(130)
    except click.UsageError as error:
        # One line, like every other bad-input error, with a pointer to the help.
        command = error.ctx.command_path if error.ctx is not None else "evalkit"
        click.echo(f"evalkit: error: {error.format_message()} (see '{command} --help')", err=True)
        sys.exit(error.exit_code)
    except click.ClickException as error:
        error.show()
        sys.exit(error.exit_code)
    except EvalkitError as error:
        if _State.debug:
            traceback.print_exc()
        click.echo(f"evalkit: error: {error.message}", err=True)
        sys.exit(error.exit_code)
    except KeyboardInterrupt:
        click.echo("evalkit: interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)
    except OSError as error:  # the system refused (disk full, permissions): bad input, not a bug
        if _State.debug:
            traceback.print_exc()
        where = f"{error.filename}: " if error.filename else ""
        click.echo(f"evalkit: error: {where}{error.strerror or error}", err=True)
        sys.exit(2)
    except Exception as error:  # a bug, not bad input: say so in one line
        if _State.debug:
            traceback.print_exc()
        from evalkit.io import os_error_of

        refused = os_error_of(error)
        if refused is not None:  # a library's wrapping of a refused read or write
            click.echo(
                f"evalkit: error: {refused.strerror}: {str(error).splitlines()[0]}", err=True
            )
            sys.exit(2)
        first = str(error).splitlines()[0] if str(error) else ""
        click.echo(
            f"evalkit: internal error: {type(error).__name__}: {first} "
            "(add --debug for the traceback, and please report it)",
            err=True,
        )
        sys.exit(INTERNAL_ERROR_EXIT)
    sys.exit(result if isinstance(result, int) else 0)
