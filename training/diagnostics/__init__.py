"""A training job's NCCL/EFA diagnosis (``nccl``), on the report of ``clusters.diagnostics.report``."""
