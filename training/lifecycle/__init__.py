"""A job's life on its cluster: the Kubernetes object (``objects``), what it reports (``observe``) and the
``training_job.submit`` operation that creates it and follows it to a terminal state (``pipeline``)."""
