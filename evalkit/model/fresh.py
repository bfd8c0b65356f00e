"""Running a check in a fresh Python process, and reading its result back.

A reload is proven only in a new interpreter: nothing of the process that
trained, merged or generated (weights in memory, a module left in training
mode, a patched function, a cached kernel choice) can then make it pass.
``reload-check`` and ``smoke`` both start ``python -m <worker> REQUEST.json
RESULT.json``; the worker writes ``{"report": …}`` or ``{"error": {message,
exit_code}}``, so an evalkit error in the child is the same one-line error
(and exit code) in the parent, and a bug is exit 3.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evalkit.errors import NO_VALUE, EvalkitError, Ref, WorkerFailed


def worker_error(error: dict[str, Any], what: str) -> EvalkitError:
    """The worker's error as the same kind of error here (its exit code kept)."""
    code = int(error.get("exit_code", 3))
    message = str(error.get("message", "no message"))
    if code == 3:
        return WorkerFailed(
            f"internal error in the {what} process: {message} (rerun with {{debug}})",
            refs={"debug": True},
        )
    failure = EvalkitError(str(error.get("template", message)), refs=_refs(error.get("refs", [])))
    failure.exit_code = code
    return failure


def run_worker(
    module: str,
    request: dict[str, Any],
    scratch: Path,
    *,
    what: str,
    log: Path | None = None,
    debug: bool = False,
) -> Any:
    """Run ``python -m module`` on ``request`` in a new interpreter; its report, or its error.

    ``scratch`` is a folder the request and result files are written in.
    The child's stdout is discarded (libraries print there); its stderr
    passes through, so ``--debug`` tracebacks reach the user. With ``log``
    (a file), everything the child and its own children print goes there
    instead (an engine's chatter, which is no message for the user), unless
    ``debug``: then it all passes through to stderr.
    """
    from evalkit.model.runtime import hub_offline_environment, python_executable

    request_path = scratch / "request.json"
    result_path = scratch / "result.json"
    request_path.write_text(json.dumps(request), encoding="utf-8")
    with contextlib.ExitStack() as stack:
        stdout: Any = subprocess.DEVNULL
        stderr: Any = None
        if log is not None:
            if debug:
                stdout = sys.stderr
            else:
                stdout = stderr = stack.enter_context(log.open("ab"))
        completed = subprocess.run(
            [python_executable(), "-m", module, str(request_path), str(result_path)],
            env=hub_offline_environment(),
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            check=False,
        )
    if not result_path.is_file():
        last = _last_line(log) if log is not None and not debug else ""
        raise WorkerFailed(
            f"the {what} process ended with exit code {completed.returncode} and no result "
            f"({last or 'out of memory?'}; rerun with {{debug}})",
            refs={"debug": True},
        )
    result = json.loads(result_path.read_text(encoding="utf-8"))
    if "error" in result:
        raise worker_error(result["error"], what)
    return result["report"]


def _last_line(log: Path) -> str:
    """The last line a child printed (its own words for why it died), shortened."""
    if not log.is_file():
        return ""
    lines = [line.strip() for line in log.read_text(errors="replace").splitlines()]
    lines = [line for line in lines if line]
    return lines[-1][:200] if lines else ""


def _error_record(error: EvalkitError) -> dict[str, Any]:
    """What the parent needs to raise ``error`` again: its words, and its parameters as refs
    (so that the command line there names them as flags): ``[placeholder, parameter]``, or
    ``[placeholder, parameter, value]``."""
    record: dict[str, Any] = {"message": error.message, "exit_code": error.exit_code}
    refs: list[list[Any]] = []
    for placeholder, value in error.refs.items():
        ref = value if isinstance(value, Ref) else Ref(placeholder, value)
        if ref.value is NO_VALUE:
            refs.append([placeholder, ref.parameter])
        elif ref.value is None or isinstance(ref.value, str | int | float):
            refs.append([placeholder, ref.parameter, ref.value])
        else:
            return record  # a value JSON cannot carry: the words alone
    return {**record, "template": error.template, "refs": refs}


def _refs(record: list[list[Any]]) -> dict[str, Ref]:
    return {ref[0]: Ref(ref[1], ref[2] if len(ref) > 2 else NO_VALUE) for ref in record}


def worker_main(argv: list[str], compute: Callable[[dict[str, Any]], Any]) -> int:
    """A worker's ``main``: read the request, compute, write the report or the error.

    Always exits 0: the parent reads the outcome from the result file.
    """
    request_path, result_path = Path(argv[0]), Path(argv[1])
    request = json.loads(request_path.read_text(encoding="utf-8"))
    try:
        result: dict[str, Any] = {"report": compute(request)}
    except EvalkitError as error:
        if request.get("debug"):
            traceback.print_exc()
        result = {"error": _error_record(error)}
    except Exception as error:  # a bug: reported by the parent as an internal error
        if request.get("debug"):
            traceback.print_exc(file=sys.stderr)
        first = str(error).strip().splitlines()[0] if str(error).strip() else ""
        result = {"error": {"message": f"{type(error).__name__}: {first}", "exit_code": 3}}
    result_path.write_text(json.dumps(result), encoding="utf-8")
    return 0
