"""Diagnostics: read-only investigations that answer findings with evidence and suggested actions (see
``report``). ``nodes`` diagnoses node health, ``creation`` a cluster creation that failed; the training app adds a
job's NCCL/EFA diagnosis on the same report. Nothing here changes anything, in AWS, Kubernetes or the database."""
