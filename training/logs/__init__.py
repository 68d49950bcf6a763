"""Training job logs: one follower per job reads every rank's pod log into :class:`TrainingLogLine` rows numbered
by a per-job ``seq`` and fans batches out to the channel group ``training-job-logs.<job id>`` (docs/training-logs.md).

Modules: ``kubelet`` (a pod log line, the resume watermark), ``pods`` (which pods are a job's ranks), ``reader``
(one thread per pod stream), ``follower`` (one job), ``lease`` and ``runner`` (exactly one follower per job across
processes), ``store`` (append, read, purge), ``metrics`` (loss/throughput parsed from the lines), ``publish``
(channel-layer frames), ``jobs`` (the actor's view of a job), ``tasks`` (retention, on Celery beat).
"""
