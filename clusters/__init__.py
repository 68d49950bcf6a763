"""HyperPod clusters on EKS: networking, dependencies, storage, instance groups, nodes, managed features."""
