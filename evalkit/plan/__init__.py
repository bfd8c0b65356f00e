"""Memory planner: lower bounds of the GPU memory of a fine-tuning cycle, from a config.

Arithmetic on a model's ``config.json``, no torch. :func:`plan` gives the
bound of each phase (load, train, eval, export) with its components and the
GPU class that holds the largest; :func:`phase_bounds` gives the per-phase
bytes alone, for a measured run (``evalkit smoke``) to be compared with.

The package loads its names when first used: ``evalkit plan --help`` needs
only the options (:mod:`evalkit.plan.options`), not the planner's models.
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any

from evalkit._lazy import lazy_exports

if TYPE_CHECKING:
    import inspect

    from evalkit.records._plan import PlanResult

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "ModelShape": "evalkit.plan.config",
        "load_model_shape": "evalkit.plan.config",
        "Options": "evalkit.plan.options",
        "PlanParams": "evalkit.plan.options",
        "TimeRequest": "evalkit.plan.options",
        "resolve_options": "evalkit.plan.options",
        "PlanResult": "evalkit.records._plan",
        "phase_bounds": "evalkit.plan.api",
        "plan": "evalkit.plan.api",
        "plan_shape": "evalkit.plan.api",
    },
)


class _CallablePackage(types.ModuleType):
    """``evalkit.plan`` is this package and, like ``evalkit.split``, the command's function.

    Python binds ``evalkit.plan`` to the subpackage once it is imported, so a
    plain function export would be shadowed; calling the package calls
    :func:`plan` instead, whatever was imported first.
    """

    def __call__(self, *args: Any, **kwargs: Any) -> PlanResult:
        from evalkit.plan.api import plan

        return plan(*args, **kwargs)

    @property
    def __signature__(self) -> inspect.Signature:
        """help() and editors show plan's parameters, not (*args, **kwargs)."""
        import inspect

        from evalkit.plan.api import plan

        return inspect.signature(plan)


sys.modules[__name__].__class__ = _CallablePackage
