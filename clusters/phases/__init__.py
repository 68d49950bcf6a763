"""The steps of the cluster pipelines, one module per phase.

Each module exports ``CREATE`` (its phase of ``cluster.create``) and ``DELETE`` (its phase of ``cluster.delete``),
both :class:`operations.pipeline.Phase` objects; ``clusters.pipelines`` orders and registers them. Every step finds
its cluster with :func:`clusters.phases.common.cluster_of` (``params["cluster_id"]``), tags what it creates with
``clusters.ownership.aws_tags`` and, on delete, removes only what carries those tags.
"""
