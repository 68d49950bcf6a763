"""EKS managed node groups of a cluster: the system node group the create pipeline makes for controllers, and
any other node group found on an imported cluster — read live from EKS (never stored), scaled and deleted by
operations. See docs/node-groups.md."""
