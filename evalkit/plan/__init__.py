"""Memory planner: lower bounds of the GPU memory of a fine-tuning cycle, from a config.

Arithmetic on a model's ``config.json``, no torch. :func:`plan` gives the
bound of each phase (load, train, eval, export) with its components and the
GPU class that holds the largest; :func:`phase_bounds` gives the per-phase
bytes alone, for a measured run (``evalkit smoke``) to be compared with.
"""

from evalkit.plan.api import phase_bounds, plan, plan_shape
from evalkit.plan.config import ModelShape, load_model_shape
from evalkit.plan.models import PlanResult
from evalkit.plan.options import Options, resolve_options

__all__ = [
    "ModelShape",
    "Options",
    "PlanResult",
    "load_model_shape",
    "phase_bounds",
    "plan",
    "plan_shape",
    "resolve_options",
]
