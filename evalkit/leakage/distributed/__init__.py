"""The Ray engine of the leakage checks (``--engine ray``): the same stages, distributed.

``audit_on_ray`` and ``duplicate_components_on_ray`` give what the local
engine gives, byte for byte; ``docs/leakage.md`` describes the stages and
their memory per node. Ray is imported only when a run starts.
"""
