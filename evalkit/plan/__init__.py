"""Memory planner: lower bounds of the GPU memory of a fine-tuning cycle, from a config.

Arithmetic on a model's ``config.json``, no torch. :func:`plan` gives the
bound of each phase (load, train, eval, export) with its components and the
GPU class that holds the largest; :func:`phase_bounds` gives the per-phase
bytes alone, for a measured run (``evalkit smoke``) to be compared with.
"""

import inspect
import sys
import types
from typing import Any

from evalkit.plan.api import phase_bounds, plan, plan_shape
from evalkit.plan.config import ModelShape, load_model_shape
from evalkit.plan.models import PlanResult
from evalkit.plan.options import Options, resolve_options
from evalkit.plan.time_api import TimeRequest

__all__ = [
    "ModelShape",
    "Options",
    "PlanResult",
    "TimeRequest",
    "load_model_shape",
    "phase_bounds",
    "plan",
    "plan_shape",
    "resolve_options",
]


class _CallablePackage(types.ModuleType):
    """``evalkit.plan`` is this package and, like ``evalkit.split``, the command's function.

    Python binds ``evalkit.plan`` to the subpackage once it is imported, so a
    plain function export would be shadowed; calling the package calls
    :func:`plan` instead, whatever was imported first.
    """

    def __call__(self, *args: Any, **kwargs: Any) -> PlanResult:
        return plan(*args, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage
# help() and editors show plan's parameters, not (*args, **kwargs).
sys.modules[__name__].__signature__ = inspect.signature(plan)  # type: ignore[attr-defined]
