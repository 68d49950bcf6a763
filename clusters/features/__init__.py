"""Managed features: the "Advanced features" panel of a cluster.

Each feature is a toggle whose actual state is read from AWS and Kubernetes (:mod:`.observe`, recorded in
``ClusterFeature``), compared with what a user asked for (:mod:`.diff`, only the fields they changed), and moved
there by one ``cluster.features`` operation (:mod:`.pipeline`) that touches only the features that differ:

====================  =========================================================================================
feature               what enabling makes (and disabling removes, exactly)
====================  =========================================================================================
training_operator     EKS add-on ``amazon-sagemaker-hyperpod-training-operator`` + its pod identity role
inference_operator    EKS add-on ``amazon-sagemaker-hyperpod-inference`` + its pod identity role (and
                      ``metrics-server`` when it had to install it)
observability         an Amazon Managed Service for Prometheus workspace + EKS add-on
                      ``amazon-sagemaker-hyperpod-observability`` + its pod identity role
tiered_checkpointing  IAM role (OIDC trust for one service account) + ServiceAccount + ``TieredStorageConfig``
autoscaling           IAM cluster role + ``AutoScaling`` (Karpenter) + a HyperpodNodeClass and NodePool per group
load_balancer_        IAM role (the controller's documented policy) + EKS Pod Identity association + AWS's
controller            ``aws-load-balancer-controller`` chart, rendered and vendored, applied in ``kube-system``
====================  =========================================================================================
"""
